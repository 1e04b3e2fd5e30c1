// SubWorkerPool (see sub_worker_pool.h). serve() is each sub-worker thread.
#include "runtime/sub_worker_pool.h"

namespace rankflow::runtime {
namespace {
thread_local bool t_sub_worker = false;
}  // namespace

bool SubWorkerPool::on_sub_worker() {
  return t_sub_worker;
}

SubWorkerPool::SubWorkerPool(int threads, RunMember run)
    : run_(std::move(run)), assigned_(threads), idle_(threads, false) {
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
  const bool group = task->member_args.size() > 1;
  {
    std::lock_guard lock(mutex_);
    ready_.push_back(std::move(task));
  }
  if (group) {
    ready_cv_.notify_all();  // whichever idle thread sees enough idle ones starts it
  } else {
    ready_cv_.notify_one();
  }
}

bool SubWorkerPool::head_can_start() const {
  return !ready_.empty() && static_cast<int>(ready_.front()->member_args.size()) <= idle_count_;
}

SubWorkerPool::Assignment SubWorkerPool::start_head(int index) {
  std::shared_ptr<TaskState> task = std::move(ready_.front());
  ready_.pop_front();
  const int members = static_cast<int>(task->member_args.size());
  idle_[index] = false;
  --idle_count_;
  // A run whose body threw cancels its queued tasks (TaskGraph::cancel): they never start.
  TaskStatus ready = TaskStatus::kReady;
  if (!task->status.compare_exchange_strong(ready, TaskStatus::kRunning)) return {};
  for (int m = 1, t = 0; m < members; ++t) {
    if (!idle_[t]) continue;
    idle_[t] = false;
    --idle_count_;
    assigned_[t] = {task, m++};
  }
  if (members > 1) ready_cv_.notify_all();
  return {std::move(task), 0};
}

void SubWorkerPool::serve(int index) {
  t_sub_worker = true;
  for (;;) {
    Assignment work;
    {
      std::unique_lock lock(mutex_);
      idle_[index] = true;
      ++idle_count_;
      ready_cv_.wait(lock, [&] { return shutdown_ || assigned_[index].task || head_can_start(); });
      if (assigned_[index].task) {           // a started group's member runs, even at shutdown
        work = std::move(assigned_[index]);  // (idle_ was cleared by the thread that started it)
        assigned_[index] = {};
      } else if (shutdown_) {
        return;
      } else {
        work = start_head(index);
      }
    }
    if (work.task) run_(work.task, work.member, index);
  }
}

}  // namespace rankflow::runtime
