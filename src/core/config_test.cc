// Bad settings get one warning line naming the variable and the value used
// instead, and tracing still works.
#include <gtest/gtest.h>

#include <string>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string::npos) {
    ++n;
    pos += needle.size();
  }
  return n;
}

struct BadValue {
  const char* var;
  const char* value;
  const char* used;  // part of the "using ..." text
};

}  // namespace

TEST(Config, EachBadValueWarnsOnceAndTracingGoesOn) {
  const BadValue cases[] = {
      {"DFTRACER_BUFFER_SIZE", "lots", "67108864 bytes"},
      {"DFTRACER_CHUNK_SIZE", "-4", "262144 bytes"},
      {"DFTRACER_FLUSH_INTERVAL_MS", "0", "100"},
      {"DFTRACER_OVERFLOW", "spill", "block"},
      {"DFTRACER_TRACE_COMPRESSION", "maybe", "1"},
      {"DFTRACER_COMPRESSION_LEVEL", "11", "1"},
      {"DFTRACER_INC_METADATA", "2", "1"},
      {"DFTRACER_INIT", "LATER", "FUNCTION"},
      {"DFTRACER_TIME_RESOLUTION", "ms", "us"},
      {"DFTRACER_TIME_METRIC", "MS", "us"},
  };
  for (const BadValue& c : cases) {
    SCOPED_TRACE(c.var);
    std::string dir = temp_dir("cfg");
    ScopedEnv env(c.var, c.value);
    testing::internal::CaptureStderr();
    ASSERT_EQ(dft_init((dir + "/c").c_str(), nullptr, -1), 0);
    std::string path = dft_trace_path();
    dft_complete_ns(dft_intern_cstr("e"), dft_intern_cstr("c"), 1, 1, nullptr, 0);
    dft_finalize();
    std::string err = testing::internal::GetCapturedStderr();
    std::string expect = std::string(c.var) + "='" + c.value + "' is not valid; using " + c.used;
    EXPECT_EQ(count_lines_with(err, expect), 1) << err;
    EXPECT_EQ(count_lines_with(err, "\n"), 1) << "one line: " << err;
    size_t n = 0;
    EXPECT_EQ(finalized_trace_error(read_all(path), &n), "");
  }
}

// The Python package reads the settings at import (dft_init_from_env) and
// again in initialize_log (dft_init), and every re-init reads them again:
// each bad value used to be reported at every read.
TEST(Config, ABadValueWarnsOncePerProcessHoweverOftenItIsRead) {
  std::string dir = temp_dir("reread");
  ScopedEnv o("DFTRACER_OVERFLOW", "spill");
  ScopedEnv c("DFTRACER_CHUNK_SIZE", "48M");  // more than half the default 64M pool
  testing::internal::CaptureStderr();
  EXPECT_EQ(dft_init_from_env(), 0);  // DFTRACER_ENABLE unset: reads, starts nothing
  ASSERT_EQ(dft_init((dir + "/a").c_str(), nullptr, -1), 0);
  dft_finalize();
  ASSERT_EQ(dft_init((dir + "/b").c_str(), nullptr, -1), 0);
  dft_finalize();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_lines_with(err, "DFTRACER_OVERFLOW='spill' is not valid; using block"), 1) << err;
  EXPECT_EQ(count_lines_with(err, "DFTRACER_CHUNK_SIZE=50331648 is more than half"), 1) << err;
  EXPECT_EQ(count_lines_with(err, "\n"), 2) << err;
}

TEST(Config, SizesAcceptUnits) {
  std::string dir = temp_dir("units");
  ScopedEnv b("DFTRACER_BUFFER_SIZE", "8M");
  ScopedEnv c("DFTRACER_CHUNK_SIZE", "64KiB");
  testing::internal::CaptureStderr();
  ASSERT_EQ(dft_init((dir + "/u").c_str(), nullptr, -1), 0);
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.pool_bytes_cap, 8u << 20);
  dft_finalize();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Config, LogLevelOffSilencesWarnings) {
  std::string dir = temp_dir("quiet");
  ScopedEnv l("DFTRACER_LOG_LEVEL", "off");
  ScopedEnv b("DFTRACER_BUFFER_SIZE", "lots");
  testing::internal::CaptureStderr();
  ASSERT_EQ(dft_init((dir + "/q").c_str(), nullptr, -1), 0);
  dft_finalize();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// DFTRACER_ENABLE as the core reads it, for every spelling Python's env.py
// used to parse on its own: both sides now ask the core.
TEST(Config, EnableSettingSpellings) {
  const struct {
    const char* value;
    int expect;
  } cases[] = {{"1", 1},      {"true", 1},  {" YES ", 1}, {"On", 1},     {"0", 0},  {"false", 0},
               {"\tno\n", 0}, {" OFF", 0},  {"2", -1},    {"maybe", -1}, {"", -1}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string("DFTRACER_ENABLE='") + c.value + "'");
    ScopedEnv env("DFTRACER_ENABLE", c.value);
    EXPECT_EQ(dft_env_enable(), c.expect);
  }
}

// DFTRACER_ENABLE=0 is a kill switch in the core: an explicit dft_init()
// (a C++ program, pydftracer's initialize_log) starts nothing, creates no
// file and prints nothing; recording calls stay no-ops.
TEST(Config, EnableZeroForbidsExplicitInit) {
  std::string dir = temp_dir("kill");
  ScopedEnv env("DFTRACER_ENABLE", "off");
  testing::internal::CaptureStderr();
  EXPECT_EQ(dft_init((dir + "/k").c_str(), nullptr, -1), 1);
  EXPECT_EQ(dft_enabled(), 0);
  EXPECT_EQ(dft_trace_path(), nullptr);
  dft_complete_ns(dft_intern_cstr("e"), dft_intern_cstr("c"), 1, 1, nullptr, 0);
  dft_finalize();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(files_in(dir, ".pfw").empty());
  EXPECT_TRUE(files_in(dir, ".pfw.gz").empty());
}
