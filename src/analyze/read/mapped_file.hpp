// A read-only memory map of a whole file (empty files map to nothing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dftracer::analyze {

class MappedFile {
 public:
  // Throws InputError when the file cannot be opened, stat'ed or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  const char* chars() const { return reinterpret_cast<const char*>(data_); }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dftracer::analyze
