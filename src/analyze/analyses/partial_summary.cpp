#include "partial_summary.hpp"

#include "index_summary.hpp"

#include <cstring>
#include <stdexcept>

#include "gzip_members.hpp"
#include "mapped_file.hpp"

namespace dftracer::analyze {

// ---------------------------------------------------------------------------
// Member ranges

namespace {
bool is_gz_path(const std::string& p) { return p.size() > 3 && p.compare(p.size() - 3, 3, ".gz") == 0; }
}  // namespace

std::vector<MemberRange> gzip_member_ranges(const std::string& path, uint64_t target_bytes) {
  MappedFile map(path);
  const uint64_t size = map.size();
  std::vector<MemberRange> out;
  std::vector<GzipIndexEntry> index;
  // Only the writer's index says for sure where members start (a scanned
  // header may be bytes inside a member): without one the file is one piece.
  if (!is_gz_path(path) || size <= target_bytes ||
      load_gzip_index(path, map.data(), map.size(), index) != IndexStatus::Usable || index.size() < 2) {
    out.push_back(MemberRange{0, size});
    return out;
  }
  uint64_t begin = 0;
  for (const GzipIndexEntry& e : index) {
    if (e.offset > begin && e.offset - begin >= target_bytes) {
      out.push_back(MemberRange{begin, e.offset});
      begin = e.offset;
    }
  }
  out.push_back(MemberRange{begin, size});  // and whatever follows the index
  return out;
}

namespace {

// Splits inflated text into lines for a consumer, counting as the reader does.
class RangeLines {
 public:
  RangeLines(LineConsumer& c, ReadStats& st, const ReadOptions& o)
      : consumer_(c), stats_(st), max_line_(o.max_line_bytes), from_ns_(o.from_ns), to_ns_(o.to_ns),
        windowed_(o.windowed()), steps_(o.steps.get()) {}

  // Appends inflated bytes; hands over every line completed so far.
  void feed(const char* p, size_t n) {
    const size_t keep = text_.size();
    text_.append(p, n);
    size_t start = 0;
    if (skip_head_) {  // the end of a line that the previous range reads
      size_t nl = text_.find('\n', keep);
      if (nl == std::string::npos) {
        text_.clear();
        return;
      }
      skip_head_ = false;
      start = nl + 1;
    }
    size_t last = text_.rfind('\n');
    if (last == std::string::npos || last < start) {
      text_.erase(0, start);
      drop_oversized();
      return;
    }
    size_t pos = start;
    while (pos <= last) {
      size_t nl = text_.find('\n', pos);
      line(pos, nl - pos);
      pos = nl + 1;
    }
    text_.erase(0, last + 1);
    drop_oversized();
  }
  // The rest, a last line without a newline, at the end of the input.
  void finish() {
    if (!text_.empty() && !skip_head_) line(0, text_.size());
    text_.clear();
  }
  bool mid_line() const { return !text_.empty() || skip_head_; }
  // Drops a partial line (a member that broke off mid-line); true when there was one.
  bool drop_partial() {
    const bool had = !text_.empty() && !skip_head_;
    if (!skip_head_) text_.clear();
    return had;
  }
  void skip_head() { skip_head_ = true; }

 private:
  void drop_oversized() {
    if (text_.size() > max_line_ + 1) text_.resize(max_line_ + 1);  // stays over the limit, holds no more
  }
  void line(size_t pos, size_t len) {
    if (len > max_line_) {
      ++stats_.oversized;
      return;
    }
    std::string_view s = strip_trace_line(std::string_view(text_.data() + pos, len));
    if (s.empty()) return;
    int64_t ts;
    if (windowed_ && line_ts(s, ts) && (ts < from_ns_ || ts >= to_ns_ || (steps_.active() && !steps_.keep(0, s, ts))))
      return;  // as the reader's LineSink (one file: index 0 of the step filter)
    scratch_.assign(s.begin(), s.end());
    scratch_.resize(s.size() + kLinePadding);
    DecodeStatus st = consumer_.consume(std::string_view(scratch_.data(), s.size()), scratch_.size());
    if (st == DecodeStatus::Ok) ++stats_.events;
    else if (st == DecodeStatus::Malformed) ++stats_.malformed;
    else ++stats_.bad_fields;
  }

