#include "trace_reader.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <vector>

#include "gzip_members.hpp"
#include "json_member.hpp"
#include "path_check.hpp"
#include "trace_index.hpp"
#include "trace_time.hpp"
#include "mapped_file.hpp"

namespace dftracer::analyze {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// ReadStats

void ReadStats::add(const ReadStats& o) {
  files += o.files;
  input_bytes += o.input_bytes;
  json_bytes += o.json_bytes;
  events += o.events;
  malformed += o.malformed;
  bad_fields += o.bad_fields;
  truncated_members += o.truncated_members;
  corrupt_members += o.corrupt_members;
  empty_files += o.empty_files;
  bad_indexes += o.bad_indexes;
  boundary_mismatches += o.boundary_mismatches;
  oversized += o.oversized;
  indexed_files += o.indexed_files;
}

bool ReadStats::any_problem() const {
  return malformed || bad_fields || truncated_members || corrupt_members || empty_files || bad_indexes ||
         boundary_mismatches || oversized;
}

std::string ReadStats::problems_line() const {
  std::string s;
  auto part = [&s](uint64_t n, const char* one, const char* many) {
    if (!n) return;
    s += s.empty() ? "skipped " : ", ";
    s += std::to_string(n) + " " + (n == 1 ? one : many);
  };
  part(malformed, "malformed or partial line", "malformed or partial lines");
  part(bad_fields, "event with wrongly typed fields", "events with wrongly typed fields");
  part(truncated_members, "truncated gzip member", "truncated gzip members");
  part(corrupt_members, "corrupt gzip member", "corrupt gzip members");
  part(empty_files, "empty file", "empty files");
  part(bad_indexes, "mismatched .idx sidecar (scanned instead)", "mismatched .idx sidecars (scanned instead)");
  part(boundary_mismatches, "gzip piece boundary mismatch", "gzip piece boundary mismatches");
  part(oversized, "line or document over the size limit", "lines or documents over the size limit");
  if (!s.empty()) s += " (read " + std::to_string(events) + " events from " + std::to_string(files) + " files)";
  return s;
}

const char* unsupported_cpu_reason() {
#if defined(__x86_64__) && defined(__AVX2__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("bmi2"))
    return "this build of the analyzer needs a CPU with AVX2 and BMI2 (x86-64-v3); rebuild with "
           "-DDFTRACER_ANALYZE_ARCH= for a portable one";
#endif
  return nullptr;
}

// ---------------------------------------------------------------------------
// Timestamp text

namespace {

// Calls replace(key, depth, value, out) for each key of `ev` (one JSON
// object's text) whose value is a bare number (depth 1: a top-level key, 2:
// one in an object under it); a true answer (with the new text in *out)
// replaces that value. Returns `ev` with the replacements.
template <typename F>
std::string rewrite_numbers(std::string_view ev, F&& replace) {
  auto blank = [&](size_t i) { return i < ev.size() && std::isspace(static_cast<unsigned char>(ev[i])); };
  std::string result, value;
  size_t copied = 0, depth = 0, key = 0;
  bool in_string = false;
  for (size_t i = 0; i < ev.size(); ++i) {
    const char c = ev[i];
    if (!in_string) {
      if (c == '"') in_string = true, key = i;
      else if (c == '{' || c == '[') ++depth;
      else if (c == '}' || c == ']') --depth;
      continue;
    }
    if (c == '\\') {
      ++i;
      continue;
    }
    if (c != '"') continue;
    in_string = false;
    size_t b = i + 1;
    while (blank(b)) ++b;
    if (b >= ev.size() || ev[b] != ':') continue;  // a string value, not a key
    ++b;
    while (blank(b)) ++b;
    size_t e = b;
    while (e < ev.size() && (std::isdigit(static_cast<unsigned char>(ev[e])) || ev[e] == '.' || ev[e] == '-' ||
                             ev[e] == '+' || ev[e] == 'e' || ev[e] == 'E'))
      ++e;
    if (e == b || !replace(ev.substr(key + 1, i - key - 1), depth, ev.substr(b, e - b), &value)) continue;
    result.append(ev.substr(copied, b - copied)).append(value);
    copied = e;
    i = e - 1;
  }
  return result.append(ev.substr(copied));
}

}  // namespace

bool declares_ns_times(std::string_view head) {
  // `"name":"time_metric"` and, on its line, `"value":"NS"`, spaced as any writer spaces them.
  constexpr std::string_view kMetric = "\"time_metric\"";
  for (size_t k = head.find(kMetric); k != std::string_view::npos; k = head.find(kMetric, k + kMetric.size())) {
    if (!is_value_of(head, k, "\"name\"")) continue;
    size_t bol = head.rfind('\n', k);
    bol = bol == std::string_view::npos ? 0 : bol + 1;
    std::string_view line = head.substr(bol, head.find('\n', k) - bol);
    size_t v = member_value_at(line, "\"value\"");
    if (v != std::string_view::npos) return line.compare(v, 4, "\"NS\"") == 0;  // US (or another unit): microseconds
  }
  return false;
}

std::string ns_times_to_us(std::string_view line) {
  return rewrite_numbers(line, [](std::string_view key, size_t depth, std::string_view v, std::string* out) {
    const bool time = depth == 1 ? key == "ts" || key == "dur"
                                 : depth == 2 && (key == "dur" || key == "dur_sum" || key == "dur_min" || key == "dur_max");
    if (!time || v.find_first_not_of("0123456789") != std::string_view::npos) return false;
    std::string digits(v.size() < 4 ? 4 - v.size() : 0, '0');
    digits.append(v);
    out->assign(digits, 0, digits.size() - 3).append(".").append(digits, digits.size() - 3, 3);
    return true;
  });
}

// "123" -> 123 when the whole string is a JSON number by JSON's grammar:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. DFTracer v1 quotes its
// numbers; anything else ("007", "1.", "-.5", "0x1f") stays a string, or
// the merged file would not be JSON.
bool numeric_string(std::string_view s) {
  size_t i = 0, n = s.size();
  auto digits = [&] {
    size_t start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < n && s[i] == '-') ++i;
  if (i < n && s[i] == '0') ++i;
  else if (digits() == 0) return false;
  if (i < n && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == n;
}

// Writes `text` (a JSON number, microseconds) minus `base_ns` to `out`,
// exactly: sign, integer part and up to 18 fraction digits are taken apart
// and the subtraction is done in 128-bit integers scaled by the fraction's
// digits, so a negative or fractional value rebases exactly too (a negative
// fraction used to be added, not subtracted); a base that is not whole
// microseconds (a rank's clock offset) gives at least three decimals. The exponent form (1.7e15),
// which cannot be split that way, goes through a double -- precise to well
// under a microsecond at these magnitudes -- instead of being left unrebased.
bool rebase_ts(std::string_view text, int64_t base_ns, std::string* out) {
  size_t i = 0;
  const bool neg = !text.empty() && text[0] == '-';
  if (neg) ++i;
  const size_t int_start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const size_t int_end = i;
  size_t frac_start = i, frac_end = i;
  if (i < text.size() && text[i] == '.') {
    frac_start = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    frac_end = i;
  }
  const bool plain = int_end > int_start && int_end - int_start <= 18 && frac_end - frac_start <= 18 &&
                     i == text.size() && (frac_start == int_end || frac_end > frac_start);
  if (!plain) {
    if (!numeric_string(text)) return false;
    double d = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), d);
    if (r.ec != std::errc()) return false;
    char buf[64];
    int n = std::snprintf(buf, sizeof buf, "%.3f", d - static_cast<double>(base_ns) / 1e3);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return false;
    out->assign(buf, static_cast<size_t>(n));
    return true;
  }
  size_t k = frac_end - frac_start;
  __int128 scale = 1;
  for (size_t d = 0; d < k; ++d) scale *= 10;
  int64_t whole = 0, frac = 0;
  std::from_chars(text.data() + int_start, text.data() + int_end, whole);
  if (k) std::from_chars(text.data() + frac_start, text.data() + frac_end, frac);
  for (; k < 3 && base_ns % 1000 != 0; ++k) {  // nanoseconds need three decimals
    scale *= 10;
    frac *= 10;
  }
  __int128 v = static_cast<__int128>(whole) * scale + frac;
  if (neg) v = -v;
  v -= static_cast<__int128>(base_ns) * scale / 1000;  // scale >= 1000 unless base_ns is whole us
  const bool vneg = v < 0;
  unsigned __int128 a = vneg ? static_cast<unsigned __int128>(-v) : static_cast<unsigned __int128>(v);
  const unsigned __int128 uscale = static_cast<unsigned __int128>(scale);
  std::string frac_digits(k, '0');
  unsigned __int128 f = a % uscale;
  for (size_t d = k; d-- > 0; f /= 10) frac_digits[d] = static_cast<char>('0' + static_cast<int>(f % 10));
  unsigned __int128 w = a / uscale;  // < 2^64: |whole| < 10^18 and |base_us| < 2^63
  out->assign(vneg ? "-" : "");
  out->append(std::to_string(static_cast<uint64_t>(w)));
  if (k) {
    out->push_back('.');
    out->append(frac_digits);
  }
  return true;
}

