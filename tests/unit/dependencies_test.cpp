// DependencyTracker: which earlier tasks a new one waits for, by byte range and access.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rankflow/error.h"
#include "runtime/dependencies.h"

namespace rankflow::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ByteUse read(uint64_t buffer, size_t b, size_t e) {
  return {buffer, b, e, true, false};
}
ByteUse write(uint64_t buffer, size_t b, size_t e) {
  return {buffer, b, e, false, true};
}
ByteUse read_write(uint64_t buffer, size_t b, size_t e) {
  return {buffer, b, e, true, true};
}

TEST(DependencyTrackerTest, ReadAfterWriteWriteAfterWriteAndWriteAfterRead) {
  DependencyTracker t;
  EXPECT_THAT(t.add(1, {write(7, 0, 100)}), IsEmpty());
  EXPECT_THAT(t.add(2, {read(7, 50, 60)}), ElementsAre(1));         // RAW
  EXPECT_THAT(t.add(3, {read(7, 0, 10)}), ElementsAre(1));          // RAW; no read-read edge
  EXPECT_THAT(t.add(4, {write(7, 55, 56)}), ElementsAre(1, 2));     // WAW on 1, WAR on 2
  EXPECT_THAT(t.add(5, {read_write(7, 0, 1)}), ElementsAre(1, 3));  // RAW 1, WAR 3
}

TEST(DependencyTrackerTest, DisjointRangesAndOtherBuffersAreIndependent) {
  DependencyTracker t;
  t.add(1, {write(7, 0, 64)});
  EXPECT_THAT(t.add(2, {write(7, 64, 128)}), IsEmpty());  // adjacent, not overlapping
  EXPECT_THAT(t.add(3, {write(8, 0, 64)}), IsEmpty());    // another buffer
}

TEST(DependencyTrackerTest, FinishedTasksStayInTheGraphUntilOverwritten) {
  DependencyTracker t;
  t.add(1, {write(7, 0, 64)});
  t.finished(1);
  EXPECT_THAT(t.add(2, {read(7, 0, 64)}), ElementsAre(1));  // the edge is still reported
  t.finished(2);
  EXPECT_THAT(t.add(3, {write(7, 0, 64)}), ElementsAre(1, 2));
  t.finished(3);
  // Task 3's write covered 1 and 2, so they are gone; only 3 is left to depend on.
  EXPECT_THAT(t.add(4, {read(7, 0, 8)}), ElementsAre(3));
}

TEST(DependencyTrackerTest, ConflictingArgumentsOfOneTaskAreErrors) {
  EXPECT_THROW(check_task_uses({write(7, 0, 10), write(7, 5, 15)}, "k"), InvalidArgument);
  EXPECT_THROW(check_task_uses({read(7, 0, 10), write(7, 5, 15)}, "k"), InvalidArgument);
  EXPECT_NO_THROW(check_task_uses({read(7, 0, 10), read(7, 5, 15)}, "k"));
  EXPECT_NO_THROW(check_task_uses({write(7, 0, 10), write(7, 10, 15)}, "k"));
}

}  // namespace
}  // namespace rankflow::runtime
