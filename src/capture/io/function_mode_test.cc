// FUNCTION mode in-process: dft_io_install() patches this test binary's GOT
// (and, through the dlopen hook, a library loaded afterwards), eight
// threads do I/O at once (this suite is the ThreadSanitizer step's I/O
// test: in-process, the hooks run outside TSan's own interceptors), errno
// survives, and every event is read back from the real trace file.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dftracer/io.h"
#include "trace_file.h"

// glibc's pre-2.33 stat entry points, which its headers no longer declare.
extern "C" {
int __xstat(int ver, const char* path, struct stat* st);
int __lxstat64(int ver, const char* path, struct stat64* st);
int __fxstat(int ver, int fd, struct stat* st);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags);
}

namespace {

using dftracer_test::Event;

struct Traced {
  std::string dir, data;
};

Traced start(const char* tag) {
  Traced t;
  t.dir = dftracer_test::temp_dir(tag);
  t.data = t.dir + "/data";
  EXPECT_EQ(mkdir(t.data.c_str(), 0755), 0);
  setenv("DFTRACER_DATA_DIR", t.data.c_str(), 1);
  setenv("DFTRACER_TIME_RESOLUTION", "ns", 1);
  EXPECT_EQ(dft_init_opt_in((t.dir + "/trace").c_str(), nullptr, -1), 0);
  EXPECT_EQ(dft_io_install(), DFT_IO_FUNCTION);
  return t;
}

std::vector<Event> finish(const Traced& t) {
  std::string path = dft_trace_path();
  dft_finalize();
  return dftracer_test::parse_events(dftracer_test::event_lines(dftracer_test::read_all(path)));
}

std::map<std::string, std::string> hashes_under(const std::vector<Event>& all, const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const Event& e : all)
    if (e.ph == "M" && e.name == "FH" && str_arg(e, "name").rfind(dir + "/", 0) == 0)
      out[str_arg(e, "name")] = str_arg(e, "value");
  return out;
}

bool is_io(const Event& e) { return e.ph == "X" && (e.cat == "POSIX" || e.cat == "STDIO"); }

TEST(FunctionMode, EightThreadsDoingIoEachCallOnce) {
  Traced t = start("io_fn_threads");
  const int kThreads = 8, kRounds = static_cast<int>(dftracer_test::scaled(200));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      std::string p = t.data + "/t" + std::to_string(i) + ".bin";
      char buf[300] = {0};
      for (int r = 0; r < kRounds; ++r) {
        int fd = open(p.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
        ASSERT_EQ(write(fd, buf, sizeof buf), static_cast<ssize_t>(sizeof buf));
        ASSERT_EQ(pread(fd, buf, sizeof buf, 0), static_cast<ssize_t>(sizeof buf));
        close(fd);
      }
    });
  for (auto& th : threads) th.join();
  std::vector<Event> all = finish(t);
  auto fh = hashes_under(all, t.data);
  ASSERT_EQ(fh.size(), static_cast<size_t>(kThreads));
  std::map<std::string, std::map<std::string, int>> calls;
  std::map<std::string, int64_t> bytes;
  for (const Event& e : all) {
    if (!is_io(e)) continue;
    calls[str_arg(e, "fhash")][e.name]++;
    if (e.name == "pread") bytes[str_arg(e, "fhash")] += int_arg(e, "ret");
  }
  for (auto& [path, hash] : fh) {
    for (const char* c : {"open", "write", "pread", "close"}) EXPECT_EQ(calls[hash][c], kRounds) << path << " " << c;
    EXPECT_EQ(bytes[hash], 300 * kRounds);
  }
}

