// Time-window bounds (trace_window.hpp): absolute microseconds and relative
// "+1.5s" / "-2s" forms, exact to the nanosecond, bad text refused with the
// accepted forms; relative bounds resolved against the trace's first ts and
// last ts + dur as a full read finds them (no index here: hand-written .pfw).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "summary.hpp"
#include "trace_files.hpp"
#include "trace_window.hpp"

namespace dftracer::analyze::testing {
namespace {

using Anchor = WindowBound::Anchor;

TEST(TraceWindow, ParsesAbsoluteAndRelativeBoundsExactly) {
  struct Case {
    const char* text;
    Anchor anchor;
    int64_t ns;
  } cases[] = {
      {"", Anchor::none, 0},
      {"1727387307981693.125", Anchor::epoch, 1727387307981693125},
      {"-2", Anchor::epoch, -2000},  // no unit: absolute microseconds, as before
      {"+1.5s", Anchor::start, 1500000000},
      {"+250ms", Anchor::start, 250000000},
      {"-2s", Anchor::end, 2000000000},
      {"+0.000000001s", Anchor::start, 1},
      {"+7us", Anchor::start, 7000},
      {"-12ns", Anchor::end, 12},
      {"+007.5ms", Anchor::start, 7500000},
      {"+.5s", Anchor::start, 500000000},
      {"+0s", Anchor::start, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    WindowBound b = parse_window_bound(c.text);
    EXPECT_EQ(b.anchor, c.anchor);
    EXPECT_EQ(b.ns, c.ns);
  }
  for (const char* bad : {"+1.5", "1.5s", "+1.5 s", "+s", "+1.5h", "+-1s", "+1e3s", "+1..5s", "abc", "+1.s"}) {
    SCOPED_TRACE(bad);
    try {
      parse_window_bound(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("+1.5s"), std::string::npos) << what;  // says the accepted forms
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
}

TEST(TraceWindow, RelativeBoundsResolveAgainstFirstStartAndLastEndOfAllInputs) {
  TempDir dir;
  // a: 1000..1010 us and 3000..3500 us; b: 2000..9000 us. Metadata has no ts.
  write_file(dir.file("a.pfw"), pfw_text({op_event(1, "x", 1000, 10), op_event(2, "y", 3000, 500)}));
  write_file(dir.file("b.pfw"), pfw_text({op_event(1, "z", 2000, 7000)}));
  std::vector<std::string> files = expand_inputs({dir.path().string()});
  TraceTimeRange r = trace_time_range(files, 2);
  ASSERT_TRUE(r.any);
  EXPECT_FALSE(r.from_index);
  EXPECT_EQ(r.first_ns, 1000000);
  EXPECT_EQ(r.last_end_ns, 9000000);

  ReadOptions ro;
  resolve_window(parse_window_bound("+1ms"), parse_window_bound("-6ms"), files, 2, &ro);
  EXPECT_EQ(ro.from_ns, 2000000);  // 1000 us + 1 ms
  EXPECT_EQ(ro.to_ns, 3000000);    // 9000 us - 6 ms: exclusive, so y (ts 3000) is out
  Summary s = summarize(files, parse_group_keys("name"), 0, 1, ro);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].key[0], "z");

  // Mixed with an absolute bound; an open bound stays open.
  resolve_window(parse_window_bound("2999.999"), WindowBound{}, files, 2, &ro);
  EXPECT_EQ(ro.from_ns, 2999999);
  EXPECT_EQ(ro.to_ns, INT64_MAX);

  // A window that resolves empty or reversed is refused, with the trace's range.
  try {
    resolve_window(parse_window_bound("+5ms"), parse_window_bound("-7ms"), files, 2, &ro);
    ADD_FAILURE() << "accepted an empty window";
  } catch (const std::invalid_argument& e) {
    // Where each bound falls, from the trace's start, not as epoch nanoseconds.
    EXPECT_EQ(std::string(e.what()),
              "--from must be before --to: --from +5ms (5.000 ms from the trace start) is after --to -7ms "
              "(1.000 ms): the window is empty; the trace spans 8.000 ms");
  }
}

}  // namespace
}  // namespace dftracer::analyze::testing
