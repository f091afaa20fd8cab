#include "io_view.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "event_category.hpp"
#include "event_decoder.hpp"
#include "reader_threads.hpp"
#include "summary.hpp"  // append_json_string

namespace dftracer::analyze {

namespace {

constexpr size_t kFhash = 0, kRet = 1, kValue = 2;  // Event::extra_args slots

// Data calls, by the symbol names DFTracer and we record.
int direction(std::string_view name) {
  static const std::string_view kReads[] = {"read", "pread", "pread64", "readv", "preadv", "preadv2", "fread", "fgets"};
  static const std::string_view kWrites[] = {"write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2", "fwrite"};
  for (std::string_view r : kReads)
    if (name == r) return 1;
  for (std::string_view w : kWrites)
    if (name == w) return 2;
  return 0;
}

// The start of the `width`-wide bin holding t (t may be negative).
int64_t floor_to(int64_t t, int64_t width) {
  int64_t q = t / width;
  if (t % width < 0) --q;
  return q * width;
}

int64_t to_int(std::string_view s) {
  if (s.empty() || s.size() > 24) return 0;
  char buf[32];
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  return std::strtoll(buf, nullptr, 10);
}

// io_view()'s own consumer: a decoder and an accumulator.
class IoAggregator : public LineConsumer {
 public:
  explicit IoAggregator(const IoOptions& o) : acc_(o) { decoder_.capture_args(IoAccumulator::capture()); }

  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok) acc_.add(ev_);
    return st;
  }

  IoAccumulator acc_;

 private:
  EventDecoder decoder_;
  Event ev_;
};

double mib(uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

// The `top` rows with the most time (0: all; ties in key order), then one
// line for the rest, so a run over a million sample files stays readable.
void table(std::ostream& os, const char* title, const char* key, const std::map<std::string, IoStats>& m, size_t top) {
  std::vector<std::pair<std::string, IoStats>> rows(m.begin(), m.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.time_ns > b.second.time_ns; });
  char line[512];
  os << title << "\n";
  std::snprintf(line, sizeof line, "  %-48s %9s %12s %12s %12s %8s\n", key, "ops", "read MiB", "write MiB", "time us",
                "small");
  os << line;
  auto row = [&](const std::string& k, const IoStats& s) {
    std::string name = k.size() > 48 ? "..." + k.substr(k.size() - 45) : k;
    for (char& c : name)  // a newline or tab in a file name would break the table's lines
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    std::snprintf(line, sizeof line, "  %-48s %9llu %12.3f %12.3f %12.1f %8llu\n", name.c_str(),
                  static_cast<unsigned long long>(s.ops), mib(s.read_bytes), mib(s.write_bytes), s.time_ns / 1e3,
                  static_cast<unsigned long long>(s.small_reads + s.small_writes));
    os << line;
  };
  const size_t shown = top && rows.size() > top ? top : rows.size();
  for (size_t i = 0; i < shown; ++i) row(rows[i].first, rows[i].second);
  if (shown < rows.size()) {
    IoStats rest;
    for (size_t i = shown; i < rows.size(); ++i) rest.add(rows[i].second);
    row("(" + std::to_string(rows.size() - shown) + " more " + key + "s)", rest);
  }
  os << "\n";
}

void json_stats(std::string& out, const IoStats& s, const char* kind = nullptr) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "{\"ops\":%llu,\"reads\":%llu,\"writes\":%llu,\"read_bytes\":%llu,\"write_bytes\":%llu,"
                "\"small_reads\":%llu,\"small_writes\":%llu,\"time_us\":%.3f}",
                static_cast<unsigned long long>(s.ops), static_cast<unsigned long long>(s.reads),
                static_cast<unsigned long long>(s.writes), static_cast<unsigned long long>(s.read_bytes),
                static_cast<unsigned long long>(s.write_bytes), static_cast<unsigned long long>(s.small_reads),
                static_cast<unsigned long long>(s.small_writes), s.time_ns / 1e3);
  out += buf;
  if (kind != nullptr) {
    out.back() = ',';
    out += "\"kind\":\"";
    out += kind;
    out += "\"}";
  }
}

