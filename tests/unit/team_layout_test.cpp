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

// A second team over the same window (a domain's communicator): its control area is a buffer
// the first layout placed, so the first team's buffers keep their offsets and the two teams'
// barriers and signals never overlap.
TEST(TeamLayoutTest, SharingPutsTheControlAreaInAnotherLayoutsBuffer) {
  const uint32_t slots = 40;
  TeamLayout first(
      {{"data", 1000}, {"inbox", 512}, {"control", TeamLayout::control_bytes(slots), 64}},
      Team::kDefaultSignalSlots);
  const auto& control = first.find("control");
  TeamLayout second =
      TeamLayout::sharing({{"inbox", first.find("inbox").offset, 512}}, control.offset, slots);
  EXPECT_EQ(second.find("inbox").offset, first.find("inbox").offset);
  EXPECT_EQ(second.signal_slots(), slots);
  EXPECT_EQ(second.barrier_slot(0), control.offset);
  EXPECT_GE(second.signal_slot(0), second.barrier_slot(TeamLayout::kBarrierRounds - 1) + 64);
  EXPECT_LE(second.signal_slot(slots - 1) + TeamLayout::kSlotStride,
            control.offset + control.bytes);
  EXPECT_GE(second.barrier_slot(0), first.signal_slot(first.signal_slots() - 1) + 64);
  EXPECT_LE(second.total_bytes(), first.total_bytes());
  EXPECT_THROW(TeamLayout::sharing({}, control.offset + 8, slots), InvalidArgument);
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

// Each of the six comparisons at one below, at and one above the value (waits use holds()).
TEST(Compare, EachComparisonHoldsExactlyWhereItShould) {
  struct Case {
    Compare cmp;
    bool below, at, above;  // word = value - 1, value, value + 1
  };
  const Case cases[] = {
      {Compare::kEqual, false, true, false},   {Compare::kNotEqual, true, false, true},
      {Compare::kLess, true, false, false},    {Compare::kLessEqual, true, true, false},
      {Compare::kGreater, false, false, true}, {Compare::kGreaterEqual, false, true, true}};
  for (const Case& c : cases) {
    EXPECT_EQ(holds(c.cmp, 41, 42), c.below) << to_string(c.cmp);
    EXPECT_EQ(holds(c.cmp, 42, 42), c.at) << to_string(c.cmp);
    EXPECT_EQ(holds(c.cmp, 43, 42), c.above) << to_string(c.cmp);
  }
  EXPECT_STREQ(to_string(Compare::kLessEqual), "<=");
  EXPECT_THROW(holds(static_cast<Compare>(42), 0, 0), InvalidArgument);
  EXPECT_THROW(to_string(static_cast<Compare>(-1)), InvalidArgument);
}

}  // namespace
}  // namespace rankflow::transport
