#include "gzip_member_sink.h"

#include <unistd.h>
#include <zlib.h>

#ifdef DFTRACER_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dftracer {

// Compresses one chunk into one complete gzip member. libdeflate, where the
// build found it, does the same job about 1.7x faster than zlib on trace
// text (docs/performance.md); both write standard gzip that any reader
// (zlib, Python's gzip, Perfetto) inflates.
//
// A small member -- the preamble, and the whole remaining trace of a
// short-lived process -- goes through a small zlib stream instead (an 8 KiB
// window, 2 KiB hash table): libdeflate's level-1 matcher clears a 128 KiB
// hash table per member, and allocating and first touching it was 32 page
// faults in every traced process (docs/performance.md, "Short-lived
// processes"). libdeflate's compressor is only allocated once a member is
// larger than that.
class MemberCompressor {
 public:
  // Members up to this size go through the small stream: its window covers
  // the whole member, so it finds every match libdeflate would.
  static constexpr size_t kSmallMember = 8 << 10;

  explicit MemberCompressor(int level) : level_(level) {}
  ~MemberCompressor() {
#ifdef DFTRACER_HAVE_LIBDEFLATE
    if (c_) libdeflate_free_compressor(c_);
#endif
    if (small_ok_) deflateEnd(&small_);
#ifndef DFTRACER_HAVE_LIBDEFLATE
    if (z_ok_) deflateEnd(&z_);
#endif
  }