TEST(FunctionMode, ErrnoSurvivesAndOutsideDataDirIsNotTraced) {
  Traced t = start("io_fn_errno");
  std::string inside = t.data + "/x.bin", outside = t.dir + "/y.bin";
  int fd = open(inside.c_str(), O_CREAT | O_WRONLY, 0644);
  errno = 777;
  ASSERT_EQ(write(fd, "abc", 3), 3);
  EXPECT_EQ(errno, 777) << "a successful traced call must leave errno alone";
  close(fd);
  errno = 0;
  EXPECT_EQ(open((t.data + "/missing").c_str(), O_RDONLY), -1);
  EXPECT_EQ(errno, ENOENT);
  fd = open(outside.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_EQ(write(fd, "abc", 3), 3);
  close(fd);
  std::vector<Event> all = finish(t);
  auto fh = hashes_under(all, t.dir);
  EXPECT_TRUE(fh.count(inside));
  EXPECT_FALSE(fh.count(outside));
  int writes = 0;
  for (const Event& e : all) writes += is_io(e) && e.name == "write";
  EXPECT_EQ(writes, 1);
}

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define DFTIO_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define DFTIO_TEST_SANITIZED 1
#endif
#endif

// The direct system calls of the traced open and close (direct_syscall.h):
// on once tracing is on (glibc's own open and close), a failure sets errno
// as glibc's wrapper would, a success leaves it alone, and a pthread_cancel
// from a patched object turns them off for good. In a child: that last
// step cannot be undone in this process.
TEST(FunctionMode, DirectSystemCallsKeepErrnoAndStopAtPthreadCancel) {
#ifdef DFTIO_TEST_SANITIZED
  GTEST_SKIP() << "the sanitizer builds keep glibc's wrappers (direct_syscall.h)";
#endif
  const int status = dftracer_test::run_in_child([] {
    Traced t = start("io_fn_direct");
#if defined(__x86_64__) || defined(__aarch64__)
    if (dft_io_direct_syscalls() != (DFT_IO_DIRECT_OPEN | DFT_IO_DIRECT_CLOSE)) return 1;
#endif
    const std::string p = t.data + "/x.bin";
    int fd = open(p.c_str(), O_CREAT | O_WRONLY, 0644);  // the path's kind is learned here
    if (fd < 0 || close(fd) != 0) return 2;
    errno = 0;
    if (open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644) != -1 || errno != EEXIST) return 3;
    errno = 555;
    fd = open(p.c_str(), O_RDONLY);
    if (fd < 0 || errno != 555) return 4;
    if (close(fd) != 0 || errno != 555) return 5;
    pthread_t th;
    if (pthread_create(&th, nullptr, [](void*) -> void* { for (;;) pause(); }, nullptr) != 0) return 6;
    if (pthread_cancel(th) != 0 || pthread_join(th, nullptr) != 0) return 7;
    if (dft_io_direct_syscalls() != 0) return 8;
    fd = open(p.c_str(), O_RDONLY);
    if (fd < 0 || close(fd) != 0) return 9;
    std::vector<Event> all = finish(t);
    const std::string h = hashes_under(all, t.dir)[p];
    int opens = 0, failed = 0, closes = 0;
    for (const Event& e : all) {
      if (!is_io(e) || str_arg(e, "fhash") != h) continue;
      opens += e.name == "open";
      failed += e.name == "open" && int_arg(e, "ret") == -1;
      closes += e.name == "close" && int_arg(e, "ret") == 0;
    }
    if (opens != 4 || failed != 1 || closes != 3) return 10;
    return 0;
  });
  EXPECT_EQ(status, 0) << "1: not on; 3-5: errno; 8: still on after pthread_cancel; 10: events";
}

TEST(FunctionMode, LibraryLoadedLaterIsTracedToo) {
  Traced t = start("io_fn_dlopen");
  std::string file = t.data + "/late.bin";
  int fd = open(file.c_str(), O_CREAT | O_WRONLY, 0644);
  std::string bytes(1000, 'q');
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), 1000);
  close(fd);
  void* lib = dlopen(DFTIO_PROBE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto probe = reinterpret_cast<long (*)(const char*)>(dlsym(lib, "probe_read_file"));
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe(file.c_str()), 1000);
  std::vector<Event> all = finish(t);
  auto fh = hashes_under(all, t.data);
  int64_t read_bytes = 0;
  for (const Event& e : all)
    if (is_io(e) && e.name == "read" && str_arg(e, "fhash") == fh[file]) read_bytes += int_arg(e, "ret");
  EXPECT_EQ(read_bytes, 1000) << "the reads of a library dlopen'ed after install";
  dlclose(lib);
}

