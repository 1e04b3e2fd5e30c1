// RunPipeline: the host's runs in flight (Worker::submit), oldest first. It admits a run (up to
// the admission depth, ending the oldest first when full), runs its body on the caller's
// thread, and ends runs in order, each once every task of it is done, recording its result for
// its RunHandle. Only the oldest run executes; the scheduler holds a later one's ready tasks
// until then (task_graph.h). Whichever thread submits or waits ends runs, under one lock: the
// body's thread, or another thread waiting on a handle while no body runs. Sub-worker threads
// (tasks) never do.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "rankflow/runtime.h"
#include "runtime/scheduler.h"

namespace rankflow::runtime {
class RunPipeline;
}  // namespace rankflow::runtime

namespace rankflow::detail {

struct RunRecord {
  uint64_t number = 0;
  std::atomic<bool> ended{false};
  std::exception_ptr error;  // set before `ended`: the run's first task error
  std::weak_ptr<runtime::RunPipeline> pipeline;
};

}  // namespace rankflow::detail

namespace rankflow::runtime {

class RunPipeline : public std::enable_shared_from_this<RunPipeline> {
 public:
  RunPipeline(Scheduler& scheduler, int depth);

  // Admits a run and runs its body; the body's exception cancels the run's unstarted tasks
  // and propagates once the run has ended.
  std::shared_ptr<detail::RunRecord> submit(const std::function<void(Orchestrator&)>& body);
  // Ends runs in order until `run` has ended (see RunHandle::wait), then throws its error.
  // `timeout`: Timeout if it has not ended by then; without one, Timeout once no task
  // finished for the worker's timeout.
  void wait(const detail::RunRecord& run, std::optional<std::chrono::nanoseconds> timeout);
  // Ends every run in flight (their errors stay with their handles); Timeout if one is stuck.
  void drain();
  // A wait for work that only a later run can produce (a task's handle, arena memory): the runs
  // before it end, oldest first, until `executing()` holds. A no-op on a sub-worker, and on a
  // thread other than the body's while a body runs.
  void catch_up(const std::function<bool()>& executing);
  // Ends the runs at the front whose tasks are all done, if no other thread is submitting or
  // ending runs (RunHandle::done).
  void poll();
  size_t in_flight() const { return in_flight_.size(); }
  bool in_body() const { return in_body_.load(); }

 private:
  // Ends the oldest run in flight; false once `deadline` passed (it stays in flight).
  bool end_front(std::optional<std::chrono::steady_clock::time_point> deadline);
  void poll_locked();
  void cancel_after_body_threw(const detail::RunRecord& run, const std::exception_ptr& thrown);

  Scheduler& scheduler_;
  const size_t depth_;
  // Held while a thread submits or ends runs. A timed wait polls try_lock (a timed mutex's
  // pthread_mutex_clocklock is invisible to GCC 12's ThreadSanitizer).
  std::recursive_mutex mutex_;
  std::deque<std::shared_ptr<detail::RunRecord>> in_flight_;
  std::atomic<bool> in_body_{false};
  std::atomic<std::thread::id> body_thread_;
};

}  // namespace rankflow::runtime