void json_map(std::string& out, const char* name, const std::map<std::string, IoStats>& m,
              const std::map<std::string, IoFileKind>* kinds = nullptr) {
  out += ",\"";
  out += name;
  out += "\":{";
  bool first = true;
  for (const auto& [k, s] : m) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, k);
    out += ':';
    const auto kind = kinds != nullptr ? kinds->find(k) : std::map<std::string, IoFileKind>::const_iterator();
    json_stats(out, s, kinds != nullptr && kind != kinds->end() ? io_kind_name(kind->second) : nullptr);
  }
  out += '}';
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// A shared library: "x.so" or a versioned "x.so.1.2" (digits and dots after).
bool is_shared_library(std::string_view name) {
  if (ends_with(name, ".so")) return true;
  const size_t at = name.rfind(".so.");
  if (at == std::string_view::npos) return false;
  for (char c : name.substr(at + 4))
    if (c != '.' && (c < '0' || c > '9')) return false;
  return true;
}

size_t python_prefix_len(std::string_view path);

// Each directory above `path` ("/a/b/c" -> "/a/b", "/a", ...; never "/").
template <typename Fn>
void for_each_parent(std::string_view path, Fn fn) {
  for (size_t at = path.rfind('/'); at != std::string_view::npos && at > 0; at = path.rfind('/', at - 1))
    fn(path.substr(0, at));
}

}  // namespace

const char* io_kind_name(IoFileKind k) {
  return k == IoFileKind::Runtime ? "runtime" : k == IoFileKind::Checkpoint ? "checkpoint" : "data";
}

IoFileKind io_file_kind(std::string_view path) {
  if (path.empty() || path[0] != '/') return IoFileKind::Data;  // no path to judge by
  // The kernel's files, the system's configuration (OpenSSL's openssl.cnf,
  // read line by line at `import hashlib`; mime.types, localtime) and its
  // libraries' own files.
  static const std::string_view kRuntimePrefixes[] = {"/proc/",     "/sys/", "/dev/",  "/etc/",
                                                      "/usr/lib/",  "/usr/lib64/",     "/lib/",
                                                      "/lib64/",    "/usr/share/locale/", "/usr/share/zoneinfo/"};
  for (std::string_view p : kRuntimePrefixes)
    if (path.substr(0, p.size()) == p || path == p.substr(0, p.size() - 1)) return IoFileKind::Runtime;
  static const std::string_view kRuntimeParts[] = {"/__pycache__", "/site-packages", "/dist-packages", ".dist-info",
                                                   ".egg-info",    "/lib-dynload",   ".pfw",           "/torchinductor_",
                                                   "/.triton/"};
  for (std::string_view part : kRuntimeParts)
    if (path.find(part) != std::string_view::npos) return IoFileKind::Runtime;
  const std::string_view name = path.substr(path.rfind('/') + 1);
  static const std::string_view kRuntimeSuffixes[] = {".py", ".pyc", ".pyo", ".pth"};
  for (std::string_view tail : kRuntimeSuffixes)
    if (ends_with(name, tail)) return IoFileKind::Runtime;
  // ".../lib/python3.11/..." (the standard library and its site-packages),
  // ".../bin/python3" (the interpreter itself).
  if (is_shared_library(name) || python_prefix_len(path) != std::string_view::npos) return IoFileKind::Runtime;
  return IoFileKind::Data;
}

namespace {

// The length of the Python installation's directory a path lies in ("/opt/py"
// of "/opt/py/lib/python3.11/..." or of "/opt/py/bin/python3"; 0 for
// "/lib/python3/..."), or npos when it names none.
size_t python_prefix_len(std::string_view path) {
  for (size_t at = path.find("/lib/python"); at != std::string_view::npos; at = path.find("/lib/python", at + 1)) {
    std::string_view rest = path.substr(at + 11);
    if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') return at;
  }
  const size_t bin = path.rfind("/bin/python");
  if (bin != std::string_view::npos && path.find('/', bin + 5) == std::string_view::npos) return bin;
  return std::string_view::npos;
}

// v.file_kind and the per-kind totals, from the named by_file rows; a data
// file in `saved` is a checkpoint's.
void classify_files(IoView& v, const std::unordered_set<std::string>& saved) {
  std::vector<std::string_view> paths;
  paths.reserve(v.by_file.size());
  for (const auto& [path, s] : v.by_file) paths.push_back(path);
  const std::vector<IoFileKind> kinds = io_file_kinds(paths);
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string path(paths[i]);
    v.file_kind[path] = kinds[i];
    const IoStats& s = v.by_file[path];
    if (kinds[i] == IoFileKind::Runtime) {
      v.runtime.add(s);
      ++v.runtime_files;
    } else if (saved.count(path)) {
      v.file_kind[path] = IoFileKind::Checkpoint;
      v.checkpoint.add(s);
      ++v.checkpoint_files;
    } else {
      v.data.add(s);
      ++v.data_files;
    }
  }
}

}  // namespace