// ---------------------------------------------------------------------------
// Input expansion

namespace {

bool has_trace_suffix(const std::string& name) {
  auto ends = [&](const char* suf) {
    size_t n = std::strlen(suf);
    return name.size() >= n && name.compare(name.size() - n, n, suf) == 0;
  };
  return ends(".pfw") || ends(".pfw.gz") || ends(".json") || ends(".json.gz");
}

void add_file(const std::string& p, std::vector<std::string>& out) {
  if (::access(p.c_str(), R_OK) != 0) throw InputError("cannot read " + p + ": " + std::strerror(errno));
  out.push_back(p);
}

// The first `n` bytes of a file, inflated when it is gzip ("" when it cannot
// be read; O_NONBLOCK and the fstat: a path swapped for a FIFO never blocks).
std::string file_head(const std::string& path, size_t n) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return {};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return {};
  }
  std::string head(n, '\0');
  gzFile g = gzdopen(fd, "rb");  // reads a plain file as it is
  if (g == nullptr) {
    ::close(fd);
    return {};
  }
  gzbuffer(g, 8192);
  int got = gzread(g, head.data(), static_cast<unsigned>(n));
  gzclose(g);
  head.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return head;
}

// A file found by listing: kept, or left out as one of our own outputs.
void add_listed(const std::string& p, std::vector<std::string>& out, std::vector<LeftOutInput>* left_out) {
  if (const char* kind = own_output_kind(file_head(p, kOwnOutputHeadBytes))) {
    if (left_out) left_out->push_back({p, kind});
    return;
  }
  add_file(p, out);
}

// `head` without a BOM and leading blanks.
std::string_view trim_head(std::string_view head) {
  if (head.size() >= 3 && head.compare(0, 3, "\xEF\xBB\xBF") == 0) head.remove_prefix(3);
  while (!head.empty() && std::isspace(static_cast<unsigned char>(head.front()))) head.remove_prefix(1);
  return head;
}

// The part of a Chrome trace object's head before its event array.
std::string_view before_events(std::string_view head) {
  head = trim_head(head);
  if (head.empty() || head.front() != '{') return {};
  return head.substr(0, head.find("\"traceEvents\""));
}

constexpr std::string_view kMergeMarker = "\"dftracer_merge\"";  // a member: member_value_at
// merge's opening before it wrote kMergeMarker: still one of ours.
constexpr std::string_view kOldMergeOpening = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"ts_base_us\":";
constexpr std::string_view kCalibrationOpening = "{\"dftracer_calibration\":";

}  // namespace

const char* own_output_kind(std::string_view head) {
  std::string_view h = trim_head(head);
  if (h.substr(0, kCalibrationOpening.size()) == kCalibrationOpening) return "calibration file";
  if (h.substr(0, kOldMergeOpening.size()) == kOldMergeOpening ||
      member_value_at(before_events(h), kMergeMarker) != std::string_view::npos)
    return "merge output";
  return nullptr;
}

