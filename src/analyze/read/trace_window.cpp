#include "trace_window.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

#include "event_decoder.hpp"
#include "mapped_file.hpp"
#include "text_format.hpp"
#include "trace_index.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

constexpr const char* kForms =
    "microseconds since the epoch as in the file's ts (e.g. 1727387307981693.125), or a time relative to the "
    "trace start (+1.5s, +250ms) or end (-2s); units s, ms, us, ns";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "+1.5s" -> offset in ns. The number is digits with an optional fraction;
// its unit becomes a decimal exponent on microseconds, so the conversion is
// us_text_to_ns' exact decimal one ("1.5e6" us = 1500000000 ns).
bool parse_relative(std::string_view t, WindowBound* out) {
  if (t.size() < 2 || (t[0] != '+' && t[0] != '-')) return false;
  size_t e = 1;
  while (e < t.size() && (is_digit(t[e]) || t[e] == '.')) ++e;
  std::string_view number = t.substr(1, e - 1), unit = t.substr(e);
  const char* exponent = unit == "s" ? "e6" : unit == "ms" ? "e3" : unit == "us" ? "e0" : unit == "ns" ? "e-3" : nullptr;
  if (!exponent || number.find_first_of("0123456789") == std::string_view::npos) return false;
  std::string text(number);
  if (text.size() > 1 && text[0] == '0' && text[1] != '.') text.erase(0, text.find_first_not_of('0'));
  if (text.empty() || text[0] == '.') text.insert(0, "0");
  text += exponent;
  int64_t ns = 0;
  if (!us_text_to_ns(text, ns)) return false;
  out->anchor = t[0] == '+' ? WindowBound::Anchor::start : WindowBound::Anchor::end;
  out->ns = ns;
  return true;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The range from finalized write-time indexes (their members' time ranges
// cover every complete and other event); false when one file has none, or
// one whose members' bytes it cannot vouch for (then the events tell).
bool range_from_indexes(const std::vector<std::string>& files, TraceTimeRange* r) {
  TraceTimeRange acc;
  acc.first_ns = std::numeric_limits<int64_t>::max();
  acc.last_end_ns = std::numeric_limits<int64_t>::min();
  for (const std::string& path : files) {
    if (!ends_with(path, ".gz")) return false;
    MappedFile map(path);
    TraceIndex index;
    std::string why;
    if (load_trace_index(path, map.data(), map.size(), &index, &why) != IndexStatus::Usable || index.version < 2 ||
        !index.finalized || first_unvouched_member(index, map.data()) != index.members.size())
      return false;
    for (const IndexedMember& m : index.members) {
      if (!m.timed) continue;
      acc.any = true;
      acc.first_ns = std::min(acc.first_ns, m.min_ts);
      acc.last_end_ns = std::max(acc.last_end_ns, m.max_end);
    }
  }
  if (!acc.any) acc.first_ns = acc.last_end_ns = 0;
  acc.from_index = true;
  *r = acc;
  return true;
}

// One reader thread's share of the range scan.
class RangeConsumer : public LineConsumer {
 public:
  DecodeStatus consume(std::string_view line, size_t padded_capacity) override {
    DecodeStatus st = decoder_.decode(line, padded_capacity, e_);
    if (st != DecodeStatus::Ok || !e_.has_ts || e_.is_metadata()) return st;
    int64_t end = e_.ts_ns;
    if (e_.dur_ns > 0) end = e_.ts_ns > INT64_MAX - e_.dur_ns ? INT64_MAX : e_.ts_ns + e_.dur_ns;
    if (!any || e_.ts_ns < first) first = e_.ts_ns;
    if (!any || end > last) last = end;
    any = true;
    return st;
  }
  bool any = false;
  int64_t first = 0, last = 0;

 private:
  EventDecoder decoder_;
  Event e_;
};

// "--from must be before --to: --from +10s (10.000 s from the trace start) is
// after --to -5s (6.000 s): ...": where each bound falls in the trace, in
// seconds from its start when the inputs' range is known.
std::string empty_window_message(const WindowBound& from, const WindowBound& to, const TraceTimeRange& range,
                                 const ReadOptions& window) {
  auto since_start = [&](int64_t ns) {
    return human_time((static_cast<double>(ns) - static_cast<double>(range.first_ns)) / 1e3);
  };
  auto bound = [&](const char* opt, const WindowBound& b, int64_t ns, const char* after) {
    if (b.anchor == WindowBound::Anchor::none) return std::string(opt[2] == 'f' ? "the trace start" : "the trace end");
    std::string t = std::string(opt) + " " + b.text;
    if (range.any) t += " (" + since_start(ns) + after + ")";
    return t;
  };
  std::string s = "--from must be before --to: " + bound("--from", from, window.from_ns, " from the trace start");
  s += window.from_ns > window.to_ns ? " is after " : " is the same time as ";
  s += bound("--to", to, window.to_ns, "");
  s += ": the window is empty";
  if (range.any) s += "; the trace spans " + since_start(range.last_end_ns);
  return s;
}

}  // namespace

WindowBound parse_window_bound(std::string_view text) {
  WindowBound b;
  if (text.empty()) return b;
  b.text = std::string(text);
  if (parse_relative(text, &b)) return b;
  if (us_text_to_ns(text, b.ns)) {
    b.anchor = WindowBound::Anchor::epoch;
    return b;
  }
  throw std::invalid_argument("not a time: '" + std::string(text) + "' (" + kForms + ")");
}

TraceTimeRange trace_time_range(const std::vector<std::string>& files, unsigned threads,
                                const ReadOptions& options) {
  TraceTimeRange r;
  if (range_from_indexes(files, &r)) return r;
  ReadOptions ro = options;
  ro.from_ns = INT64_MIN;
  ro.to_ns = INT64_MAX;
  ro.progress = false;
  std::vector<std::unique_ptr<RangeConsumer>> owned;
  std::vector<LineConsumer*> consumers;
  for (unsigned i = 0; i < std::max(1u, threads); ++i) {
    owned.push_back(std::make_unique<RangeConsumer>());
    consumers.push_back(owned.back().get());
  }
  read_traces(files, consumers, ro);
  for (const auto& c : owned) {
    if (!c->any) continue;
    r.first_ns = r.any ? std::min(r.first_ns, c->first) : c->first;
    r.last_end_ns = r.any ? std::max(r.last_end_ns, c->last) : c->last;
    r.any = true;
  }
  return r;
}

void resolve_window(const WindowBound& from, const WindowBound& to, const TraceTimeRange& range,
                    ReadOptions* options) {
  auto at = [&](const WindowBound& b, int64_t none) -> int64_t {
    switch (b.anchor) {
      case WindowBound::Anchor::none: return none;
      case WindowBound::Anchor::epoch: return b.ns;
      case WindowBound::Anchor::start:
        if (!range.any) return none;
        return range.first_ns > INT64_MAX - b.ns ? INT64_MAX : range.first_ns + b.ns;
      case WindowBound::Anchor::end:
        if (!range.any) return none;
        return range.last_end_ns < INT64_MIN + b.ns ? INT64_MIN : range.last_end_ns - b.ns;
    }
    return none;
  };
  options->from_ns = at(from, INT64_MIN);
  options->to_ns = at(to, INT64_MAX);
  if (options->from_ns >= options->to_ns) throw std::invalid_argument(empty_window_message(from, to, range, *options));
}

void resolve_window(const WindowBound& from, const WindowBound& to, const std::vector<std::string>& files,
                    unsigned threads, ReadOptions* options) {
  TraceTimeRange range;
  if (from.relative() || to.relative()) range = trace_time_range(files, threads, *options);
  resolve_window(from, to, range, options);
}

}  // namespace dftracer::analyze