std::vector<IoFileKind> io_file_kinds(const std::vector<std::string_view>& paths) {
  std::unordered_set<std::string_view> prefixes;  // Python installations (not "/" itself)
  for (std::string_view path : paths)
    if (size_t n = python_prefix_len(path); n != std::string_view::npos && n > 0) prefixes.insert(path.substr(0, n));
  std::vector<IoFileKind> kinds(paths.size());
  std::unordered_set<std::string_view> above_runtime, above_data;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string_view path = paths[i];
    IoFileKind k = io_file_kind(path);
    // Anything in a Python installation (its bin/, its build's Modules/Setup).
    for_each_parent(path, [&](std::string_view d) {
      if (prefixes.count(d)) k = IoFileKind::Runtime;
    });
    if (prefixes.count(path)) k = IoFileKind::Runtime;
    kinds[i] = k;
    if (k == IoFileKind::Runtime) for_each_parent(path, [&](std::string_view d) { above_runtime.insert(d); });
  }
  // Data files proper: not themselves a directory leading to runtime files.
  for (size_t i = 0; i < paths.size(); ++i)
    if (kinds[i] == IoFileKind::Data && !above_runtime.count(paths[i]))
      for_each_parent(paths[i], [&](std::string_view d) { above_data.insert(d); });
  // A directory on the way to runtime files only (the import system's stat
  // of the installation's parents: /home, /home/u/.venvs), and any directory
  // above a Python installation, also one above data files: resolving the
  // interpreter's paths lstat's each of them (realpath: 1,329 lstat of
  // /root, the home above a pyenv installation and a Hugging Face cache file,
  // on a Trainer run), which no data loading does.
  std::unordered_set<std::string_view> above_prefix;
  for (std::string_view prefix : prefixes) for_each_parent(prefix, [&](std::string_view d) { above_prefix.insert(d); });
  // A directory holding a module file (a script, a module, an extension) or
  // a package (`python -m pkg.mod` from the working directory) is on the
  // import path, or a package: the import system stat's each such directory
  // once per import it searches there (FileFinder's mtime check), 232 stat
  // of the script's directory on a Trainer run whose output lay under it.
  // Data loading stat's files, not their directory over and over.
  std::unordered_set<std::string_view> module_dirs;
  for (std::string_view path : paths) {
    const size_t slash = path.rfind('/');
    if (slash == std::string_view::npos || slash == 0) continue;
    const std::string_view name = path.substr(slash + 1), dir = path.substr(0, slash);
    if (ends_with(name, ".py") || ends_with(name, ".pyc") || is_shared_library(name)) module_dirs.insert(dir);
    if (name == "__init__.py")
      if (const size_t up = dir.rfind('/'); up != std::string_view::npos && up > 0) module_dirs.insert(dir.substr(0, up));
  }
  for (size_t i = 0; i < paths.size(); ++i)
    if (kinds[i] == IoFileKind::Data && above_runtime.count(paths[i]) &&
        (!above_data.count(paths[i]) || above_prefix.count(paths[i]) || module_dirs.count(paths[i])))
      kinds[i] = IoFileKind::Runtime;
  return kinds;
}

void IoStats::add(const IoStats& o) {
  ops += o.ops;
  reads += o.reads;
  writes += o.writes;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
  small_reads += o.small_reads;
  small_writes += o.small_writes;
  time_ns += o.time_ns;
}

ArgCapture IoAccumulator::capture() {
  ArgCapture c;
  c.keys[kFhash] = "fhash";
  c.keys[kRet] = "ret";
  c.keys[kValue] = "value";
  c.size = 3;
  return c;
}