int64_t merged_ts_base_us(std::string_view head) {
  std::string_view h = before_events(head);
  size_t other = h.find("\"otherData\"");
  if (other == std::string_view::npos) return 0;
  size_t b = member_value_at(h, "\"ts_base_us\"", other);
  if (b == std::string_view::npos) return 0;
  size_t e = b;
  while (e < h.size() && (std::isdigit(static_cast<unsigned char>(h[e])) || (e == b && h[e] == '-'))) ++e;
  int64_t v = 0;
  if (std::from_chars(h.data() + b, h.data() + e, v).ec != std::errc()) return 0;
  // Whole microseconds within +-100 years of the epoch: anything else is not a base merge wrote.
  return v > -(int64_t{3155760000} * 1000000) && v < int64_t{3155760000} * 1000000 ? v : 0;
}

std::string left_out_line(const std::vector<LeftOutInput>& left_out) {
  if (left_out.empty()) return {};
  std::string s = "left out the analyzer's own output";
  s += left_out.size() == 1 ? ": " : "s: ";
  for (size_t i = 0; i < left_out.size(); ++i) {
    if (i == 3) {
      s += ", and " + std::to_string(left_out.size() - 3) + " more";
      break;
    }
    const bool merged = std::strcmp(left_out[i].what, "merge output") == 0;
    s += (i ? ", " : "") + left_out[i].path + " (" + left_out[i].what + (merged ? "; name it to read it)" : ")");
  }
  return s;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& paths, std::vector<LeftOutInput>* left_out) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    refuse_nul_in_path(p);
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (!ec && fs::is_directory(st)) {
      std::vector<std::string> found;
      for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec)) {
        if (it->is_regular_file(ec) && has_trace_suffix(it->path().filename().string()))
          found.push_back(it->path().string());
      }
      if (ec) throw InputError("cannot list directory " + p + ": " + ec.message());
      std::sort(found.begin(), found.end());
      for (auto& f : found) add_listed(f, out, left_out);
    } else if (!ec && fs::exists(st)) {
      if (!fs::is_regular_file(st)) throw InputError("not a regular file: " + p);
      add_file(p, out);
    } else if (p.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      int rc = ::glob(p.c_str(), 0, nullptr, &g);
      if (rc != 0) {
        ::globfree(&g);
        throw InputError("no file matches " + p);
      }
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        std::string m = g.gl_pathv[i];
        if (fs::is_regular_file(m, ec)) add_listed(m, out, left_out);
      }
      ::globfree(&g);
    } else {
      throw InputError("no such file or directory: " + p);
    }
  }
  // The same file named twice (a glob and a directory) is read once. A hash
  // set: a linear search made 20,000 files take 48 s before reading began.
  std::vector<std::string> unique;
  std::unordered_set<std::string> seen;
  seen.reserve(out.size());
  for (auto& f : out) {
    if (seen.insert(fs::weakly_canonical(f).string()).second) unique.push_back(f);
  }
  if (left_out) {  // listed twice, or also named (then read): said once, or not at all
    std::vector<LeftOutInput> said;
    for (auto& l : *left_out)
      if (seen.insert(fs::weakly_canonical(l.path).string()).second) said.push_back(l);
    *left_out = std::move(said);
  }
  return unique;
}

// ---------------------------------------------------------------------------
// Lines

// The line's top-level "ts" as exact ns, whatever the key order (a nested
// args.ts is not the event's). False when it has none.
bool line_pid(std::string_view s, std::string_view& pid) {
  size_t b = top_member_value_at(s, "\"pid\"");
  if (b == std::string_view::npos || b >= s.size()) return false;
  if (s[b] == '"') {
    const size_t e = s.find('"', b + 1);
    if (e == std::string_view::npos) return false;
    pid = s.substr(b + 1, e - b - 1);
    return true;
  }
  size_t e = b;
  while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '-')) ++e;
  pid = s.substr(b, e - b);
  return e > b;
}

bool line_ts(std::string_view s, int64_t& ns) {
  size_t b = top_member_value_at(s, "\"ts\"");
  if (b == std::string_view::npos) return false;
  if (b < s.size() && s[b] == '"') ++b;  // DFTracer v1 quotes numbers
  size_t e = b;
  while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '.' || s[e] == '-' ||
                          s[e] == '+' || s[e] == 'e' || s[e] == 'E'))
    ++e;
  return us_text_to_ns(s.substr(b, e - b), ns);
}

namespace {

inline bool is_gz(const std::string& path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

// Hands one stripped line to the consumer, copying it into a padded scratch
// buffer when the bytes after it are not readable.
struct LineSink {
  LineConsumer* consumer;
  ReadStats* stats;
  uint64_t max_line;
  std::vector<char> scratch;
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;  // ReadOptions' window
  bool windowed = false;
  StepSpanFilter steps{nullptr};  // ReadOptions' step filter
  size_t file = 0;                // the file being read, for the step filter
  bool ns_times = false;  // the file's times are nanoseconds (declares_ns_times): read as microseconds
  std::string us_line;

  void line(const char* p, size_t len, size_t readable_after) {
    if (len > max_line) {
      ++stats->oversized;  // never parsed: a parse holds a multiple of its size
      return;
    }
    std::string_view raw(p, len);
    std::string_view s = strip_trace_line(raw);
    if (s.empty()) {
      // Only framing or whitespace, unless it held something non-blank.
      return;
    }
    if (ns_times) {
      us_line = ns_times_to_us(s);
      const size_t n = us_line.size();
      us_line.resize(n + kLinePadding);
      p = us_line.data();
      s = std::string_view(p, n);
      readable_after = us_line.size();
    }
    if (windowed) {
      int64_t ts;
      if (line_ts(s, ts)) {
        if (ts < from_ns || ts >= to_ns) return;  // outside the window: not read
        if (steps.active() && !steps.keep(file, s, ts)) return;
      }
    }
    size_t cap = readable_after - static_cast<size_t>(s.data() - p);
    DecodeStatus st;
    if (cap < s.size() + kLinePadding) {
      scratch.resize(s.size() + kLinePadding);
      std::memcpy(scratch.data(), s.data(), s.size());
      st = consumer->consume(std::string_view(scratch.data(), s.size()), scratch.size());
    } else {
      st = consumer->consume(s, cap);
    }
    if (st == DecodeStatus::Ok) ++stats->events;
    else if (st == DecodeStatus::Malformed) ++stats->malformed;
    else ++stats->bad_fields;
  }

  // Every line of [begin, end); `limit` is the end of readable memory.
  void lines(const char* begin, const char* end, const char* limit) {
    const char* p = begin;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const char* stop = nl ? nl : end;
      line(p, stop - p, limit - p);
      p = stop + 1;
    }
  }
};

// Appends no more than keeps `s` one byte over `max`: a line over the limit
// stays over it (and is counted as oversized when handed over) but holds no
// more memory than that, however long it really is.
inline void append_capped(std::string& s, const char* p, size_t n, uint64_t max) {
  if (s.size() <= max) s.append(p, static_cast<size_t>(std::min<uint64_t>(n, max + 1 - s.size())));
}

// Reassembles lines from inflated pieces. With `stash_head`, bytes up to the
// first newline are kept aside: they may finish a line begun in the previous
// piece of the file, which another thread read.
class LineAssembler {
 public:
  LineAssembler(LineSink& sink, bool stash_head) : sink_(sink), stashing_(stash_head) {}