  LineConsumer& consumer_;
  ReadStats& stats_;
  uint64_t max_line_;
  int64_t from_ns_, to_ns_;
  bool windowed_;
  StepSpanFilter steps_;
  bool skip_head_ = false;
  std::string text_;
  std::vector<char> scratch_;
};

}  // namespace

ReadStats read_member_range(const std::string& path, MemberRange range, LineConsumer& consumer,
                            const ReadOptions& options) {
  MappedFile map(path);
  const uint64_t size = map.size();
  if (range.begin == 0 && range.end >= size) {  // the whole file: the reader proper
    std::vector<LineConsumer*> one{&consumer};
    return read_traces({path}, one, options);
  }
  if (range.begin >= range.end || range.end > size || !is_gzip_header(map.data() + range.begin, size - range.begin))
    throw std::invalid_argument("not a range of gzip members of " + path + ": " + std::to_string(range.begin) + "-" +
                                std::to_string(range.end));
  ReadStats st;
  st.files = range.begin == 0 ? 1 : 0;  // a file counts once, with its first range
  st.input_bytes = range.end - range.begin;
  RangeLines lines(consumer, st, options);
  MemberInflater inflater;
  std::vector<GzipIndexEntry> index;
  load_gzip_index(path, map.data(), map.size(), index);
  const IndexedStarts starts{&index};
  if (range.begin > 0) {
    // Does the text before this range end with a newline? Only the member
    // just before it can tell (the index says where it starts).
    char last = '\n';
    for (const GzipIndexEntry& e : index) {
      if (e.offset + e.size != range.begin) continue;
      MemberResult r = inflater.inflate_member(map.data(), range.begin, e.offset, [&last](const char* p, size_t n) {
        if (n) last = p[n - 1];
        return true;
      });
      if (r.end != MemberEnd::Complete) last = '\n';  // a damaged member gives no line to finish
      break;
    }
    if (last != '\n') lines.skip_head();
  }
  consumer.begin_piece(0);
  uint64_t off = range.begin;
  bool in_range = true;
  HeldMemberText held;  // a member's text until it checks out, as the reader holds it
  while (off < size && (in_range || lines.mid_line())) {
    // Past the range only to finish a line it began: stop at the first newline.
    // An indexed member is inflated within its own bytes, as the reader does.
    const size_t limit = starts.member_end(off, size);
    held.reset();
    MemberResult r = inflater.inflate_member(map.data(), limit, off, [&](const char* p, size_t n) {
      if (in_range) {
        st.json_bytes += n;
        held.add(p, n, [&](const char* q, size_t m) { lines.feed(q, m); });
        return true;
      }
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      lines.feed(p, nl ? static_cast<size_t>(nl - p) + 1 : n);
      return nl == nullptr;
    });
    const bool damaged = r.end == MemberEnd::Corrupt || (r.end == MemberEnd::Truncated && limit != size);
    if (in_range && !held.handed_on) {
      if (damaged) st.json_bytes -= r.produced;  // none of a damaged member's lines, as the reader
      else lines.feed(held.text.data(), held.text.size());
    }
    if (r.end != MemberEnd::Complete) {
      if (!in_range) break;
      ++(damaged ? st.corrupt_members : st.truncated_members);
      if (lines.drop_partial()) ++st.malformed;  // as the reader: the half line is dropped
      // As the reader does: the next indexed start, else the next plausible member header goes on.
      const size_t next = starts.next_after(off);
      off = next != SIZE_MAX ? next : find_gzip_header(map.data(), size, off + 1);
    } else {
      off = r.next_offset;
    }
    if (off >= range.end) in_range = false;
  }
  lines.finish();
  return st;
}

// ---------------------------------------------------------------------------
// The bytes of a partial aggregate

// Little-endian fixed-width numbers and length-prefixed strings; a magic word
// and version first, so a part from another build is refused, not misread.
class PartialCodec {
 public:
  static constexpr uint64_t kMagic = 0x34544150'54464444ULL;  // "DDFTPAT4" (2: ReadStats::indexed_files; 3: the memory sums; 4: device events)

