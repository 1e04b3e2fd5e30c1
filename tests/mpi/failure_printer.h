// FailurePrinter: the Google Test listener for ranks other than 0. It prints only failures,
// each tagged with the rank and the test, so the log reads like one test run and a failure on
// a chip or a peer is never silent.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace rankflow::test {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s failed at %s:%d\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_;
};

// Replaces the default printer on ranks other than 0.
inline void print_only_failures_on(int rank) {
  if (rank == 0) return;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new FailurePrinter(rank));
}

}  // namespace rankflow::test