  void feed(const char* p, size_t n) {
    const char* end = p + n;
    if (stashing_) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      if (!nl) {
        append_capped(head_, p, n, sink_.max_line);
        return;
      }
      append_capped(head_, p, nl - p, sink_.max_line);
      head_ += '\n';
      head_complete_ = true;
      stashing_ = false;
      p = nl + 1;
    }
    if (p == end) return;
    if (!carry_.empty()) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      if (!nl) {
        append_capped(carry_, p, end - p, sink_.max_line);
        return;
      }
      append_capped(carry_, p, nl - p, sink_.max_line);
      flush_carry();
      p = nl + 1;
    }
    // Complete lines straight from the inflate window (it has padding after it);
    // the last, unterminated piece waits for the next feed.
    const char* last_nl = static_cast<const char*>(memrchr(p, '\n', end - p));
    if (!last_nl) {
      append_capped(carry_, p, end - p, sink_.max_line);
      return;
    }
    buf_.assign(p, last_nl);  // copy into a padded buffer: the window is reused
    buf_.resize(buf_.size() + kLinePadding);
    const char* b = buf_.data();
    sink_.lines(b, b + (last_nl - p), b + buf_.size());
    append_capped(carry_, last_nl + 1, end - last_nl - 1, sink_.max_line);
  }

  // Drops a partial line (a member that broke off mid-line).
  bool drop_partial() {
    bool had = !carry_.empty();
    carry_.clear();
    return had;
  }

  std::string& head() { return head_; }
  bool head_complete() const { return head_complete_; }
  std::string take_tail() { return std::move(carry_); }

 private:
  void flush_carry() {
    size_t n = carry_.size();
    carry_.resize(n + kLinePadding);
    sink_.line(carry_.data(), n, carry_.size());
    carry_.clear();
  }

  LineSink& sink_;
  bool stashing_;
  bool head_complete_ = false;
  std::string head_, carry_;
  std::vector<char> buf_;
};

// ---------------------------------------------------------------------------
// Files and work units

enum class Layout { Lines, Document };

// A file is mapped while its pieces are read and unmapped after its last
// one, so a run over thousands of files holds a few maps at a time, not one
// a file (vm.max_map_count is 65,530 by default).
struct FileState {
  std::string path;
  std::unique_ptr<MappedFile> map;
  size_t planned_size = 0;  // the size the pieces were cut for
  std::mutex map_mu;        // guards map and units_left while pieces run
  size_t units_left = 0;
  bool gz = false;
  Layout layout = Layout::Lines;
  bool ns_times = false;  // declares_ns_times
  std::vector<GzipIndexEntry> index;
};

struct Unit {
  size_t file = 0;
  uint64_t begin = 0;  // .pfw: exact; .gz: exact when `trusted`, else where to scan from
  uint64_t end = 0;    // pieces starting at or after this belong to the next unit
  bool trusted = true;
  bool after_gap = false;  // members before it were skipped (a time window): no line continues across
  // Filled by the worker (gz units):
  bool any = false;
  uint64_t actual_begin = 0;
  uint64_t chain_end = 0;
  std::string head, tail;
  bool head_complete = false;
};

// Units over the members of an indexed file that may hold lines in the
// window: a member whose times all lie outside it, that holds no metadata
// line (always read) and whose bytes the index vouches for, is never
// inflated. One it cannot vouch for is read: its damage is counted as a
// read without the index counts it.
void plan_window_units(size_t file, uint64_t size, const uint8_t* data, const TraceIndex& index, const ReadOptions& o,
                       size_t pieces, std::vector<Unit>* units) {
  std::vector<char> kept(index.members.size());
  for (size_t i = 0; i < index.members.size(); ++i) {
    const IndexedMember& m = index.members[i];
    kept[i] = m.metadata > 0 || !m.timed || !(m.max_ts < o.from_ns || m.min_ts >= o.to_ns) ||
              !member_vouched(m, data);
  }
  auto keep = [&](const IndexedMember& m) { return kept[static_cast<size_t>(&m - index.members.data())] != 0; };
  const std::vector<IndexedMember>& ms = index.members;
  uint64_t total = 0;
  for (const IndexedMember& m : ms) total += keep(m) ? m.entry.uncompressed : 0;
  const uint64_t target = total / pieces + 1;
  bool gap = false;
  for (size_t m = 0; m < ms.size();) {
    if (!keep(ms[m])) {
      ++m;
      gap = true;
      continue;
    }
    size_t start = m;
    for (uint64_t acc = 0; m < ms.size() && keep(ms[m]) && acc < target; ++m) acc += ms[m].entry.uncompressed;
    units->push_back(Unit{file, ms[start].entry.offset, m == ms.size() ? size : ms[m].entry.offset, true});
    units->back().after_gap = gap;
    gap = false;
  }
  // Members written after the index was (a live or crashed run): read them.
  const uint64_t indexed_end = ms.back().entry.offset + ms.back().entry.size;
  if (!keep(ms.back()) && indexed_end < size) {
    units->push_back(Unit{file, indexed_end, size, true});
    units->back().after_gap = true;
  }
}

