// TaskGraph on its own, without ranks: which tasks become ready when, in which order chips take
// them, how a group reserves its workers, and what a failure skips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rankflow/error.h"
#include "runtime/protocol.h"
#include "runtime/task_graph.h"

namespace rankflow::runtime {
namespace {

ByteUse write(uint64_t buffer) {
  return {buffer, 0, 8, false, true, {}};
}
ByteUse read(uint64_t buffer) {
  return {buffer, 0, 8, true, false, {}};
}

struct Graph {
  std::vector<std::shared_ptr<TaskState>> subs;
  int chip_work = 0;
  TaskGraph graph{2, [this](std::shared_ptr<TaskState> t) { subs.push_back(std::move(t)); },
                  [this] { ++chip_work; }};
  Graph() { graph.begin_run(); }

  std::shared_ptr<TaskState> add(std::vector<int> workers, std::vector<ByteUse> uses,
                                 std::vector<uint64_t> after = {}, CallConfig config = {}) {
    auto t = std::make_shared<TaskState>();
    t->name = "t";
    t->config = config;
    t->sub = workers.empty();
    t->workers = std::move(workers);
    t->member_args.resize(std::max<size_t>(1, t->workers.size()));
    graph.add(t, uses, after);
    return t;
  }
  std::vector<uint64_t> take(std::vector<uint32_t> room = {kRingSlots, kRingSlots}) {
    std::vector<Posting> out;
    graph.take_ready(room, out);
    std::vector<uint64_t> ids;
    for (const auto& p : out)
      ids.push_back(p.task->id * 10 + p.member);
    return ids;
  }
};

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(TaskGraphTest, DependentsBecomeReadyWhenTheirPredecessorsFinish) {
  Graph g;
  auto a = g.add({0}, {write(1)});
  auto b = g.add({1}, {read(1)});
  auto c = g.add({}, {read(1)});  // a sub
  EXPECT_THAT(b->deps, ElementsAre(a->id));
  EXPECT_THAT(g.take(), ElementsAre(a->id * 10));
  EXPECT_THAT(g.take(), IsEmpty());
  EXPECT_EQ(g.graph.outstanding(), 3u);
  g.graph.finish(a, true, "");
  EXPECT_THAT(g.take(), ElementsAre(b->id * 10));
  ASSERT_EQ(g.subs.size(), 1u);
  EXPECT_EQ(g.subs[0], c);
  g.graph.finish(b, true, "");
  g.graph.finish(c, true, "");
  EXPECT_EQ(g.graph.outstanding(), 0u);
  EXPECT_EQ(b->status.load(), TaskStatus::kSucceeded);
}

TEST(TaskGraphTest, AChipTakesOnlyWhatItsRingHolds) {
  Graph g;
  for (int i = 0; i < 5; ++i)
    g.add({0}, {});
  EXPECT_EQ(g.take({2, kRingSlots}).size(), 2u);
  EXPECT_EQ(g.take({kRingSlots, kRingSlots}).size(), 3u);
}

TEST(TaskGraphTest, AGroupReservesItsWorkersAndLaunchesWhenAllAreIdle) {
  Graph g;
  auto busy = g.add({1}, {});
  EXPECT_THAT(g.take(), ElementsAre(busy->id * 10));
  auto group = g.add({0, 1}, {});
  auto later = g.add({0}, {});
  // Worker 1 is busy: the group waits, and worker 0 takes nothing that came after it.
  EXPECT_THAT(g.take({kRingSlots, kRingSlots - 1}), IsEmpty());
  g.graph.finish(busy, true, "");
  EXPECT_THAT(g.take(), ElementsAre(group->id * 10, group->id * 10 + 1, later->id * 10));
}

TEST(TaskGraphTest, AFailureSkipsEveryDependentAndFailsTheRun) {
  Graph g;
  auto a = g.add({0}, {write(1)});
  auto b = g.add({1}, {read(1), write(2)});
  auto c = g.add({0}, {read(2)});
  auto d = g.add({1}, {write(3)});
  g.take();
  g.graph.finish(a, false, "boom");
  EXPECT_EQ(a->status.load(), TaskStatus::kFailed);
  EXPECT_EQ(b->status.load(), TaskStatus::kSkipped);
  EXPECT_EQ(c->status.load(), TaskStatus::kSkipped);
  EXPECT_THAT(c->error, ::testing::HasSubstr("failed"));
  EXPECT_EQ(g.graph.first_error(), "boom");
  EXPECT_THROW(g.add({0}, {}), RemoteFailure);
  g.graph.finish(d, true, "");
  EXPECT_EQ(g.graph.outstanding(), 0u);
}

// A consumer on its producer's own chip follows it in the ring at once; one on another chip,
// or behind a producer that is not yet queued, waits for it.
TEST(TaskGraphTest, AConsumerOnTheProducersChipFollowsItWithoutWaiting) {
  Graph g;
  auto a = g.add({0}, {write(1)});
  auto same_chip = g.add({0}, {read(1), write(2)});
  auto other_chip = g.add({1}, {read(1), write(3)});
  auto behind_waiting = g.add({1}, {read(3)});  // other_chip waits, not queued: so must it
  EXPECT_THAT(same_chip->stream.before, ElementsAre(a));
  EXPECT_THAT(other_chip->stream.before, IsEmpty());
  EXPECT_THAT(behind_waiting->stream.before, IsEmpty());
  EXPECT_THAT(g.take(), ElementsAre(a->id * 10, same_chip->id * 10));
  g.graph.finish(a, true, "");
  EXPECT_THAT(g.take(), ElementsAre(other_chip->id * 10));
  EXPECT_EQ(behind_waiting->status.load(), TaskStatus::kWaiting);
  g.graph.finish(other_chip, true, "");
  EXPECT_THAT(g.take(), ElementsAre(behind_waiting->id * 10));
  g.graph.finish(same_chip, true, "");
  g.graph.finish(behind_waiting, true, "");
  EXPECT_EQ(g.graph.outstanding(), 0u);
}

// A streamed consumer of a failed task is skipped wherever it is: still queued (never posted),
// or in flight (its chip's completion, which reports the skip, is then ignored).
TEST(TaskGraphTest, StreamedConsumersOfAFailedTaskAreSkippedQueuedOrInFlight) {
  Graph g;
  auto a = g.add({0}, {write(1)});
  auto posted = g.add({0}, {read(1), write(2)});
  EXPECT_THAT(g.take({2, kRingSlots}), ElementsAre(a->id * 10, posted->id * 10));
  auto queued = g.add({0}, {read(2)});
  auto independent = g.add({0}, {write(3)});
  g.graph.finish(a, false, "boom");
  EXPECT_EQ(posted->status.load(), TaskStatus::kSkipped);
  EXPECT_EQ(queued->status.load(), TaskStatus::kSkipped);
  EXPECT_THAT(queued->stream.before, IsEmpty()) << "it and its predecessor would hold each other";
  EXPECT_THAT(g.take(), ElementsAre(independent->id * 10));  // the skipped one is dropped
  g.graph.finish(posted, false, "skipped on the chip");      // ignored: already skipped
  EXPECT_THAT(posted->error, ::testing::HasSubstr("failed"));
  g.graph.finish(independent, true, "");
  EXPECT_EQ(g.graph.outstanding(), 0u);
}

// A task with a streamed predecessor and one it waits for is made ready by the latter only.
TEST(TaskGraphTest, AStreamedPredecessorDoesNotCountAmongThePendingOnes) {
  Graph g;
  auto other = g.add({1}, {write(1)});
  auto same = g.add({0}, {write(2)});
  auto both = g.add({0}, {read(1), read(2)});
  EXPECT_THAT(both->stream.before, ElementsAre(same));
  EXPECT_EQ(both->pending, 1);
  g.take();
  g.graph.finish(same, true, "");
  EXPECT_EQ(both->status.load(), TaskStatus::kWaiting);
  g.graph.finish(other, true, "");
  EXPECT_THAT(g.take(), ElementsAre(both->id * 10));
  g.graph.finish(both, true, "");
  EXPECT_EQ(g.graph.outstanding(), 0u);
}

TEST(TaskGraphTest, AfterMustNameAnEarlierTaskOfThisRun) {
  Graph g;
  auto a = g.add({0}, {});
  EXPECT_THROW(g.add({0}, {}, {a->id + 5}), InvalidArgument);
  g.graph.finish(a, true, "");
  g.graph.end_run();
  g.graph.begin_run();
  EXPECT_THROW(g.add({0}, {}, {a->id}), InvalidArgument);  // the previous run's
}

// Runs in flight (Worker::submit): a later run is built while the earlier one executes; its
// ready tasks wait until that one has ended, and the two share no dependencies.
TEST(TaskGraphTest, ALaterRunWaitsForTheEarlierOneAndDependsOnNothingInIt) {
  Graph g;
  auto a = g.add({0}, {write(1)});
  g.graph.begin_run();
  auto b = g.add({0}, {read(1)});
  auto s = g.add({}, {});  // a sub task of the later run
  EXPECT_THAT(b->deps, IsEmpty());
  EXPECT_FALSE(g.graph.executing(b->id));
  EXPECT_TRUE(g.graph.executing(a->id));
  EXPECT_THAT(g.take(), ElementsAre(a->id * 10));
  EXPECT_THAT(g.subs, IsEmpty());
  EXPECT_EQ(g.graph.outstanding(), 1u);  // the executing run's
  g.graph.finish(a, true, "");
  EXPECT_EQ(g.graph.outstanding(), 0u);
  EXPECT_THAT(g.take(), IsEmpty());  // held until the earlier run ends
  g.graph.end_run();
  EXPECT_EQ(g.graph.outstanding(), 2u);
  EXPECT_THAT(g.take(), ElementsAre(b->id * 10));
  ASSERT_EQ(g.subs.size(), 1u);
  EXPECT_EQ(g.subs[0], s);
}

TEST(TaskGraphTest, CancelEndsTheNewestRunsUnstartedTasksOnly) {
  Graph g;
  auto running = g.add({0}, {write(1)});
  EXPECT_THAT(g.take(), ElementsAre(running->id * 10));
  auto waiting = g.add({1}, {read(1)});
  auto queued = g.add({1}, {write(2)});
  g.graph.cancel_unstarted("the body threw");
  EXPECT_EQ(waiting->status.load(), TaskStatus::kSkipped);
  EXPECT_EQ(queued->status.load(), TaskStatus::kSkipped);
  EXPECT_EQ(queued->error, "cancelled: the body threw");
  EXPECT_EQ(running->status.load(), TaskStatus::kRunning);
  EXPECT_EQ(g.graph.outstanding(), 1u);
  EXPECT_THAT(g.take(), IsEmpty());
  g.graph.finish(running, true, "");
  EXPECT_EQ(waiting->status.load(), TaskStatus::kSkipped);
  EXPECT_EQ(g.graph.outstanding(), 0u);
  EXPECT_EQ(g.graph.first_error(), "");  // cancelling is not a task failure
}

TEST(TaskGraphTest, ATaskWindowBoundsTheDescriptorsInFlightOnItsChip) {
  Graph g;
  const CallConfig window4{.runtime_env = {.ring_task_window = 4}};
  for (int i = 0; i < 6; ++i)
    g.add({0}, {}, {}, window4);
  EXPECT_EQ(g.take().size(), 4u);                              // the 5th would make 5 in flight
  EXPECT_EQ(g.take({kRingSlots - 4, kRingSlots}).size(), 0u);  // still 4 in flight
  EXPECT_EQ(g.take({kRingSlots - 3, kRingSlots}).size(), 1u);  // one finished
  auto plain = g.add({0}, {});  // no window: behind the last windowed one in the FIFO
  EXPECT_EQ(g.take({kRingSlots - 1, kRingSlots}).size(), 2u);
  (void)plain;
}

TEST(TaskGraphTest, ADependencyPoolBoundsThePredecessorsAndARefusedTaskLeavesNothing) {
  Graph g;
  std::vector<std::shared_ptr<TaskState>> writers;
  for (uint64_t b = 1; b <= 5; ++b)
    writers.push_back(g.add({0}, {write(b)}));
  const CallConfig pool4{.runtime_env = {.ring_dep_pool = 4}};
  const std::vector<ByteUse> all = {read(1), read(2), read(3), read(4), read(5)};
  EXPECT_THROW(g.add({1}, all, {}, pool4), InvalidArgument);
  auto next = g.add({1}, {write(1)});  // the refused reader left no record behind
  EXPECT_THAT(next->deps, ElementsAre(writers[0]->id));
  EXPECT_EQ(next->id, writers.back()->id + 1);
  const CallConfig pool8{.runtime_env = {.ring_dep_pool = 8}};
  EXPECT_EQ(g.add({1}, all, {}, pool8)->deps.size(), 5u);
}

}  // namespace
}  // namespace rankflow::runtime