// A thread that existed before tracing and the hooks started: its I/O after
// install is traced like any other (the hooks are per process, its buffer
// is attached on its first record).
TEST(FunctionMode, ThreadStartedBeforeInitIsTraced) {
  std::atomic<bool> go{false};
  std::string path;
  std::thread early([&] {
    while (!go.load()) std::this_thread::yield();
    int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
    EXPECT_EQ(write(fd, "0123456789", 10), 10);
    close(fd);
  });
  Traced t = start("io_fn_early");
  path = t.data + "/early.bin";
  go.store(true);
  early.join();
  std::vector<Event> all = finish(t);
  auto fh = hashes_under(all, t.data);
  ASSERT_TRUE(fh.count(path));
  int64_t written = 0;
  for (const Event& e : all)
    if (is_io(e) && e.name == "write" && str_arg(e, "fhash") == fh[path]) written += int_arg(e, "ret");
  EXPECT_EQ(written, 10);
}

// This binary's own calls of glibc's __xstat family are patched like any
// other, and munmap of a mapping of a traced file is an event of that file.
TEST(FunctionMode, XstatFamilyAndMunmapOfATracedMapping) {
  Traced t = start("io_fn_legacy");
  std::string file = t.data + "/m.bin";
  int fd = open(file.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  std::string bytes(8192, 'm');
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), 8192);
  struct stat st;
  struct stat64 st64;
  const int kStatVer = 1;  // _STAT_VER_LINUX on x86_64
  errno = 55;
  ASSERT_EQ(__xstat(kStatVer, file.c_str(), &st), 0);
  EXPECT_EQ(errno, 55);
  EXPECT_EQ(st.st_size, 8192);
  ASSERT_EQ(__lxstat64(kStatVer, file.c_str(), &st64), 0);
  ASSERT_EQ(__fxstat(kStatVer, fd, &st), 0);
  ASSERT_EQ(__fxstatat64(kStatVer, AT_FDCWD, file.c_str(), &st64, 0), 0);
  void* map = mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(munmap(map, 8192), 0);
  void* anon = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  ASSERT_EQ(munmap(anon, 4096), 0);
  close(fd);
  std::vector<Event> all = finish(t);
  auto fh = hashes_under(all, t.data);
  ASSERT_TRUE(fh.count(file));
  std::map<std::string, int> calls;
  for (const Event& e : all) {
    if (!is_io(e)) continue;
    EXPECT_EQ(str_arg(e, "fhash"), fh[file]) << e.name;
    calls[e.name]++;
    if (e.name == "munmap") {
      EXPECT_EQ(int_arg(e, "size"), 8192);
      EXPECT_EQ(int_arg(e, "ret"), 0);
    }
  }
  for (const char* c : {"__xstat", "__lxstat64", "__fxstat", "__fxstatat64", "mmap", "munmap"})
    EXPECT_EQ(calls[c], 1) << c;
}

// Relative paths follow this process's chdir/fchdir (the test binary's own
// calls, patched): the test starts outside DFTRACER_DATA_DIR.
TEST(FunctionMode, RelativePathsFollowChdirAndFchdir) {
  char start_dir[4096];
  ASSERT_NE(getcwd(start_dir, sizeof start_dir), nullptr);
  Traced t = start("io_fn_chdir");
  std::string sub = t.data + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  auto write_relative = [](const char* name, size_t n) {
    int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    std::string bytes(n, 'c');
    ASSERT_EQ(write(fd, bytes.data(), n), static_cast<ssize_t>(n));
    close(fd);
  };
  ASSERT_EQ(chdir(sub.c_str()), 0);
  write_relative("x.bin", 10);
  int d = open(t.data.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(fchdir(d), 0);
  close(d);
  write_relative("y.bin", 20);
  ASSERT_EQ(chdir(start_dir), 0);
  std::vector<Event> all = finish(t);
  auto fh = hashes_under(all, t.data);
  std::map<std::string, int64_t> written;
  for (const Event& e : all)
    if (is_io(e) && e.name == "write")
      for (auto& [path, hash] : fh)
        if (hash == str_arg(e, "fhash")) written[path] += int_arg(e, "ret");
  EXPECT_EQ(written, (std::map<std::string, int64_t>{{sub + "/x.bin", 10}, {t.data + "/y.bin", 20}}));
}

}  // namespace