std::string_view first_nonblank_line(std::string_view text, size_t& pos) {
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t stop = nl == std::string_view::npos ? text.size() : nl;
    std::string_view l = text.substr(pos, stop - pos);
    pos = stop + 1;
    size_t a = l.find_first_not_of(" \t\r");
    if (a != std::string_view::npos) return l.substr(a);
  }
  return {};
}

// Line-per-event (ours, DFTracer's, JSON lines) or one JSON document (a
// pretty-printed Chrome trace such as a torch.profiler export). `whole`:
// head is the whole file.
Layout detect_layout(std::string_view head, bool whole) {
  if (head.size() >= 3 && head.compare(0, 3, "\xEF\xBB\xBF") == 0) head.remove_prefix(3);  // a BOM
  size_t pos = 0;
  std::string_view l1 = first_nonblank_line(head, pos);
  if (l1.empty()) return Layout::Lines;
  std::string_view s1 = strip_trace_line(l1);
  if (s1.empty()) {  // "[" alone: look at the first event line
    std::string_view l2 = first_nonblank_line(head, pos);
    if (l2.empty() || pos > head.size()) return Layout::Lines;  // nothing more, or cut in the head
    std::string_view s2 = strip_trace_line(l2);
    return (!s2.empty() && s2.front() == '{' && s2.back() == '}') || s2.empty() ? Layout::Lines : Layout::Document;
  }
  // An event line, or the start of one longer than the head (no newline
  // after it): read as lines, where a line over the size limit is skipped
  // and counted with bounded memory, not held whole as a document.
  const bool cut = pos > head.size();
  if (s1.front() == '{' && (s1.back() == '}' || cut) && s1.find("\"traceEvents\"") == std::string_view::npos) {
    // A file of one JSON object that names no "ph" (json.dump's metrics or
    // state beside the traces) is no event: as a document it reads as no
    // trace, with no error.
    size_t next = pos;
    if (whole && first_nonblank_line(head, next).empty() && s1.find("\"ph\"") == std::string_view::npos)
      return Layout::Document;
    return Layout::Lines;
  }
  if (s1.front() == '{' || s1.front() == '[') return Layout::Document;
  return Layout::Lines;  // garbage: read line by line and count it
}

// Calls f(begin, end) for each complete `{...}` element of a Chrome trace's
// event array in `text` (a bare array, or an object's "traceEvents"), in
// order, stopping at the first element cut short or at anything that is not
// an object. Braces inside strings (escapes included) do not count.
template <typename F>
void for_each_complete_object(std::string_view text, F&& f) {
  size_t key = text.find("\"traceEvents\"");
  size_t p = text.find('[', key == std::string_view::npos ? 0 : key);
  if (p == std::string_view::npos) return;
  ++p;
  for (;;) {
    while (p < text.size() && (text[p] == ',' || std::isspace(static_cast<unsigned char>(text[p])))) ++p;
    if (p >= text.size() || text[p] != '{') return;
    size_t depth = 0, q = p;
    bool in_string = false, done = false;
    for (; q < text.size(); ++q) {
      char c = text[q];
      if (in_string) {
        if (c == '\\') ++q;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          done = true;
          break;
        }
      }
    }
    if (!done) return;  // cut short inside this element
    f(p, q + 1);
    p = q + 1;
  }
}

// `ev` (one JSON object's text) with `base_us` added to its top-level "ts"
// (a merge output's events, back on the clock of the traces merged); as it
// is when it has no numeric top-level ts.
std::string shift_top_level_ts(std::string_view ev, int64_t base_us) {
  return rewrite_numbers(ev, [&](std::string_view key, size_t depth, std::string_view v, std::string* out) {
    return depth == 1 && key == "ts" && rebase_ts(v, -base_us * 1000, out);
  });
}

// First inflated bytes of a gzip file, for layout detection.
std::string gz_head(const FileState& f) {
  std::string out;
  MemberInflater inf;
  inf.inflate_member(f.map->data(), f.map->size(), 0, [&](const char* p, size_t n) {
    out.append(p, n);
    return out.size() < (64u << 10);
  });
  return out;
}

class Progress {
 public:
  Progress(bool enabled, uint64_t total) : total_(total) {
    if (!enabled || !::isatty(2) || total == 0) return;
    thread_ = std::thread([this] { run(); });
  }
  ~Progress() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
      std::fprintf(stderr, "\r\033[K");
    }
  }
  void add(uint64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }

 private:
  void run() {
    auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lk(mu_);
    while (!cv_.wait_for(lk, std::chrono::milliseconds(250), [this] { return stop_; })) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (secs < 0.5) continue;  // short runs show nothing
      uint64_t d = std::min(done_.load(std::memory_order_relaxed), total_);
      int width = 30, filled = static_cast<int>(width * d / total_);
      std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %.0f MB/s", filled, "##############################",
                   width - filled, "", 100.0 * d / total_, d / 1e6 / secs);
      std::fflush(stderr);
    }
  }
  uint64_t total_;
  std::atomic<uint64_t> done_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------------------
// Workers

struct Worker {
  LineConsumer* consumer;
  ReadStats stats;
  LineSink sink;
  MemberInflater inflater;
  Progress* progress;
  std::vector<char> buf_;

  uint64_t max_document;

  Worker(LineConsumer* c, Progress* p, const ReadOptions& o)
      : consumer(c),
        sink{c, &stats, std::max<uint64_t>(o.max_line_bytes, 1), {}, o.from_ns, o.to_ns, o.windowed(), o.steps.get()},
        progress(p),
        max_document(o.max_document_bytes) {}

