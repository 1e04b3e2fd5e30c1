// SubWorkerPool (see sub_worker_pool.h). serve() is each sub-worker thread.
#include "runtime/sub_worker_pool.h"

namespace rankflow::runtime {

SubWorkerPool::SubWorkerPool(int threads,
                             std::function<void(const std::shared_ptr<TaskState>&, int)> run)
    : run_(std::move(run)) {
  for (int i = 0; i < threads; ++i)
    threads_.emplace_back([this, i] { serve(i); });
}

SubWorkerPool::~SubWorkerPool() {
  stop();
}

void SubWorkerPool::stop() {
  {
    std::lock_guard lock(mutex_);
    shutdown_ = true;
  }
  ready_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void SubWorkerPool::enqueue(std::shared_ptr<TaskState> task) {
  {
    std::lock_guard lock(mutex_);
    ready_.push_back(std::move(task));
  }
  ready_cv_.notify_one();
}

void SubWorkerPool::serve(int index) {
  for (;;) {
    std::shared_ptr<TaskState> task;
    {
      std::unique_lock lock(mutex_);
      ready_cv_.wait(lock, [this] { return shutdown_ || !ready_.empty(); });
      if (shutdown_) return;
      task = std::move(ready_.front());
      ready_.pop_front();
    }
    task->status = TaskStatus::kRunning;
    run_(task, index);
  }
}

}  // namespace rankflow::runtime
