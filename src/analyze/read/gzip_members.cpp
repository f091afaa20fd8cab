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