  // Reads the range with pread() into a reused buffer rather than through the
  // mapping: page-faulting a 4 GB map costs more system time than the copy,
  // and the buffer keeps the resident size at a few MiB whatever the file size.
  void run_plain(const FileState& f, const Unit& u) {
    // 1 MiB: the lines are decoded while the copy is still in this core's L2
    // (8 MiB blocks measured ~10% more CPU, user and system time alike).
    size_t block = 1u << 20;
    // O_NONBLOCK: a path swapped for a FIFO since expansion must not block the open.
    int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) throw InputError("cannot open " + f.path + ": " + std::strerror(errno));
    // Closed however this returns: a consumer may throw (a write error in merge).
    std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* p) { ::close(*p); });
    buf_.resize(block + kLinePadding);
    size_t carry = 0;  // bytes of an unfinished line at the start of buf_
    bool skipping = false;  // inside a line over the limit: drop bytes up to its newline
    uint64_t pos = u.begin;
    while (pos < u.end || carry) {
      if (carry == block) {  // one line longer than the block: grow it, up to the line limit
        if (block >= sink.max_line) {
          ++stats.oversized;
          skipping = true;
          carry = 0;
        } else {
          block *= 2;
          buf_.resize(block + kLinePadding);
        }
      }
      size_t want = static_cast<size_t>(std::min<uint64_t>(u.end - pos, block - carry));
      ssize_t got = want ? ::pread(fd, buf_.data() + carry, want, static_cast<off_t>(pos)) : 0;
      if (got < 0) throw InputError("cannot read " + f.path + ": " + std::strerror(errno));
      pos += static_cast<uint64_t>(got);
      size_t have = carry + static_cast<size_t>(got);
      bool at_end = got == 0 || pos >= u.end;
      if (skipping) {  // carry is 0: what was read continues the oversized line
        const char* nl = static_cast<const char*>(std::memchr(buf_.data(), '\n', have));
        progress->add(static_cast<uint64_t>(got));
        if (!nl) {
          if (at_end) break;
          continue;
        }
        have -= static_cast<size_t>(nl + 1 - buf_.data());
        std::memmove(buf_.data(), nl + 1, have);
        got = 0;  // counted above
        skipping = false;
      }
      const char* b = buf_.data();
      const char* stop = b + have;
      if (!at_end) {
        const char* nl = static_cast<const char*>(memrchr(b, '\n', have));
        if (!nl) {
          carry = have;
          progress->add(static_cast<uint64_t>(got));
          continue;
        }
        stop = nl + 1;
      }
      sink.lines(b, stop, b + buf_.size());
      carry = have - static_cast<size_t>(stop - b);
      std::memmove(buf_.data(), stop, carry);
      if (at_end && carry) {
        sink.lines(buf_.data(), buf_.data() + carry, buf_.data() + buf_.size());
        carry = 0;
      }
      progress->add(static_cast<uint64_t>(got));
      if (at_end) break;
    }
    stats.json_bytes += u.end - u.begin;
    stats.input_bytes += u.end - u.begin;
  }

  // Follows the chain of gzip members from the unit's start until a member
  // begins at or after u.end. A start found by scanning (not from the index or
  // the previous member's end) is only believed once its member inflates to a
  // checked end, or kHeldMemberBytes of it inflate without error.
  void run_gz(const FileState& f, Unit& u) {
    const uint8_t* data = f.map->data();
    const size_t size = f.map->size();
    LineAssembler lines(sink, /*stash_head=*/u.begin != 0);
    size_t pos = u.begin;
    bool trusted = u.trusted;
    if (!trusted) pos = find_gzip_header(data, size, pos);
    HeldMemberText held;  // the member's text until it is believed
    const IndexedStarts starts{&f.index};
    while (pos < u.end && pos < size) {
      if (!trusted && !is_gzip_header(data + pos, size - pos)) break;
      // An indexed member is inflated within its own bytes.
      const size_t limit = starts.member_end(pos, size);
      const bool known = trusted || limit != size;  // a member start, not a header found by scanning
      held.reset();
      MemberResult r = inflater.inflate_member(data, limit, pos, [&](const char* p, size_t n) {
        stats.json_bytes += n;
        held.add(p, n, [&](const char* q, size_t m) { lines.feed(q, m); });
        return true;
      });
      // Damaged: bad data, or cut short inside its indexed bytes (the file goes on).
      const bool damaged = r.end == MemberEnd::Corrupt || (r.end == MemberEnd::Truncated && limit != size);
      if (!held.handed_on && damaged) {
        stats.json_bytes -= r.produced;
        if (!known) {
          // Not a member after all (a header-like byte pattern inside compressed
          // data): look further, still inside this unit.
          pos = find_gzip_header(data, size, pos + 1);
          continue;
        }
      } else if (!held.handed_on) {
        lines.feed(held.text.data(), held.text.size());  // checked (or the file's cut-short last member)
      }
      if (!u.any) {
        u.any = true;
        u.actual_begin = pos;
      }
      progress->add(r.next_offset - pos);
      stats.input_bytes += r.next_offset - pos;
      release(data, pos, r.next_offset);
      if (r.end == MemberEnd::Complete) {
        pos = r.next_offset;
        trusted = true;
        continue;
      }
      if (!damaged && r.end == MemberEnd::Truncated) {
        ++stats.truncated_members;  // keep every complete line; the half line is counted at the end
        pos = size;
        break;
      }
      // A damaged member (or one cut short inside its indexed bytes): none of
      // its lines when it was held whole, else what came before; the half
      // line is dropped; go on at the next indexed start, else resynchronise
      // on the next header.
      ++stats.corrupt_members;
      if (lines.drop_partial()) ++stats.malformed;
      const size_t next = starts.next_after(pos);
      if (next != SIZE_MAX && next <= size) {
        stats.input_bytes += next - r.next_offset;
        progress->add(next - r.next_offset);
        pos = next;
        trusted = true;
        continue;
      }
      pos = find_gzip_header(data, size, std::max(r.next_offset, pos + 1));
      trusted = false;
    }
    if (u.any) {
      u.chain_end = std::min(pos, size);
      u.head = std::move(lines.head());
      u.head_complete = lines.head_complete();
      u.tail = lines.take_tail();
    }
  }

  void run_document(const FileState& f, size_t file_index);

  // Drops the mapped pages of compressed bytes already inflated, so the
  // resident size does not grow with the file (they are clean: refaulting
  // them, should a neighbour still need one, just reads the file again).
  static void release(const uint8_t* data, size_t from, size_t to) {
    static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size_t a = (from + page - 1) / page * page, b = to / page * page;
    if (b > a) ::madvise(const_cast<uint8_t*>(data) + a, b - a, MADV_DONTNEED);
  }
};