void IoAccumulator::add(const Event& ev) {
  if (ev.is_metadata()) {
    if (ev.name == "FH" && !ev.extra_args[kValue].empty())
      paths_.emplace(std::string(ev.extra_args[kValue]), std::string(ev.meta_name));
    return;
  }
  if (ev.is_complete() && ev.cat == "checkpoint") saved_by(ev);
  if (!ev.is_complete() || !is_io_cat(ev.cat)) return;
  {
    if (last_recent_ == nullptr || ev.pid_text != std::string_view(last_pid_) || ev.tid_text != std::string_view(last_tid_)) {
      last_pid_.assign(ev.pid_text);
      last_tid_.assign(ev.tid_text);
      last_recent_ = &recent_[{last_pid_, last_tid_}];
    }
    Recent& r = *last_recent_;
    Call call{ev.ts_ns, {}, 0};
    const std::string_view h = ev.extra_args[kFhash];
    if (h.size() <= sizeof call.fhash) {
      std::memcpy(call.fhash, h.data(), h.size());
      call.size = static_cast<uint8_t>(h.size());
    } else {
      const uint64_t hashed = std::hash<std::string_view>{}(h);
      std::memcpy(call.fhash, &hashed, sizeof hashed);
      call.size = 255;
    }
    if (r.calls.size() < kRecent) r.calls.push_back(call);
    else r.calls[r.next] = call;
    r.next = (r.next + 1) & (kRecent - 1);
  }
  IoStats s;
  s.ops = 1;
  s.time_ns = ev.has_dur ? ev.dur_ns : 0;
  int dir = direction(ev.name);
  int64_t ret = to_int(ev.extra_args[kRet]);
  uint64_t moved = ret > 0 ? static_cast<uint64_t>(ret) : 0;
  if (dir == 1) {
    s.reads = 1;
    s.read_bytes = moved;
    s.small_reads = moved < opt_.small_bytes;
  } else if (dir == 2) {
    s.writes = 1;
    s.write_bytes = moved;
    s.small_writes = moved < opt_.small_bytes;
  }
  view_.total.add(s);
  slot(view_.by_file, last_file_, ev.extra_args[kFhash]).add(s);
  slot(view_.by_call, last_call_, ev.name).add(s);
  slot(view_.by_process, last_process_, ev.pid_text).add(s);
  if (ev.has_ts && dir != 0) {
    view_.by_bin[floor_to(ev.ts_ns, opt_.bin_ns)].add(s);
    fit_bins();
  }
}

// A long fhash (not ours: DFTracer's numeric ones are shorter) by its hash.
static std::string long_fhash_key(uint64_t hashed) { return "#" + std::to_string(hashed); }

void IoAccumulator::saved_by(const Event& c) {
  if (!c.has_ts || !c.has_dur) return;
  auto it = recent_.find({std::string(c.pid_text), std::string(c.tid_text)});
  if (it == recent_.end()) return;
  for (const Call& call : it->second.calls) {
    if (call.ts < c.ts_ns || call.ts > c.ts_ns + c.dur_ns) continue;
    if (call.size <= sizeof call.fhash) {
      saved_.emplace(call.fhash, call.size);
    } else {
      uint64_t hashed;
      std::memcpy(&hashed, call.fhash, sizeof hashed);
      saved_.insert(long_fhash_key(hashed));
    }
  }
}

IoStats& IoAccumulator::slot(std::map<std::string, IoStats>& m, LastKey& last, std::string_view key) {
  if (!last.valid || key != std::string_view(last.key)) {
    last.key.assign(key);
    last.it = m.try_emplace(last.key).first;
    last.valid = true;
  }
  return last.it->second;
}

void IoAccumulator::fit_bins() {
  if (!opt_.max_bins) return;
  while (!view_.by_bin.empty() &&
         static_cast<uint64_t>((view_.by_bin.rbegin()->first - view_.by_bin.begin()->first) / opt_.bin_ns) + 1 >
             opt_.max_bins)
    widen_bins(opt_.bin_ns * 2);
}

void IoAccumulator::widen_bins(int64_t bin_ns) {
  std::map<int64_t, IoStats> wider;
  for (const auto& [k, s] : view_.by_bin) wider[floor_to(k, bin_ns)].add(s);
  view_.by_bin = std::move(wider);
  opt_.bin_ns = bin_ns;
}

void IoAccumulator::merge(const IoAccumulator& o) {
  view_.total.add(o.view_.total);
  for (auto& [k, s] : o.view_.by_file) view_.by_file[k].add(s);
  for (auto& [k, s] : o.view_.by_call) view_.by_call[k].add(s);
  for (auto& [k, s] : o.view_.by_process) view_.by_process[k].add(s);
  // Both widths are bin_ns x 2^k from the same start: the wider one holds
  // whole bins of the other.
  if (o.opt_.bin_ns > opt_.bin_ns) widen_bins(o.opt_.bin_ns);
  for (auto& [k, s] : o.view_.by_bin) view_.by_bin[floor_to(k, opt_.bin_ns)].add(s);
  fit_bins();
  paths_.insert(o.paths_.begin(), o.paths_.end());
  saved_.insert(o.saved_.begin(), o.saved_.end());
}

