/*
 * vfork: the child of a vfork runs in its parent's memory, on the parent
 * thread's stack and thread-locals, until it execs or exits. Every hook it
 * ran used to act on the parent's state: CPython's subprocess (vfork since
 * 3.10) dup2()s a log file onto descriptors 1 and 2 and chdir()s to `cwd=`
 * in the child, which left the parent's stdout traced as that log file and
 * its working directory as the child's, and recorded the child's calls in
 * the parent's buffer.
 *
 * So vfork is hooked by a trampoline that marks the calling thread busy
 * (DFTIO_BUSY_VFORK) and jumps to the real vfork, leaving its stack and
 * return address alone, as vfork requires. Both processes return from it
 * with the mark set, so every hook passes straight through. At its next
 * hook call, a thread found with the mark asks the kernel whose pid it runs
 * in (dftio_vfork_over): the parent's (the child has exec'd or exited, since
 * vfork suspends the parent until then) clears the mark; the child keeps it.
 *
 * x86-64 only (the trampoline is assembly); elsewhere vfork is not hooked.
 */
#define _GNU_SOURCE 1
#include <sys/syscall.h>
#include <unistd.h>

#include "dftracer/dftracer.h"
#include "io_runtime.h"

#if DFTIO_VFORK_HOOK

DFTIO_HIDDEN pid_t (*dftio_real_vfork)(void);

/* The trampoline's way out before the real vfork is known (a vfork before
 * the library's start): fork, which keeps every promise vfork makes. */
DFTIO_HIDDEN pid_t dftio_vfork_unresolved(void) { return fork(); }

#ifdef DFTIO_PRELOAD
#define DFTIO_VFORK_NAME "vfork"
#define DFTIO_VFORK_VISIBILITY ""
#else
#define DFTIO_VFORK_NAME "dftio_hook_vfork"
#define DFTIO_VFORK_VISIBILITY ".hidden dftio_hook_vfork\n"
#endif

__asm__(".text\n"
        ".globl " DFTIO_VFORK_NAME "\n" DFTIO_VFORK_VISIBILITY ".type " DFTIO_VFORK_NAME ", @function\n"
        ".p2align 4\n" DFTIO_VFORK_NAME ":\n"
        "  endbr64\n"
        "  movq dftio_real_vfork(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz dftio_vfork_unresolved\n"
        "  movq dftio_busy@gottpoff(%rip), %rcx\n"
        "  movl $2, %fs:(%rcx)\n" /* DFTIO_BUSY_VFORK */
        "  jmp *%rax\n"
        ".size " DFTIO_VFORK_NAME ", .-" DFTIO_VFORK_NAME "\n");

#endif

int dftio_vfork_over(void) {
  /* syscall(), not getpid(): the child is not this process, and no cache may
   * answer for it. SYS_getpid cannot fail, so errno is untouched. */
  if ((int64_t)syscall(SYS_getpid) != dft_pid()) return 0;
  dftio_busy = 0;
  return 1;
}
