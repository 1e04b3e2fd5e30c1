// Dims: a tensor's shape and strides held inline (copying a Tensor allocates nothing), read like
// a std::vector<size_t>, with more than five entries refused as InvalidArgument.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "rankflow/error.h"
#include "rankflow/tensor.h"

namespace rankflow {
namespace {

TEST(DimsTest, ReadsLikeAVector) {
  const Dims d{4, 3, 2};
  EXPECT_EQ(d.size(), 3u);
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d[0], 4u);
  EXPECT_EQ(d.back(), 2u);
  EXPECT_EQ(d, (std::vector<size_t>{4, 3, 2}));
  EXPECT_FALSE(d == (std::vector<size_t>{4, 3}));
  EXPECT_FALSE(d == (Dims{4, 3, 1}));
  const std::vector<size_t> back = d;
  EXPECT_EQ(back, (std::vector<size_t>{4, 3, 2}));
  size_t product = 1;
  for (size_t x : d)
    product *= x;
  EXPECT_EQ(product, 24u);
  EXPECT_TRUE(Dims().empty());
  EXPECT_EQ(Dims::filled(2, 7), (Dims{7, 7}));
}

TEST(DimsTest, MoreThanFiveEntriesAreInvalidArgument) {
  EXPECT_NO_THROW(Dims({1, 2, 3, 4, 5}));
  try {
    Dims({1, 1, 1, 1, 1, 1});
    ADD_FAILURE() << "six dimensions were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("1 to 5 dimensions (got 6)"));
  }
  EXPECT_THROW(Dims(std::vector<size_t>(7, 1)), InvalidArgument);
  EXPECT_THROW(Dims::filled(6, 1), InvalidArgument);
}

TEST(DimsTest, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(contiguous_strides(Dims{4, 3, 2}), (Dims{6, 2, 1}));
  EXPECT_TRUE(is_contiguous(Dims{4, 3}, Dims{3, 1}));
  EXPECT_FALSE(is_contiguous(Dims{4, 3}, Dims{8, 1}));
}

}  // namespace
}  // namespace rankflow