void Worker::run_document(const FileState& f, size_t file_index) {
  (void)file_index;
  std::string text;
  bool over = !f.gz && f.map->size() > max_document;
  if (f.gz) {
    size_t pos = 0;
    const uint8_t* data = f.map->data();
    while (pos < f.map->size()) {
      if (!is_gzip_header(data + pos, f.map->size() - pos)) {
        ++stats.corrupt_members;
        break;
      }
      MemberResult r = inflater.inflate_member(data, f.map->size(), pos, [&](const char* p, size_t n) {
        if (text.size() + n > max_document) {
          over = true;  // stop inflating: too big to hold
          return false;
        }
        text.append(p, n);
        return true;
      });
      if (over) break;
      if (r.end == MemberEnd::Truncated) ++stats.truncated_members;
      if (r.end == MemberEnd::Corrupt) ++stats.corrupt_members;
      if (r.end != MemberEnd::Complete) break;
      pos = r.next_offset;
    }
  } else if (!over) {
    text.assign(f.map->chars(), f.map->size());
  }
  stats.input_bytes += f.map->size();
  progress->add(f.map->size());
  if (over) {
    ++stats.oversized;  // parsing it would hold a multiple of its size
    return;
  }
  stats.json_bytes += text.size();
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // a BOM
  // A merge output's ts count from its otherData.ts_base_us: read on the epoch clock again.
  const int64_t base_us = merged_ts_base_us(std::string_view(text).substr(0, kOwnOutputHeadBytes));

  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  simdjson::dom::array events;
  bool ok = !parser.parse(padded).get(root);
  if (ok) {
    if (root.is_array()) {
      ok = !root.get_array().get(events);
    } else {
      ok = !root["traceEvents"].get_array().get(events);
      // A valid JSON object without an event array is no Chrome trace (a
      // config.json, a trainer_state.json beside the traces): no events and
      // no error, where its nested objects would read as events with bad fields.
      if (!ok) return;
    }
  }
  if (!ok) {
    // Not one valid document (cut short?): salvage every complete event
    // object of its array, wherever the lines break (a one-line array cut
    // short used to give nothing).
    text.resize(text.size() + kLinePadding);
    std::string shifted;
    for_each_complete_object(std::string_view(text.data(), text.size() - kLinePadding),
                             [&](size_t begin, size_t end) {
                               if (base_us == 0) return sink.line(text.data() + begin, end - begin, text.size() - begin);
                               shifted = shift_top_level_ts(std::string_view(text.data() + begin, end - begin), base_us);
                               const size_t n = shifted.size();
                               shifted.resize(n + kLinePadding);
                               sink.line(shifted.data(), n, shifted.size());
                             });
    return;
  }
  std::string line;
  for (simdjson::dom::element e : events) {
    line = simdjson::minify(e);
    if (base_us != 0) line = shift_top_level_ts(line, base_us);
    size_t n = line.size();
    line.resize(n + kLinePadding);
    sink.line(line.data(), n, line.size());
  }
}

}  // namespace

// ---------------------------------------------------------------------------

namespace {
std::atomic<uint64_t> g_read_passes{0};
}  // namespace

uint64_t read_trace_passes() { return g_read_passes.load(std::memory_order_relaxed); }

