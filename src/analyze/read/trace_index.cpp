#include "trace_index.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "index_format.hpp"

namespace dftracer::analyze {

namespace {

enum class Sidecar { Absent, Unusable, Read };

// Whether a member's bytes lie inside a trace of `size` bytes, written so a
// crafted offset and size cannot wrap past 2^64 back into range.
bool within(const GzipIndexEntry& e, uint64_t size) { return e.size <= size && e.offset <= size - e.size; }

// Reads `path` into `out` when it is a regular file of at most `limit` bytes,
// up to its size when opened and its last complete line (a live writer may be
// appending). Anything else is Unusable, decided without blocking or reading
// past the limit: a FIFO would block a plain open, a link to /dev/zero never ends.
Sidecar read_sidecar(const std::string& path, uint64_t limit, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return errno == ENOENT ? Sidecar::Absent : Sidecar::Unusable;
  struct stat st {};
  Sidecar r = Sidecar::Unusable;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= limit) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    bool failed = false;
    while (got < out.size()) {
      ssize_t n = ::read(fd, &out[got], out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed = n < 0;
        break;
      }
      got += static_cast<size_t>(n);
    }
    size_t last_nl = out.rfind('\n', got ? got - 1 : 0);
    out.resize(got && last_nl != std::string::npos ? last_nl + 1 : 0);
    if (!failed) r = Sidecar::Read;
  }
  ::close(fd);
  return r;
}

// Whitespace-separated fields of one index line.
struct Fields {
  std::string_view rest;
  bool ok = true;

  std::string_view word() {
    size_t b = rest.find_first_not_of(' ');
    if (b == std::string_view::npos) {
      ok = false;
      return {};
    }
    size_t e = rest.find(' ', b);
    std::string_view w = rest.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
    return w;
  }
  template <class T>
  T number() {
    std::string_view w = word();
    T v{};
    auto r = std::from_chars(w.data(), w.data() + w.size(), v);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size()) ok = false;
    return v;
  }
  // A time, or "-" (none): false for "-".
  bool time(int64_t& v) {
    std::string_view w = word();
    if (w == format::kNoTime) return false;
    auto r = std::from_chars(w.data(), w.data() + w.size(), v);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size()) ok = false;
    return true;
  }
};

// The payload of a version-2 line, or false when its CRC does not match.
bool checked_payload(std::string_view line, std::string_view& payload) {
  const size_t mark = format::kLineCrcMark.size();
  size_t star = line.rfind(format::kLineCrcMark);
  if (star == std::string_view::npos || line.size() - star != mark + format::kLineCrcDigits) return false;
  uint32_t want = 0;
  auto r = std::from_chars(line.data() + star + mark, line.data() + line.size(), want, 16);
  if (r.ec != std::errc() || r.ptr != line.data() + line.size()) return false;
  payload = line.substr(0, star);
  return format::index_line_crc(payload) == want;
}

bool decode_json_string(std::string_view quoted, std::string& out) {
  simdjson::dom::parser parser;
  simdjson::padded_string ps(quoted);
  std::string_view v;
  if (parser.parse(ps).get_string().get(v) != simdjson::SUCCESS) return false;
  out.assign(v);
  return true;
}

uint32_t le32(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24; }

IndexStatus invalid(TraceIndex* out, std::string* why, const std::string& reason) {
  *out = TraceIndex{};
  if (why) *why = reason;
  return IndexStatus::Invalid;
}

}  // namespace

