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
      {"DFTRACER_INC_METADATA", "2", "0"},
      {"DFTRACER_INIT", "LATER", "FUNCTION"},
      {"DFTRACER_TIME_RESOLUTION", "ms", "us"},
      {"DFTRACER_TIME_METRIC", "MS", "us"},
      {"RANK", "first", "-1"},  // torchrun's: a bad one is ignored, with the same one line
  };
  for (const BadValue& c : cases) {
    SCOPED_TRACE(c.var);
    std::string dir = temp_dir("cfg");
    ScopedEnv env(c.var, c.value);
    testing::internal::CaptureStderr();
    ASSERT_EQ(dft_init_opt_in((dir + "/c").c_str(), nullptr, -1), 0);
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
  ASSERT_EQ(dft_init_opt_in((dir + "/a").c_str(), nullptr, -1), 0);
  dft_finalize();
  ASSERT_EQ(dft_init_opt_in((dir + "/b").c_str(), nullptr, -1), 0);
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
  ASSERT_EQ(dft_init_opt_in((dir + "/u").c_str(), nullptr, -1), 0);
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
  ASSERT_EQ(dft_init_opt_in((dir + "/q").c_str(), nullptr, -1), 0);
  dft_finalize();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// DFTRACER_ENABLE as the core reads it: pydftracer's rule, exactly "1" is
// on; every other value that is set is off; unset is -1.
TEST(Config, EnableSettingSpellings) {
  const struct {
    const char* value;
    int expect;
  } cases[] = {{"1", 1},     {"true", 0}, {" 1", 0}, {"YES", 0}, {"on", 0},
               {"2", 0},     {"0", 0},    {"off", 0}, {"", 0}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string("DFTRACER_ENABLE='") + c.value + "'");
    ScopedEnv env("DFTRACER_ENABLE", c.value);
    EXPECT_EQ(dft_env_enable(), c.expect);
  }
  unsetenv("DFTRACER_ENABLE");
  EXPECT_EQ(dft_env_enable(), -1);
}

// Nothing started, no file, no event: what an init call that tracing
// refused must leave.
void expect_nothing_traced(const std::string& dir) {
  EXPECT_EQ(dft_enabled(), 0);
  EXPECT_EQ(dft_trace_path(), nullptr);
  dft_complete_ns(dft_intern_cstr("e"), dft_intern_cstr("c"), 1, 1, nullptr, 0);
  dft_finalize();
  EXPECT_TRUE(files_in(dir, ".pfw").empty());
  EXPECT_TRUE(files_in(dir, ".pfw.gz").empty());
}

// As pydftracer: dft_init traces only with DFTRACER_ENABLE exactly 1; unset,
// "true", "2" -> nothing started and no file, even though the program asked.
TEST(Config, InitTracesOnlyWithEnableExactlyOne) {
  for (const char* value : {static_cast<const char*>(nullptr), "true", "2", "0"}) {
    SCOPED_TRACE(value ? value : "(unset)");
    std::string dir = temp_dir("switch");
    if (value) setenv("DFTRACER_ENABLE", value, 1); else unsetenv("DFTRACER_ENABLE");
    EXPECT_EQ(dft_init((dir + "/k").c_str(), nullptr, -1), 1);
    expect_nothing_traced(dir);
  }
  std::string dir = temp_dir("switch");
  ScopedEnv env("DFTRACER_ENABLE", "1");
  ASSERT_EQ(dft_init((dir + "/k").c_str(), nullptr, -1), 0);
  EXPECT_EQ(dft_enabled(), 1);
  dft_finalize();
  EXPECT_EQ(files_in(dir, ".pfw.gz").size(), 1u);
}

// The explicit opt-in traces without the environment; a DFTRACER_ENABLE set
// to anything but 1 (the user's kill switch) still wins, silently.
TEST(Config, OptInTracesWithoutTheEnvironmentButNotAgainstIt) {
  {
    std::string dir = temp_dir("optin");
    unsetenv("DFTRACER_ENABLE");
    ASSERT_EQ(dft_init_opt_in((dir + "/o").c_str(), nullptr, -1), 0);
    EXPECT_EQ(dft_enabled(), 1);
    dft_finalize();
    EXPECT_EQ(files_in(dir, ".pfw.gz").size(), 1u);
  }
  for (const char* value : {"0", "off", "true"}) {
    SCOPED_TRACE(value);
    std::string dir = temp_dir("kill");
    ScopedEnv env("DFTRACER_ENABLE", value);
    testing::internal::CaptureStderr();
    EXPECT_EQ(dft_init_opt_in((dir + "/k").c_str(), nullptr, -1), 1);
    expect_nothing_traced(dir);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
}

// A value that looks like "on" but is not 1 says once why nothing is traced.
TEST(Config, EnableOtherThanZeroOrOneWarnsOnceAtEnvStart) {
  ScopedEnv env("DFTRACER_ENABLE", "true");
  testing::internal::CaptureStderr();
  EXPECT_EQ(dft_init_from_env(), 0);
  EXPECT_EQ(dft_init_from_env(), 0);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_lines_with(err, "DFTRACER_ENABLE='true' is not 1; tracing is off"), 1) << err;
  EXPECT_EQ(count_lines_with(err, "\n"), 1) << err;
}
