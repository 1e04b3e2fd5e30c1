// The public faces of a run: TaskContext (what a kernel sees, on the thread that runs it),
// TaskHandle and Orchestrator (the body's, on the host's main thread), forwarding to the
// host's scheduler through OrchestratorBackend.
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "runtime/dispatcher.h"
#include "runtime/orchestrator_backend.h"
#include "runtime/task.h"
#include "transport/progress.h"

namespace rankflow {

std::byte* TaskContext::scratch(size_t bytes) {
  if (scratch_.size() < config_.scratch_bytes) scratch_.resize(config_.scratch_bytes);
  const size_t start = (scratch_used_ + 63) / 64 * 64;
  if (start + bytes > scratch_.size()) {
    throw InvalidArgument("task " + std::to_string(where_.task_id) + ": scratch arena of " +
                          std::to_string(scratch_.size()) + " bytes cannot give " +
                          std::to_string(bytes) + " more (" + std::to_string(start) +
                          " in use); raise CallConfig::scratch_bytes");
  }
  scratch_used_ = start + bytes;
  return scratch_.data() + start;
}

const TaskContext::Arg& TaskContext::arg(size_t i) const {
  if (i >= args_.size()) {
    throw InvalidArgument("task argument " + std::to_string(i) + " does not exist; the task has " +
                          std::to_string(args_.size()) + " tensor and domain arguments");
  }
  return args_[i];
}

uint64_t TaskContext::scalar_bits(size_t i, size_t bytes) const {
  if (bytes > sizeof(uint64_t)) {
    throw InvalidArgument("TaskContext::scalar: a type of " + std::to_string(bytes) +
                          " bytes; scalars carry at most 8");
  }
  if (i >= scalars_.size()) {
    throw InvalidArgument("task scalar " + std::to_string(i) + " does not exist; the task has " +
                          std::to_string(scalars_.size()) + " scalars");
  }
  return scalars_[i];
}

DomainContext& TaskContext::domain(size_t i) const {
  const Arg& a = arg(i);
  if (a.domain == nullptr) {
    throw InvalidArgument("task argument " + std::to_string(i) +
                          " is not a domain (pass one with rankflow::domain_arg)");
  }
  return *a.domain;
}

const TaskContext::Arg& TaskContext::contiguous_arg(size_t i) const {
  const Arg& a = arg(i);
  if (!is_contiguous(a.shape, a.strides)) {
    throw InvalidArgument("task argument " + std::to_string(i) +
                          " is a strided view; read it with TaskContext::view<T>(" +
                          std::to_string(i) + ")");
  }
  return a;
}

uint64_t TaskHandle::id() const {
  return state_ ? state_->id : 0;
}

std::vector<uint64_t> TaskHandle::depends_on() const {
  return state_ ? state_->deps : std::vector<uint64_t>{};
}

bool TaskHandle::done() const {
  return state_ && runtime::terminal(state_->status.load());
}

// Drives the run on the calling thread while it waits (see dispatcher.h).
void TaskHandle::wait() const {
  if (!state_) throw InvalidState("TaskHandle::wait on an empty handle");
  if (!done()) {
    const auto driver = state_->driver.lock();
    if (!driver) throw InvalidState("TaskHandle::wait: the worker that ran the task is closed");
    driver->before_wait(state_->id);  // its run executes first, if earlier ones are in flight
    driver->wait_while_progressing([&] { return done(); },
                                   [&] {
                                     return "TaskHandle::wait for task " +
                                            std::to_string(state_->id) + " ('" +
                                            std::string(state_->name) + "')";
                                   });
  }
  if (state_->status != runtime::TaskStatus::kSucceeded) throw RemoteFailure(state_->error);
}

void TaskHandle::wait(std::chrono::nanoseconds timeout) const {
  if (!state_) throw InvalidState("TaskHandle::wait on an empty handle");
  if (!done()) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool finished = false;
    if (const auto driver = state_->driver.lock()) {
      driver->before_wait(state_->id);
      finished = driver->wait_until([&] { return done(); }, deadline);
    } else {  // the worker is gone: nothing will finish it, but do not crash
      transport::Backoff backoff;
      while (!done() && std::chrono::steady_clock::now() < deadline)
        backoff.pause();
      finished = done();
    }
    if (!finished) {
      throw Timeout("task " + std::to_string(state_->id) + " ('" + std::string(state_->name) +
                    "') did not finish within " + transport::format_seconds(timeout));
    }
  }
  if (state_->status != runtime::TaskStatus::kSucceeded) throw RemoteFailure(state_->error);
}