IndexStatus load_trace_index(const std::string& gz_path, const uint8_t* data, size_t size, TraceIndex* out,
                             std::string* why) {
  *out = TraceIndex{};
  // A version-1 member line is at most 84 bytes for an at least 18-byte
  // member; version 2 adds per-name totals and the summary cells, bounded
  // by the names a member holds: 64x the trace plus 64 KiB is far above any
  // index the writer makes and still refuses a runaway sidecar.
  std::string text;
  Sidecar sc = read_sidecar(gz_path + ".idx", size * 64 + (64u << 10), text);
  if (sc == Sidecar::Absent) return IndexStatus::Absent;
  if (sc != Sidecar::Read) return invalid(out, why, "not a regular file of a plausible size");
  const std::string header = std::string(format::kIndexMagic) + ' ';
  if (text.rfind(header, 0) != 0 && text.size() > size * 5 + 4096)
    return invalid(out, why, "larger than any version-1 index of this trace");
  std::string_view all(text);
  uint64_t expect = 0;
  size_t lineno = 0;
  bool past_end = false;
  std::string decoded;
  for (size_t pos = 0; pos < all.size();) {
    size_t nl = all.find('\n', pos);
    std::string_view line = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (line.empty()) continue;
    const std::string at = "line " + std::to_string(lineno) + ": ";
    if (out->version == 0) out->version = line.rfind(header, 0) == 0 ? 2 : 1;  // 2 or 3: the header says
    if (out->version == 1) {
      Fields f{line};
      IndexedMember m;
      m.entry.offset = f.number<uint64_t>();
      m.entry.size = f.number<uint64_t>();
      m.entry.uncompressed = f.number<uint64_t>();
      m.entry.lines = f.number<uint64_t>();
      if (!f.ok) return invalid(out, why, at + "not an index line");
      if (!within(m.entry, size)) break;  // written for a member that never reached the file
      if (m.entry.offset != expect || m.entry.size == 0 || !is_gzip_header(data + m.entry.offset, size - m.entry.offset))
        return invalid(out, why, at + "member does not match the trace");
      out->members.push_back(m);
      expect = m.entry.offset + m.entry.size;
      continue;
    }
    std::string_view payload;
    if (!checked_payload(line, payload)) return invalid(out, why, at + "CRC mismatch");
    if (out->finalized) return invalid(out, why, at + "after the final line");
    Fields f{payload};
    std::string_view kind = f.word();
    if (kind == format::kIndexMagic) {
      const std::string_view v = f.word();
      if (lineno != 1 || (v != format::kIndexVersion && v != format::kIndexVersion2))
        return invalid(out, why, at + "unknown index version");
      out->version = v == format::kIndexVersion ? 3 : 2;
    } else if (kind == format::kNameRecord) {
      uint32_t id = f.number<uint32_t>();
      size_t q = payload.find('"');
      if (!f.ok || id != out->names.size() || q == std::string_view::npos ||
          !decode_json_string(payload.substr(q), decoded))
        return invalid(out, why, at + "bad name");
      out->names.push_back(decoded);
    } else if (kind == format::kMemberRecord) {
      if (past_end) continue;
      IndexedMember m;
      m.entry.offset = f.number<uint64_t>();
      m.entry.size = f.number<uint64_t>();
      m.entry.uncompressed = f.number<uint64_t>();
      m.entry.lines = f.number<uint64_t>();
      uint32_t crc = f.number<uint32_t>();
      if (out->version >= 3) {
        m.member_crc = f.number<uint32_t>();
        m.has_member_crc = true;
      }
      m.complete = f.number<uint64_t>();
      m.metadata = f.number<uint64_t>();
      m.other = f.number<uint64_t>();
      m.timed = f.time(m.min_ts);
      f.time(m.max_ts);
      f.time(m.max_end);
      // The per-name and per-category totals: checked for form, kept by the writer for tools.
      for (int part = 0; part < 2 && f.ok; ++part) {
        uint64_t k = f.number<uint64_t>();
        for (uint64_t i = 0; i < k && f.ok; ++i) {
          if (f.number<uint32_t>() >= out->names.size()) f.ok = false;
          f.number<uint64_t>();
          f.number<uint64_t>();
        }
      }
      if (!f.ok) return invalid(out, why, at + "bad member line");
      if (!within(m.entry, size)) {
        past_end = true;  // a crash between the member and its line; a finalized index is caught below
        continue;
      }
      if (m.entry.offset != expect || m.entry.size < 18 || !is_gzip_header(data + m.entry.offset, size - m.entry.offset))
        return invalid(out, why, at + "member does not match the trace");
      if (le32(data + m.entry.offset + m.entry.size - 8) != crc)
        return invalid(out, why, at + "stale: the member's gzip CRC differs");
      out->members.push_back(m);
      expect = m.entry.offset + m.entry.size;
    } else if (kind == format::kCellRecord) {
      IndexedCell c;
      c.name = f.number<uint32_t>();
      c.cat = f.number<uint32_t>();
      c.tid = std::string(f.word());
      c.count = f.number<uint64_t>();
      c.total = f.number<int64_t>();
      c.self = f.number<int64_t>();
      c.min = f.number<int64_t>();
      c.max = f.number<int64_t>();
      c.zeros = f.number<uint64_t>();
      uint64_t b = f.number<uint64_t>();
      for (uint64_t i = 0; i < b && f.ok; ++i) {
        std::string_view w = f.word();
        size_t colon = w.find(':');
        int bucket = -1;
        uint64_t n = 0;
        if (colon == std::string_view::npos ||
            std::from_chars(w.data(), w.data() + colon, bucket).ptr != w.data() + colon ||
            std::from_chars(w.data() + colon + 1, w.data() + w.size(), n).ptr != w.data() + w.size())
          f.ok = false;
        c.buckets.emplace_back(bucket, n);
      }
      if (f.ok && !f.rest.empty()) {  // the flops/bytes group, on cells whose events carried them
        if (f.word() != format::kFlopsGroup) f.ok = false;
        c.with_flops = f.number<uint64_t>();
        c.flops = f.number<double>();
        c.flops_ns = f.number<int64_t>();
        c.with_bytes = f.number<uint64_t>();
        c.bytes = f.number<double>();
        c.bytes_ns = f.number<int64_t>();
      }
      if (!f.ok || c.name >= out->names.size() || c.cat >= out->names.size())
        return invalid(out, why, at + "bad summary line");
      out->cells.push_back(std::move(c));
    } else if (kind == format::kFinalRecord) {
      out->complete = f.number<uint64_t>();
      out->metadata = f.number<uint64_t>();
      out->other = f.number<uint64_t>();
      out->first_ts = f.number<int64_t>();
      out->last_end = f.number<int64_t>();
      out->approximated = f.number<uint64_t>();
      out->folded = f.number<uint64_t>();
      const int exact = f.number<int>();
      out->exact = exact == format::kIndexExact || exact == format::kIndexExactWithFlops;
      out->pid = std::string(f.word());
      uint64_t members = f.number<uint64_t>(), bytes = f.number<uint64_t>();
      if (!f.ok) return invalid(out, why, at + "bad final line");
      if (bytes != size || members != out->members.size() || past_end)
        return invalid(out, why, "stale: the trace is " + std::to_string(size) + " bytes in " +
                                     std::to_string(out->members.size()) + " indexed members, the index says " +
                                     std::to_string(bytes) + " in " + std::to_string(members));
      out->finalized = true;
    } else {
      return invalid(out, why, at + "unknown record '" + std::string(kind) + "'");
    }
  }
  return out->members.empty() ? IndexStatus::Absent : IndexStatus::Usable;
}

