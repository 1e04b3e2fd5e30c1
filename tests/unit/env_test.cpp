// Environment parameters: valid values parse, invalid ones are Errors naming the variable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/env.h"
#include "rankflow/error.h"

namespace rankflow::env {
namespace {

TEST(EnvTest, TimeoutParsesSecondsIncludingFractions) {
  EXPECT_EQ(parse_timeout("T", "120"), std::chrono::seconds(120));
  EXPECT_EQ(parse_timeout("T", "0.25"), std::chrono::milliseconds(250));
}

TEST(EnvTest, BadTimeoutsAreInvalidArguments) {
  for (const char* bad : {"", "abc", "0", "-1", "10s", "nan", "inf"}) {
    EXPECT_THROW(parse_timeout("RANKFLOW_TIMEOUT_S", bad), InvalidArgument) << bad;
  }
  try {
    parse_timeout("RANKFLOW_TIMEOUT_S", "ten");
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("RANKFLOW_TIMEOUT_S='ten'"));
  }
}

// Found by fuzz/env_parsers_fuzz.cpp (fuzz/corpus/env_parsers/regression-timeout-under-a-
// nanosecond: selector 0, then the value): a positive timeout below a nanosecond became a
// timeout of 0 ns, which ends every wait at once.
TEST(EnvTest, FuzzRegressionTimeoutsUnderANanosecondAreRefused) {
  for (const char* tiny : {"66666662.e-20", "1e-10", "0.0000000009"}) {
    try {
      parse_timeout("RANKFLOW_TIMEOUT_S", tiny);
      ADD_FAILURE() << tiny << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("RANKFLOW_TIMEOUT_S='" + std::string(tiny) +
                                                 "' is shorter than a nanosecond"));
    }
  }
  EXPECT_EQ(parse_timeout("T", "1e-9"), std::chrono::nanoseconds(1));
}

TEST(EnvTest, TimeoutComesFromTheEnvironmentWithADefault) {
  unsetenv("RANKFLOW_TIMEOUT_S");
  EXPECT_EQ(timeout(), std::chrono::seconds(120));
  setenv("RANKFLOW_TIMEOUT_S", "3", 1);
  EXPECT_EQ(timeout(), std::chrono::seconds(3));
  unsetenv("RANKFLOW_TIMEOUT_S");
}

TEST(EnvTest, StartupTimeoutComesFromTheEnvironmentWithADefault) {
  unsetenv("RANKFLOW_STARTUP_TIMEOUT_S");
  EXPECT_EQ(startup_timeout(), std::chrono::seconds(60));
  setenv("RANKFLOW_STARTUP_TIMEOUT_S", "0.5", 1);
  EXPECT_EQ(startup_timeout(), std::chrono::milliseconds(500));
  setenv("RANKFLOW_STARTUP_TIMEOUT_S", "soon", 1);
  try {
    (void)startup_timeout();
    ADD_FAILURE() << "RANKFLOW_STARTUP_TIMEOUT_S=soon accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("RANKFLOW_STARTUP_TIMEOUT_S='soon'"));
  }
  unsetenv("RANKFLOW_STARTUP_TIMEOUT_S");
}

TEST(EnvTest, LogLevelsAndBindPolicies) {
  EXPECT_EQ(parse_log_level("L", "debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("L", "info"), LogLevel::kInfo);
  EXPECT_THROW(parse_log_level("L", "verbose"), InvalidArgument);
  EXPECT_EQ(parse_bind_policy("B", "core"), BindPolicy::kCore);
  EXPECT_EQ(parse_bind_policy("B", "none"), BindPolicy::kNone);
  try {
    parse_bind_policy("RANKFLOW_BIND", "socket");
    FAIL() << "socket is not a policy";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("valid policies are core, none"));
  }
}

TEST(EnvTest, CrossMemoryIsOnOrOff) {
  EXPECT_TRUE(parse_on_off("W", "on"));
  EXPECT_FALSE(parse_on_off("W", "off"));
  unsetenv("RANKFLOW_CROSS_MEMORY");
  EXPECT_TRUE(cross_memory());
  setenv("RANKFLOW_CROSS_MEMORY", "off", 1);
  EXPECT_FALSE(cross_memory());
  unsetenv("RANKFLOW_CROSS_MEMORY");
  try {
    parse_on_off("RANKFLOW_CROSS_MEMORY", "yes");
    FAIL() << "yes is not on or off";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("RANKFLOW_CROSS_MEMORY='yes' is neither on nor off"));
  }
}

TEST(EnvTest, CrossMemoryDirections) {
  EXPECT_EQ(parse_cross_memory_direction("D", "auto"), CrossMemoryDirection::kAuto);
  EXPECT_EQ(parse_cross_memory_direction("D", "write"), CrossMemoryDirection::kWrite);
  EXPECT_EQ(parse_cross_memory_direction("D", "read"), CrossMemoryDirection::kRead);
  unsetenv("RANKFLOW_CROSS_MEMORY_DIRECTION");
  EXPECT_EQ(cross_memory_direction(), CrossMemoryDirection::kAuto);
  setenv("RANKFLOW_CROSS_MEMORY_DIRECTION", "read", 1);
  EXPECT_EQ(cross_memory_direction(), CrossMemoryDirection::kRead);
  setenv("RANKFLOW_CROSS_MEMORY_DIRECTION", "pull", 1);
  try {
    cross_memory_direction();
    FAIL() << "pull is not a direction";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("RANKFLOW_CROSS_MEMORY_DIRECTION='pull' is not a "
                                               "cross-memory direction; valid directions are "
                                               "auto, write, read"));
  }
  unsetenv("RANKFLOW_CROSS_MEMORY_DIRECTION");
}

TEST(EnvTest, ProgressModes) {
  EXPECT_EQ(parse_progress_mode("P", "caller"), ProgressMode::kCaller);
  EXPECT_EQ(parse_progress_mode("P", "thread"), ProgressMode::kThread);
  unsetenv("RANKFLOW_PROGRESS");
  EXPECT_EQ(progress_mode(), ProgressMode::kCaller);
  try {
    parse_progress_mode("RANKFLOW_PROGRESS", "threads");
    FAIL() << "threads is not a mode";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("RANKFLOW_PROGRESS='threads'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("valid modes are caller, thread"));
  }
}

}  // namespace
}  // namespace rankflow::env
