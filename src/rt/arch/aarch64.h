/* aarch64 definitions of the per-architecture layer (see rt/arch.h).
 * Included only through rt/arch.h. */
#ifndef STOWAWAY_RT_ARCH_AARCH64_H
#define STOWAWAY_RT_ARCH_AARCH64_H

#define ARCH_NAME "aarch64"
#define ARCH_ELF_MACHINE 183 /* EM_AARCH64 */
/* See rt/arch/x86_64.h (arm64 selects POSIX_CPU_TIMERS_TASK_WORK since 5.16). */
#define ARCH_CPU_TIMERS_TASK_WORK_SINCE 0x0510 /* 5.16 */

/* aarch64 has only the *at, clone, ppoll... forms of the system calls;
 * rt/sys.h uses only those on every architecture. */
static inline long arch_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}

/* The system call instruction's bytes. */
#define ARCH_SYSCALL_INSN {0x01, 0x00, 0x00, 0xd4} /* svc #0 */
#define ARCH_SYSCALL_INSN_LEN 4

/* mov x8, #139; svc #0: rt_sigreturn, as the vDSO's __kernel_rt_sigreturn
 * (glibc and musl install no restorer on aarch64: the kernel returns
 * through the vDSO's). */
#define ARCH_SIGRETURN_ASM                                                     \
	".text\n.hidden stowaway_sigreturn\n.type stowaway_sigreturn,%function\n" \
	"stowaway_sigreturn:\n mov x8, #139\n svc 0\n"                        \
	".size stowaway_sigreturn, .-stowaway_sigreturn\n"
#define ARCH_SIGRETURN_CODE {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4}
#define ARCH_SIGRETURN_LEN 8
#define ARCH_SIGRETURN_SYSCALL_AT 4

/* At the trampoline sp points at struct rt_sigframe: siginfo (128 bytes),
 * then the ucontext: uc_flags, uc_link, uc_stack (24), uc_sigmask padded to
 * 128 bytes, then the 16-aligned sigcontext: fault_address, regs[31], sp,
 * pc. */
#define ARCH_UC_MCONTEXT 176
#define ARCH_SIGFRAME_MCONTEXT (128 + ARCH_UC_MCONTEXT)
#define ARCH_SIGFRAME_FP (ARCH_SIGFRAME_MCONTEXT + 8 + 29 * 8)
#define ARCH_SIGFRAME_LR (ARCH_SIGFRAME_MCONTEXT + 8 + 30 * 8)
#define ARCH_SIGFRAME_SP (ARCH_SIGFRAME_MCONTEXT + 8 + 31 * 8)
#define ARCH_SIGFRAME_PC (ARCH_SIGFRAME_MCONTEXT + 8 + 32 * 8)

static inline void arch_ucontext_regs(const void *ucontext, uint64_t *pc, uint64_t *sp, uint64_t *fp,
				      uint64_t *lr)
{
	const uint64_t *regs =
		(const uint64_t *)(const void *)((const uint8_t *)ucontext + ARCH_UC_MCONTEXT + 8);
	*fp = regs[29];
	*lr = regs[30];
	*sp = regs[31];
	*pc = regs[32];
}

/* Expanded where the kernel's struct ucontext is declared (asm/ucontext.h). */
#define ARCH_UCONTEXT_CHECKS                                                   \
	_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext) == ARCH_UC_MCONTEXT, "mcontext"); \
	_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext.regs) == ARCH_UC_MCONTEXT + 8, "regs"); \
	_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext.pc) == ARCH_UC_MCONTEXT + 8 + 32 * 8, "pc");

#define ARCH_CFI_REG_FP 29 /* x29 */
#define ARCH_CFI_REG_RA 30 /* x30, the link register */
#define ARCH_CFI_REG_SP 31
#define ARCH_CFI_LINK_REGISTER 1
#define ARCH_CFI_PLT_EXPRESSION 0
#define ARCH_CFI_NEGATE_RA_STATE 1

/* stp x29, x30, [sp, #-N]!; mov x29, sp: the record is at the bottom of
 * the frame, so fp + 16 is only a lower bound of the caller's sp. */
#define ARCH_FRAME_RECORD_AT_CFA 0

/* Return addresses signed with pointer authentication carry a code in their
 * top bits.  xpaclri (a hint: a no-op on cores without PAC) strips it from
 * x30 using the kernel's configured address size. */
static inline uint64_t arch_strip_pac(uint64_t ra)
{
	register uint64_t x30 __asm__("x30") = ra;
	__asm__("hint #7" : "+r"(x30));
	return x30;
}

static inline uintptr_t arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}

static inline uintptr_t arch_stack_pointer(void)
{
	uintptr_t sp;
	__asm__ volatile("mov %0, sp" : "=r"(sp));
	return sp;
}


#define ARCH_HERE(pc, sp, fp)                                                  \
	__asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29"               \
			 : "=&r"(pc), "=&r"(sp), "=&r"(fp))

#define ARCH_VDSO_CLOCK_GETTIME "__kernel_clock_gettime"

#endif