  // The member for data[0..len), in *out; 0, or ENOMEM when the compressor
  // could not be set up, EIO when compressing failed.
  int compress(const char* data, size_t len, MemberBytes* out) {
    if (len <= kSmallMember) {
      // windowBits 13 + 16: an 8 KiB window and the gzip wrapper; memLevel
      // 3: a 2^10-entry hash table. Level 6 at least: zlib's level 1 leaves
      // small members ~10 % larger than libdeflate's, and on a few KiB the
      // extra effort costs microseconds.
      if (!small_init_) {
        small_init_ = true;
        std::memset(&small_, 0, sizeof small_);
        small_ok_ = deflateInit2(&small_, level_ < 6 ? 6 : level_, Z_DEFLATED, 13 + 16, 3, Z_DEFAULT_STRATEGY) ==
                    Z_OK;
      }
      if (!small_ok_) return ENOMEM;
      return deflate_member(&small_, data, len, out) ? 0 : EIO;
    }
#ifdef DFTRACER_HAVE_LIBDEFLATE
    if (c_ == nullptr && (c_ = libdeflate_alloc_compressor(level_)) == nullptr) return ENOMEM;
    const size_t bound = libdeflate_gzip_compress_bound(c_, len);
    size_t n = libdeflate_gzip_compress(c_, data, len, out->room(bound), bound);
    out->set_size(n);
    return n != 0 ? 0 : EIO;
#else
    if (!z_init_) {
      z_init_ = true;
      std::memset(&z_, 0, sizeof z_);
      // windowBits 15 + 16: gzip wrapper; memLevel 8 is zlib's default.
      z_ok_ = deflateInit2(&z_, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    }
    if (!z_ok_) return ENOMEM;
    return deflate_member(&z_, data, len, out) ? 0 : EIO;
#endif
  }

 private:
  static bool deflate_member(z_stream* z, const char* data, size_t len, MemberBytes* out) {
    const size_t bound = deflateBound(z, len) + 64;
    deflateReset(z);  // a fresh, independent member with its own header
    z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z->avail_in = static_cast<uInt>(len);
    z->next_out = out->room(bound);
    z->avail_out = static_cast<uInt>(bound);
    if (deflate(z, Z_FINISH) != Z_STREAM_END) return false;
    out->set_size(bound - z->avail_out);
    return true;
  }

  int level_;
  z_stream small_;
  bool small_init_ = false, small_ok_ = false;
#ifdef DFTRACER_HAVE_LIBDEFLATE
  libdeflate_compressor* c_ = nullptr;
#else
  z_stream z_;
  bool z_init_ = false, z_ok_ = false;
#endif
};

GzipMemberSink::GzipMemberSink(const std::string& path, int level)
    : TraceSink(path), z_(new MemberCompressor(level)) {}

GzipMemberSink::~GzipMemberSink() {
  // Destroyed without close(): a forked child dropping its copy of the
  // parent's writer, whose index descriptor is the parent's file. Never
  // write the summary there; only an explicit close() (the writer's stop)
  // finalizes the index.
  drop_index();
  close();
}

std::unique_ptr<TraceSink> GzipMemberSink::open(const std::string& path, int level, std::string* error,
                                                 bool* taken) {
  std::unique_ptr<GzipMemberSink> sink(new GzipMemberSink(path, level));
  if (!sink->file_.create_new(path)) {
    *taken = errno == EEXIST;
    *error = "cannot create trace file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  // The index is optional (readers scan without it), but a stale one left
  // beside our new file -- an orphan, or a planted link -- would describe
  // someone else's members, and readers trust it. So its name must be free
  // too: if not, give the trace name back and let the caller pick another.
  const std::string index_path = path + ".idx";
  if (!sink->index_.create_new(index_path) && errno == EEXIST) {
    sink->file_.close();
    ::unlink(path.c_str());
    *taken = true;
    *error = "cannot create trace index " + index_path + ": " + std::strerror(EEXIST);
    return nullptr;
  }
  if (sink->index_.is_open()) sink->index_stats_.reset(new MemberIndex());
  return sink;
}

bool GzipMemberSink::write_chunk(const char* data, size_t len, uint64_t lines) {
  if (failed_) return false;
  if (int err = z_->compress(data, len, &member_)) {
    report_failure(err);
    return false;
  }
  uint64_t offset = bytes_written_;
  if (int err = file_.write_all(reinterpret_cast<const char*>(member_.data()), member_.size())) {
    report_failure(err);
    return false;
  }
  bytes_written_ += member_.size();
  if (index_.is_open()) {
    // The gzip trailer's CRC-32 of the member's text: a reader checks it
    // against the file without inflating, so a stale index is caught. The
    // CRC-32 of the compressed bytes lets a reader that answers from the
    // index vouch for the data (a flipped byte inside a member leaves its
    // trailer as it was).
    uint32_t crc = 0;
    if (member_.size() >= 8) std::memcpy(&crc, member_.data() + member_.size() - 8, 4);  // little-endian
    const uint32_t member_crc =
        static_cast<uint32_t>(crc32(0L, member_.data(), static_cast<uInt>(member_.size())));
    std::string lines_text = index_stats_->member_lines(offset, member_.size(), data, len, lines, crc, member_crc);
    if (index_.write_all(lines_text.data(), lines_text.size()) != 0) drop_index();
  }
  return true;
}

void GzipMemberSink::drop_index() {
  // Only the file: the formatter still points at index_stats_ (its event
  // observer) and calls it for every line; freeing it here made the next
  // line a use after free (a failed index write crashed the program).
  index_.close();
}

void GzipMemberSink::descriptors(std::vector<int>* out) const {
  if (file_.is_open()) out->push_back(file_.fd());
  if (index_.is_open()) out->push_back(index_.fd());
}

void GzipMemberSink::forget_descriptors() {
  file_.forget();
  index_.forget();
}

void GzipMemberSink::close() {
  // The whole file's summary, only after a clean run: its last line is what
  // tells readers the index describes every member.
  if (index_.is_open() && index_stats_ && !failed_) {
    std::string tail = index_stats_->finish_lines(bytes_written_);
    if (index_.write_all(tail.data(), tail.size()) != 0) drop_index();
  }
  file_.close(/*warn_if_deleted=*/true);
  drop_index();
}

}  // namespace dftracer
