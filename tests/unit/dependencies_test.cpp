// DependencyTracker: which earlier tasks a new one waits for, by byte range and access.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "rankflow/error.h"
#include "runtime/dependencies.h"

namespace rankflow::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ByteUse read(uint64_t buffer, size_t b, size_t e) {
  return {buffer, b, e, true, false, {}};
}
ByteUse write(uint64_t buffer, size_t b, size_t e) {
  return {buffer, b, e, false, true, {}};
}
ByteUse read_write(uint64_t buffer, size_t b, size_t e) {
  return {buffer, b, e, true, true, {}};
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

TEST(DependencyTrackerTest, RecordsStayUntilAWriteCoversThem) {
  DependencyTracker t;
  t.add(1, {write(7, 0, 64)});
  EXPECT_THAT(t.add(2, {read(7, 0, 64)}), ElementsAre(1));  // the edge is still reported
  EXPECT_THAT(t.add(3, {write(7, 0, 64)}), ElementsAre(1, 2));
  // Task 3's write covered 1 and 2 (and depends on both), so only 3 is left to depend on.
  EXPECT_THAT(t.add(4, {read(7, 0, 8)}), ElementsAre(3));
}

// A block of a 16 x 16 float matrix (row stride 64 bytes): rows [r0, r1), columns [c0, c1).
ByteUse block(bool writes, size_t r0, size_t r1, size_t c0, size_t c1, uint64_t buffer = 7) {
  ByteUse u{buffer, r0 * 64 + c0 * 4, 0, !writes, writes, {}};
  u.layout.ndim = 2;
  u.layout.element_bytes = 4;
  u.layout.shape[0] = r1 - r0;
  u.layout.shape[1] = c1 - c0;
  u.layout.stride[0] = 64;
  u.layout.stride[1] = 4;
  u.end = u.begin + ((r1 - r0 - 1) * 64 + (c1 - c0 - 1) * 4) + 4;
  return u;
}

TEST(DependencyTrackerTest, StridedViewsCompareTheirBoxesDimensionByDimension) {
  // Columns 0..3 and 8..11 share the bounding byte range but no element.
  EXPECT_FALSE(overlaps(block(true, 0, 16, 0, 4), block(true, 0, 16, 8, 12)));
  EXPECT_FALSE(overlaps(block(true, 0, 16, 0, 4), block(true, 0, 16, 4, 8)));      // adjacent
  EXPECT_TRUE(overlaps(block(true, 0, 16, 0, 4), block(true, 0, 16, 3, 8)));       // column 3
  EXPECT_FALSE(overlaps(block(true, 0, 8, 0, 8), block(true, 8, 16, 0, 8)));       // rows apart
  EXPECT_TRUE(overlaps(block(true, 2, 9, 2, 9), block(true, 8, 16, 8, 16)));       // corner (8, 8)
  EXPECT_FALSE(overlaps(block(true, 0, 16, 0, 4), block(true, 0, 16, 8, 12, 8)));  // buffers
  // A contiguous range against a strided view counts by the bounding range (conservative).
  EXPECT_TRUE(overlaps(write(7, 32, 36), block(true, 0, 16, 0, 4)));
  EXPECT_FALSE(overlaps(write(7, 1024, 1028), block(true, 0, 16, 0, 4)));

  DependencyTracker t;
  EXPECT_THAT(t.add(1, {block(true, 0, 16, 0, 4)}), IsEmpty());
  EXPECT_THAT(t.add(2, {block(true, 0, 16, 8, 12)}), IsEmpty());    // independent columns
  EXPECT_THAT(t.add(3, {read(7, 0, 1024)}), ElementsAre(1, 2));     // the whole matrix
  EXPECT_THAT(t.add(4, {block(false, 0, 16, 12, 16)}), IsEmpty());  // unwritten columns
  // A strided write does not cover the bytes between its rows, so every record stays.
  EXPECT_THAT(t.add(5, {block(true, 0, 16, 0, 16)}), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(t.add(6, {read(7, 0, 4)}), ElementsAre(1, 5));
}

TEST(DependencyTrackerTest, ForgottenBuffersAddNoEdges) {
  DependencyTracker t;
  t.add(1, {write(7, 0, 64)});
  t.forget(7);
  EXPECT_THAT(t.add(2, {read(7, 0, 64)}), IsEmpty());
}

TEST(DependencyTrackerTest, ConflictingArgumentsOfOneTaskAreErrors) {
  EXPECT_THROW(check_task_uses({write(7, 0, 10), write(7, 5, 15)}, "k"), InvalidArgument);
  EXPECT_THROW(check_task_uses({read(7, 0, 10), write(7, 5, 15)}, "k"), InvalidArgument);
  EXPECT_NO_THROW(check_task_uses({read(7, 0, 10), read(7, 5, 15)}, "k"));
  EXPECT_NO_THROW(check_task_uses({write(7, 0, 10), write(7, 10, 15)}, "k"));
  EXPECT_NO_THROW(check_task_uses({block(true, 0, 16, 0, 4), block(true, 0, 16, 8, 12)}, "k"));
  EXPECT_THROW(check_task_uses({block(true, 0, 16, 0, 4), block(false, 0, 16, 2, 12)}, "k"),
               InvalidArgument);
}

// The tracker before its interval index: every record of the buffer compared with every use.
class ScanTracker {
 public:
  std::vector<uint64_t> add(uint64_t task, const std::vector<ByteUse>& uses) {
    std::vector<uint64_t> before;
    for (const ByteUse& use : uses) {
      for (const auto& [t, r] : records_[use.buffer]) {
        if (t != task && overlaps(r, use) && (r.writes || use.writes)) before.push_back(t);
      }
    }
    for (const ByteUse& use : uses) {
      auto& records = records_[use.buffer];
      if (use.writes && use.layout.ndim == 0) {
        std::erase_if(records, [&](const auto& record) {
          return use.begin <= record.second.begin && record.second.end <= use.end;
        });
      }
      records.emplace_back(task, use);
    }
    std::sort(before.begin(), before.end());
    before.erase(std::unique(before.begin(), before.end()), before.end());
    return before;
  }

 private:
  std::map<uint64_t, std::vector<std::pair<uint64_t, ByteUse>>> records_;
};

// The interval index gives exactly the scan's answers: 20,000 tasks of random contiguous
// ranges (single elements to the whole buffer, zero-length ones too), strided column and row
// blocks of one layout (indexed per dimension) and of a second layout at two phases (every
// other column), reads, writes and both, over two buffers.
TEST(DependencyTrackerTest, IntervalIndexAnswersAsTheScanOnRandomViews) {
  std::mt19937_64 random(20261201);
  auto below = [&](size_t n) { return static_cast<size_t>(random() % n); };
  DependencyTracker indexed;
  ScanTracker scan;
  size_t edges = 0;
  for (uint64_t task = 1; task <= 20000; ++task) {
    std::vector<ByteUse> uses;
    const uint64_t buffer = 7 + below(2);
    const size_t kind = below(10);
    const bool writes = below(2) == 0, reads = !writes || below(2) == 0;
    if (kind < 6) {  // contiguous, mostly short
      const size_t begin = below(1024);
      const size_t length = kind < 4 ? 4 * below(3) : below(1025 - begin);
      uses.push_back({buffer, begin, begin + length, reads, writes, {}});
    } else if (kind < 9) {  // a strided block of the 16 x 16 int32 matrix
      const size_t r0 = below(16), c0 = below(16);
      ByteUse u = block(writes, r0, r0 + 1 + below(16 - r0), c0, c0 + 1 + below(16 - c0), buffer);
      u.reads = reads;
      uses.push_back(u);
    } else {  // every other column of a block: another layout, at phase 0 or 4
      const size_t r0 = below(16), c0 = below(16);
      ByteUse u = block(writes, r0, r0 + 1 + below(16 - r0), c0, c0 + 1, buffer);
      u.reads = reads;
      u.layout.shape[1] = 1 + below((16 - c0 + 1) / 2);
      u.layout.stride[1] = 8;
      u.end = u.begin + (u.layout.shape[0] - 1) * 64 + (u.layout.shape[1] - 1) * 8 + 4;
      uses.push_back(u);
    }
    const auto expected = scan.add(task, uses);
    ASSERT_EQ(indexed.add(task, uses), expected) << "task " << task;
    edges += expected.size();
  }
  EXPECT_GT(edges, 20000u);  // the views do depend on each other
}

// Views in order (block after block, the in-order path of StridedIndex), killed in bulk by
// covering writes so that the groups rebuild (dead entries beyond twice the live ones), then
// coming back in order: the answers stay the scan's.
TEST(DependencyTrackerTest, InOrderViewsThatDieAndRebuildAnswerAsTheScan) {
  std::mt19937_64 random(20261202);
  DependencyTracker indexed;
  ScanTracker scan;
  size_t edges = 0;
  for (uint64_t task = 1; task <= 6000; ++task) {
    std::vector<ByteUse> uses;
    if (task % 200 == 0) {  // covers every record of the matrix: all of them die
      uses.push_back(write(7, 0, 1024));
    } else if (task % 3 == 0) {  // a read of a random column block
      const size_t c0 = random() % 16;
      uses.push_back(block(false, 0, 16, c0, c0 + 1 + random() % (16 - c0)));
    } else {  // writes of single columns in order, restarting at column 0 every 16
      const size_t c = (task / 3) % 16;
      uses.push_back(block(true, 0, 16, c, c + 1));
    }
    const auto expected = scan.add(task, uses);
    ASSERT_EQ(indexed.add(task, uses), expected) << "task " << task;
    edges += expected.size();
  }
  EXPECT_GT(edges, 6000u);
}

}  // namespace
}  // namespace rankflow::runtime
