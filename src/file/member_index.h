// MemberIndex: writes the `.idx` sidecar of a .pfw.gz, version 3 (its layout:
// src/format/index_format.hpp, shared with the analyzer that reads it). The
// writer thread already holds every event it formats, so the sink describes
// each gzip member as it writes it -- and, at finalize, the whole file -- and
// readers answer summaries and time windows without inflating members.
//
// `exact` is 0 when the file holds something the C lines cannot reproduce (a
// time past int64 ns, an args.flops / args.bytes the index cannot be sure to
// read as the analyzer does: not a plain JSON number, twice in one event, or
// args with a nested object), or when the writer gave the whole-file summary
// up to stay small: past kMaxThreads threads or kMaxCells cells (a
// thread-churning program) it frees them and writes no C lines; readers then
// read the events.
#ifndef DFTRACER_SRC_FILE_MEMBER_INDEX_H_
#define DFTRACER_SRC_FILE_MEMBER_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_observer.h"

namespace dftracer {

class MemberIndex final : public EventObserver {
 public:
  // Bounds on the whole-file summary's memory in the traced process: the
  // self-time tracker keeps up to 4,096 open events a thread (~230 KB).
  static constexpr size_t kMaxThreads = 128;
  static constexpr size_t kMaxCells = 16384;

  MemberIndex();
  ~MemberIndex() override;

  void file_pid(int64_t pid) override;
  void complete(const char* name, size_t name_len, const char* cat, size_t cat_len, int64_t tid, uint64_t ts_ns,
                uint64_t dur_ns, const char* args, size_t args_len) override;
  void other(uint64_t ts_ns) override;
  void metadata() override;
  // Its cells are keyed by the file's pid: a device track's events would be
  // summed (and nested, and spanned) as a thread's, so the index says it
  // cannot reproduce a full read (which leaves them out).
  void on_device_track() override { exact_ = false; }

  // The lines to append for the member just written (the header before the
  // first, names not yet named, the M line): the events observed since the
  // previous member. `chunk` is the member's text, `member_crc` the CRC-32
  // of its compressed bytes.
  std::string member_lines(uint64_t offset, uint64_t size, const char* chunk, size_t raw_size, uint64_t lines,
                           uint32_t gzip_crc, uint32_t member_crc);
  // The C lines and the F line, at a clean finalize of a `file_bytes` file.
  std::string finish_lines(uint64_t file_bytes);

 private:
  struct Totals {
    uint64_t count = 0;
    uint64_t dur = 0;
  };
  struct Cell;
  struct CellKeyHash {
    size_t operator()(const std::pair<uint64_t, int64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(k.second));
    }
  };

  uint32_t intern(const char* s, size_t n);
  uint32_t intern_text(const char* s, size_t n);
  void name_lines(std::string* out);  // N lines for the names interned since the last call
  void note_time(uint64_t ts, uint64_t end);
  Cell* cell_for(uint32_t name, uint32_t cat, int64_t tid);  // null once the summary is given up
  void give_up_summary();
  static void add(std::vector<Totals>& v, std::vector<uint32_t>& touched, uint32_t id, uint64_t dur);

  std::unordered_map<std::string, uint32_t> ids_;
  // The formatter passes the string table's own bytes, whose address is
  // stable: a direct-mapped cache by address skips building and hashing a
  // std::string for almost every event (a miss falls back to ids_).
  struct PtrSlot {
    const char* p = nullptr;
    size_t n = 0;
    uint32_t id = 0;
  };
  PtrSlot ptr_cache_[512];
  struct CellSlot {
    uint64_t names = UINT64_MAX;
    int64_t tid = 0;
    Cell* cell = nullptr;
  };
  CellSlot cell_cache_[256];
  std::vector<std::string> unnamed_;  // interned since the last member line, id order
  uint32_t next_id_ = 0;
  bool header_written_ = false;

  // This member so far.
  uint64_t m_complete_ = 0, m_metadata_ = 0, m_other_ = 0;
  uint64_t m_min_ts_ = UINT64_MAX, m_max_ts_ = 0, m_max_end_ = 0;
  std::vector<Totals> m_names_, m_cats_;
  std::vector<uint32_t> m_name_ids_, m_cat_ids_;

  // The whole file so far.
  std::string pid_text_;
  uint64_t complete_ = 0, metadata_ = 0, other_ = 0, members_ = 0;
  int64_t first_ts_ = INT64_MAX, last_end_ = INT64_MIN;
  bool exact_ = true;
  bool any_flops_ = false;  // some C line carries an `f` group (exact = 2)
  bool summary_on_ = true;  // false past kMaxThreads / kMaxCells: no C lines
  std::vector<int64_t> tids_;  // distinct threads seen (at most kMaxThreads)
  std::unordered_map<std::pair<uint64_t, int64_t>, std::unique_ptr<Cell>, CellKeyHash> cells_;
  std::vector<Cell*> cell_order_;  // first-seen order: the C lines' order
  struct Nesting;
  std::unique_ptr<Nesting> nesting_;
};

// " *<crc32 hex>\n" after `payload`: one index line.
void append_index_line(std::string* out, const std::string& payload);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_MEMBER_INDEX_H_
