#include "merge.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "json_member.hpp"
#include "merge_ranks.hpp"
#include "output_file.hpp"
#include "summary.hpp"  // append_json_string
#include "trace_phase.hpp"

namespace dftracer::analyze {
namespace ondemand = simdjson::ondemand;

namespace {

// The single output stream; threads hand it whole blocks of events. A failed
// write throws InputError on the writing thread (the reader carries it to the
// caller) and every later call throws again, so nothing is written after a gap.
// The file appears at its name only when close() succeeds (OutputFile).
class OutputSink {
 public:
  explicit OutputSink(const std::string& path) : path_(path), output_(path), file_(output_.stream()) {
    gz_ = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    if (gz_) {
      // One gzip stream (not one member per block): every viewer's gunzip reads it.
      if (deflateInit2(&zs_, 3, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw InputError("zlib deflateInit2 failed");
    }
  }
  ~OutputSink() {
    if (gz_) deflateEnd(&zs_);
  }  // output_ removes its temporary file unless close() committed it

  // Appends events (each a JSON object) with the separating commas.
  void events(const std::vector<std::string>& evs) {
    std::lock_guard<std::mutex> lk(mu_);
    std::string block;
    for (auto& e : evs) {
      block += first_ ? "\n" : ",\n";
      first_ = false;
      block += e;
    }
    write(block.data(), block.size(), false);
  }
  void raw(const std::string& s) {
    std::lock_guard<std::mutex> lk(mu_);
    write(s.data(), s.size(), false);
  }
  void close() {
    std::lock_guard<std::mutex> lk(mu_);
    write(nullptr, 0, true);
    if (std::fflush(file_) != 0 || std::ferror(file_)) fail();
    file_ = nullptr;
    output_.commit();  // renamed into place only now: a failed merge leaves no output
  }

 private:
  [[noreturn]] void fail() {
    if (error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(errno ? errno : EIO);
    throw InputError(error_);
  }

  void write(const char* p, size_t n, bool finish) {
    if (!error_.empty()) throw InputError(error_);  // the first failure, again: nothing after a gap
    if (!gz_) {
      if (n && std::fwrite(p, 1, n, file_) != n) fail();
      return;
    }
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
    zs_.avail_in = static_cast<uInt>(n);
    char out[1 << 16];
    int rc;
    do {
      zs_.next_out = reinterpret_cast<Bytef*>(out);
      zs_.avail_out = sizeof out;
      rc = deflate(&zs_, finish ? Z_FINISH : Z_NO_FLUSH);
      size_t got = sizeof out - zs_.avail_out;
      if (got && std::fwrite(out, 1, got, file_) != got) fail();
    } while (zs_.avail_out == 0 || (finish && rc != Z_STREAM_END));
  }

  std::string path_;
  OutputFile output_;
  std::FILE* file_;
  bool gz_ = false;
  z_stream zs_{};
  std::mutex mu_;
  bool first_ = true;
  std::string error_;  // the first write error; set: every later write fails with it
};

using Track = std::pair<std::string, std::string>;  // pid, tid as JSON tokens

struct Tracks {
  std::set<std::string> pids, named_pids;
  std::set<Track> tids, named_tids;
  std::map<std::string, size_t> pid_file;  // first file a pid came from, for its label

  void merge(const Tracks& o) {
    pids.insert(o.pids.begin(), o.pids.end());
    named_pids.insert(o.named_pids.begin(), o.named_pids.end());
    tids.insert(o.tids.begin(), o.tids.end());
    named_tids.insert(o.named_tids.begin(), o.named_tids.end());
    for (auto& [p, f] : o.pid_file) pid_file.emplace(p, f);
  }
};

inline std::string_view trim_token(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

class MergeConsumer : public LineConsumer {
 public:
  MergeConsumer(OutputSink& out, int64_t ts_base_us, const MergeRankPlan& ranks)
      : out_(out), ts_base_us_(ts_base_us), ranks_(ranks) {}

  void begin_piece(size_t file_index) override {
    file_ = file_index;
    // A rank's clock offset moves its events onto rank 0's clock.
    base_ns_ = ts_base_us_ * 1000 - (file_ < ranks_.offset_ns.size() ? ranks_.offset_ns[file_] : 0);
  }

  DecodeStatus consume(std::string_view line, size_t cap) override {
    // Full validation first: On-Demand alone would copy invalid text it skipped.
    simdjson::dom::element el;
    if (dom_.parse(line.data(), line.size(), false).get(el) || !el.is_object()) return DecodeStatus::Malformed;
    ondemand::document doc;
    ondemand::object obj;
    if (od_.iterate(line.data(), line.size(), cap).get(doc) || doc.get_object().get(obj))
      return DecodeStatus::Malformed;
    std::string& o = scratch_;
    o.assign("{");
    std::string pid = "0", tid = "0", name, ph, meta_name, in_pid = "0";
    bool first = true;
    for (auto fr : obj) {
      ondemand::field f;
      std::string_view key;
      if (std::move(fr).get(f) || f.unescaped_key().get(key)) return DecodeStatus::Malformed;
      ondemand::value v = f.value();
      ondemand::json_type t;
      if (v.type().get(t)) return DecodeStatus::Malformed;
      std::string_view text;
      if (t == ondemand::json_type::object) {
        ondemand::object sub;
        if (v.get_object().get(sub) || sub.raw_json().get(text)) return DecodeStatus::Malformed;
        if (key == "args" && (name == "process_name" || name == "thread_name")) {
          simdjson::dom::element a;
          std::string_view nm;
          if (!el["args"]["name"].get(a) && !a.get_string().get(nm)) meta_name = nm;
        }
      } else if (t == ondemand::json_type::array) {
        ondemand::array sub;
        if (v.get_array().get(sub) || sub.raw_json().get(text)) return DecodeStatus::Malformed;
      } else {
        text = trim_token(v.raw_json_token());
      }
      bool numeric_field = key == "pid" || key == "tid" || key == "ts" || key == "dur" || key == "id";
      if (numeric_field && t == ondemand::json_type::string && text.size() >= 2 &&
          numeric_string(text.substr(1, text.size() - 2)))
        text = text.substr(1, text.size() - 2);  // DFTracer v1 quotes its numbers
      if (key == "ts" && base_ns_ != 0 && t != ondemand::json_type::object &&
          t != ondemand::json_type::array && rebase_ts(text, base_ns_, &ts_text_))
        text = ts_text_;
      if (key == "pid") {
        pid = std::string(text);
        if (file_ < ranks_.pids.size()) {  // a pid another host or rank also has
          auto it = ranks_.pids[file_].find(pid);
          if (it != ranks_.pids[file_].end()) text = it->second;
        }
        in_pid = pid;
        pid = std::string(text);
      }
      else if (key == "tid") tid = std::string(text);
      else if (key == "name" && t == ondemand::json_type::string) name = std::string(text.substr(1, text.size() - 2));
      else if (key == "ph" && t == ondemand::json_type::string) ph = std::string(text.substr(1, text.size() - 2));
      else if (key == "ph" && t == ondemand::json_type::number) {
        // DFTracer 2.x's numeric ph, in Chrome's letters: an aggregated row
        // (3: a count and durations in args over an interval from ts) becomes
        // an instant there, its args kept; an unknown number stays unread.
        uint64_t n = 0;
        if (!v.get_uint64().get(n)) ph = n == 3 ? "i" : std::string(phase_letter(n));
        if (ph.empty()) return DecodeStatus::BadField;
        ph_text_ = "\"" + ph + "\"";
        text = ph_text_;
      }
      if (!first) o += ',';
      first = false;
      append_json_string(o, key);
      o += ':';
      o.append(text.data(), text.size());
    }
    o += '}';
    if (ph.empty()) return DecodeStatus::BadField;
    // A rank's process is named "rank R (pid P)" by merge_traces instead.
    if (ph == "M" && name == "process_name" && file_ < ranks_.named.size() && ranks_.named[file_].count(in_pid))
      return DecodeStatus::Ok;
    tracks_.pids.insert(pid);
    tracks_.pid_file.emplace(pid, file_);
    if (ph == "M" && name == "process_name") tracks_.named_pids.insert(pid);
    else if (ph == "M" && name == "thread_name") tracks_.named_tids.insert({pid, tid});
    else tracks_.tids.insert({pid, tid});
    block_.push_back(o);
    block_bytes_ += o.size();
    if (block_bytes_ > (1u << 20)) flush();
    ++written_;
    return DecodeStatus::Ok;
  }

  void flush() {
    if (block_.empty()) return;
    out_.events(block_);
    block_.clear();
    block_bytes_ = 0;
  }

  Tracks& tracks() { return tracks_; }
  uint64_t written() const { return written_; }

 private:
  OutputSink& out_;
  int64_t ts_base_us_, base_ns_ = 0;
  const MergeRankPlan& ranks_;
  std::string ts_text_, ph_text_;
  simdjson::dom::parser dom_;
  ondemand::parser od_;
  std::string scratch_;
  std::vector<std::string> block_;
  size_t block_bytes_ = 0;
  size_t file_ = 0;
  uint64_t written_ = 0;
  Tracks tracks_;
};

std::string meta_event(const char* what, const std::string& pid, const std::string& tid, const std::string& label) {
  std::string o = "{\"name\":\"";
  o += what;
  o += "\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + tid + ",\"args\":{\"name\":";
  append_json_string(o, label);
  return o + "}}";
}

}  // namespace

int64_t earliest_leading_ts_us(const std::vector<std::string>& files) {
  int64_t best = -1;
  std::vector<char> buf(1 << 20);
  for (const std::string& f : files) {
    // O_NONBLOCK and the fstat: a path swapped for a FIFO must not block.
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) continue;
    struct stat st {};
    gzFile g = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? gzdopen(fd, "rb") : nullptr;  // plain files too
    if (g == nullptr) {
      ::close(fd);
      continue;
    }
    int n = gzread(g, buf.data(), static_cast<unsigned>(buf.size()));
    gzclose(g);
    if (n <= 0) continue;
    std::string_view text(buf.data(), static_cast<size_t>(n));
    const int64_t merged_base = merged_ts_base_us(text.substr(0, kOwnOutputHeadBytes));  // a merge output's ts count from it
    const int64_t per_us = declares_ns_times(text) ? 1000 : 1;  // a DFTracer file of nanoseconds
    for (size_t p = member_value_at(text, "\"ts\""); p != std::string_view::npos;
         p = member_value_at(text, "\"ts\"", p)) {
      // only a line's own ts: a nested args.ts is no event's time
      const size_t ls = text.rfind('\n', p) == std::string_view::npos ? 0 : text.rfind('\n', p) + 1;
      const std::string_view line = text.substr(ls, text.find('\n', p) - ls);
      if (top_member_value_at(line, "\"ts\"") != p - ls) continue;
      size_t i = p;
      if (i < text.size() && text[i] == '"') ++i;  // DFTracer v1 quotes numbers
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j == i || j - i > (per_us == 1 ? 18 : 19)) continue;
      int64_t v = 0;
      std::from_chars(text.data() + i, text.data() + j, v);
      size_t k = j;  // the exponent form: 1.795e15 is not 1
      while (k < text.size() && (std::isdigit(static_cast<unsigned char>(text[k])) || text[k] == '.')) ++k;
      if (k == text.size() && text.size() == buf.size()) break;  // cut by the buffer's end: not the whole number
      if (k < text.size() && (text[k] == 'e' || text[k] == 'E')) {
        double d = 0;
        auto r = std::from_chars(text.data() + i, text.data() + text.size(), d);
        if (r.ptr == text.data() + text.size() && text.size() == buf.size()) break;  // its exponent cut
        if (r.ec != std::errc() || !(d > 0 && d < 9e18)) continue;
        v = static_cast<int64_t>(d);
      }
      v = v / per_us + merged_base;
      if (v > 0 && (best < 0 || v < best)) best = v;
    }
  }
  return best;
}

MergeResult merge_traces(const std::vector<std::string>& files, const std::string& out_path, unsigned threads,
                         const ReadOptions& options, bool epoch_ts) {
  // Before anything is opened for writing: the output would truncate the input.
  refuse_input_as_output(out_path, files);
  threads = useful_threads(files, threads, options);
  MergeResult res;
  if (!epoch_ts) {
    // Whole seconds, an hour before the earliest leading event: later events
    // stay positive, and small numbers keep sub-microsecond precision.
    int64_t first = earliest_leading_ts_us(files);
    if (first > int64_t{3600} * 1000000) res.ts_base_us = (first / 1000000 - 3600) * 1000000;
  }
  // The ranks of a distributed run (ranks.hpp), known before anything is written.
  const MergeRankPlan ranks = plan_rank_merge(scan_ranks(files, threads, options));
  res.rank_note = ranks.note;
  OutputSink out(out_path);
  // dftracer_merge first: expand_inputs knows the file as ours from its first bytes (own_output_kind).
  out.raw("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dftracer_merge\":1,\"ts_base_us\":" +
          std::to_string(res.ts_base_us) +
          ranks.other_data + "},\"traceEvents\":[");
  std::vector<std::unique_ptr<MergeConsumer>> cons;
  std::vector<LineConsumer*> ptrs;
  for (unsigned t = 0; t < threads; ++t) {
    cons.push_back(std::make_unique<MergeConsumer>(out, res.ts_base_us, ranks));
    ptrs.push_back(cons.back().get());
  }
  res.stats = read_traces(files, ptrs, options);
  Tracks tracks;
  for (auto& c : cons) {
    c->flush();
    tracks.merge(c->tracks());
    res.events_written += c->written();
  }
  // Label the tracks nobody named: the process by its pid and source file.
  std::vector<std::string> names = ranks.name_events;
  tracks.named_pids.insert(ranks.named_out_pids.begin(), ranks.named_out_pids.end());
  for (auto& pid : tracks.pids) {
    if (tracks.named_pids.count(pid)) continue;
    std::string label = "pid " + pid;
    auto it = tracks.pid_file.find(pid);
    if (it != tracks.pid_file.end() && it->second < files.size())
      label += " (" + std::filesystem::path(files[it->second]).filename().string() + ")";
    names.push_back(meta_event("process_name", pid, "0", label));
  }
  for (auto& tr : tracks.tids) {
    if (tracks.named_tids.count(tr)) continue;
    names.push_back(meta_event("thread_name", tr.first, tr.second, "tid " + tr.second));
  }
  out.events(names);
  res.names_added = names.size();
  res.events_written += names.size();
  out.raw("\n]}\n");
  out.close();
  return res;
}

}  // namespace dftracer::analyze
