// RunPipeline (see run_pipeline.h) and the public RunHandle. The thread that submits or waits.
#include "runtime/run_pipeline.h"

#include "common/log.h"
#include "rankflow/error.h"
#include "runtime/sub_worker_pool.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

bool lock_until(std::unique_lock<std::recursive_mutex>& lock,
                std::chrono::steady_clock::time_point deadline) {
  transport::Backoff backoff;
  while (!lock.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    backoff.pause();
  }
  return true;
}

}  // namespace

RunPipeline::RunPipeline(Scheduler& scheduler, int depth)
    : scheduler_(scheduler), depth_(static_cast<size_t>(depth)) {}

std::shared_ptr<detail::RunRecord> RunPipeline::submit(
    const std::function<void(Orchestrator&)>& body) {
  std::lock_guard lock(mutex_);
  poll_locked();
  while (in_flight_.size() >= depth_)
    end_front(std::nullopt);  // Timeout: the new run is not admitted, its body never runs
  auto record = std::make_shared<detail::RunRecord>();
  record->number = scheduler_.begin_run();
  record->pipeline = weak_from_this();
  in_flight_.push_back(record);
  body_thread_ = std::this_thread::get_id();
  in_body_ = true;
  try {
    Orchestrator orchestrator = scheduler_.orchestrator();
    body(orchestrator);
  } catch (...) {
    in_body_ = false;
    cancel_after_body_threw(*record, std::current_exception());
    throw;
  }
  in_body_ = false;
  return record;
}

// The run's unstarted tasks are cancelled and its started ones finish; the body's exception is
// the one the caller sees, so what ending the run says is only logged.
void RunPipeline::cancel_after_body_threw(const detail::RunRecord& run,
                                          const std::exception_ptr& thrown) {
  std::string why = "the orchestration body threw";
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    why += std::string(": ") + e.what();
  } catch (...) {
  }
  scheduler_.cancel_newest_run(why);
  try {
    wait(run, std::nullopt);
  } catch (const std::exception& ended) {
    log::warn("run ", run.number, " after its body threw: ", ended.what());
  }
}

void RunPipeline::wait(const detail::RunRecord& run,
                       std::optional<std::chrono::nanoseconds> timeout) {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (timeout) deadline = std::chrono::steady_clock::now() + *timeout;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!deadline) {
    lock.lock();
  } else if (!lock_until(lock, *deadline)) {  // another thread is in a body or ending runs
    throw Timeout("RunHandle::wait: run " + std::to_string(run.number) + " did not end within " +
                  transport::format_seconds(*timeout) +
                  " (another thread held the worker's runs: a body, or a wait)");
  }
  while (!run.ended.load()) {
    if (!end_front(deadline)) {
      throw Timeout("RunHandle::wait: run " + std::to_string(run.number) + " did not end within " +
                    transport::format_seconds(*timeout) +
                    " (it keeps running: wait again, or close the worker)");
    }
  }
  if (run.error) std::rethrow_exception(run.error);
}

void RunPipeline::drain() {
  std::lock_guard lock(mutex_);
  while (!in_flight_.empty())
    end_front(std::nullopt);
}

// Tasks never end runs (their sub-worker waits on); a thread other than the body's waits while
// a body runs, since only the body's thread may touch what a run's end releases meanwhile.
void RunPipeline::catch_up(const std::function<bool()>& executing) {
  if (SubWorkerPool::on_sub_worker()) return;
  if (in_body_ && std::this_thread::get_id() != body_thread_.load()) return;
  std::lock_guard lock(mutex_);
  while (!in_flight_.empty() && !executing())
    end_front(std::nullopt);
}

void RunPipeline::poll() {
  if (SubWorkerPool::on_sub_worker()) return;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (lock.owns_lock() && !in_body_) poll_locked();
}

void RunPipeline::poll_locked() {
  while (!in_flight_.empty() && scheduler_.front_run_idle() &&
         end_front(std::chrono::steady_clock::now())) {
  }
}

bool RunPipeline::end_front(std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::string error;
  if (!scheduler_.end_front_run(error, deadline)) return false;
  const auto run = in_flight_.front();
  in_flight_.pop_front();
  if (!error.empty()) run->error = std::make_exception_ptr(RemoteFailure(error));
  run->ended = true;
  return true;
}

}  // namespace rankflow::runtime

namespace rankflow {

uint64_t RunHandle::number() const {
  return record_ ? record_->number : 0;
}

bool RunHandle::done() const {
  if (!record_) return false;
  if (!record_->ended.load()) {  // a run whose tasks are all done ends here
    if (const auto pipeline = record_->pipeline.lock()) pipeline->poll();
  }
  return record_->ended.load();
}

void RunHandle::wait() const {
  wait_for(std::nullopt);
}

void RunHandle::wait(std::chrono::nanoseconds timeout) const {
  if (timeout < std::chrono::nanoseconds::zero()) {
    throw InvalidArgument("RunHandle::wait: a negative timeout (" +
                          transport::format_seconds(timeout) + ")");
  }
  wait_for(timeout);
}

void RunHandle::wait_for(std::optional<std::chrono::nanoseconds> timeout) const {
  if (runtime::SubWorkerPool::on_sub_worker()) {
    throw InvalidState("RunHandle::wait: called from a task; wait from the program's own thread");
  }
  if (!record_) throw InvalidState("RunHandle::wait on an empty handle");
  if (!record_->ended) {
    const auto pipeline = record_->pipeline.lock();
    if (!pipeline) throw InvalidState("RunHandle::wait: the worker that ran the run is closed");
    pipeline->wait(*record_, timeout);
  }
  if (record_->error) std::rethrow_exception(record_->error);
}

}  // namespace rankflow