  static std::string encode(SummaryAggregator& a, const ReadStats& st, const std::vector<size_t>& file_ids) {
    a.nesting_.finish();  // every self time known in its group, the runs kept
    PartialCodec w;
    w.put_u64(kMagic);
    w.put_str(keys_text(a.keys_));
    w.put_u64(a.complete_);
    w.put_u64(a.metadata_);
    w.put_u64(a.other_);
    w.put_u64(a.device_);
    w.put_i64(a.first_ts_ns_);
    w.put_i64(a.last_end_ns_);
    for (uint64_t v : stats_fields(st)) w.put_u64(v);
    w.put_u64(a.groups_.size());
    for (auto& [key, g] : a.groups_) {
      w.put_str(key);
      w.put_u64(g.count);
      w.put_i64(g.total_ns);
      w.put_i64(g.self_ns);
      w.put_i64(g.min_ns);
      w.put_i64(g.max_ns);
      w.put_f64(g.flops);
      w.put_f64(g.bytes);
      w.put_i64(g.flops_ns);
      w.put_i64(g.bytes_ns);
      w.put_u64(g.with_flops);
      w.put_u64(g.with_bytes);
      w.put_f64(g.alloc_bytes);
      w.put_f64(g.free_bytes);
      w.put_u64(g.with_memory);
      w.put_histogram(g.hist);
    }
    const SelfTimeTracker& t = a.nesting_;
    w.put_u64(t.stats_.approximated);
    w.put_u64(t.stats_.folded);
    w.put_u64(t.runs_.size());
    for (const SelfTimeTracker::Run& r : t.runs_) {
      w.put_str(global_thread(r.thread, file_ids));
      w.put_u64(r.leftover.size());
      for (const SelfTimeTracker::Open& o : r.leftover) {
        w.put_i64(o.ts);
        w.put_i64(o.end);
        w.put_i64(o.dur);
        w.put_i64(o.self);
        w.put_i64(o.candidate);
        w.put_u64((o.claimed ? 1 : 0) | (o.block ? 2 : 0));
      }
      w.put_u64(r.candidates.size());
      for (const SelfTimeTracker::Candidate& c : r.candidates) {
        w.put_i64(c.ts);
        w.put_i64(c.end);
        w.put_i64(c.self);
        w.put_str(c.key);
      }
    }
    return std::move(w.out_);
  }

