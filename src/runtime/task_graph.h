// TaskGraph: the host's graph of the runs in flight. It owns each unfinished task's state, its
// dependents and pending count, a dependency tracker per run, and the ready order: one FIFO of
// single tasks per chip, one queue of groups (the head reserves its workers), and sub tasks
// handed to the sub-worker pool as they become ready. Only the oldest run in flight executes;
// a later one (admitted by Worker::submit while it runs) is built alongside, its ready tasks
// held until every earlier run has ended, so two runs never interleave on the chips. A chip task
// whose predecessors on the same chip are already queued or posted there does not wait for them: it
// follows them in the chip's ring, and the chip skips it if one fails (see TaskState::Stream).
// Everything is under one lock, taken by the body's thread (add), by whichever thread drives the
// chips (take_ready, finish) and by sub-workers (finish).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/dependencies.h"
#include "runtime/task.h"

namespace rankflow::runtime {

// A ready chip task (or one member of a group) to post.
struct Posting {
  std::shared_ptr<TaskState> task;
  size_t member;
};

class TaskGraph {
 public:
  // `sub_ready` receives sub tasks as they become ready; `chip_ready` is called when chip work
  // was queued (both under the graph's lock).
  TaskGraph(int chips, std::function<void(std::shared_ptr<TaskState>)> sub_ready,
            std::function<void()> chip_ready);

  // A new run, the one later adds go to; it executes at once if no other run is in flight.
  void begin_run();
  // The executing run has ended (nothing outstanding): the next one in flight executes, its
  // held tasks becoming ready in the order they did.
  void end_run();
  // Cancels the newest run's tasks that have not started: they end skipped with `why`; tasks
  // already running finish.
  void cancel_unstarted(const std::string& why);
  // Whether task `id` belongs to the executing run (or an earlier one): false while its run
  // waits behind another.
  bool executing(uint64_t id);
  // The ids of the unfinished tasks that name `buffer` in an argument (a scope's end).
  std::vector<uint64_t> unfinished_users(uint64_t buffer);
  // Whether every task of `ids` has finished.
  bool all_finished(const std::vector<uint64_t>& ids);
  // Gives `task` its id and records it in the newest run: its predecessors are every earlier
  // task of that run that touches the same bytes (`uses`) plus `after`. Throws InvalidArgument
  // for a bad `after`, and RemoteFailure once the run has failed.
  void add(const std::shared_ptr<TaskState>& task, const std::vector<ByteUse>& uses,
           const std::vector<uint64_t>& after);
  // A task (or, for a group, one member) finished; releases or skips its dependents.
  void finish(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error);
  // Takes ready chip work that fits: `room[c]` free ring slots of chip c (kRingSlots when it
  // is idle). Groups launch all members at once when every one of their workers is idle and
  // has nothing queued from before the group. True when ready work is left that did not fit.
  bool take_ready(std::vector<uint32_t>& room, std::vector<Posting>& out);
  // Drops the records of a buffer whose memory was reclaimed.
  void forget(uint64_t buffer);

  // How each task of the run has ended so far, by id - first (the run's first id, returned
  // in `first`): for the graph dump.
  enum class Outcome : uint8_t { kPending, kDone, kFailed, kSkipped };
  std::vector<Outcome> outcomes(uint64_t& first);

  // Unfinished tasks of the executing run.
  size_t outstanding() const { return outstanding_.load(std::memory_order_acquire); }
  uint64_t finished() const { return finished_.load(std::memory_order_acquire); }
  // The first error of the executing run, and of the newest one.
  std::string first_error();
  std::string newest_error();

 private:
  static bool streams_behind(const TaskState& predecessor, const TaskState& task);
  static bool follows_in_stream(const TaskState& task,
                                const std::shared_ptr<TaskState>& predecessor);
  void make_ready(const std::shared_ptr<TaskState>& task);
  void complete(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error);
  void skip_dependents(const TaskState& task, const std::string& why);
  void take_groups(std::vector<uint32_t>& room, std::vector<Posting>& out);

  // One run in flight: its own dependencies (runs never depend on each other: a later one
  // executes after), its error and count, and its ready tasks while it waits.
  struct RunPart {
    uint64_t first_id = 1;
    std::unique_ptr<DependencyTracker> tracker;
    std::string first_error;
    size_t outstanding = 0;
    std::vector<std::shared_ptr<TaskState>> held;  // ready while an earlier run executes
  };
  RunPart& part_of(uint64_t id);
  void count_done(const TaskState& task);
  bool held_back(const TaskState& task) const {
    return runs_.size() > 1 && task.id >= runs_[1].first_id;
  }

  std::mutex mutex_;
  std::deque<RunPart> runs_;  // in flight, oldest (executing) first
  std::vector<std::unique_ptr<DependencyTracker>> spare_trackers_;  // their pools kept warm
  // By id - first_id_: the unfinished tasks of the runs in flight (a finished one's entry is
  // empty, so its state returns to the pool once nobody else holds it).
  std::vector<std::shared_ptr<TaskState>> run_tasks_;
  std::vector<Outcome> outcomes_;  // by id - first_id_, every task of the runs in flight
  uint64_t first_id_ = 1;          // the executing run's first id
  uint64_t next_id_ = 1;
  uint64_t ready_counter_ = 0;
  std::vector<std::deque<std::shared_ptr<TaskState>>> chip_ready_;
  std::deque<std::shared_ptr<TaskState>> group_ready_;  // the head reserves its workers
  std::vector<uint64_t> hold_from_;  // take_ready's scratch: per chip, singles held back
  std::function<void(std::shared_ptr<TaskState>)> sub_ready_;
  std::function<void()> chip_work_;
  // Written under the lock (load and store, no read-modify-write), read without it.
  std::atomic<size_t> outstanding_{0};  // runs_.front().outstanding
  std::atomic<uint64_t> finished_{0};   // tasks finished so far (progress, for timeouts)
};

}  // namespace rankflow::runtime
