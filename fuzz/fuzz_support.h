// What every fuzz target shares: how a broken property is reported (a message and abort(), which
// libFuzzer records as a crash with its reproducer) and how a decoder's refusal is told from a
// bug (a rankflow::Error of the expected kind is a refusal; anything else thrown is a bug).
// Single-threaded: libFuzzer calls each target on its main thread.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "rankflow/error.h"

namespace rankflow::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "rankflow fuzz: property broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void expect(bool holds, const std::string& what) {
  if (!holds) fail(what);
}

// RANKFLOW_FUZZ_VERBOSE=1 prints every refusal (to see what a seed or reproducer reaches).
inline bool verbose() {
  static const bool on = std::getenv("RANKFLOW_FUZZ_VERBOSE") != nullptr;
  return on;
}

// Runs `fn`; returns true when it returned, false when it threw an `Expected` (a refusal) whose
// message holds `must_mention` (when not null). Any other exception is a bug.
template <typename Expected, typename Fn>
bool refused_or_ran(Fn&& fn, const char* stage, const char* must_mention = nullptr) {
  try {
    fn();
    return true;
  } catch (const Expected& e) {
    if (verbose()) std::fprintf(stderr, "rankflow fuzz: %s refused: %s\n", stage, e.what());
    if (must_mention != nullptr && std::string(e.what()).find(must_mention) == std::string::npos) {
      fail(std::string(stage) + ": the error does not name '" + must_mention + "': " + e.what());
    }
    return false;
  } catch (const Error& e) {
    fail(std::string(stage) + ": unexpected rankflow error (" + std::string(to_string(e.code())) +
         "): " + e.what());
  } catch (const std::exception& e) {
    fail(std::string(stage) + ": threw a non-rankflow exception: " + e.what());
  } catch (...) {
    fail(std::string(stage) + ": threw something that is not an exception");
  }
}

// Runs `fn`, which must not throw at all.
template <typename Fn>
void must_run(Fn&& fn, const char* stage) {
  try {
    fn();
  } catch (const std::exception& e) {
    fail(std::string(stage) + ": threw: " + e.what());
  } catch (...) {
    fail(std::string(stage) + ": threw something that is not an exception");
  }
}

}  // namespace rankflow::fuzz
