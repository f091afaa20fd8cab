// FUNCTION mode (libdftracer_io.so): `import dftracer` with DFTRACER_ENABLE=1
// calls dft_io_install(), which points every loaded object's GOT entries
// for the calls in io_calls.h at our hooks, and hooks dlopen too, so a
// library loaded later (a Python extension module, libtorch) is patched
// as it arrives. Our own libraries and libc itself are never patched: the
// writer's I/O and libc's internal calls stay untraced.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>

#include <cerrno>
#include <mutex>

#include "dftracer/io.h"
#include "direct_syscall.h"
#include "got_patch.h"
#include "io_runtime.h"

extern "C" {
#define DFTIO_DECLARE_HOOK(fn) void dftio_hook_##fn();
DFTIO_ALL_CALLS(DFTIO_DECLARE_HOOK)
#undef DFTIO_DECLARE_HOOK
void dftio_hook_pthread_cancel();  // direct_syscall.c: not an event
void dftio_hook_sigaction();       // signal_hooks.c: not events
void dftio_hook_signal();
void dftio_hook_vfork();           // vfork_hook.c: a trampoline, not an event
void dftio_hook_close_range();     // close_range_hooks.c: not events
void dftio_hook_closefrom();
void dftio_hook__exit();           // exit_hooks.c: not events
void dftio_hook__Exit();
void dftio_hook_execve();
void dftio_hook_execvpe();
void dftio_hook_execv();
void dftio_hook_execvp();
void dftio_hook_fexecve();
void dftio_hook_execveat();
void dftio_hook_execl();
void dftio_hook_execlp();
void dftio_hook_execle();
#define DFTIO_CRED_CALLS(X) \
  X(setuid) X(setgid) X(seteuid) X(setegid) X(setreuid) X(setregid) X(setresuid) X(setresgid) X(setgroups) X(setns) X(unshare)
#define DFTIO_DECLARE_CRED_HOOK(fn) void dftio_hook_##fn();  // cred_hooks.c: not events
DFTIO_CRED_CALLS(DFTIO_DECLARE_CRED_HOOK)
#undef DFTIO_DECLARE_CRED_HOOK
}

namespace {

std::mutex g_patch_mu;  // install and dlopen, never a hook
dftracer::io::GotPatcher* g_patcher = nullptr;
int g_mode = DFT_IO_OFF;
// DFTRACER_DISABLE_IO=1: no I/O hook, but the hooks that finish the trace
// where the image ends or the process changes (_exit, exec, signal
// dispositions, credentials, vfork) are in: a program that ends in
// os._exit lost its last flush interval and its `end` without them.
bool g_process_hooks_only = false;
void* (*g_real_dlopen)(const char*, int) = nullptr;

// Never patched: ours (core, this library, the preload shim), the C library
// and the dynamic linker, the vDSO, and the compressors the writer uses.
const char* const kSkip[] = {"libdftracer_core", "libdftracer_io", "libdftracer_preload", "/libc.so",
                             "/ld-linux",        "linux-vdso",     "libz.so",             "libdeflate",
                             "libspdlog",        nullptr};

size_t patch_everything() { return g_patcher->patch_all(kSkip, reinterpret_cast<const void*>(&patch_everything)); }

void* hook_dlopen(const char* file, int flags) {
  void* h = g_real_dlopen(file, flags);
  if (h != nullptr) {
    int saved = errno;
    std::lock_guard<std::mutex> lock(g_patch_mu);
    patch_everything();
    errno = saved;
  }
  return h;
}

}  // namespace

