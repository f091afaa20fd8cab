/*
 * dftracer I/O tracing: POSIX and STDIO calls as complete events
 * (cat "POSIX" / "STDIO", named after the call, args fhash, fd, size, ret,
 * offset; an "FH" metadata record names each path once per file).
 *
 * Two ways in, as DFTracer:
 *   PRELOAD   DFTRACER_INIT=PRELOAD DFTRACER_ENABLE=1 LD_PRELOAD=libdftracer_preload.so prog
 *   FUNCTION  dft_io_install() from libdftracer_io.so (what `import dftracer` calls
 *             when DFTRACER_ENABLE=1): patches the GOTs of the loaded objects and of
 *             every object dlopen'ed later.
 * DFTRACER_DISABLE_IO=1 turns both off; DFTRACER_DATA_DIR (colon-separated
 * prefixes, or `all`; unset = all) limits which paths are traced;
 * dft_io_set_data_dir() changes them later.
 */
#ifndef DFTRACER_IO_H_
#define DFTRACER_IO_H_

#include "dftracer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DFT_IO_OFF 0
#define DFT_IO_FUNCTION 1
#define DFT_IO_PRELOAD 2

/* FUNCTION mode: starts I/O tracing in this process when tracing is on and
 * DFTRACER_DISABLE_IO is not set. Returns the mode now in force:
 * DFT_IO_FUNCTION, DFT_IO_PRELOAD (the preload library is loaded: it
 * already traces, nothing is patched) or DFT_IO_OFF. Idempotent. */
DFT_API int dft_io_install(void);

/* Replaces the directories whose I/O is traced, as DFTRACER_DATA_DIR
 * names them (colon-separated; relative ones from the working directory;
 * NULL, "" or an `all` among them = every path), in whichever library
 * traces (FUNCTION or PRELOAD), while hooks run. Call it after
 * dft_io_install(): that reads DFTRACER_DATA_DIR when it first starts.
 * initialize_log(logfile, data_dir) calls it. */
DFT_API void dft_io_set_data_dir(const char* dirs);

/* Pauses (paused != 0) or resumes the tracing of the calling thread's I/O;
 * returns 1 when it was paused before. The Python package pauses its own
 * lazy imports (dftracer.python.dynamo and what it imports): they are not
 * the program's I/O. Other threads go on being traced. */
DFT_API int dft_io_pause_thread(int paused);

/* The mode dft_io_install() left in force (DFT_IO_OFF before it). */
DFT_API int dft_io_mode(void);

/* Which traced calls on regular files and directories issue their system
 * call themselves rather than through glibc's wrapper (its cancellation
 * bookkeeping is most of what a traced open+close costs beyond the call):
 * DFT_IO_DIRECT_OPEN (open, open64, openat, openat64) and
 * DFT_IO_DIRECT_CLOSE. 0 before I/O tracing starts, when another library
 * interposes those calls, once the program has called pthread_cancel, and
 * in sanitizer builds. src/capture/io/direct_syscall.h gives the rules. */
#define DFT_IO_DIRECT_OPEN 1
#define DFT_IO_DIRECT_CLOSE 2
DFT_API int dft_io_direct_syscalls(void);

#ifdef __cplusplus
}
#endif

#endif /* DFTRACER_IO_H_ */
