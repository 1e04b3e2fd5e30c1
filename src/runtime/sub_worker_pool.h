// SubWorkerPool: the host's sub-worker threads, which run sub tasks (host callables) as they
// become ready, in ready order, each on whichever thread is idle. The pool owns the threads and
// their queue; what running a task means (its callable, its completion) is the `run` function
// it was given. enqueue() may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/task.h"

namespace rankflow::runtime {

class SubWorkerPool {
 public:
  // `run(task, index)` runs on sub-worker `index` (0..threads-1).
  SubWorkerPool(int threads, std::function<void(const std::shared_ptr<TaskState>&, int)> run);
  ~SubWorkerPool();
  SubWorkerPool(const SubWorkerPool&) = delete;
  SubWorkerPool& operator=(const SubWorkerPool&) = delete;

  void enqueue(std::shared_ptr<TaskState> task);
  // Joins the threads (tasks still queued stay queued); the destructor calls it.
  void stop();
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void serve(int index);

  std::function<void(const std::shared_ptr<TaskState>&, int)> run_;
  std::mutex mutex_;
  std::condition_variable ready_cv_;
  std::deque<std::shared_ptr<TaskState>> ready_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rankflow::runtime
