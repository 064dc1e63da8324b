/* The per-architecture layer: everything that differs between x86_64 and
 * aarch64 lives in exactly one of rt/arch/<arch>.h, chosen here by the
 * compiler's predefined macros.  Generic code includes this header and
 * never tests __x86_64__ or __aarch64__ itself.
 *
 * Each architecture header defines:
 *  - ARCH_NAME, ARCH_ELF_MACHINE: what we were built for;
 *  - arch_syscall6(): the raw system call; ARCH_SYSCALL_INSN / _LEN: the
 *    bytes of its instruction;
 *  - ARCH_SIGRETURN_ASM: our rt_sigreturn trampoline (symbol
 *    stowaway_sigreturn), and ARCH_SIGRETURN_CODE / _LEN / _SYSCALL_AT: the
 *    bytes of every rt_sigreturn trampoline (glibc, musl, the vDSO, ours),
 *    and where in them the pc of an interrupted trampoline can be;
 *  - ARCH_SIGFRAME_{PC,SP,FP,LR}: offsets of the interrupted registers from
 *    the stack pointer a signal handler's return leaves at the trampoline;
 *  - arch_ucontext_regs(): those registers from a handler's ucontext;
 *  - ARCH_CFI_REG_{SP,FP,RA}: DWARF register numbers; ARCH_CFI_LINK_REGISTER
 *    (1: the return address may still be in a register, the link register);
 *    ARCH_CFI_PLT_EXPRESSION (1: recognise the lazy-PLT CFA expression);
 *    ARCH_CFI_NEGATE_RA_STATE (1: DW_CFA 0x2d toggles a signed return
 *    address, rather than being an unknown opcode);
 *  - ARCH_FRAME_RECORD_AT_CFA: 1 when a frame record [fp] = caller's fp,
 *    [fp + 8] = return address sits right below the caller's stack pointer
 *    (fp + 16 is the caller's sp); 0 when it may sit anywhere in the frame;
 *  - arch_strip_pac(): a return address without pointer-authentication bits;
 *  - arch_thread_pointer(), arch_stack_pointer();
 *  - ARCH_HERE(pc, sp, fp): the current pc, sp and frame pointer together;
 *  - ARCH_VDSO_CLOCK_GETTIME: the vDSO's clock_gettime symbol.
 */
#ifndef STOWAWAY_RT_ARCH_H
#define STOWAWAY_RT_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#include "rt/arch/x86_64.h"
#elif defined(__aarch64__)
#include "rt/arch/aarch64.h"
#else
#error "stowaway supports x86_64 and aarch64"
#endif

#endif
