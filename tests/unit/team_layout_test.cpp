// TeamLayout: control area first, buffers aligned and disjoint, bad specs rejected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rankflow/error.h"
#include "transport/team_layout.h"

namespace rankflow::transport {
namespace {

TEST(TeamLayoutTest, BuffersFollowTheControlAreaAlignedAndDisjoint) {
  TeamLayout layout({{"x", 10, 8}, {"y", 1000, 4096}, {"z", 1, 1}}, 16);
  EXPECT_EQ(layout.barrier_slot(0), 0u);
  EXPECT_EQ(layout.signal_slot(0), TeamLayout::kBarrierRounds * TeamLayout::kSlotStride);
  EXPECT_EQ(layout.signal_slot(1) - layout.signal_slot(0), TeamLayout::kSlotStride);
  const auto& x = layout.find("x");
  const auto& y = layout.find("y");
  const auto& z = layout.find("z");
  EXPECT_GE(x.offset, layout.signal_slot(15) + 8);
  EXPECT_EQ(x.offset % 8, 0u);
  EXPECT_EQ(y.offset % 4096, 0u);
  EXPECT_GE(y.offset, x.offset + 10);
  EXPECT_GE(z.offset, y.offset + 1000);
  EXPECT_GE(layout.total_bytes(), z.offset + 1);
  EXPECT_EQ(layout.total_bytes() % 64, 0u);
}

TEST(TeamLayoutTest, RejectsDuplicateEmptyAndBadlyAlignedBuffers) {
  EXPECT_THROW(TeamLayout({{"a", 1}, {"a", 2}}, 4), InvalidArgument);
  EXPECT_THROW(TeamLayout({{"", 1}}, 4), InvalidArgument);
  EXPECT_THROW(TeamLayout({{"a", 1, 3}}, 4), InvalidArgument);
  EXPECT_THROW(TeamLayout({{"a", 1, 0}}, 4), InvalidArgument);
}

TEST(TeamLayoutTest, UnknownBufferErrorListsTheKnownOnes) {
  TeamLayout layout({{"in", 1}, {"out", 1}}, 1);
  try {
    layout.find("inout");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'inout'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("in, out"));
  }
}

}  // namespace
}  // namespace rankflow::transport