IoView IoAccumulator::finish(const ReadStats& stats) const {
  IoView v = view_;
  v.options = opt_;
  v.stats = stats;
  // fhash -> the path its FH record names (the records may sit in any file).
  std::map<std::string, IoStats> named;
  std::unordered_set<std::string> saved;  // the paths touched inside a checkpoint event
  for (auto& [hash, s] : v.by_file) {
    auto it = paths_.find(hash);
    const std::string path = it != paths_.end() ? it->second : (hash.empty() ? std::string("(no fhash)") : "fhash:" + hash);
    named[path].add(s);
    if (saved_.count(hash.size() <= 16 ? hash : long_fhash_key(std::hash<std::string_view>{}(hash)))) saved.insert(path);
  }
  v.by_file = std::move(named);
  classify_files(v, saved);
  if (!v.by_bin.empty()) v.first_bin_ns = v.by_bin.begin()->first;
  return v;
}

IoView io_view(const std::vector<std::string>& files, const IoOptions& options, unsigned threads,
               const ReadOptions& read_options) {
  threads = useful_threads(files, threads, read_options);
  std::vector<std::unique_ptr<IoAggregator>> aggs;
  std::vector<LineConsumer*> consumers;
  for (unsigned t = 0; t < threads; ++t) {
    aggs.push_back(std::make_unique<IoAggregator>(options));
    consumers.push_back(aggs.back().get());
  }
  ReadStats stats = read_traces(files, consumers, read_options);
  for (unsigned t = 1; t < threads; ++t) aggs[0]->acc_.merge(aggs[t]->acc_);
  return aggs[0]->acc_.finish(stats);
}

namespace {

// by_file's files of one kind.
std::map<std::string, IoStats> files_of(const IoView& v, IoFileKind kind) {
  std::map<std::string, IoStats> out;
  for (const auto& [path, s] : v.by_file) {
    auto k = v.file_kind.find(path);
    if ((k == v.file_kind.end() ? IoFileKind::Data : k->second) == kind) out.emplace(path, s);
  }
  return out;
}

std::map<std::string, IoStats> data_files(const IoView& v) { return files_of(v, IoFileKind::Data); }

std::string summary_line(const IoView& v) {
  const IoStats& t = v.data;
  char line[640];
  std::snprintf(line, sizeof line,
                "Data I/O: %llu calls, %.1f us; %llu reads %.3f MiB, %llu writes %.3f MiB; small (< %llu B): %llu reads, "
                "%llu writes (all I/O, the runtime's too: %llu calls, %.1f us)",
                static_cast<unsigned long long>(t.ops), t.time_ns / 1e3, static_cast<unsigned long long>(t.reads),
                mib(t.read_bytes), static_cast<unsigned long long>(t.writes), mib(t.write_bytes),
                static_cast<unsigned long long>(v.options.small_bytes), static_cast<unsigned long long>(t.small_reads),
                static_cast<unsigned long long>(t.small_writes), static_cast<unsigned long long>(v.total.ops),
                v.total.time_ns / 1e3);
  return line;
}

std::string rows_json(const std::map<std::string, IoStats>& m, size_t top) {
  std::vector<std::pair<std::string, IoStats>> rows(m.begin(), m.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.time_ns > b.second.time_ns; });
  if (top && rows.size() > top) rows.resize(top);
  std::string o = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    o += i ? ",[" : "[";
    append_json_string(o, rows[i].first);
    const IoStats& s = rows[i].second;
    char buf[128];
    std::snprintf(buf, sizeof buf, ",%llu,%.3f,%llu,%llu]", static_cast<unsigned long long>(s.ops), s.time_ns / 1e3,
                  static_cast<unsigned long long>(s.read_bytes), static_cast<unsigned long long>(s.write_bytes));
    o += buf;
  }
  return o + "]";
}

}  // namespace