  // Adds one part to `a` (keys already set) and `st`.
  static void decode(const std::string& part, SummaryAggregator& a, ReadStats& st) {
    PartialCodec r(part);
    if (r.get_u64() != kMagic) throw std::invalid_argument("not a dftracer partial summary (wrong magic or version)");
    if (r.get_str() != keys_text(a.keys_))
      throw std::invalid_argument("a partial summary made with other group keys than the combine step's");
    SummaryAggregator part_agg(a.keys_);
    part_agg.complete_ = r.get_u64();
    part_agg.metadata_ = r.get_u64();
    part_agg.other_ = r.get_u64();
    part_agg.device_ = r.get_u64();
    part_agg.first_ts_ns_ = r.get_i64();
    part_agg.last_end_ns_ = r.get_i64();
    ReadStats ps;
    std::vector<uint64_t*> fields = stats_refs(ps);
    for (uint64_t* f : fields) *f = r.get_u64();
    st.add(ps);
    for (uint64_t n = r.get_count(); n--;) {
      std::string key = r.get_str();
      GroupStats g;
      g.count = r.get_u64();
      g.total_ns = r.get_i64();
      g.self_ns = r.get_i64();
      g.min_ns = r.get_i64();
      g.max_ns = r.get_i64();
      g.flops = r.get_f64();
      g.bytes = r.get_f64();
      g.flops_ns = r.get_i64();
      g.bytes_ns = r.get_i64();
      g.with_flops = r.get_u64();
      g.with_bytes = r.get_u64();
      g.alloc_bytes = r.get_f64();
      g.free_bytes = r.get_f64();
      g.with_memory = r.get_u64();
      r.get_histogram(g.hist);
      part_agg.groups_.emplace(std::move(key), std::move(g));
    }
    SelfTimeTracker& t = part_agg.nesting_;
    t.stats_.approximated = r.get_u64();
    t.stats_.folded = r.get_u64();
    for (uint64_t n = r.get_count(); n--;) {
      SelfTimeTracker::Run run;
      run.thread = r.get_str();
      for (uint64_t k = r.get_count(); k--;) {
        SelfTimeTracker::Open o{};
        o.ts = r.get_i64();
        o.end = r.get_i64();
        o.dur = r.get_i64();
        o.self = r.get_i64();
        o.candidate = static_cast<int32_t>(r.get_i64());
        uint64_t flags = r.get_u64();
        o.claimed = flags & 1;
        o.block = flags & 2;
        run.leftover.push_back(o);
      }
      for (uint64_t k = r.get_count(); k--;) {
        SelfTimeTracker::Candidate c;
        c.ts = r.get_i64();
        c.end = r.get_i64();
        c.self = r.get_i64();
        c.key = r.get_str();
        run.candidates.push_back(std::move(c));
      }
      for (const SelfTimeTracker::Open& o : run.leftover)
        if (o.candidate >= static_cast<int64_t>(run.candidates.size()))
          throw std::invalid_argument("a partial summary is damaged (candidate out of range)");
      t.runs_.push_back(std::move(run));
    }
    if (!r.at_end()) throw std::invalid_argument("a partial summary is damaged (bytes after its end)");
    a.merge(part_agg);
  }

 private:
  PartialCodec() = default;
  explicit PartialCodec(const std::string& in) : in_(&in) {}

  static std::string keys_text(const std::vector<GroupKey>& keys) {
    std::string s;
    for (const GroupKey& k : keys) s.append(k.label).append(1, ',');
    return s;
  }
  // The run's thread is "<file index>\x1f<pid>\x1f<tid>" with the index into
  // this part's files: renumbered to the whole input's.
  static std::string global_thread(const std::string& thread, const std::vector<size_t>& file_ids) {
    size_t sep = thread.find('\x1f');
    size_t local = std::stoul(thread.substr(0, sep));
    if (local >= file_ids.size()) throw std::logic_error("self-time run of an unknown file");
    return std::to_string(file_ids[local]) + thread.substr(sep);
  }
  static std::vector<uint64_t*> stats_refs(ReadStats& s) {
    return {&s.files,     &s.input_bytes,     &s.json_bytes,      &s.events,      &s.malformed,
            &s.bad_fields, &s.truncated_members, &s.corrupt_members, &s.empty_files, &s.bad_indexes,
            &s.boundary_mismatches, &s.oversized, &s.indexed_files};
  }
  static std::vector<uint64_t> stats_fields(ReadStats s) {
    std::vector<uint64_t> v;
    for (uint64_t* f : stats_refs(s)) v.push_back(*f);
    return v;
  }

  void put_u64(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_.append(b, 8);
  }
  void put_i64(int64_t v) { put_u64(static_cast<uint64_t>(v)); }
  void put_f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    put_u64(bits);
  }
  void put_str(const std::string& s) {
    put_u64(s.size());
    out_.append(s);
  }
  void put_histogram(const LogHistogram& h) {
    put_u64(h.count_);
    put_u64(h.zeros_);
    uint64_t present = 0;
    for (int i = 0; i < LogHistogram::kOctaves; ++i)
      if (h.octaves_[i]) present |= uint64_t{1} << i;
    put_u64(present);
    for (int i = 0; i < LogHistogram::kOctaves; ++i)
      if (h.octaves_[i])
        for (uint64_t c : *h.octaves_[i]) put_u64(c);
  }

