#include "trace_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace dftracer_test {
namespace {

// Directories made by temp_dir(), removed when the process that made them
// exits normally. A forked child (run_in_child, or a test's own fork) that
// exits normally runs these destructors too, so each directory remembers its
// creator's pid: a child never deletes what its parent is still using.
class TempDirRegistry {
 public:
  void add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back({dir, getpid()});
  }
  ~TempDirRegistry() {
    for (const auto& d : dirs_) {
      if (d.owner != getpid()) continue;
      std::error_code ec;
      std::filesystem::remove_all(d.path, ec);
    }
  }

 private:
  struct Dir {
    std::string path;
    pid_t owner;
  };
  std::mutex mu_;
  std::vector<Dir> dirs_;
};

TempDirRegistry& temp_dirs() {
  static TempDirRegistry registry;
  return registry;
}

}  // namespace

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string read_all(const std::string& path, bool* truncated_member) {
  std::string raw = read_bytes(path);
  if (truncated_member) *truncated_member = false;
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return raw;

  std::string out;
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  size_t pos = 0;
  std::vector<char> buf(1 << 16);
  while (pos < raw.size()) {
    std::string member_out;
    inflateReset(&z);
    z.next_in = reinterpret_cast<Bytef*>(&raw[pos]);
    z.avail_in = static_cast<uInt>(raw.size() - pos);
    int rc;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf.data());
      z.avail_out = static_cast<uInt>(buf.size());
      rc = inflate(&z, Z_NO_FLUSH);
      member_out.append(buf.data(), buf.size() - z.avail_out);
    } while (rc == Z_OK);
    if (rc != Z_STREAM_END) {  // cut-off or corrupt member: keep what came out
      if (truncated_member) *truncated_member = true;
      out += member_out;
      break;
    }
    out += member_out;
    pos = raw.size() - z.avail_in;
  }
  inflateEnd(&z);
  return out;
}

std::vector<std::string> event_lines(const std::string& text, std::string* partial) {
  std::vector<std::string> lines;
  size_t pos = 0;
  if (partial) partial->clear();
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      if (partial) *partial = text.substr(pos);
      break;
    }
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line == "[" || line == "]" || line.empty()) continue;
    if (line.back() == ',') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<Event> parse_events(const std::vector<std::string>& lines) {
  std::vector<Event> events;
  events.reserve(lines.size());
  simdjson::dom::parser parser;
  for (const std::string& line : lines) {
    simdjson::dom::element doc;
    auto err = parser.parse(line).get(doc);
    if (err || !doc.is_object()) {
      ADD_FAILURE() << "not a JSON object: " << line.substr(0, 200);
      continue;
    }
    Event e;
    std::string_view sv;
    if (!doc["name"].get(sv)) e.name = std::string(sv);
    if (!doc["cat"].get(sv)) e.cat = std::string(sv);
    if (!doc["ph"].get(sv)) e.ph = std::string(sv);
    int64_t i;
    if (!doc["pid"].get(i)) e.pid = i;
    if (!doc["tid"].get(i)) e.tid = i;
    double d;
    if (!doc["ts"].get(d)) e.ts = d;
    if (!doc["dur"].get(d)) e.dur = d;
    simdjson::dom::element args;
    if (!doc["args"].get(args)) e.args_json = simdjson::minify(args);
    events.push_back(std::move(e));
  }
  return events;
}

std::string strict_json_error(const std::string& text, size_t* elements) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  auto err = parser.parse(text).get(doc);
  if (err) return simdjson::error_message(err);
  simdjson::dom::array arr;
  if (doc.get(arr)) return "top level is not an array";
  if (elements) *elements = arr.size();
  return "";
}

std::string finalized_trace_error(const std::string& text, size_t* elements) {
  if (text.empty() || text.back() != '\n') return "the file does not end in a newline";
  simdjson::dom::parser parser;
  size_t n = 0, line_no = 0, pos = 0;
  bool closed = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (closed) return where + "text after the closing \"]\"";
    if (line_no == 1) {
      if (line != "[") return where + "the first line is not \"[\"";
      continue;
    }
    if (line == "]") {
      closed = true;
      continue;
    }
    simdjson::dom::element doc;
    if (auto err = parser.parse(line).get(doc)) return where + simdjson::error_message(err);
    if (!doc.is_object()) return where + "not a JSON object";
    ++n;
  }
  if (!closed) return "no closing \"]\" line";
  if (elements) *elements = n;
  return "";
}

int64_t int_arg(const Event& e, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(e.args_json).get(doc)) return -1;
  int64_t v;
  if (doc[key].get(v)) return -1;
  return v;
}

std::string str_arg(const Event& e, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(e.args_json).get(doc)) return "<missing>";
  std::string_view v;
  if (doc[key].get(v)) return "<missing>";
  return std::string(v);
}

std::string temp_dir(const std::string& tag) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/dft-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* d = mkdtemp(buf.data());
  if (d == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return "/tmp";
  }
  temp_dirs().add(d);
  return d;
}

std::vector<std::string> files_in(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(dir + "/" + n);
  }
  closedir(d);
  return out;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  const char* old = getenv(name);
  had_ = old != nullptr;
  if (had_) old_ = old;
  if (value) setenv(name, value, 1);
  else unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (had_) setenv(name_.c_str(), old_.c_str(), 1);
  else unsetenv(name_.c_str());
}

int run_in_child(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int rc = body();
    fflush(nullptr);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int run_program(const std::string& prog, const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::string p = prog;
  std::vector<std::string> a = args, e = env;
  std::vector<char*> argv = {p.data()}, envp;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : e) envp.push_back(s.data());
  envp.push_back(nullptr);
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execve(p.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

uint64_t scaled(uint64_t n) {
  const char* s = getenv("DFTRACER_TEST_SCALE");
  double f = s ? atof(s) : 1.0;
  if (f <= 0) f = 1.0;
  uint64_t v = static_cast<uint64_t>(static_cast<double>(n) * f);
  return v ? v : 1;
}

size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace dftracer_test