std::string io_report_json(const IoView& v, size_t top) {
  std::string o = "{\"summary\":";
  append_json_string(o, summary_line(v));
  o += ",\"runtime\":";
  append_json_string(o, runtime_line(v));
  o += ",\"checkpoint\":";
  append_json_string(o, checkpoint_io_line(v));
  o += ",\"by_file\":" + rows_json(data_files(v), top) + ",\"by_call\":" + rows_json(v.by_call, top) +
       ",\"by_process\":" + rows_json(v.by_process, top);
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"bandwidth\":{\"bin_s\":%.9g,\"bins\":[", v.options.bin_ns / 1e9);
  o += buf;
  bool first = true;
  for (const auto& [bin, s] : v.by_bin) {
    std::snprintf(buf, sizeof buf, "%s[%.9g,%llu,%llu]", first ? "" : ",", (bin - v.first_bin_ns) / 1e9,
                  static_cast<unsigned long long>(s.read_bytes), static_cast<unsigned long long>(s.write_bytes));
    o += buf;
    first = false;
  }
  return o + "]}}";
}

std::string checkpoint_io_line(const IoView& v) {
  if (!v.checkpoint_files) return "";
  char line[256];
  std::snprintf(line, sizeof line,
                "Checkpoint I/O (files touched inside checkpoint events): %llu calls, %.1f us; read %.3f MiB, wrote "
                "%.3f MiB over %zu files",
                static_cast<unsigned long long>(v.checkpoint.ops), v.checkpoint.time_ns / 1e3,
                mib(v.checkpoint.read_bytes), mib(v.checkpoint.write_bytes), v.checkpoint_files);
  return line;
}

std::string runtime_line(const IoView& v) {
  if (!v.runtime_files) return "";
  char line[256];
  std::snprintf(line, sizeof line, "Python imports and libraries (runtime I/O): %llu calls, %.1f us over %zu files",
                static_cast<unsigned long long>(v.runtime.ops), v.runtime.time_ns / 1e3, v.runtime_files);
  return line;
}

IoOptions io_report_options() {
  IoOptions o;
  o.bin_ns = 1000000;
  o.max_bins = 120;
  return o;
}

void write_io_table(std::ostream& os, const IoView& v, size_t top) {
  char line[512];
  if (v.total.ops == 0) {
    os << "no POSIX or STDIO events in the input\n";
    return;
  }
  os << summary_line(v) << "\n\n";
  if (v.data_files)
    table(os, "by data file", "file", data_files(v), top);
  else
    os << "by data file\n  (none: every traced file is the runtime's or a checkpoint's)\n\n";
  if (const std::string c = checkpoint_io_line(v); !c.empty()) {
    os << c << "\n\n";
    table(os, "by checkpoint file", "file", files_of(v, IoFileKind::Checkpoint), top);
  }
  if (const std::string r = runtime_line(v); !r.empty()) os << r << "\n\n";
  table(os, "by call", "call", v.by_call, top);
  table(os, "by process", "pid", v.by_process, top);
  double bin_s = v.options.bin_ns / 1e9;
  std::snprintf(line, sizeof line, "bandwidth over time (%.3g s bins)\n  %10s %14s %14s\n", bin_s, "t s", "read MiB/s",
                "write MiB/s");
  os << line;
  for (const auto& [bin, s] : v.by_bin) {
    std::snprintf(line, sizeof line, "  %10.3f %14.3f %14.3f\n", (bin - v.first_bin_ns) / 1e9, mib(s.read_bytes) / bin_s,
                  mib(s.write_bytes) / bin_s);
    os << line;
  }
}

void write_io_json(std::ostream& os, const IoView& v) {
  std::string out = "{\"total\":";
  json_stats(out, v.total);
  out += ",\"small_bytes\":" + std::to_string(v.options.small_bytes);
  json_map(out, "by_file", v.by_file, &v.file_kind);
  out += ",\"by_kind\":{\"data\":";
  json_stats(out, v.data);
  out += ",\"runtime\":";
  json_stats(out, v.runtime);
  out += ",\"checkpoint\":";
  json_stats(out, v.checkpoint);
  out += '}';
  json_map(out, "by_call", v.by_call);
  json_map(out, "by_process", v.by_process);
  out += ",\"bandwidth\":{\"bin_s\":" + std::to_string(v.options.bin_ns / 1e9) + ",\"bins\":[";
  bool first = true;
  for (const auto& [bin, s] : v.by_bin) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s{\"t_s\":%.6f,\"read_bytes\":%llu,\"write_bytes\":%llu}", first ? "" : ",",
                  (bin - v.first_bin_ns) / 1e9, static_cast<unsigned long long>(s.read_bytes),
                  static_cast<unsigned long long>(s.write_bytes));
    out += buf;
    first = false;
  }
  out += "]}}\n";
  os << out;
}

}  // namespace dftracer::analyze
