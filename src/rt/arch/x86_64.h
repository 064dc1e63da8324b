/* x86_64 definitions of the per-architecture layer (see rt/arch.h).
 * Included only through rt/arch.h. */
#ifndef STOWAWAY_RT_ARCH_X86_64_H
#define STOWAWAY_RT_ARCH_X86_64_H

#define ARCH_NAME "x86_64"
#define ARCH_ELF_MACHINE 62 /* EM_X86_64 */
/* The kernel release (major << 8 | minor) from which CPU-clock timers expire
 * in task work, raising their signal on the return to user mode (never
 * during a system call); 0: not known for this architecture. */
#define ARCH_CPU_TIMERS_TASK_WORK_SINCE 0x050a /* 5.10 */

static inline long arch_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The system call instruction's bytes. */
#define ARCH_SYSCALL_INSN {0x0f, 0x05} /* syscall */
#define ARCH_SYSCALL_INSN_LEN 2

/* mov $15, %rax; syscall: rt_sigreturn, as glibc's and musl's __restore_rt. */
#define ARCH_SIGRETURN_ASM                                                     \
	".text\n.hidden stowaway_sigreturn\n.type stowaway_sigreturn,@function\n" \
	"stowaway_sigreturn:\n mov $15, %rax\n syscall\n"                     \
	".size stowaway_sigreturn, .-stowaway_sigreturn\n"
#define ARCH_SIGRETURN_CODE {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}
#define ARCH_SIGRETURN_LEN 9
/* A thread stopped in the kernel inside the trampoline has its pc after the
 * mov: the syscall instruction starts 7 bytes in. */
#define ARCH_SIGRETURN_SYSCALL_AT 7

/* At the trampoline sp points at the ucontext: uc_flags, uc_link, uc_stack
 * (24 bytes), then mcontext gregs r8..r15, rdi, rsi, rbp, rbx, rdx, rax,
 * rcx, rsp, rip. */
#define ARCH_UC_GREGS 40
#define ARCH_SIGFRAME_FP (ARCH_UC_GREGS + 10 * 8)
#define ARCH_SIGFRAME_SP (ARCH_UC_GREGS + 15 * 8)
#define ARCH_SIGFRAME_PC (ARCH_UC_GREGS + 16 * 8)
#define ARCH_SIGFRAME_LR (-1) /* no link register */

/* pc, sp, frame pointer and link register (0: none) from a kernel ucontext. */
static inline void arch_ucontext_regs(const void *ucontext, uint64_t *pc, uint64_t *sp, uint64_t *fp,
				      uint64_t *lr)
{
	const uint64_t *gregs = (const uint64_t *)(const void *)((const uint8_t *)ucontext + ARCH_UC_GREGS);
	*pc = gregs[16];
	*sp = gregs[15];
	*fp = gregs[10];
	*lr = 0;
}

/* Expanded where the kernel's struct ucontext is declared (asm/ucontext.h). */
#define ARCH_UCONTEXT_CHECKS                                                   \
	_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext.rbp) == ARCH_SIGFRAME_FP, "rbp"); \
	_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext.rsp) == ARCH_SIGFRAME_SP, "rsp"); \
	_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext.rip) == ARCH_SIGFRAME_PC, "rip");

#define ARCH_CFI_REG_FP 6  /* rbp */
#define ARCH_CFI_REG_SP 7  /* rsp */
#define ARCH_CFI_REG_RA 16 /* the return address column */
#define ARCH_CFI_LINK_REGISTER 0
#define ARCH_CFI_PLT_EXPRESSION 1
#define ARCH_CFI_NEGATE_RA_STATE 0

/* push %rbp; mov %rsp, %rbp: the record is at CFA - 16. */
#define ARCH_FRAME_RECORD_AT_CFA 1

static inline uint64_t arch_strip_pac(uint64_t ra) { return ra; }

static inline uintptr_t arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

static inline uintptr_t arch_stack_pointer(void)
{
	uintptr_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return sp;
}


#define ARCH_HERE(pc, sp, fp)                                                  \
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"   \
			 : "=&r"(pc), "=&r"(sp), "=&r"(fp))

#define ARCH_VDSO_CLOCK_GETTIME "__vdso_clock_gettime"

#endif
