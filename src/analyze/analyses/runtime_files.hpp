// Which of a run's traced files are the Python runtime's own -- its imports,
// shared libraries, the kernel's pseudo files: `io`'s runtime files
// (io_view.hpp io_file_kinds) -- so that their I/O counts as "other" work,
// not data loading (event_category.hpp). An import-heavy start-up makes tens
// of thousands of such calls (a Hugging Face Trainer run: 86k calls, 0.62 s
// of a 4.2 s run) against a few data calls.
//
// A POSIX/STDIO event names its file only by args.fhash. The FH records
// (fhash -> path) may sit anywhere in the event's trace file (another gzip
// member, read by another thread), and the rule needs all of a run's paths,
// so the set is known only after a whole read: pass 1 of the step analysis
// builds it, holding each file's I/O spans until then (step_finder.cpp); a
// read that needs it without one (a summary grouped by category) scans the
// FH records first (scan_file_names, ensure_runtime_files); a Dask client
// joins the pieces' names and hands the set to every piece
// (ReadOptions::runtime_files).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "event.hpp"

namespace dftracer::analyze {

struct ReadOptions;

// An FH record: metadata "FH", args.name the path, args.value the fhash.
inline bool is_file_name_record(const Event& e) { return e.is_metadata() && e.name == "FH"; }

// fhash -> path, from a read's FH records.
class FileNames {
 public:
  void add(std::string_view fhash, std::string_view path);
  void merge(const FileNames& o);
  const std::unordered_map<std::string, std::string>& paths() const { return paths_; }

 private:
  std::unordered_map<std::string, std::string> paths_;
};

class RuntimeFiles {
 public:
  RuntimeFiles() = default;
  // The runtime files among all the named ones.
  explicit RuntimeFiles(const FileNames& names);
  // A set made elsewhere (a Dask client's, from the pieces' names).
  explicit RuntimeFiles(const std::vector<std::string>& fhashes) : set_(fhashes.begin(), fhashes.end()) {}
  bool contains(std::string_view fhash) const { return set_.find(fhash) != set_.end(); }
  const std::set<std::string, std::less<>>& fhashes() const { return set_; }

 private:
  std::set<std::string, std::less<>> set_;
};

// The FH records of `files`: one read that decodes only those lines.
FileNames scan_file_names(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options);

// options->runtime_files from a scan of `files`, unless it is set.
void ensure_runtime_files(const std::vector<std::string>& files, unsigned threads, ReadOptions* options);

}  // namespace dftracer::analyze
