#include "trace_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifdef DFTRACER_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <cerrno>
#include <cstring>
#include <vector>

#include "diagnostics.h"

namespace dftracer {

TraceSink::~TraceSink() { close(); }

bool TraceSink::write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      report_failure(errno);
      return false;
    }
    if (n == 0) {
      report_failure(ENOSPC);
      return false;
    }
    data += n;
    len -= static_cast<size_t>(n);
    if (fd == fd_) bytes_written_ += static_cast<uint64_t>(n);
  }
  return true;
}

void TraceSink::report_failure(int err) {
  if (!failed_) {
    log_warn("cannot write trace file " + path_ + ": " + std::strerror(err) +
             "; events from now on are lost (counted as dropped), the program continues");
  }
  failed_ = true;
}

void TraceSink::close() {
  if (fd_ < 0) return;
  struct stat st;
  if (fstat(fd_, &st) == 0 && st.st_nlink == 0) {
    log_warn("trace file " + path_ + " was deleted while it was being written; its events are lost");
  }
  ::close(fd_);
  fd_ = -1;
  if (extra_fd_ >= 0) {
    ::close(extra_fd_);
    extra_fd_ = -1;
  }
}

namespace {

class PlainSink final : public TraceSink {
 public:
  PlainSink(int fd, std::string path) : TraceSink(fd, std::move(path)) {}
  bool write_chunk(const char* data, size_t len, uint64_t) override {
    if (failed_) return false;
    return write_all(fd_, data, len);
  }
};

// Compresses one chunk into one complete gzip member. libdeflate, where the
// build found it, does the same job about 1.7x faster than zlib on trace
// text (docs/performance.md); both write standard gzip that any reader
// (zlib, Python's gzip, Perfetto) inflates.
class MemberCompressor {
 public:
  explicit MemberCompressor(int level) {
#ifdef DFTRACER_HAVE_LIBDEFLATE
    c_ = libdeflate_alloc_compressor(level);
    ok_ = c_ != nullptr;
#else
    std::memset(&z_, 0, sizeof z_);
    // windowBits 15 + 16: gzip wrapper; memLevel 8 is zlib's default.
    ok_ = deflateInit2(&z_, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
#endif
  }
  ~MemberCompressor() {
#ifdef DFTRACER_HAVE_LIBDEFLATE
    if (c_) libdeflate_free_compressor(c_);
#else
    if (ok_) deflateEnd(&z_);
#endif
  }
  bool ok() const { return ok_; }

  // The member for data[0..len), in *out; false on failure.
  bool compress(const char* data, size_t len, std::vector<unsigned char>* out) {
#ifdef DFTRACER_HAVE_LIBDEFLATE
    out->resize(libdeflate_gzip_compress_bound(c_, len));
    size_t n = libdeflate_gzip_compress(c_, data, len, out->data(), out->size());
    out->resize(n);
    return n != 0;
#else
    out->resize(deflateBound(&z_, len) + 64);
    deflateReset(&z_);  // a fresh, independent member with its own header
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z_.avail_in = static_cast<uInt>(len);
    z_.next_out = out->data();
    z_.avail_out = static_cast<uInt>(out->size());
    if (deflate(&z_, Z_FINISH) != Z_STREAM_END) return false;
    out->resize(out->size() - z_.avail_out);
    return true;
#endif
  }

 private:
  bool ok_ = false;
#ifdef DFTRACER_HAVE_LIBDEFLATE
  libdeflate_compressor* c_ = nullptr;
#else
  z_stream z_;
#endif
};

class GzipSink final : public TraceSink {
 public:
  GzipSink(int fd, int idx_fd, std::string path, int level) : TraceSink(fd, std::move(path)), z_(level) {
    extra_fd_ = idx_fd;
  }

  bool write_chunk(const char* data, size_t len, uint64_t lines) override {
    if (failed_) return false;
    if (!z_.ok()) {
      report_failure(ENOMEM);
      return false;
    }
    if (!z_.compress(data, len, &out_)) {
      report_failure(EIO);
      return false;
    }
    size_t member = out_.size();
    uint64_t offset = bytes_written_;
    if (!write_all(fd_, reinterpret_cast<const char*>(out_.data()), member)) return false;
    if (extra_fd_ >= 0) {
      char line[96];
      int n = snprintf(line, sizeof line, "%llu %zu %zu %llu\n", static_cast<unsigned long long>(offset), member,
                       len, static_cast<unsigned long long>(lines));
      if (::write(extra_fd_, line, static_cast<size_t>(n)) != n) {
        ::close(extra_fd_);  // the index is optional: readers scan without it
        extra_fd_ = -1;
      }
    }
    return true;
  }

 private:
  MemberCompressor z_;
  std::vector<unsigned char> out_;
};

}  // namespace

std::unique_ptr<TraceSink> open_trace_sink(const std::string& path, bool compress, int level,
                                           std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create trace file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (!compress) return std::unique_ptr<TraceSink>(new PlainSink(fd, path));
  int idx = ::open((path + ".idx").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  return std::unique_ptr<TraceSink>(new GzipSink(fd, idx, path, level));
}

}  // namespace dftracer
