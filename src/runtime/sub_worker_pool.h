// SubWorkerPool: the host's sub-worker threads, which run sub tasks (host callables) as they
// become ready, in ready order, each on whichever thread is idle. A group of N members
// (submit_sub_group) launches all at once on N distinct idle threads; while it waits at the
// head of the queue for them, the tasks behind it wait too. The pool owns the threads and their
// queue; what running a member means (its callable, its completion) is the `run` function it
// was given. enqueue() may be called from any thread.
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
  // `run(task, member, index)` runs member `member` of `task` on sub-worker `index`
  // (0..threads-1).
  using RunMember = std::function<void(const std::shared_ptr<TaskState>&, int, int)>;
  SubWorkerPool(int threads, RunMember run);
  ~SubWorkerPool();
  SubWorkerPool(const SubWorkerPool&) = delete;
  SubWorkerPool& operator=(const SubWorkerPool&) = delete;

  void enqueue(std::shared_ptr<TaskState> task);
  // Joins the threads (tasks still queued stay queued); the destructor calls it.
  void stop();
  int threads() const { return static_cast<int>(threads_.size()); }
  // Whether the calling thread is a sub-worker (of any pool): a task is running on it.
  static bool on_sub_worker();

 private:
  struct Assignment {
    std::shared_ptr<TaskState> task;
    int member = 0;
  };
  void serve(int index);
  // Under the lock: whether the head of the queue can start now (a group needs its members'
  // count of idle threads, this one included).
  bool head_can_start() const;
  // Under the lock: pops the head and hands its members 1.. to other idle threads; member 0 is
  // the caller's.
  Assignment start_head(int index);

  RunMember run_;
  std::mutex mutex_;
  std::condition_variable ready_cv_;
  std::deque<std::shared_ptr<TaskState>> ready_;
  std::vector<Assignment> assigned_;  // per thread: a group member handed to it
  std::vector<bool> idle_;            // per thread: waiting for work, nothing assigned
  int idle_count_ = 0;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rankflow::runtime
