// Test helpers: read a trace back the way a user's tools would, and parse it
// with a real JSON parser (simdjson), never with the code under test.
#ifndef DFTRACER_TESTS_SUPPORT_TRACE_FILE_H_
#define DFTRACER_TESTS_SUPPORT_TRACE_FILE_H_

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dftracer_test {

// The file's bytes as they are (never inflated); "" when it cannot be read.
std::string read_bytes(const std::string& path);

// The whole file, inflated if it is .gz (every gzip member; a cut-off last
// member contributes what inflates cleanly, as a reader of a crashed run would).
std::string read_all(const std::string& path, bool* truncated_member = nullptr);

// The event lines: every line but "[" and "]", trailing comma removed.
// A last line without a newline (cut short) is returned in *partial.
std::vector<std::string> event_lines(const std::string& text, std::string* partial = nullptr);

// One parsed event: the fields tests look at.
struct Event {
  std::string name, cat, ph;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;
  std::string args_json;  // the raw "args" object
};

// Parses every line with simdjson; a line that is not a JSON object fails
// the calling test (ADD_FAILURE) and is skipped.
std::vector<Event> parse_events(const std::vector<std::string>& lines);

// Parses `text` as one strict JSON document; returns the parser's error text
// or "" when it is valid, and the number of array elements.
std::string strict_json_error(const std::string& text, size_t* elements);

// Checks `text` is a finalized trace in the format we write: "[" alone on the
// first line, one bare JSON object a line (no trailing comma), "]" alone on
// the last line, each line ending in a newline. Returns what is wrong (line
// number and the parser's error) or "", and the number of objects.
std::string finalized_trace_error(const std::string& text, size_t* elements);

// Integer arg `key` of an event, or -1.
int64_t int_arg(const Event& e, const char* key);
// String arg `key` of an event, or "<missing>".
std::string str_arg(const Event& e, const char* key);

// A fresh empty directory under $TMPDIR, removed with what it holds when the
// process that made it exits normally (not by a forked child).
std::string temp_dir(const std::string& tag);

// Files in `dir` whose names end with `suffix`.
std::vector<std::string> files_in(const std::string& dir, const std::string& suffix);

// Sets an environment variable for the scope of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
 private:
  std::string name_;
  bool had_;
  std::string old_;
};

// Runs `body` in a forked child and returns its exit status (or 128+signal).
int run_in_child(const std::function<int()>& body);

// Runs the program `prog` with `args` (after argv[0]) and exactly the
// environment `env` ("NAME=value" each); returns its exit status (or
// 128+signal; 127 when it could not be started).
int run_program(const std::string& prog, const std::vector<std::string>& args, const std::vector<std::string>& env);

// Test size: DFTRACER_TEST_SCALE (default 1.0) multiplies event counts, so
// the sanitizer builds can run the same tests smaller.
uint64_t scaled(uint64_t n);

// Resident set size of this process in bytes (/proc/self/statm).
size_t rss_bytes();

}  // namespace dftracer_test

#endif  // DFTRACER_TESTS_SUPPORT_TRACE_FILE_H_