  uint64_t get_u64() {
    if (in_->size() - pos_ < 8) throw std::invalid_argument("a partial summary is damaged (cut short)");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>((*in_)[pos_ + i])) << (8 * i);
    pos_ += 8;
    return v;
  }
  // An element count, never more than the bytes left could hold.
  uint64_t get_count() {
    uint64_t n = get_u64();
    if (n > in_->size() - pos_) throw std::invalid_argument("a partial summary is damaged (bad count)");
    return n;
  }
  int64_t get_i64() { return static_cast<int64_t>(get_u64()); }
  double get_f64() {
    uint64_t bits = get_u64();
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  std::string get_str() {
    uint64_t n = get_count();
    std::string s = in_->substr(pos_, n);
    pos_ += n;
    return s;
  }
  void get_histogram(LogHistogram& h) {
    h.count_ = get_u64();
    h.zeros_ = get_u64();
    uint64_t present = get_u64();
    for (int i = 0; i < LogHistogram::kOctaves; ++i) {
      if (!(present >> i & 1)) continue;
      h.octaves_[i] = std::make_unique<LogHistogram::Octave>();
      for (uint64_t& c : *h.octaves_[i]) c = get_u64();
    }
  }
  bool at_end() const { return pos_ == in_->size(); }

  std::string out_;
  const std::string* in_ = nullptr;
  size_t pos_ = 0;
};

std::string partial_summary(const std::vector<std::string>& files, const std::vector<size_t>& file_ids,
                            const std::vector<GroupKey>& keys, unsigned threads, const ReadOptions& options) {
  if (file_ids.size() != files.size()) throw std::invalid_argument("partial_summary: one file id per file");
  // A finalized .pfw.gz whose write-time index answers exactly gives its
  // groups from the index (index_summary.hpp), file by file: a Dask worker
  // then inflates nothing for it, and the answer is the one a read gives.
  std::vector<std::string> to_read;
  std::vector<size_t> read_ids;
  SummaryAggregator indexed(keys);
  ReadStats indexed_stats;
  std::string why_not;
  const bool try_index = options.use_index && !options.windowed() && keys_indexable(keys, &why_not);
  for (size_t i = 0; i < files.size(); ++i) {
    if (try_index && add_file_from_index(files[i], indexed, &indexed_stats, &why_not)) continue;
    to_read.push_back(files[i]);
    read_ids.push_back(file_ids[i]);
  }
  ReadStats st;
  std::unique_ptr<SummaryAggregator> agg =
      to_read.empty() ? std::make_unique<SummaryAggregator>(keys) : aggregate_traces(to_read, keys, threads, options, &st);
  // Whole files: every thread's events are all here, so its nesting is
  // settled now and no run needs to travel (a thread is keyed by its file).
  agg->resolve_nesting();
  agg->merge(indexed);
  st.add(indexed_stats);
  return PartialCodec::encode(*agg, st, read_ids);
}

std::string partial_summary_range(const std::string& file, size_t file_id, MemberRange range,
                                  const std::vector<GroupKey>& keys, const ReadOptions& options) {
  SummaryAggregator agg(keys, options.runtime_files);
  ReadStats st = read_member_range(file, range, agg, options);
  return PartialCodec::encode(agg, st, {file_id});
}

std::unique_ptr<SummaryAggregator> merge_partials(const std::vector<std::string>& parts,
                                                  const std::vector<GroupKey>& keys, ReadStats* stats) {
  auto all = std::make_unique<SummaryAggregator>(keys);
  for (const std::string& p : parts) PartialCodec::decode(p, *all, *stats);
  all->resolve_nesting();
  return all;
}

Summary combine_partials(const std::vector<std::string>& parts, const std::vector<GroupKey>& keys, size_t top_n,
                         SummarySort sort) {
  ReadStats st;
  std::unique_ptr<SummaryAggregator> all = merge_partials(parts, keys, &st);
  Summary s = build_summary(*all, top_n, sort);
  s.stats = st;
  s.from_index = st.files > 0 && st.indexed_files == st.files;
  return s;
}

}  // namespace dftracer::analyze
