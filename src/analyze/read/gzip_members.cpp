#include "gzip_members.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>

#if defined(DFTRACER_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

namespace dftracer::analyze {

namespace {
constexpr size_t kWindow = 1 << 20;  // inflate output piece
#if defined(DFTRACER_HAVE_LIBDEFLATE)
// libdeflate inflates a member whole into one buffer, up to this size; a
// larger member (and every one that is not a clean, complete member) goes
// through zlib's stream, which keeps the memory bounded and says exactly
// where a truncated or corrupt member stops.
constexpr size_t kMaxWhole = 32u << 20;
// After a member too large for the buffer, the next ones go to zlib directly.
constexpr int kSkipAfterTooLarge = 8;

// One decompressor and output buffer per reading thread (each worker owns
// its MemberInflater and runs on one thread), freed when the thread ends.
// The buffer is kMaxWhole of address space, mapped once: a member is
// inflated in one call (no growing, no inflating again), and only the pages
// it writes become resident; past kKeep they are handed back after the
// member, so no thread holds a large member's size idle.
constexpr size_t kKeep = kWindow * 2;
struct WholeInflater {
  libdeflate_decompressor* d = nullptr;
  char* out = nullptr;
  size_t dirty = 0;  // bytes written since the pages past kKeep were last handed back
  int skip = 0;
  void release() {
    if (dirty > kKeep) madvise(out + kKeep, kMaxWhole - kKeep, MADV_DONTNEED);
    dirty = std::min(dirty, kKeep);
  }
  ~WholeInflater() {
    if (d) libdeflate_free_decompressor(d);
    if (out) munmap(out, kMaxWhole);
  }
};
thread_local WholeInflater t_whole;
#endif

// The whole member at once with libdeflate (when built with it), if it is
// complete and valid and fits kMaxWhole: true with `r` filled; false: the
// caller inflates it with zlib's stream.
bool inflate_whole(const uint8_t* data, size_t size, size_t offset, const MemberInflater::Sink& sink,
                   MemberResult& r) {
#if defined(DFTRACER_HAVE_LIBDEFLATE)
  // libdeflate is about three times zlib's speed on trace text (measured
  // 2.6 vs 0.8 GB/s of output on one core): it decides the .gz throughput.
  WholeInflater& w = t_whole;
  if (w.skip > 0) {
    --w.skip;
    return false;
  }
  if (!w.d) w.d = libdeflate_alloc_decompressor();
  if (!w.d) return false;
  if (!w.out) {
    void* p = mmap(nullptr, kMaxWhole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    w.out = static_cast<char*>(p);
  }
  size_t in_used = 0, out_used = 0;
  libdeflate_result res =
      libdeflate_gzip_decompress_ex(w.d, data + offset, size - offset, w.out, kMaxWhole, &in_used, &out_used);
  if (res == LIBDEFLATE_SUCCESS) {
    w.dirty = std::max(w.dirty, out_used);
    r.produced = out_used;
    r.next_offset = offset + in_used;
    r.end = out_used == 0 || sink(w.out, out_used) ? MemberEnd::Complete : MemberEnd::Corrupt;
    w.release();
    return true;
  }
  w.dirty = kMaxWhole;  // a failed call may have written anywhere in the buffer
  w.release();
  if (res == LIBDEFLATE_INSUFFICIENT_SPACE) w.skip = kSkipAfterTooLarge;
  return false;  // zlib's stream: too large, or zlib settles bad or cut-short members
#else
  (void)data, (void)size, (void)offset, (void)sink, (void)r;
  return false;
#endif
}

}  // namespace

size_t whole_inflate_buffer_bytes() {
#if defined(DFTRACER_HAVE_LIBDEFLATE)
  return t_whole.dirty;
#else
  return 0;
#endif
}

size_t IndexedStarts::member_end(size_t offset, size_t size) const {
  if (index == nullptr) return size;
  auto it = std::lower_bound(index->begin(), index->end(), offset,
                             [](const GzipIndexEntry& e, size_t off) { return e.offset < off; });
  if (it == index->end() || it->offset != offset) return size;
  return static_cast<size_t>(std::min<uint64_t>(it->offset + it->size, size));
}

size_t IndexedStarts::next_after(size_t offset) const {
  if (index == nullptr) return SIZE_MAX;
  auto it = std::upper_bound(index->begin(), index->end(), offset,
                             [](size_t off, const GzipIndexEntry& e) { return off < e.offset; });
  return it == index->end() ? SIZE_MAX : static_cast<size_t>(it->offset);
}

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
  if (inflate_whole(data, size, offset, sink, r)) return r;
  r = MemberResult{};
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