ReadStats read_traces(const std::vector<std::string>& paths, const std::vector<LineConsumer*>& consumers,
                      const ReadOptions& options) {
  g_read_passes.fetch_add(1, std::memory_order_relaxed);
  const size_t nthreads = std::max<size_t>(1, consumers.size());
  ReadStats setup;
  std::vector<FileState> files(paths.size());
  std::vector<Unit> units;
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    FileState& f = files[i];
    f.path = paths[i];
    f.map = std::make_unique<MappedFile>(f.path);
    f.gz = is_gz(f.path);
    ++setup.files;
    const size_t size = f.map->size();
    f.planned_size = size;
    const size_t units_before = units.size();
    // Unmapped once planned; the first piece read maps it again.
    struct Unmap {
      FileState& f;
      size_t units_before;
      const std::vector<Unit>& units;
      ~Unmap() {
        f.units_left = units.size() - units_before;
        f.map.reset();
      }
    } unmap{f, units_before, units};
    total_bytes += size;
    if (size == 0) {
      ++setup.empty_files;
      continue;
    }
    if (f.gz && !is_gzip_header(f.map->data(), size)) {
      // Not gzip at all despite the name: one corrupt member, nothing to read.
      ++setup.corrupt_members;
      continue;
    }
    std::string gzhead;
    std::string_view head;
    if (f.gz) {
      gzhead = gz_head(f);
      head = gzhead;
    } else {
      head = std::string_view(f.map->chars(), std::min<size_t>(size, 64u << 10));
    }
    f.layout = detect_layout(head, !f.gz && head.size() == size);
    f.ns_times = declares_ns_times(head);
    if (f.layout == Layout::Document) {
      units.push_back(Unit{i, 0, size, true});
      continue;
    }
    // Enough pieces that both threads stay busy to the end, none tiny.
    size_t pieces = std::max<size_t>(1, std::min<size_t>(nthreads * 4, size / options.min_piece_bytes));
    if (!f.gz) {
      uint64_t prev = 0;
      for (size_t k = 1; k <= pieces; ++k) {
        uint64_t cut = k == pieces ? size : size * k / pieces;
        if (k != pieces) {
          const void* nl = std::memchr(f.map->chars() + cut, '\n', size - cut);
          cut = nl ? static_cast<const char*>(nl) - f.map->chars() + 1 : size;
        }
        if (cut > prev) units.push_back(Unit{i, prev, cut, true});
        prev = cut;
      }
      continue;
    }
    TraceIndex tindex;
    IndexStatus is = load_trace_index(f.path, f.map->data(), size, &tindex, nullptr);
    if (is == IndexStatus::Invalid) ++setup.bad_indexes;
    for (const IndexedMember& m : tindex.members) f.index.push_back(m.entry);
    if (is == IndexStatus::Usable && tindex.version >= 2 && options.windowed()) {
      plan_window_units(i, size, f.map->data(), tindex, options, pieces, &units);
      continue;
    }
    if (is == IndexStatus::Usable && f.index.size() > 1) {
      // Split on member starts, balancing uncompressed bytes.
      uint64_t total = 0;
      for (auto& e : f.index) total += e.uncompressed ? e.uncompressed : e.size;
      uint64_t acc = 0, target = total / pieces + 1;
      size_t start = 0;
      for (size_t m = 0; m < f.index.size(); ++m) {
        acc += f.index[m].uncompressed ? f.index[m].uncompressed : f.index[m].size;
        bool last = m + 1 == f.index.size();
        if (acc >= target || last) {
          uint64_t end = last ? size : f.index[m + 1].offset;
          units.push_back(Unit{i, f.index[start].offset, end, true});
          start = m + 1;
          acc = 0;
        }
      }
    } else {
      for (size_t k = 0; k < pieces; ++k) {
        uint64_t b = size * k / pieces, e = k + 1 == pieces ? size : size * (k + 1) / pieces;
        units.push_back(Unit{i, b, e, k == 0});
      }
    }
  }

  // No more threads than pieces: each worker holds ~1 MiB of inflate window.
  const size_t nworkers = std::max<size_t>(1, std::min(nthreads, units.size()));
  Progress progress(options.progress, total_bytes);
  std::vector<std::unique_ptr<Worker>> workers;
  for (size_t t = 0; t < nworkers; ++t)
    workers.push_back(std::make_unique<Worker>(consumers[t], &progress, options));
  std::atomic<size_t> next{0};
  // An exception must not leave a worker thread (std::terminate): the first
  // one is kept, the other workers stop at their next piece, and the calling
  // thread rethrows it once every thread is joined.
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::exception_ptr first_error;
  auto work = [&](size_t t) {
    Worker& w = *workers[t];
    try {
      for (size_t k; !failed.load(std::memory_order_relaxed) && (k = next.fetch_add(1)) < units.size();) {
        Unit& u = units[k];
        FileState& f = files[u.file];
        {
          std::lock_guard<std::mutex> lk(f.map_mu);
          if (!f.map) {
            auto map = std::make_unique<MappedFile>(f.path);
            // Pieces were cut for the size seen when planning: a file that
            // shrank since would be read past its end.
            if (map->size() < f.planned_size)
              throw InputError(f.path + " shrank while being read (" + std::to_string(f.planned_size) + " -> " +
                               std::to_string(map->size()) + " bytes)");
            f.map = std::move(map);
          }
        }
        w.consumer->begin_piece(u.file);
        w.sink.ns_times = f.ns_times;
        w.sink.file = u.file;
        if (f.layout == Layout::Document) w.run_document(f, u.file);
        else if (f.gz) w.run_gz(f, u);
        else w.run_plain(f, u);
        std::lock_guard<std::mutex> lk(f.map_mu);
        if (--f.units_left == 0) f.map.reset();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lk(error_mu);
      if (!first_error) first_error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < nworkers; ++t) {
    try {
      threads.emplace_back(work, t);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running share the pieces
    }
  }
  work(0);
  for (auto& th : threads) th.join();
  if (first_error) std::rethrow_exception(first_error);

  // Join the lines that straddle two gzip pieces, and check the pieces met.
  Worker& w0 = *workers[0];
  for (size_t k = 0; k < units.size();) {
    const FileState& f = files[units[k].file];
    size_t file = units[k].file;
    if (!f.gz || f.layout == Layout::Document) {
      ++k;
      continue;
    }
    w0.consumer->begin_piece(file);
    w0.sink.ns_times = f.ns_times;
    w0.sink.file = file;
    std::string acc;
    const Unit* prev = nullptr;
    for (; k < units.size() && units[k].file == file; ++k) {
      Unit& u = units[k];
      if (!u.any) continue;
      if (u.after_gap && prev) {  // skipped members end with whole lines: nothing straddles the gap
        if (!acc.empty()) {
          size_t n = acc.size();
          acc.resize(n + kLinePadding);
          w0.sink.lines(acc.data(), acc.data() + n, acc.data() + acc.size());
          acc.clear();
        }
        prev = nullptr;
      }
      if (prev && prev->chain_end != u.actual_begin) ++w0.stats.boundary_mismatches;
      // acc holds one line here (a tail and the head that ends it): capped as any line.
      append_capped(acc, u.head.data(), u.head.size(), w0.sink.max_line);
      if (u.head_complete || !prev) {
        if (!acc.empty()) {
          size_t n = acc.size();
          acc.resize(n + kLinePadding);
          w0.sink.lines(acc.data(), acc.data() + n, acc.data() + acc.size());
        }
        acc = std::move(u.tail);
      } else {
        append_capped(acc, u.tail.data(), u.tail.size(), w0.sink.max_line);  // a piece with no newline at all
      }
      prev = &u;
    }
    if (!acc.empty()) {
      size_t n = acc.size();
      acc.resize(n + kLinePadding);
      w0.sink.lines(acc.data(), acc.data() + n, acc.data() + acc.size());
    }
  }

  ReadStats total = setup;
  for (auto& w : workers) total.add(w->stats);
  return total;
}

}  // namespace dftracer::analyze
