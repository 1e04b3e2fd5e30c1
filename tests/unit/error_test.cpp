// The Error hierarchy: each kind is catchable by class and by code, with a readable message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rankflow/error.h"

namespace rankflow {
namespace {

TEST(ErrorTest, SubclassesCarryTheirCodeAndPrefix) {
  try {
    throw Timeout("rank 3: barrier waited 2 s for peer 1");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_STREQ(e.what(), "rankflow timeout: rank 3: barrier waited 2 s for peer 1");
  }
  EXPECT_EQ(OutOfBounds("x").code(), ErrorCode::kOutOfBounds);
  EXPECT_EQ(InvalidArgument("x").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(TransportError("x").code(), ErrorCode::kTransport);
  EXPECT_EQ(RemoteFailure("x").code(), ErrorCode::kRemoteFailure);
  EXPECT_EQ(InvalidState("x").code(), ErrorCode::kInvalidState);
  EXPECT_THAT(RemoteFailure("rank 2 died").what(),
              ::testing::StartsWith("rankflow remote failure"));
}

TEST(ErrorTest, ErrorsAreStdExceptions) {
  EXPECT_THROW(throw OutOfBounds("x"), std::runtime_error);
  EXPECT_THROW(throw OutOfBounds("x"), Error);
}

}  // namespace
}  // namespace rankflow
