// TaskGraph: the host's graph of one run. It owns each unfinished task's state, its dependents and
// pending count, the dependency tracker, and the ready order: one FIFO of single tasks per
// chip, one queue of groups (the head reserves its workers), and sub tasks handed to the
// sub-worker pool as they become ready. A chip task whose predecessors on the same chip are
// already queued or posted there does not wait for them: it follows them in the chip's ring,
// and the chip skips it if one fails (see TaskState::Stream). Everything is under one lock, taken
// by the body's thread (add), by whichever thread drives the chips (take_ready, finish) and by
// sub-workers (finish).
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

  void begin_run();
  // Gives `task` its id and records it: its predecessors are every earlier task that touches
  // the same bytes (`uses`) plus `after`. Throws InvalidArgument for a bad `after`, and
  // RemoteFailure once the run has failed.
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

  size_t outstanding() const { return outstanding_.load(std::memory_order_acquire); }
  uint64_t finished() const { return finished_.load(std::memory_order_acquire); }
  std::string first_error();

 private:
  static bool streams_behind(const TaskState& predecessor, const TaskState& task);
  static bool follows_in_stream(const TaskState& task,
                                const std::shared_ptr<TaskState>& predecessor);
  void make_ready(const std::shared_ptr<TaskState>& task);
  void complete(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error);
  void skip_dependents(const TaskState& task, const std::string& why);
  void take_groups(std::vector<uint32_t>& room, std::vector<Posting>& out);

  std::mutex mutex_;
  DependencyTracker tracker_;
  // By id - first_id_: the run's unfinished tasks (a finished one's entry is empty, so its
  // state returns to the pool once nobody else holds it).
  std::vector<std::shared_ptr<TaskState>> run_tasks_;
  std::vector<Outcome> outcomes_;  // by id - first_id_, every task of the run
  uint64_t first_id_ = 1;
  uint64_t next_id_ = 1;
  uint64_t ready_counter_ = 0;
  std::vector<std::deque<std::shared_ptr<TaskState>>> chip_ready_;
  std::deque<std::shared_ptr<TaskState>> group_ready_;  // the head reserves its workers
  std::vector<uint64_t> hold_from_;  // take_ready's scratch: per chip, singles held back
  std::function<void(std::shared_ptr<TaskState>)> sub_ready_;
  std::function<void()> chip_work_;
  std::string first_error_;
  // Written under the lock (load and store, no read-modify-write), read without it.
  std::atomic<size_t> outstanding_{0};
  std::atomic<uint64_t> finished_{0};  // tasks finished so far (progress, for timeouts)
  void count_outstanding(int change) {
    outstanding_.store(outstanding_.load(std::memory_order_relaxed) + change,
                       std::memory_order_release);
  }
};

}  // namespace rankflow::runtime