bool member_vouched(const IndexedMember& m, const uint8_t* data) {
  if (!m.has_member_crc) return false;
  uLong crc = crc32(0L, Z_NULL, 0);
  const uint8_t* p = data + m.entry.offset;
  for (uint64_t left = m.entry.size; left > 0;) {  // crc32's length is 32-bit
    const uInt n = static_cast<uInt>(std::min<uint64_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc) == m.member_crc;
}

size_t first_unvouched_member(const TraceIndex& index, const uint8_t* data, std::string* why) {
  for (size_t i = 0; i < index.members.size(); ++i) {
    if (member_vouched(index.members[i], data)) continue;
    if (why)
      *why = index.version < 3 ? "a version-" + std::to_string(index.version) +
                                     " index holds no checksum of the members' bytes"
                               : "member " + std::to_string(i) + " (at byte " +
                                     std::to_string(index.members[i].entry.offset) +
                                     ") does not match the index's checksum of its bytes";
    return i;
  }
  return index.members.size();
}

IndexStatus load_gzip_index(const std::string& gz_path, const uint8_t* data, size_t size,
                            std::vector<GzipIndexEntry>& out) {
  TraceIndex index;
  IndexStatus st = load_trace_index(gz_path, data, size, &index, nullptr);
  out.clear();
  for (const IndexedMember& m : index.members) out.push_back(m.entry);
  return st;
}

}  // namespace dftracer::analyze
