// expect_error(code, text, fn): fn() must throw a rankflow::Error of `code` whose message holds
// `text`; a GoogleTest failure otherwise (no error, another code, another message).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "rankflow/error.h"

namespace rankflow::test {

template <typename Fn>
void expect_error(ErrorCode code, const std::string& text, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected " << to_string(code) << " with '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_THAT(e.what(), ::testing::HasSubstr(text));
  }
}

}  // namespace rankflow::test
