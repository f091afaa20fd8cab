// PlainFileSink: a .pfw file, the formatted bytes as they are, one write()
// per chunk.
#ifndef DFTRACER_SRC_FILE_PLAIN_FILE_SINK_H_
#define DFTRACER_SRC_FILE_PLAIN_FILE_SINK_H_

#include <memory>
#include <string>

#include "output_file.h"
#include "trace_sink.h"

namespace dftracer {

class PlainFileSink final : public TraceSink {
 public:
  // nullptr (and *error; *taken when it exists already) when `path` cannot
  // be created.
  static std::unique_ptr<TraceSink> open(const std::string& path, std::string* error, bool* taken);

  ~PlainFileSink() override { close(); }
  bool write_chunk(const char* data, size_t len, uint64_t lines) override;
  void close() override { file_.close(/*warn_if_deleted=*/true); }
  void descriptors(std::vector<int>* out) const override {
    if (file_.is_open()) out->push_back(file_.fd());
  }
  void forget_descriptors() override { file_.forget(); }

 private:
  explicit PlainFileSink(const std::string& path) : TraceSink(path) {}
  OutputFile file_;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_PLAIN_FILE_SINK_H_
