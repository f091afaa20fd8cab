#include "calibrate_torch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <simdjson.h>

#include "python_delegate.hpp"

namespace dftracer::analyze {

namespace {

// argv[1]: the thread counts, comma-separated. Prints one JSON line
// starting {"dftracer_torch_calibration": (anything else it prints, a
// warning included, is ignored). Each figure is the best of 3 trials of at
// least 50 ms after a warm-up call: other processes only ever slow a trial.
constexpr const char* kScript = R"PY(
import json, sys, time
try:
    import torch
    import torch.nn.functional as F
except Exception as e:
    print(json.dumps({"dftracer_torch_calibration": 1, "error": "cannot import torch: %s" % str(e).splitlines()[0]}))
    sys.exit(0)

def rate(fn, work):
    fn()
    t0 = time.perf_counter(); fn(); one = time.perf_counter() - t0
    reps = max(1, int(0.05 / max(one, 1e-6)))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return work / best * 1e-9

out = []
with torch.no_grad():
    for t in [int(x) for x in sys.argv[1].split(",")]:
        torch.set_num_threads(t)
        for n in [512, 1024, 2048] + ([4096] if t >= 4 else []):
            a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
            out.append({"kernel": "torch.mm %dx%d float32" % (n, n), "threads": t,
                        "gflops": rate(lambda: torch.mm(a, b, out=c), 2.0 * n ** 3)})
        x, w = torch.randn(8, 64, 56, 56), torch.randn(64, 64, 3, 3)
        out.append({"kernel": "torch conv2d 8x64x56x56, 64 3x3 filters, float32", "threads": t,
                    "gflops": rate(lambda: F.conv2d(x, w, padding=1), 2.0 * 8 * 64 * 56 * 56 * 64 * 9)})
        n = (64 << 20) // 4
        a, b, c = torch.ones(n), torch.ones(n), torch.empty(n)
        out.append({"kernel": "torch copy_ 64 MiB float32 (8 bytes per element)", "threads": t,
                    "gbps": rate(lambda: c.copy_(a), 8.0 * n)})
        out.append({"kernel": "torch add 64 MiB float32 (12 bytes per element)", "threads": t,
                    "gbps": rate(lambda: torch.add(a, b, out=c), 12.0 * n)})
print(json.dumps({"dftracer_torch_calibration": 1, "torch": torch.__version__, "figures": out}))
)PY";

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs `argv` with stdout and stderr into one pipe; returns what it wrote
// and its wait status (-1: could not start, the text says why; -2: killed
// at the deadline).
std::string run_captured(const std::vector<std::string>& argv, double timeout_s, int& status) {
  status = -1;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "";
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // posix_spawn, not fork: da.calibrate runs this inside a threaded Python.
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::strerror(rc);
  }
  ::close(fds[1]);
  std::string out;
  const double deadline = now_s() + timeout_s;
  bool killed = false;
  for (;;) {
    const double left = deadline - now_s();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR) break;
    if (p.revents == 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  status = killed ? -2 : ws;
  return out;
}

// The last line of `text` that is not empty, for a note.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

TorchFigures measure_torch(const std::vector<unsigned>& thread_counts, double timeout_s) {
  TorchFigures r;
  r.python = python_executable();
  std::string counts;
  for (unsigned t : thread_counts) counts += (counts.empty() ? "" : ",") + std::to_string(t);
  int status = 0;
  const std::string out = run_captured({r.python, "-c", kScript, counts}, timeout_s, status);
  const size_t at = out.rfind("{\"dftracer_torch_calibration\"");
  if (status == -2) {
    r.note = r.python + " did not finish the torch measurement in " + std::to_string(int(timeout_s)) + " s";
    return r;
  }
  if (at == std::string::npos) {
    const std::string why = last_line(out);
    r.note = "cannot run " + r.python + (why.empty() ? std::string() : ": " + why);
    return r;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(out.substr(at, out.find('\n', at) - at))).get(doc)) {
    r.note = r.python + " printed a torch measurement that is not JSON";
    return r;
  }
  std::string_view sv;
  if (!doc["error"].get_string().get(sv)) {
    r.note = r.python + ": " + std::string(sv);
    return r;
  }
  if (!doc["torch"].get_string().get(sv)) r.version = std::string(sv);
  simdjson::dom::array figs;
  if (doc["figures"].get_array().get(figs)) {
    r.note = r.python + " printed no torch figures";
    return r;
  }
  for (simdjson::dom::element f : figs) {
    KernelFigure k;
    int64_t t = 0;
    double v = 0;
    if (!f["kernel"].get_string().get(sv)) k.kernel = std::string(sv);
    if (!f["threads"].get_int64().get(t) && t > 0) k.threads = static_cast<unsigned>(t);
    if (!f["gflops"].get_double().get(v)) k.gflops = v;
    if (!f["gbps"].get_double().get(v)) k.gbps = v;
    if (!k.kernel.empty() && k.threads && (k.gflops > 0 || k.gbps > 0)) r.figures.push_back(std::move(k));
  }
  if (r.figures.empty()) r.note = r.python + " printed no torch figures";
  return r;
}

}  // namespace dftracer::analyze
