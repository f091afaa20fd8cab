#include "member_index.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

// The index must give the numbers a full read gives, so it uses the
// analyzer's own models (header-only histogram, the self-time tracker
// compiled into the core beside this file), not a second copy of them.
#include "index_format.hpp"
#include "log_histogram.hpp"
#include "memory_args.hpp"
#include "self_time.hpp"
#include "trace_time.hpp"

namespace dftracer {

using format::saturating_add;

struct MemberIndex::Cell {
  uint32_t name = 0, cat = 0;
  int64_t tid = 0;
  std::string key;  // names the cell for the tracker
  uint64_t count = 0;
  int64_t total = 0, self = 0;
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = std::numeric_limits<int64_t>::min();
  format::LogHistogram hist;
  double flops = 0, bytes = 0;  // as GroupStats: sums, the carriers' durations and count
  int64_t flops_ns = 0, bytes_ns = 0;
  uint64_t with_flops = 0, with_bytes = 0;
};

struct MemberIndex::Nesting {
  format::SelfTimeTracker tracker;
};

void append_index_line(std::string* out, const std::string& payload) {
  static_assert(format::kLineCrcDigits == 8, "the line's CRC is printed as %08lx");
  char tail[16];
  int n = snprintf(tail, sizeof tail, "%s%08lx\n", format::kLineCrcMark.data(),
                   static_cast<unsigned long>(format::index_line_crc(payload)));
  out->append(payload);
  out->append(tail, static_cast<size_t>(n));
}

namespace {

void num(std::string& s, uint64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  s.push_back(' ');
  s.append(b, r.ptr);
}

void snum(std::string& s, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  s.push_back(' ');
  s.append(b, r.ptr);
}

constexpr uint64_t kMaxNs = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

void dnum(std::string& s, double v) {
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);  // shortest text that reads back as v
  s.push_back(' ');
  s.append(b, r.ptr);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The end of a JSON number starting at p (the grammar the analyzer's
// decoders accept), or null when there is none.
const char* json_number_end(const char* p, const char* e) {
  if (p < e && *p == '-') ++p;
  if (!(p < e && is_digit(*p))) return nullptr;
  if (*p == '0') ++p;
  else
    while (p < e && is_digit(*p)) ++p;
  if (p < e && *p == '.') {
    if (!(++p < e && is_digit(*p))) return nullptr;
    while (p < e && is_digit(*p)) ++p;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    if (++p < e && (*p == '+' || *p == '-')) ++p;
    if (!(p < e && is_digit(*p))) return nullptr;
    while (p < e && is_digit(*p)) ++p;
  }
  return p;
}

// A well-known numeric arg's value (after `"flops":` / `"bytes":`) as the
// analyzer's decoders read it (correctly rounded, like simdjson); false when
// it is not a plain JSON number ending the member.
bool arg_value(const char* b, const char* e, double* v) {
  const char* q = json_number_end(b, e);
  if (q == nullptr || (q < e && *q != ',')) return false;
  if (q - b <= 15 && std::all_of(b, q, is_digit)) {  // a count, as FLOPs and bytes are: exact in a double
    uint64_t n = 0;
    for (const char* d = b; d < q; ++d) n = n * 10 + static_cast<uint64_t>(*d - '0');
    *v = static_cast<double>(n);
    return true;
  }
  auto r = std::from_chars(b, q, *v);
  return r.ec == std::errc() && r.ptr == q;
}

// args.flops / args.bytes of an event's args members, found by their colons
// (memchr runs over the ~8 colons of a compiled op's args rather than a
// substring search over all of its bytes: this runs for every event). A
// colon after `"flops"` is always a key's: inside a string the quotes would
// be escaped. False for an event with memory args (the summary's memory
// columns need them read), and when the text is one the index cannot be sure the
// analyzer reads the same way -- a key twice, a value that is not a plain
// number, a nested object that might hold the key -- so the file's
// summaries read the events instead.
// Whether the key whose closing quote is right before `colon` is one of the
// memory capture's args (alloc_bytes, free_bytes and their dev_ twins), the
// summary's memory columns. A key with an escaped quote counts as one: the
// file's summaries are then read, which is always right.
bool is_memory_key(const char* args, const char* colon) {
  const char* close = colon - 1;
  const char* open = close;
  while (open > args && *(open - 1) != '"') --open;
  if (open == args || (open - 1 > args && *(open - 2) == '\\')) return true;
  return format::is_memory_bytes_arg(std::string_view(open, static_cast<size_t>(close - open)));
}

bool flops_and_bytes(const char* args, size_t n, bool* has_flops, double* flops, bool* has_bytes, double* bytes) {
  const char* e = args + n;
  *has_flops = *has_bytes = false;
  for (const char* p = args + 7; p < e; ++p) {
    p = static_cast<const char*>(memchr(p, ':', static_cast<size_t>(e - p)));
    if (p == nullptr) break;
    bool* has = nullptr;
    double* v = nullptr;
    if (std::memcmp(p - 7, "\"flops\"", 7) == 0) has = has_flops, v = flops;
    else if (std::memcmp(p - 7, "\"bytes\"", 7) == 0) has = has_bytes, v = bytes;
    else if (std::memcmp(p - 7, "_bytes\"", 7) == 0) {
      if (is_memory_key(args, p)) return false;  // the index holds no sums of them
      continue;  // another *_bytes arg (e.g. a compiled graph's planned_alloc_bytes): not summed
    }
    else continue;
    if (*has || !arg_value(p + 1, e, v)) return false;
    *has = true;
  }
  return !((*has_flops || *has_bytes) && memchr(args, '{', n) != nullptr);
}

}  // namespace

MemberIndex::MemberIndex() : nesting_(new Nesting) {}
MemberIndex::~MemberIndex() = default;

void MemberIndex::file_pid(int64_t pid) { pid_text_ = std::to_string(pid); }

uint32_t MemberIndex::intern(const char* s, size_t n) {
  PtrSlot& slot = ptr_cache_[(reinterpret_cast<uintptr_t>(s) >> 3) % (sizeof ptr_cache_ / sizeof ptr_cache_[0])];
  if (slot.p == s && slot.n == n) return slot.id;
  slot.p = s;
  slot.n = n;
  slot.id = intern_text(s, n);
  return slot.id;
}

uint32_t MemberIndex::intern_text(const char* s, size_t n) {
  std::string key(s, n);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  uint32_t id = next_id_++;
  ids_.emplace(key, id);
  unnamed_.push_back(std::move(key));
  return id;
}

void MemberIndex::add(std::vector<Totals>& v, std::vector<uint32_t>& touched, uint32_t id, uint64_t dur) {
  if (v.size() <= id) v.resize(id + 1);
  if (v[id].count++ == 0) touched.push_back(id);
  v[id].dur += dur;
}

void MemberIndex::note_time(uint64_t ts, uint64_t end) {
  m_min_ts_ = std::min(m_min_ts_, ts);
  m_max_ts_ = std::max(m_max_ts_, ts);
  m_max_end_ = std::max(m_max_end_, end);
}

void MemberIndex::complete(const char* name, size_t name_len, const char* cat, size_t cat_len, int64_t tid,
                           uint64_t ts_ns, uint64_t dur_ns, const char* args, size_t args_len) {
  ++m_complete_;
  const uint32_t n = intern(name, name_len), c = intern(cat, cat_len);
  add(m_names_, m_name_ids_, n, dur_ns);
  add(m_cats_, m_cat_ids_, c, dur_ns);
  note_time(ts_ns, ts_ns + dur_ns < ts_ns ? UINT64_MAX : ts_ns + dur_ns);
  if (ts_ns > kMaxNs || dur_ns > kMaxNs) {
    exact_ = false;  // the analyzer reads such a time as a bad field and skips the line
    return;
  }
  ++complete_;
  const int64_t ts = static_cast<int64_t>(ts_ns), dur = static_cast<int64_t>(dur_ns);
  bool has_flops = false, has_bytes = false;
  double flops = 0, bytes = 0;
  if (exact_ && args_len > 7 && !flops_and_bytes(args, args_len, &has_flops, &flops, &has_bytes, &bytes))
    exact_ = false;
  Cell* found = summary_on_ ? cell_for(n, c, tid) : nullptr;
  if (found == nullptr) return;
  Cell& cell = *found;
  if (has_flops) {  // as GroupStats::add
    cell.flops += flops;
    cell.flops_ns = saturating_add(cell.flops_ns, dur);
    ++cell.with_flops;
  }
  if (has_bytes) {
    cell.bytes += bytes;
    cell.bytes_ns = saturating_add(cell.bytes_ns, dur);
    ++cell.with_bytes;
  }
  ++cell.count;
  cell.total = saturating_add(cell.total, dur);
  cell.min = std::min(cell.min, dur);
  cell.max = std::max(cell.max, dur);
  cell.hist.add(static_cast<double>(dur) * 1e-3);  // as GroupStats::add
  first_ts_ = std::min(first_ts_, ts);
  last_end_ = std::max(last_end_, saturating_add(ts, dur));
  char tid_text[24];
  auto r = std::to_chars(tid_text, tid_text + sizeof tid_text, tid);
  nesting_->tracker.add(pid_text_, std::string_view(tid_text, static_cast<size_t>(r.ptr - tid_text)), ts, dur,
                        &cell.self, &cell.key);
}

MemberIndex::Cell* MemberIndex::cell_for(uint32_t n, uint32_t c, int64_t tid) {
  const uint64_t names = uint64_t{n} << 32 | c;
  CellSlot& cs = cell_cache_[(names * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(tid)) % 256];
  if (cs.names == names && cs.tid == tid && cs.cell) return cs.cell;
  auto it = cells_.find({names, tid});
  if (it == cells_.end()) {
    if (std::find(tids_.begin(), tids_.end(), tid) == tids_.end()) tids_.push_back(tid);
    if (tids_.size() > kMaxThreads || cells_.size() >= kMaxCells) {
      give_up_summary();
      return nullptr;
    }
    std::unique_ptr<Cell> cell(new Cell);
    cell->name = n;
    cell->cat = c;
    cell->tid = tid;
    cell->key = std::to_string(cell_order_.size());
    cell_order_.push_back(cell.get());
    it = cells_.emplace(std::make_pair(names, tid), std::move(cell)).first;
  }
  cs = CellSlot{names, tid, it->second.get()};
  return cs.cell;
}

void MemberIndex::give_up_summary() {
  // Memory in the traced process stays bounded: the readers read the events.
  summary_on_ = false;
  exact_ = false;
  nesting_.reset(new Nesting);  // frees every thread's open events
  for (CellSlot& cs : cell_cache_) cs = CellSlot{};
  cell_order_.clear();
  cells_.clear();
  tids_.clear();
  tids_.shrink_to_fit();
}

void MemberIndex::other(uint64_t ts_ns) {
  ++m_other_;
  ++other_;
  note_time(ts_ns, ts_ns);
}

void MemberIndex::metadata() {
  ++m_metadata_;
  ++metadata_;
}

void MemberIndex::name_lines(std::string* out) {
  std::string line;
  for (const std::string& s : unnamed_) {
    line = format::kNameRecord;
    num(line, ids_[s]);
    line += " \"";
    line += s;
    line += '"';
    append_index_line(out, line);
  }
  unnamed_.clear();
}

std::string MemberIndex::member_lines(uint64_t offset, uint64_t size, const char* chunk, size_t raw_size,
                                      uint64_t lines, uint32_t gzip_crc, uint32_t member_crc) {
  std::string out, line;
  if (!header_written_) {
    append_index_line(&out, std::string(format::kIndexMagic) + ' ' + std::string(format::kIndexVersion));
    header_written_ = true;
  }
  (void)chunk;  // complete() saw every event's args.flops / args.bytes
  name_lines(&out);
  line = format::kMemberRecord;
  for (uint64_t v : {offset, size, uint64_t{raw_size}, lines, uint64_t{gzip_crc}, uint64_t{member_crc}, m_complete_, m_metadata_, m_other_})
    num(line, v);
  if (m_min_ts_ == UINT64_MAX) {
    for (int i = 0; i < 3; ++i) (line += ' ') += format::kNoTime;
  } else {
    num(line, m_min_ts_);
    num(line, m_max_ts_);
    num(line, m_max_end_);
  }
  for (auto* part : {&m_name_ids_, &m_cat_ids_}) {
    std::vector<Totals>& v = part == &m_name_ids_ ? m_names_ : m_cats_;
    num(line, part->size());
    for (uint32_t id : *part) {
      num(line, id);
      num(line, v[id].count);
      num(line, v[id].dur);
      v[id] = Totals{};
    }
    part->clear();
  }
  append_index_line(&out, line);
  m_complete_ = m_metadata_ = m_other_ = 0;
  m_min_ts_ = UINT64_MAX;
  m_max_ts_ = m_max_end_ = 0;
  ++members_;
  return out;
}

std::string MemberIndex::finish_lines(uint64_t file_bytes) {
  nesting_->tracker.finish();  // every self time is in its cell now
  std::string out, line;
  name_lines(&out);  // names of events no member line carried (none, normally)
  for (const Cell* c : cell_order_) {
    line = format::kCellRecord;
    num(line, c->name);
    num(line, c->cat);
    snum(line, c->tid);
    num(line, c->count);
    for (int64_t v : {c->total, c->self, c->min, c->max}) snum(line, v);
    num(line, c->hist.zeros());
    size_t buckets = 0;
    c->hist.for_each_bucket([&](int, uint64_t) { ++buckets; });
    num(line, buckets);
    c->hist.for_each_bucket([&](int b, uint64_t n) {
      num(line, static_cast<uint64_t>(b));
      line += ':';
      line.append(std::to_string(n));
    });
    if (c->with_flops || c->with_bytes) {
      any_flops_ = true;
      (line += ' ') += format::kFlopsGroup;
      num(line, c->with_flops);
      dnum(line, c->flops);
      snum(line, c->flops_ns);
      num(line, c->with_bytes);
      dnum(line, c->bytes);
      snum(line, c->bytes_ns);
    }
    append_index_line(&out, line);
  }
  const format::NestingStats& ns = nesting_->tracker.stats();
  line = format::kFinalRecord;
  for (uint64_t v : {complete_, metadata_, other_}) num(line, v);
  snum(line, first_ts_);
  snum(line, last_end_);
  for (uint64_t v : {ns.approximated, ns.folded, static_cast<uint64_t>(!exact_       ? format::kIndexNotExact
                                                                  : any_flops_ ? format::kIndexExactWithFlops
                                                                               : format::kIndexExact)}) num(line, v);
  line += ' ';
  line += pid_text_;
  num(line, members_);
  num(line, file_bytes);
  append_index_line(&out, line);
  return out;
}

}  // namespace dftracer