extern "C" int dft_io_install(void) {
  std::lock_guard<std::mutex> lock(g_patch_mu);
  if (g_mode != DFT_IO_OFF || g_process_hooks_only) return g_mode;
  // Under LD_PRELOAD the preload library already sees every call.
  if (dlsym(RTLD_DEFAULT, "dft_io_preload_loaded") != nullptr) return g_mode = DFT_IO_PRELOAD;
  if (!dft_enabled()) return DFT_IO_OFF;
  const bool io = dftio_start() != 0;  // 0: DFTRACER_DISABLE_IO
  g_real_dlopen = reinterpret_cast<void* (*)(const char*, int)>(dlsym(RTLD_DEFAULT, "dlopen"));
  g_patcher = new dftracer::io::GotPatcher();
  if (io) {
#define DFTIO_ADD_HOOK(fn) \
  if (dftio_real.fn != nullptr) g_patcher->add(#fn, reinterpret_cast<void*>(&dftio_hook_##fn));
    DFTIO_ALL_CALLS(DFTIO_ADD_HOOK)
#undef DFTIO_ADD_HOOK
    g_patcher->add("pthread_cancel", reinterpret_cast<void*>(&dftio_hook_pthread_cancel));
    dftio_resolve_close_range_calls();
    g_patcher->add("close_range", reinterpret_cast<void*>(&dftio_hook_close_range));
    g_patcher->add("closefrom", reinterpret_cast<void*>(&dftio_hook_closefrom));
  }
  if (g_real_dlopen != nullptr) g_patcher->add("dlopen", reinterpret_cast<void*>(&hook_dlopen));
  dftio_resolve_signal_calls();
  g_patcher->add("sigaction", reinterpret_cast<void*>(&dftio_hook_sigaction));
  g_patcher->add("signal", reinterpret_cast<void*>(&dftio_hook_signal));
  dftio_resolve_exit_calls();
  g_patcher->add("_exit", reinterpret_cast<void*>(&dftio_hook__exit));
  g_patcher->add("_Exit", reinterpret_cast<void*>(&dftio_hook__Exit));
  g_patcher->add("execve", reinterpret_cast<void*>(&dftio_hook_execve));
  g_patcher->add("execvpe", reinterpret_cast<void*>(&dftio_hook_execvpe));
  g_patcher->add("execv", reinterpret_cast<void*>(&dftio_hook_execv));
  g_patcher->add("execvp", reinterpret_cast<void*>(&dftio_hook_execvp));
  g_patcher->add("fexecve", reinterpret_cast<void*>(&dftio_hook_fexecve));
  g_patcher->add("execveat", reinterpret_cast<void*>(&dftio_hook_execveat));
  g_patcher->add("execl", reinterpret_cast<void*>(&dftio_hook_execl));
  g_patcher->add("execlp", reinterpret_cast<void*>(&dftio_hook_execlp));
  g_patcher->add("execle", reinterpret_cast<void*>(&dftio_hook_execle));
#define DFTIO_ADD_CRED_HOOK(fn) g_patcher->add(#fn, reinterpret_cast<void*>(&dftio_hook_##fn));
  DFTIO_CRED_CALLS(DFTIO_ADD_CRED_HOOK)
#undef DFTIO_ADD_CRED_HOOK
#if DFTIO_VFORK_HOOK
  dftio_real_vfork = reinterpret_cast<pid_t (*)()>(dlsym(RTLD_DEFAULT, "vfork"));
  if (dftio_real_vfork != nullptr) g_patcher->add("vfork", reinterpret_cast<void*>(&dftio_hook_vfork));
#endif
  patch_everything();
  if (!io) {
    g_process_hooks_only = true;
    return DFT_IO_OFF;
  }
  return g_mode = DFT_IO_FUNCTION;
}

// Under LD_PRELOAD the preload library's state is the one its hooks read:
// its entry point of that name, else this library's.
template <typename Fn>
Fn* in_tracing_library(const char* preload_name, Fn* own) {
  if (void* p = dlsym(RTLD_DEFAULT, preload_name)) return reinterpret_cast<Fn*>(p);
  return own;
}

extern "C" void dft_io_set_data_dir(const char* dirs) {
  in_tracing_library("dft_io_preload_set_data_dir", &dftio_set_data_dir)(dirs);
}

extern "C" int dft_io_pause_thread(int paused) {
  return in_tracing_library("dft_io_preload_pause_thread", &dftio_pause_thread)(paused);
}

extern "C" int dft_io_mode(void) {
  std::lock_guard<std::mutex> lock(g_patch_mu);
  return g_mode;
}