Tensor Orchestrator::host_tensor(std::vector<size_t> shape, DType dtype) {
  return backend_.host_tensor(std::move(shape), dtype);
}

Tensor Orchestrator::alloc(std::vector<size_t> shape, DType dtype) {
  return backend_.alloc(std::move(shape), dtype);
}

Domain Orchestrator::allocate_domain(std::string name, std::vector<int> workers,
                                     size_t window_bytes, std::vector<BufferSpec> buffers) {
  return backend_.allocate_domain(std::move(name), std::move(workers), window_bytes,
                                  std::move(buffers));
}

TaskHandle Orchestrator::submit(KernelHandle kernel, const std::vector<TaskArg>& args, int worker,
                                std::vector<uint64_t> after, CallConfig config) {
  return detail::OrchestratorBackend::handle(
      backend_.submit_one(false, kernel.index, args, worker, after, config));
}

TaskHandle Orchestrator::submit(KernelHandle kernel, std::initializer_list<TaskArg> args,
                                int worker, std::vector<uint64_t> after, CallConfig config) {
  return detail::OrchestratorBackend::handle(backend_.submit_one(
      false, kernel.index, std::span(args.begin(), args.size()), worker, after, config));
}

TaskHandle Orchestrator::submit_group(KernelHandle kernel,
                                      std::vector<std::vector<TaskArg>> args_per_member,
                                      std::vector<int> workers, std::vector<uint64_t> after,
                                      CallConfig config) {
  return detail::OrchestratorBackend::handle(
      backend_.submit(false, kernel.index, std::move(args_per_member), std::move(workers),
                      std::move(after), config));
}

TaskHandle Orchestrator::submit_sub(SubHandle sub, const std::vector<TaskArg>& args,
                                    std::vector<uint64_t> after) {
  return detail::OrchestratorBackend::handle(
      backend_.submit_one(true, sub.index, args, -1, after, {}));
}

TaskHandle Orchestrator::submit_sub(SubHandle sub, std::initializer_list<TaskArg> args,
                                    std::vector<uint64_t> after) {
  return detail::OrchestratorBackend::handle(
      backend_.submit_one(true, sub.index, std::span(args.begin(), args.size()), -1, after, {}));
}

TaskHandle Orchestrator::submit_sub_group(SubHandle sub,
                                          std::vector<std::vector<TaskArg>> args_per_member,
                                          std::vector<uint64_t> after) {
  return detail::OrchestratorBackend::handle(
      backend_.submit(true, sub.index, std::move(args_per_member), {}, std::move(after), {}));
}

void Orchestrator::scope_begin() {
  backend_.scope_begin();
}

uint64_t Orchestrator::open_scope() {
  return backend_.scope_begin();
}

void Orchestrator::close_scope(uint64_t token) noexcept {
  try {
    backend_.scope_end(token);
  } catch (...) {  // (a destructor's end: nothing to report it to)
  }
}

void Orchestrator::scope_end() {
  backend_.scope_end();
}

int Orchestrator::chips() const {
  return backend_.chips();
}

void Orchestrator::dump_dot(const std::string& path) const {
  backend_.dump_dot(path);
}

Tensor Orchestrator::alloc_child_tensor(int worker, std::vector<size_t> shape, DType dtype) {
  return backend_.alloc_child(worker, std::move(shape), dtype);
}

TaskHandle Orchestrator::copy_to(const Tensor& child_dst, const Tensor& host_src) {
  if (child_dst.home() < 0) throw InvalidArgument("copy_to: the destination is not child memory");
  return detail::OrchestratorBackend::handle(backend_.copy(child_dst, host_src, "copy_to"));
}

TaskHandle Orchestrator::copy_from(const Tensor& host_dst, const Tensor& child_src) {
  if (child_src.home() < 0) throw InvalidArgument("copy_from: the source is not child memory");
  return detail::OrchestratorBackend::handle(backend_.copy(host_dst, child_src, "copy_from"));
}

void Orchestrator::free_child(const Tensor& base) {
  backend_.free_child(base);
}

}  // namespace rankflow
