#include "gzip_members.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace dftracer::analyze {

namespace {
constexpr size_t kWindow = 1 << 20;  // inflate output piece

enum class Sidecar { Absent, Unusable, Read };

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
}  // namespace

bool is_gzip_header(const uint8_t* p, size_t avail) {
  // ID1 ID2 CM FLG: 0x1f 0x8b 8, and FLG's reserved bits 5-7 zero.
  return avail >= 10 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8 && (p[3] & 0xe0) == 0;
}

size_t find_gzip_header(const uint8_t* data, size_t size, size_t from) {
  while (from + 10 <= size) {
    const void* hit = std::memchr(data + from, 0x1f, size - from - 9);
    if (!hit) return size;
    size_t pos = static_cast<const uint8_t*>(hit) - data;
    if (is_gzip_header(data + pos, size - pos)) return pos;
    from = pos + 1;
  }
  return size;
}

IndexStatus load_gzip_index(const std::string& gz_path, const uint8_t* data, size_t size,
                            std::vector<GzipIndexEntry>& out) {
  out.clear();
  // A member is at least 18 bytes and its index line at most 84 (four 20-digit
  // numbers), so a genuine index is under 5x its trace.
  std::string text;
  Sidecar sc = read_sidecar(gz_path + ".idx", size * 5 + 4096, text);
  if (sc != Sidecar::Read) return sc == Sidecar::Absent ? IndexStatus::Absent : IndexStatus::Invalid;
  std::istringstream in(text);
  std::string line;
  uint64_t expect = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    GzipIndexEntry e;
    if (!(ls >> e.offset >> e.size >> e.uncompressed >> e.lines)) {
      out.clear();
      return IndexStatus::Invalid;
    }
    // An index line written for a member that never reached the file (crash
    // between the two writes) is simply past the end: stop there.
    if (e.offset + e.size > size) break;
    if (e.offset != expect || e.size == 0 || !is_gzip_header(data + e.offset, size - e.offset)) {
      out.clear();
      return IndexStatus::Invalid;
    }
    out.push_back(e);
    expect = e.offset + e.size;
  }
  return out.empty() ? IndexStatus::Absent : IndexStatus::Usable;
}

MemberInflater::MemberInflater() : window_(kWindow) {}

MemberInflater::~MemberInflater() {
  if (init_) inflateEnd(&zs_);
}

MemberResult MemberInflater::inflate_member(const uint8_t* data, size_t size, size_t offset, const Sink& sink) {
  MemberResult r;
  r.next_offset = offset;
  if (!init_) {
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) return r;
    init_ = true;
  } else if (inflateReset(&zs_) != Z_OK) {
    return r;
  }
  size_t pos = offset;
  while (true) {
    // zlib's avail_in is 32-bit: feed at most 1 GiB at a time.
    size_t avail = size - pos;
    if (avail > (1u << 30)) avail = 1u << 30;
    zs_.next_in = const_cast<Bytef*>(data + pos);
    zs_.avail_in = static_cast<uInt>(avail);
    zs_.next_out = reinterpret_cast<Bytef*>(window_.data());
    zs_.avail_out = static_cast<uInt>(window_.size());
    int rc = inflate(&zs_, Z_NO_FLUSH);
    pos += avail - zs_.avail_in;
    size_t got = window_.size() - zs_.avail_out;
    if (got) {
      r.produced += got;
      if (!sink(window_.data(), got)) {
        r.end = MemberEnd::Corrupt;
        r.next_offset = pos;
        return r;
      }
    }
    if (rc == Z_STREAM_END) {
      r.end = MemberEnd::Complete;
      r.next_offset = pos;
      return r;
    }
    if (rc == Z_BUF_ERROR || (rc == Z_OK && got == 0 && pos >= size)) {
      // No progress possible: the input ran out inside the member.
      if (pos >= size) {
        r.end = MemberEnd::Truncated;
        r.next_offset = size;
        return r;
      }
      continue;
    }
    if (rc != Z_OK) {
      r.end = MemberEnd::Corrupt;
      r.next_offset = pos;
      return r;
    }
  }
}

}  // namespace dftracer::analyze
