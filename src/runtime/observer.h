// TaskObserver: what the scheduler tells about a run, in the manner of Taskflow's
// ObserverInterface, so tracing and the graph dump live outside the scheduler. Calls come from
// the host's main thread (run_began, task_submitted, run_ended), and from whichever thread saw
// a task finish (task_left: the thread driving the chips, or a sub-worker): an observer guards
// its own state. ObserverList forwards to every observer installed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/task.h"

namespace rankflow::runtime {

// Where and when a task (or one member of a group) ran. The times are steady_clock readings of
// the rank that ran it: a chip's own clock, which on another host counts from another origin.
struct TaskSpan {
  int track;  // chip worker id, or -1 - k for sub-worker k
  uint64_t start_ns;
  uint64_t end_ns;
  bool ok;
  // A chip span: the host's clock minus end_ns when the host collected the completion, i.e.
  // the offset between the two clocks plus the delivery delay (0 for a sub-worker's span).
  int64_t lag_ns = 0;
};

class TaskObserver {
 public:
  virtual ~TaskObserver() = default;
  // Whether task_left needs real spans (the chips then send their start and end times).
  virtual bool wants_spans() const { return false; }
  virtual void run_began(uint64_t /*run*/) {}
  // The task entered the graph (its dependencies are known). A task that runs at once may
  // already have left (task_left) when this is called.
  virtual void task_submitted(const std::shared_ptr<TaskState>& /*task*/) {}
  // The task, or one member of a group, left its worker: finished or failed. Without
  // wants_spans() a chip task's span may carry no times (start == end == 0).
  virtual void task_left(const TaskState& /*task*/, const TaskSpan& /*span*/) {}
  // Every task of the run is done; the run's memory is about to go.
  virtual void run_ended(uint64_t /*run*/) {}
};

class ObserverList : public TaskObserver {
 public:
  void add(std::unique_ptr<TaskObserver> observer) {
    wants_spans_ |= observer->wants_spans();
    observers_.push_back(std::move(observer));
  }
  bool wants_spans() const override { return wants_spans_; }
  void run_began(uint64_t run) override {
    for (auto& o : observers_)
      o->run_began(run);
  }
  void task_submitted(const std::shared_ptr<TaskState>& task) override {
    for (auto& o : observers_)
      o->task_submitted(task);
  }
  void task_left(const TaskState& task, const TaskSpan& span) override {
    for (auto& o : observers_)
      o->task_left(task, span);
  }
  void run_ended(uint64_t run) override {
    for (auto& o : observers_)
      o->run_ended(run);
  }

 private:
  std::vector<std::unique_ptr<TaskObserver>> observers_;
  bool wants_spans_ = false;
};

}  // namespace rankflow::runtime
