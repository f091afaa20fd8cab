// Turning I/O tracing on: the settings (read once), the interned ids, and
// the path side of the hooks (filter + FH once per path and session).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dir_names.h"
#include "direct_syscall.h"
#include "file_hashes.h"
#include "hash.h"
#include "io_runtime.h"
#include "path_filter.h"
#include "path_normalize.h"
#include "path_scan.h"
#include "working_dir.h"

namespace {

// Constructed before any constructor of default priority: the PRELOAD
// library's start-up (preload.c, a C constructor) configures them, and in
// the order the linker happens to choose (link-time optimisation changed
// it) their own initialisation could otherwise run after that and wipe
// DFTRACER_DATA_DIR (every path then traced).
__attribute__((init_priority(101))) dftracer::io::PathFilter g_filter;
__attribute__((init_priority(101))) dftracer::io::FileHashes g_hashes;
__attribute__((init_priority(101))) dftracer::io::WorkingDir g_cwd;
__attribute__((init_priority(101))) dftracer::io::DirNames g_dirs;

// The fhash a descriptor is traced with (0: not traced), recording or not.
uint64_t fd_hash(int fd) {
  return static_cast<unsigned>(fd) < DFTIO_MAX_FD ? __atomic_load_n(&dftio_fd_hash[fd], __ATOMIC_RELAXED)
                                                  : dftio_high_fd_load(fd);
}

// DFTRACER_DISABLE_IO as the core reads its booleans: 1/true/yes/on, any case.
bool env_true(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s;
  for (const char* p = v; *p; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

// The directory chdir(`asked`) entered, as the program names it: `asked`
// joined to the working directory as published and normalised, when that
// names the directory the kernel moved to (same device and inode; a ".."
// after a symlink names another one lexically). The kernel's own name
// (getcwd) has every symlink resolved, so a relative open under
// <DATA_DIR>/link, a symlink to elsewhere, would not be traced as the direct
// open of <DATA_DIR>/link/f is.
bool as_the_program_names_it(const char* asked, char* out, size_t cap) {
  char joined[4096];
  const char* p = asked;
  if (asked[0] != '/') {
    if (!g_cwd.join(asked, joined, sizeof joined)) return false;
    p = joined;
  }
  const size_t n = dftracer::io::normalize_path(p, std::strlen(p), out, cap);
  if (n == 0 || out[0] != '/') return false;
  struct stat named, entered;
  return stat(out, &named) == 0 && stat(".", &entered) == 0 && named.st_dev == entered.st_dev &&
         named.st_ino == entered.st_ino;
}

// The shell's name for the start directory ($PWD, which keeps the symlinks
// `cd` went through) when it names the working directory, else getcwd's:
// `cd /data/link && python train.py` then opens "x" as /data/link/x, as the
// program's absolute paths would name it.
const char* start_dir_name() {
  const char* pwd = std::getenv("PWD");
  return pwd != nullptr && pwd[0] == '/' ? pwd : nullptr;
}

std::string current_dir() {
  char buf[4096];
  if (const char* pwd = start_dir_name(); pwd != nullptr && as_the_program_names_it(pwd, buf, sizeof buf))
    return std::string(buf);
  return getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string("/");
}

void publish_cwd(const char* asked = nullptr) {
  char buf[4096];
  if (asked != nullptr && as_the_program_names_it(asked, buf, sizeof buf)) {
    g_cwd.publish(buf);
    return;
  }
  if (getcwd(buf, sizeof buf) == nullptr) {
    g_cwd.publish(nullptr);  // unknown (does not fit, or gone)
    return;
  }
  // getcwd resolves symlinks; under a DFTRACER_DATA_DIR named through one,
  // relative paths are joined to the directory as that prefix names it.
  char named[4096];
  g_cwd.publish(g_filter.as_named_in_data_dir(buf, std::strlen(buf), named, sizeof named) ? named : buf);
}

}  // namespace

extern "C" void dftio_mark_tracer_thread(void) { dftio_busy = DFTIO_BUSY_TRACER; }

static void name_inherited_descriptors();  // fork's child handler, below

extern "C" int dftio_start(void) {
  dft_set_tracer_thread_hook(&dftio_mark_tracer_thread);
  if (__atomic_load_n(&dftio_on, __ATOMIC_ACQUIRE)) return 1;
  if (env_true("DFTRACER_DISABLE_IO")) return 0;
  dftio_busy = 1;  // our own getcwd/getenv/interning are never events
  dftio_resolve_all();
  dftio_allow_direct_calls();
  g_filter.configure(std::getenv("DFTRACER_DATA_DIR"), current_dir());
  publish_cwd(start_dir_name());
  dftio_intern_ids();
  dft_intern_cstr("FH");  // dft_hash_metadata's lookup then takes no lock
  dftio_busy = 0;
  static bool child_handler = false;  // once per process (a re-init calls this again)
  if (!child_handler) {
    child_handler = true;
    pthread_atfork(nullptr, nullptr, &name_inherited_descriptors);
  }
  __atomic_store_n(&dftio_on, 1, __ATOMIC_RELEASE);
  return 1;
}

extern "C" void dftio_set_data_dir(const char* dirs) {
  const int saved = errno;
  const int was_busy = dftio_busy;
  dftio_busy = 1;  // realpath's and getcwd's own calls are never events
  g_filter.configure(dirs, current_dir());
  // The working directory may now sit under a prefix named through a symlink.
  publish_cwd(start_dir_name());
  dftio_busy = was_busy;
  errno = saved;
}

extern "C" int dftio_pause_thread(int paused) {
  const int was = dftio_busy;
  if (was == DFTIO_BUSY_TRACER || was == DFTIO_BUSY_VFORK) return 0;
  dftio_busy = paused ? 1 : 0;
  return was != 0;
}

// The kernel's name for descriptor `fd` (readlink of /proc/self/fd/<fd>,
// symlinks resolved; a raw system call: readlink may be one of our hooks),
// not NUL-terminated: its length, or <= 0 when there is none.
static long kernel_fd_name(int fd, char* out, size_t cap) {
  char link[32] = "/proc/self/fd/";
  char digits[12];
  int nd = 0;
  for (unsigned v = static_cast<unsigned>(fd); nd == 0 || v != 0; v /= 10) digits[nd++] = static_cast<char>('0' + v % 10);
  size_t at = std::strlen(link);
  while (nd > 0) link[at++] = digits[--nd];
  link[at] = '\0';
  return syscall(SYS_readlinkat, AT_FDCWD, link, out, cap - 1);
}

// `rel` joined to the directory descriptor `dirfd` names (not AT_FDCWD):
// the kernel's name for it, /proc/self/fd/<dirfd>, read with one readlink.
// A system call, but only on *at calls given a real directory descriptor
// (os.open(..., dir_fd=), fwalk, rmtree), never on read/write. The name is
// the directory's real path (symlinks resolved). False: unknown (not a
// directory we can name, or too long); the path stays relative.
static bool join_dirfd(int dirfd, const char* rel, char* out, size_t cap) {
  if (dirfd < 0) return false;
  const size_t rlen = std::strlen(rel);
  // The name the program opened the directory by, when a traced open or
  // opendir of it kept one (dir_names.h): no system call, symlinks as named.
  if (const char* name = g_dirs.find(fd_hash(dirfd))) {
    const size_t n = std::strlen(name);
    if (n + 1 + rlen + 1 > cap) return false;
    std::memcpy(out, name, n);
    out[n] = '/';
    std::memcpy(out + n + 1, rel, rlen + 1);
    return true;
  }
  long n = kernel_fd_name(dirfd, out, cap);
  if (n <= 0 || out[0] != '/') return false;
  if (static_cast<size_t>(n) + 1 + rlen + 1 > cap) return false;
  out[n] = '/';
  std::memcpy(out + n + 1, rel, rlen + 1);
  return true;
}

// The path's FH record, the first time a session sees it.
static __attribute__((noinline, cold)) void write_fh(const char* path) {
  const int saved = errno;
  dft_hash_metadata("FH", path);
  errno = saved;
}

// The fhash of `path` (len bytes, absolute or relative, already joined and
// normalised) when the filter wants it, else 0; writes its FH record the
// first time this session sees it.
// Inline in both callers: on the common open, dftio_path_hash makes no call.
static inline unsigned session_now() { return static_cast<unsigned>(__atomic_load_n(&dft_hot.session, __ATOMIC_ACQUIRE)); }

// fork's child handler, after the core's (registered earlier), which has
// started the child's own trace file: a descriptor the child inherited open
// carries the parent's fhash, whose FH record is in the parent's file. Each
// is named here once more, by the kernel's name for it (/proc/self/fd,
// renamed as DFTRACER_DATA_DIR names it), so the child's file stands alone.
// One scan of the static table (descriptors from 65,536 up are not named)
// and a readlink per inherited traced descriptor, per fork.
static void name_inherited_descriptors() {
  if (!__atomic_load_n(&dftio_on, __ATOMIC_ACQUIRE) || !dftio_idle()) return;
  const int saved = errno;
  dftio_busy = 1;
  const unsigned session = session_now();
  for (int fd = 0; fd < DFTIO_MAX_FD; ++fd) {
    const uint64_t h = __atomic_load_n(&dftio_fd_hash[fd], __ATOMIC_RELAXED);
    if (h == 0 || !(g_hashes.see(h, session) & dftracer::io::FileHashes::kFirst)) continue;
    char name[4096], named[4096];
    const long n = kernel_fd_name(fd, name, sizeof name);
    if (n <= 0) continue;
    name[n] = '\0';
    const char* shown = g_filter.as_named_in_data_dir(name, static_cast<size_t>(n), named, sizeof named) ? named : name;
    dft_hash_metadata_as("FH", shown, h);
  }
  dftio_busy = 0;
  errno = saved;
}

// ... and sets *kind to what an open in this session found at the path
// (dftio_path_kind: direct_syscall.h).
static inline __attribute__((always_inline)) uint64_t hash_if_wanted(const char* path, size_t len, unsigned* kind) {
  if (!g_filter.wanted(path, len)) return 0;
  uint64_t h = dftracer::hash64(path, len);  // == dft_hash64, inlined (the FH record's value is computed the same way)
  if (h == 0) h = 1;                         // 0 means "untraced" in the descriptor table
  const unsigned seen = g_hashes.see(h, session_now());
  if (__builtin_expect(seen & dftracer::io::FileHashes::kFirst, 0)) write_fh(path);
  *kind = seen & dftracer::io::FileHashes::kKindMask;
  return h;
}

// The name `path` is traced under: when relative, joined to the working
// directory or to `dirfd`'s name (then renamed as DFTRACER_DATA_DIR names
// it), and normalised. Returns `path` itself, `full` or `normal` (4096
// bytes each) and sets *len.
static const char* traced_name(int dirfd, const char* path, size_t* len, char* full, char* normal) {
  if (path[0] != '/' && path[0] != '\0') {
    bool joined;
    if (dirfd == AT_FDCWD) {
      joined = g_cwd.join(path, full, 4096);
    } else {
      const int saved = errno;
      joined = join_dirfd(dirfd, path, full, 4096);
      errno = saved;
      char named[4096];  // /proc's name has symlinks resolved: as DFTRACER_DATA_DIR names it
      if (joined) {
        if (size_t n = g_filter.as_named_in_data_dir(full, std::strlen(full), named, sizeof named))
          std::memcpy(full, named, n + 1);
      }
    }
    if (joined) {
      path = full;
      *len = std::strlen(path);
    }
  }
  // "/data/x/../y" is "/data/y": one fhash, one DATA_DIR answer (path_normalize.h)
  if (dftracer::io::path_needs_normalizing(path, *len)) {
    if (size_t n = dftracer::io::normalize_path(path, *len, normal, 4096)) {
      path = normal;
      *len = n;
    }
  }
  return path;
}

// A relative path or one that needs normalising: path buffers on the stack,
// so out of line -- the common call (an absolute, already normal path) keeps
// a small frame and touches no stack page 8 KiB below its caller's.
static __attribute__((noinline)) uint64_t hash_joined_or_normalised(int dirfd, const char* path, size_t len,
                                                                     unsigned* kind) {
  char full[4096], normal[4096];  // on the stack: no allocation on a hook
  path = traced_name(dirfd, path, &len, full, normal);
  return hash_if_wanted(path, len, kind);
}

// errno: only the two branches that make calls which may set it (the
// readlink of a directory descriptor, the first sight's FH record) keep it;
// the rest sets none, and saving it costs a libc call on every open.
//
// The common open (an absolute path in normal form) makes no call here:
// one pass finds the length and any "//", "/." or "/.." (path_scan.h), the
// filter, the hash and the FH set's lookup are inline.
extern "C" uint64_t dftio_open_path_hash(int dirfd, const char* path, unsigned* kind) {
  // glibc declares open, stat, access, ... __nonnull: inlined into such a
  // hook, this check was dropped as always false, and open(NULL) crashed
  // here where libc returns EFAULT. The empty asm hides the value's origin
  // from the compiler (-fno-delete-null-pointer-checks did not, under LTO).
  __asm__("" : "+r"(path));
  if (path == nullptr) return 0;
  dftio_busy = 1;
  bool odd;
  const size_t len = dftracer::io::scan::path_length_and_oddness(path, &odd);
  const bool normal = path[0] == '/' && !(len > 1 && path[len - 1] == '/') &&
                      !(odd && dftracer::io::path_needs_normalizing(path, len));
  const uint64_t h = normal ? hash_if_wanted(path, len, kind) : hash_joined_or_normalised(dirfd, path, len, kind);
  dftio_busy = 0;
  return h;
}

extern "C" uint64_t dftio_path_hash(int dirfd, const char* path) {
  unsigned kind;
  return dftio_open_path_hash(dirfd, path, &kind);
}

static_assert(dftracer::io::FileHashes::kNoRoom == DFTIO_KIND_UNKEPT && DFTIO_KIND_SPECIAL <= dftracer::io::FileHashes::kKindMask,
              "the FH set keeps a path's dftio_path_kind in its kind bits");

extern "C" dftio_path_kind dftio_learn_path_kind(uint64_t hash, int fd, int dirfd, const char* path) {
  const int saved = errno;
  struct stat st;
  // The system call itself: fstat may be one of our hooks (PRELOAD).
  const bool ok = syscall(SYS_fstat, fd, &st) == 0;
  errno = saved;
  const bool plain = ok && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
  const dftio_path_kind kind = plain ? DFTIO_KIND_FILE : DFTIO_KIND_SPECIAL;
  g_hashes.set_kind(hash, session_now(), kind);
  if (ok && S_ISDIR(st.st_mode)) dftio_remember_dir(hash, dirfd, path);
  return kind;
}

extern "C" void dftio_remember_dir(uint64_t hash, int dirfd, const char* path) {
  if (path == nullptr || g_dirs.find(hash) != nullptr) return;
  const int saved = errno;
  const int was_busy = dftio_busy;
  dftio_busy = 1;  // the copy allocates
  char full[4096], normal[4096];
  size_t len = std::strlen(path);
  const char* name = traced_name(dirfd, path, &len, full, normal);
  uint64_t h = dftracer::hash64(name, len);
  if (h == 0) h = 1;
  // Named as its open hashed it (not so if another thread changed the working
  // directory in between): kept.
  if (h == hash) g_dirs.remember(hash, name);
  dftio_busy = was_busy;
  errno = saved;
}

extern "C" const char* dftio_dir_name(int fd) { return fd < 0 ? nullptr : g_dirs.find(fd_hash(fd)); }

extern "C" int dftio_cwd_changed(int r, const char* asked) {
  if (r != 0 || !__atomic_load_n(&dftio_on, __ATOMIC_ACQUIRE) || !dftio_idle()) return r;
  int saved = errno;
  dftio_busy = 1;
  publish_cwd(asked);
  dftio_busy = 0;
  errno = saved;
  return r;
}
