// wait_until: returns as soon as the condition holds (across threads), and ends in a Timeout
// carrying the caller's diagnostic when it never does.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "transport/progress.h"

namespace rankflow::transport {
namespace {

TEST(WaitTest, ReturnsWhenAnotherThreadSetsTheFlag) {
  std::atomic<int> flag{0};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    flag.store(1);
  });
  int progress_calls = 0;
  wait_until([&] { return flag.load() == 1; }, [&] { ++progress_calls; }, std::chrono::seconds(5),
             [] { return std::string("never"); });
  setter.join();
  EXPECT_GT(progress_calls, 0);
}

TEST(WaitTest, TimesOutWithTheDiagnostic) {
  const auto start = std::chrono::steady_clock::now();
  try {
    wait_until([] { return false; }, [] {}, std::chrono::milliseconds(50),
               [] { return std::string("rank 0: test waited for peer 1"); });
    FAIL() << "wait_until returned without the condition";
  } catch (const Timeout& e) {
    EXPECT_STREQ(e.what(), "rankflow timeout: rank 0: test waited for peer 1");
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(50));
  EXPECT_LT(waited, std::chrono::seconds(2)) << "sleep back-off must stay bounded";
}

// A wait for a rank on this thread's own core spins only briefly; the hint is the thread's,
// nests, and goes with its scope.
TEST(WaitTest, SpinHintSetsHowLongBackoffsSpin) {
  EXPECT_EQ(Backoff::hinted_spin_polls(), Backoff::kSpinPolls);
  {
    SpinHint shared(Backoff::kSharedCoreSpinPolls);
    EXPECT_EQ(Backoff::hinted_spin_polls(), Backoff::kSharedCoreSpinPolls);
    {
      SpinHint inner(Backoff::kSpinPolls);
      EXPECT_EQ(Backoff::hinted_spin_polls(), Backoff::kSpinPolls);
    }
    EXPECT_EQ(Backoff::hinted_spin_polls(), Backoff::kSharedCoreSpinPolls);
    std::thread other([] { EXPECT_EQ(Backoff::hinted_spin_polls(), Backoff::kSpinPolls); });
    other.join();
  }
  EXPECT_EQ(Backoff::hinted_spin_polls(), Backoff::kSpinPolls);
}

TEST(WaitTest, FormatSeconds) {
  EXPECT_EQ(format_seconds(std::chrono::milliseconds(1500)), "1.5 s");
  EXPECT_EQ(format_seconds(std::chrono::seconds(120)), "120 s");
}

}  // namespace
}  // namespace rankflow::transport
