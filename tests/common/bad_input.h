// Table-driven bad-input tests (issue 12): one table per public header, each case a bad call,
// the Error type it must raise and the substrings its message must contain. Shared by the unit
// tests (tests/unit/bad_input_types_test.cpp) and the mpirun ones (tests/mpi/bad_input_*).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "rankflow/error.h"

namespace rankflow::test {

// A bad call and what it must raise.
struct BadCall {
  std::string name;
  std::function<void()> call;
  ErrorCode code;
  std::vector<std::string> substrings;  // every one must appear in what()
};

// Whether `e` is of the class that `code` names (and carries that code).
inline bool has_type(const Error& e, ErrorCode code) {
  if (e.code() != code) return false;
  switch (code) {
    case ErrorCode::kInvalidArgument: return dynamic_cast<const InvalidArgument*>(&e) != nullptr;
    case ErrorCode::kTimeout: return dynamic_cast<const Timeout*>(&e) != nullptr;
    case ErrorCode::kOutOfBounds: return dynamic_cast<const OutOfBounds*>(&e) != nullptr;
    case ErrorCode::kTransport: return dynamic_cast<const TransportError*>(&e) != nullptr;
    case ErrorCode::kRemoteFailure: return dynamic_cast<const RemoteFailure*>(&e) != nullptr;
    case ErrorCode::kInvalidState: return dynamic_cast<const InvalidState*>(&e) != nullptr;
  }
  return false;
}

// The outcome of one call: the error it raised, if any.
struct Outcome {
  bool threw = false;
  bool rankflow_error = false;
  ErrorCode code = ErrorCode::kInvalidArgument;
  bool typed = false;  // the exception's class matches its code
  std::string what;
};

inline Outcome outcome_of(const std::function<void()>& call, ErrorCode expected) {
  Outcome o;
  try {
    call();
  } catch (const Error& e) {
    o.threw = o.rankflow_error = true;
    o.code = e.code();
    o.typed = has_type(e, expected);
    o.what = e.what();
  } catch (const std::exception& e) {
    o.threw = true;
    o.what = e.what();
  } catch (...) {
    o.threw = true;
    o.what = "(not a std::exception)";
  }
  return o;
}

// Checks an outcome against what the case expects; returns whether it matched.
inline bool check_outcome(const std::string& name, const Outcome& o, ErrorCode code,
                          const std::vector<std::string>& substrings) {
  const std::string expected(to_string(code));
  EXPECT_FALSE(substrings.empty()) << name << ": a case must check its message";
  if (!o.threw) {
    ADD_FAILURE() << name << ": no error (expected " << expected << ")";
    return false;
  }
  if (!o.rankflow_error) {
    ADD_FAILURE() << name << ": not a rankflow::Error: " << o.what;
    return false;
  }
  bool ok = true;
  if (!o.typed) {
    ADD_FAILURE() << name << ": raised " << to_string(o.code) << ", expected " << expected << ": "
                  << o.what;
    ok = false;
  }
  for (const std::string& s : substrings) {
    if (o.what.find(s) == std::string::npos) {
      ADD_FAILURE() << name << ": the message does not contain \"" << s << "\": " << o.what;
      ok = false;
    }
  }
  return ok;
}

// Runs every case of a table; returns how many matched.
inline size_t run_table(const std::vector<BadCall>& table) {
  size_t matched = 0;
  for (const BadCall& c : table) {
    matched += check_outcome(c.name, outcome_of(c.call, c.code), c.code, c.substrings);
  }
  return matched;
}

}  // namespace rankflow::test
