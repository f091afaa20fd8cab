#include "json_lines_formatter.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "clock.h"
#include "dftracer/dftracer.h"
#include "hash.h"
#include "host_hash_key.h"
#include "json_escape.h"
#include "device_track.hpp"
#include "memory_args.hpp"
#include "string_table.h"

namespace dftracer {
namespace {

std::string hex16(uint64_t v) {
  char b[17];
  snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  json_escape_append(s.data(), s.size(), &out);
  out += '"';
  return out;
}

}  // namespace

std::unique_ptr<TraceFormatter> make_json_lines_formatter(const SessionInfo& info) {
  return std::unique_ptr<TraceFormatter>(new JsonLinesFormatter(info));
}

JsonLinesFormatter::JsonLinesFormatter(const SessionInfo& info)
    : info_(info),
      host_hash_(hash64(info.hostname.data(), info.hostname.size())),
      whole_micros_(info.config.whole_micros),
      inc_metadata_(info.config.inc_metadata),
      strings_(StringTable::instance()),
      clock_(Clock::instance()),
      hhash_key_(strings_.intern(kHostHashKey, sizeof kHostHashKey - 1)),
      memory_cat_(strings_.intern(format::kMemoryCat, sizeof format::kMemoryCat - 1)),
      block_addr_(strings_.intern(format::kBlockArgAddr, sizeof format::kBlockArgAddr - 1)),
      block_size_(strings_.intern(format::kBlockArgSize, sizeof format::kBlockArgSize - 1)),
      block_total_(strings_.intern(format::kBlockArgTotal, sizeof format::kBlockArgTotal - 1)),
      block_op_(strings_.intern(format::kBlockArgOp, sizeof format::kBlockArgOp - 1)),
      block_dev_(strings_.intern(format::kBlockArgDev, sizeof format::kBlockArgDev - 1)) {}

void JsonLinesFormatter::set_observer(EventObserver* observer) {
  observer_ = observer;
  if (observer_) observer_->file_pid(info_.pid);
}

void JsonLinesFormatter::preamble(OutBuffer* out) {
  out->lit("[\n");
  const Config& c = info_.config;
  uint64_t cmd_hash = hash64(info_.cmdline.data(), info_.cmdline.size());
  uint64_t exe_hash = hash64(info_.exe.data(), info_.exe.size());
  uint64_t cwd_hash = hash64(info_.cwd.data(), info_.cwd.size());
  // As DFTracer 2.x: HH and the names always; the command line, executable
  // and working directory (SH, FH) only with DFTRACER_INC_METADATA=1.
  metadata("HH", info_.main_tid, info_.hostname, hex16(host_hash_), out);
  if (c.inc_metadata) {
    metadata("SH", info_.main_tid, info_.cmdline, hex16(cmd_hash), out);
    metadata("SH", info_.main_tid, info_.exe, hex16(exe_hash), out);
    metadata("FH", info_.main_tid, info_.cwd, hex16(cwd_hash), out);
  }
  // A process started by torchrun says which rank it is, in the
  // first chunk, so even a rank killed at once is identified.
  if (c.rank >= 0) {
    metadata_int("rank", info_.main_tid, c.rank, out);
    if (c.local_rank >= 0) metadata_int("local_rank", info_.main_tid, c.local_rank, out);
    if (c.world_size >= 0) metadata_int("world_size", info_.main_tid, c.world_size, out);
    if (c.group_rank >= 0) metadata_int("group_rank", info_.main_tid, c.group_rank, out);
    metadata("hostname", info_.main_tid, "hostname", info_.hostname, out);
    naming("process_name", info_.main_tid, "rank " + std::to_string(c.rank) + " (pid " + std::to_string(info_.pid) + ")",
           out);
  } else {
    naming("process_name", info_.main_tid, info_.app + " (" + std::to_string(info_.pid) + ")", out);
  }
  std::string args = "\"cmd_hash\":\"" + hex16(cmd_hash) + "\",\"exec_hash\":\"" + hex16(exe_hash) +
                     "\",\"cwd\":\"" + hex16(cwd_hash) + "\",\"ppid\":" + std::to_string(info_.ppid) + ",\"p_idx\":" + std::to_string(info_.process_id) +
                     ",\"version\":\"" DFTRACER_VERSION "\",\"init\":" + json_str(c.init_mode) +
                     ",\"data_dir\":" + json_str(c.data_dir) + ",\"compression\":" + (c.compress ? "1" : "0") +
                     // The clock anchor (realtime - monotonic at start) and the tick source: what
                     // cross-file alignment starts from (clock_offset_ns refines it, #16).
                     ",\"clock\":\"" + (clock_.uses_tsc() ? "tsc" : "monotonic") +
                     "\",\"clock_anchor_ns\":" + std::to_string(clock_.epoch_offset_ns());
  lifecycle("start", info_.main_tid, info_.start_ns, args, out, false);
}

void JsonLinesFormatter::thread_name(int64_t tid, const std::string& display, OutBuffer* out) {
  naming("thread_name", tid, display, out);
}

void JsonLinesFormatter::end(int64_t tid, uint64_t ts_ns, uint64_t events_written, uint64_t dropped,
                             OutBuffer* out) {
  // num_events counts what DFTracer 2.x counts: the events written before
  // `end` (start, complete, instant), not the metadata or flow lines. The
  // writer's count excludes lines lost to a failed write; a lost metadata
  // line can make this one low then, never high.
  const uint64_t num_events = events_written > non_event_lines_ ? events_written - non_event_lines_ : 0;
  std::string args = "\"num_events\":" + std::to_string(num_events) + ",\"dropped\":" + std::to_string(dropped);
  lifecycle("end", tid, ts_ns, args, out, /*last=*/true);
}

void JsonLinesFormatter::str_id(uint32_t id, OutBuffer* out) {
  out->ch('"');
  if (const InternedString* s = strings_.get(id)) out->append(s->escaped, s->escaped_len);
  out->ch('"');
}

void JsonLinesFormatter::head(const char* name, size_t name_len, const char* cat, size_t cat_len, int64_t tid,
                          OutBuffer* out, bool with_id, int64_t pid) {
  ++lines_;
  if (with_id) {
    out->lit("{\"id\":");
    out->u64(next_id_++);
    out->lit(",\"name\":\"");
  } else {
    out->lit("{\"name\":\"");
  }
  out->append(name, name_len);
  out->lit("\",\"cat\":\"");
  out->append(cat, cat_len);
  out->lit("\",\"pid\":");
  out->i64(pid < 0 ? info_.pid : pid);
  out->lit(",\"tid\":");
  out->i64(tid);
}

// The bytes copied after an arg slot (DFT_ARG_BYTES, DFT_ARG_KEY) and their
// count; 0 bytes for a malformed count: never read past the record.
const char* JsonLinesFormatter::copied_bytes(const ArgSlot* a, const ArgSlot* end, size_t* n) {
  const char* bytes = reinterpret_cast<const char*>(a + 1);
  *n = a->len;
  if (bytes + *n > reinterpret_cast<const char*>(end)) *n = 0;
  return bytes;
}

void JsonLinesFormatter::args(const RecordHeader* r, OutBuffer* out, bool with_hhash) {
  if (!with_hhash && r->nargs == 0) return;
  out->lit(",\"args\":{");
  bool first = true;
  if (with_hhash) {
    out->lit("\"hhash\":\"");
    out->hex16(host_hash_);
    out->ch('"');
    first = false;
  }
  // A record on another track: its first slot is the track, not an arg.
  const ArgSlot* a = reinterpret_cast<const ArgSlot*>(r + 1) + ((r->flags & kOnTrack) ? 1 : 0);
  const ArgSlot* end = reinterpret_cast<const ArgSlot*>(reinterpret_cast<const unsigned char*>(r) +
                                                        size_t{r->nslots} * kSlot);
  // A DFT_ARG_KEY slot (a key past the intern cap) names the arg after it.
  const char* key_bytes = nullptr;
  size_t key_len = 0;
  for (uint32_t i = 0; i < r->nargs && a < end; ++i, ++a) {
    if (a->type == DFT_ARG_KEY) {
      key_bytes = copied_bytes(a, end, &key_len);
      a += (key_len + kSlot - 1) / kSlot;  // skip the key's slots
      continue;
    }
    const char* inline_key = key_bytes;
    key_bytes = nullptr;
    if (a->type == DFT_ARG_JSON) {
      const InternedString* s = strings_.get(static_cast<uint32_t>(a->value));
      if (s != nullptr && s->len > 0) {
        if (!first) out->ch(',');
        first = false;
        out->append(s->str, s->len);  // validated when interned
      }
      continue;
    }
    if (!first) out->ch(',');
    first = false;
    // Every event's "hhash" is ours (host_hash_key.h): a user's arg of that
    // name keeps its value under "user_hhash", so no key is written twice.
    if (inline_key != nullptr) {
      out->ch('"');
      char* p = out->ensure(6 * key_len);
      out->advance(json_escape_to(inline_key, key_len, p));
      out->ch('"');
    } else if (a->key == hhash_key_) {
      out->ch('"');
      out->lit(kUserHostHashKey);
      out->ch('"');
    } else {
      str_id(a->key, out);
    }
    out->ch(':');
    switch (a->type) {
      case DFT_ARG_INT: out->i64(static_cast<int64_t>(a->value)); break;
      case DFT_ARG_UINT: out->u64(a->value); break;
      case DFT_ARG_BOOL:
        if (a->value != 0) out->lit("true"); else out->lit("false");
        break;
      case DFT_ARG_DOUBLE: {
        double d;
        std::memcpy(&d, &a->value, sizeof d);
        if (!std::isfinite(d)) { out->lit("null"); break; }
        char* p = out->ensure(32);
        auto res = std::to_chars(p, p + 32, d);
        out->advance(static_cast<size_t>(res.ptr - p));
        break;
      }
      case DFT_ARG_STR: str_id(static_cast<uint32_t>(a->value), out); break;
      case DFT_ARG_HASH:
        out->ch('"');
        out->hex16(a->value);
        out->ch('"');
        break;
      case DFT_ARG_BYTES: {
        size_t n = 0;
        const char* bytes = copied_bytes(a, end, &n);
        out->ch('"');
        char* p = out->ensure(6 * n);
        out->advance(json_escape_to(bytes, n, p));
        out->ch('"');
        a += (n + kSlot - 1) / kSlot;  // skip the string's slots
        break;
      }
      default: out->lit("null");
    }
  }
  out->ch('}');
}

bool JsonLinesFormatter::block_args(const RecordHeader* r, OutBuffer* out) {
  static_assert(std::string_view(format::kBlockArgAddr) == "addr" && std::string_view(format::kBlockArgSize) == "size" &&
                    std::string_view(format::kBlockArgTotal) == "total" && std::string_view(format::kBlockArgOp) == "op" &&
                    std::string_view(format::kBlockArgDev) == "dev",
                "the literals below are the block events' keys");
  if (r->nargs == 0 || (r->flags & kOnTrack) || size_t{r->nargs} + 2 > r->nslots) return false;
  const size_t at = out->size();
  out->lit(",\"args\":{");
  const ArgSlot* a = reinterpret_cast<const ArgSlot*>(r + 1);
  for (uint32_t i = 0; i < r->nargs; ++i, ++a) {
    if (i != 0) out->ch(',');
    if (a->type == DFT_ARG_UINT && a->key == block_addr_) out->lit("\"addr\":");
    else if (a->type == DFT_ARG_UINT && a->key == block_size_) out->lit("\"size\":");
    else if (a->type == DFT_ARG_UINT && a->key == block_total_) out->lit("\"total\":");
    else if (a->type == DFT_ARG_STR && a->key == block_op_) out->lit("\"op\":");
    else if (a->type == DFT_ARG_STR && a->key == block_dev_) out->lit("\"dev\":");
    else {
      out->truncate(at);
      return false;
    }
    if (a->type == DFT_ARG_UINT) out->u64(a->value);
    else str_id(static_cast<uint32_t>(a->value), out);
  }
  out->ch('}');
  return true;
}

void JsonLinesFormatter::event(const RecordHeader* r, int64_t tid, OutBuffer* out) {
  const InternedString* cat = strings_.get(r->cat);
  const char* n = "";
  size_t nl = 0;
  if (r->flags & kNameInline) {
    // A name past the intern cap: its bytes are the record's last slots.
    size_t len = r->name;
    const size_t name_slots = (len + kSlot - 1) / kSlot;
    if (name_slots + 2 > r->nslots) len = 0;  // malformed: never read past the record
    const char* bytes = reinterpret_cast<const char*>(r) + (size_t{r->nslots} - name_slots) * kSlot;
    inline_name_.resize(6 * len);
    inline_name_.resize(json_escape_to(bytes, len, inline_name_.data()));
    n = inline_name_.data();
    nl = inline_name_.size();
  } else if (const InternedString* name = strings_.get(r->name)) {
    n = name->escaped;
    nl = name->escaped_len;
  }
  const char* c = cat ? cat->escaped : "";
  size_t cl = cat ? cat->escaped_len : 0;
  int64_t pid = -1;  // the process's own
  if (r->flags & kOnTrack) {  // a device's or another thread's track (record.h)
    const ArgSlot* track = reinterpret_cast<const ArgSlot*>(r + 1);
    pid = track->key;
    tid = static_cast<int64_t>(static_cast<uint32_t>(track->value));
  }

  uint64_t start_ns = (r->flags & kTimeIsNs) ? r->start : clock_.to_ns(r->start);
  uint64_t end_ns = start_ns;  // only a complete event has an end (a flow's `end` is its id)
  if (r->kind == RecordKind::kComplete) {
    // dft_complete_ns takes any start and duration: an end past 2^64 ns
    // stops there rather than wrapping to before the start.
    if (r->flags & kTimeIsNs) end_ns = r->end > UINT64_MAX - r->start ? UINT64_MAX : r->start + r->end;
    else end_ns = clock_.to_ns(r->end);
  }
  start_ns = written(start_ns);
  end_ns = written(end_ns);
  const uint64_t dur_ns = end_ns > start_ns ? end_ns - start_ns : 0;

  switch (r->kind) {
    case RecordKind::kComplete:
      head(n, nl, c, cl, tid, out, true, pid);
      out->lit(",\"ts\":");
      out->micros(start_ns);
      out->lit(",\"dur\":");
      out->micros(dur_ns);
      out->lit(",\"ph\":\"X\"");
      {
        const size_t args_at = out->size();
        args(r, out, inc_metadata_);
        if (observer_) {
          // The members between `,"args":{` and `}`, for the index's flops/bytes sums.
          constexpr size_t kOpen = sizeof(",\"args\":{") - 1;
          const size_t len = out->size() - args_at;
          const char* members = len > kOpen ? out->data() + args_at + kOpen : "";
          observer_->complete(n, nl, c, cl, tid, start_ns, dur_ns, members, len > kOpen ? len - kOpen - 1 : 0);
          if (format::is_device_track_pid(pid)) observer_->on_device_track();
        }
      }
      break;
    case RecordKind::kInstant:
      // The memory capture's block events ("alloc"/"free", about half the
      // events of a traced training step) are written without "id" (no
      // reader uses it) and without "s" (the Trace Event Format's default
      // scope of an instant is the thread, as Perfetto's importer takes
      // it): fewer bytes for the writer to format and compress.
      if (r->cat == memory_cat_) {
        head(n, nl, c, cl, tid, out, /*with_id=*/false);
        out->lit(",\"ts\":");
        out->micros(start_ns);
        out->lit(",\"ph\":\"i\"");
        if (!inc_metadata_ && block_args(r, out)) {
          if (observer_) observer_->other(start_ns);
          break;
        }
      } else {
        head(n, nl, c, cl, tid, out);
        out->lit(",\"ts\":");
        out->micros(start_ns);
        out->lit(",\"ph\":\"i\",\"s\":\"t\"");
      }
      args(r, out, inc_metadata_);
      if (observer_) observer_->other(start_ns);
      break;
    case RecordKind::kCounter:
      // Chrome counter: every arg is one series of the track `name`; no
      // host hash among them (a counter track draws each member as a line).
      // No counter sample carries an "id": in the Trace Event Format a
      // counter's id is part of its track's name (Perfetto's importer names
      // the track "<name> id: <id> <series>"), so each sample would get a
      // track of its own.
      head(n, nl, c, cl, tid, out, /*with_id=*/false);
      out->lit(",\"ts\":");
      out->micros(start_ns);
      out->lit(",\"ph\":\"C\"");
      args(r, out, /*with_hhash=*/false);
      if (observer_) observer_->other(start_ns);
      break;
    case RecordKind::kFlowStart:
    case RecordKind::kFlowEnd: {
      // Chrome flow events: "id" is the flow id that pairs "s" with "f", so
      // these lines carry no event index.
      ++non_event_lines_;
      head(n, nl, c, cl, tid, out, /*with_id=*/false, pid);
      out->lit(",\"id\":");
      out->u64(r->end);
      out->lit(",\"ts\":");
      out->micros(start_ns);
      if (observer_) observer_->other(start_ns);
      if (r->kind == RecordKind::kFlowStart) out->lit(",\"ph\":\"s\"");
      else out->lit(",\"ph\":\"f\",\"bp\":\"e\"");
      break;
    }
    case RecordKind::kMetadata:
    case RecordKind::kThreadName:
      ++non_event_lines_;
      head(n, nl, c, cl, tid, out, true, pid);
      out->lit(",\"ph\":\"M\"");
      args(r, out, /*with_hhash=*/true);  // DFTracer's metadata lines always carry it
      if (observer_) observer_->metadata();
      break;
  }
  out->lit("}\n");
}

void JsonLinesFormatter::metadata(const char* name, int64_t tid, const std::string& arg_name,
                              const std::string& value, OutBuffer* out) {
  ++non_event_lines_;
  head(name, std::strlen(name), "dftracer", 8, tid, out);
  out->lit(",\"ph\":\"M\",\"args\":{\"hhash\":\"");
  out->hex16(host_hash_);
  out->lit("\",\"name\":\"");
  char* p = out->ensure(6 * arg_name.size());
  out->advance(json_escape_to(arg_name.data(), arg_name.size(), p));
  out->lit("\",\"value\":\"");
  p = out->ensure(6 * value.size());
  out->advance(json_escape_to(value.data(), value.size(), p));
  out->lit("\"}}\n");
  if (observer_) observer_->metadata();
}

void JsonLinesFormatter::metadata_int(const char* name, int64_t tid, int64_t value, OutBuffer* out) {
  ++non_event_lines_;
  head(name, std::strlen(name), "dftracer", 8, tid, out);
  out->lit(",\"ph\":\"M\",\"args\":{\"hhash\":\"");
  out->hex16(host_hash_);
  out->lit("\",\"name\":\"");
  out->append(name, std::strlen(name));
  out->lit("\",\"value\":");
  out->i64(value);
  out->lit("}}\n");
}

void JsonLinesFormatter::naming(const char* kind, int64_t tid, const std::string& display, OutBuffer* out) {
  ++non_event_lines_;
  head(kind, std::strlen(kind), "dftracer", 8, tid, out);
  out->lit(",\"ph\":\"M\",\"args\":{\"name\":\"");
  char* p = out->ensure(6 * display.size());
  out->advance(json_escape_to(display.data(), display.size(), p));
  out->lit("\"}}\n");
  if (observer_) observer_->metadata();
}

void JsonLinesFormatter::lifecycle(const char* name, int64_t tid, uint64_t ts_ns, const std::string& args_fragment,
                               OutBuffer* out, bool last) {
  head(name, std::strlen(name), "dftracer", 8, tid, out);
  out->lit(",\"ts\":");
  out->micros(written(ts_ns));
  out->lit(",\"dur\":0,\"ph\":\"X\",\"args\":{");
  if (inc_metadata_) {
    out->lit("\"hhash\":\"");
    out->hex16(host_hash_);
    out->ch('"');
    if (!args_fragment.empty()) out->ch(',');
  }
  out->append(args_fragment.data(), args_fragment.size());
  out->lit("}}\n");
  if (observer_)
    observer_->complete(name, std::strlen(name), "dftracer", 8, tid, written(ts_ns), 0, args_fragment.data(),
                        args_fragment.size());
  if (last) out->lit("]\n");
}

}  // namespace dftracer
