// Scheduler (see scheduler.h). submit() runs on the main thread, loop() on the scheduler thread,
// sub_worker() on each sub-worker thread; all graph state is under mutex_.
#include "runtime/scheduler.h"

#include <algorithm>
#include <cstring>

#include "rankflow/error.h"
#include "runtime/worker_impl.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

bool terminal(TaskStatus s) {
  return s == TaskStatus::kSucceeded || s == TaskStatus::kFailed || s == TaskStatus::kSkipped;
}

bool reads(Access a) {
  return a == Access::kInput || a == Access::kInOut;
}
bool writes(Access a) {
  return a == Access::kOutput || a == Access::kInOut || a == Access::kOutputExisting;
}

}  // namespace

Scheduler::Scheduler(WorkerImpl& worker) : worker_(worker), chips_(worker.chips()) {
  arena_offset_ = worker_.team().offset("arena");
  arena_ = worker_.team().local_ptr(arena_offset_);
  chip_ready_.resize(chips_);
  in_flight_.assign(chips_, std::vector<std::shared_ptr<TaskState>>(kRingSlots));
  posted_.assign(chips_, 0);
  completed_.assign(chips_, 0);
  outbox_.assign(chips_, std::vector<TaskDesc>(kRingSlots));
  for (int i = 0; i < worker_.options().num_sub_workers; ++i) {
    subs_.emplace_back([this] { sub_worker(); });
  }
}

Scheduler::~Scheduler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  stop_subs_ = true;
  sub_ready_cv_.notify_all();
  for (std::thread& t : subs_)
    t.join();
}

void Scheduler::begin_run() {
  std::lock_guard lock(mutex_);
  arena_used_ = 0;
  tracker_.clear();
  live_.clear();
  first_error_.clear();
  outstanding_ = 0;
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

Tensor Scheduler::host_tensor(std::vector<size_t> shape, DType dtype) {
  if (shape.empty() || shape.size() > kMaxDims) {
    throw InvalidArgument("host_tensor: shape needs 1 to " + std::to_string(kMaxDims) +
                          " dimensions, got " + std::to_string(shape.size()));
  }
  size_t elements = 1;
  for (size_t d : shape)
    elements *= d;
  const size_t bytes = elements * dtype_size(dtype);
  const size_t start = (arena_used_ + 63) / 64 * 64;
  const size_t limit = worker_.options().host_arena_bytes;
  if (start + bytes > limit) {
    throw InvalidArgument("host_tensor: " + std::to_string(bytes) + " bytes do not fit in the " +
                          "host arena (" + std::to_string(limit - std::min(start, limit)) + " of " +
                          std::to_string(limit) +
                          " bytes left; raise WorkerOptions::host_arena_bytes)");
  }
  arena_used_ = start + bytes;
  Tensor t;
  t.buffer_ = next_buffer_++;
  t.offset_ = start;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.data_ = arena_ + start;
  std::memset(t.data_, 0, bytes);
  return t;
}

std::vector<ByteUse> Scheduler::uses_of(const std::vector<TensorArg>& args,
                                        const std::string& name) const {
  std::vector<ByteUse> uses;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i].tensor;
    if (t.data_ == nullptr || t.offset_ + t.bytes() > arena_used_) {
      throw InvalidArgument("task '" + name + "': argument " + std::to_string(i) +
                            " is not a tensor of this run (create it with host_tensor)");
    }
    if (args[i].access == Access::kNoDep) continue;
    uses.push_back({t.buffer_, t.offset_, t.offset_ + t.bytes(), reads(args[i].access),
                    writes(args[i].access)});
  }
  check_task_uses(uses, name.c_str());
  return uses;
}

std::shared_ptr<TaskState> Scheduler::submit(bool sub, uint32_t fn, std::vector<TensorArg> args,
                                             int worker, const std::vector<uint64_t>& after) {
  const std::string& name = sub ? worker_.sub(fn).name : worker_.kernel(fn).name;
  if (args.size() > kMaxArgs) {
    throw InvalidArgument("task '" + name + "': " + std::to_string(args.size()) +
                          " arguments, at most " + std::to_string(kMaxArgs));
  }
  if (!sub && (worker < 0 || worker >= chips_)) {
    throw InvalidArgument("task '" + name + "': worker " + std::to_string(worker) +
                          " does not exist; chip workers are 0.." + std::to_string(chips_ - 1));
  }
  const std::vector<ByteUse> uses = uses_of(args, name);
  auto task = std::make_shared<TaskState>();
  task->sub = sub;
  task->fn = fn;
  task->worker = worker;
  task->name = name;
  task->args = std::move(args);

  std::lock_guard lock(mutex_);
  if (!first_error_.empty()) throw RemoteFailure("this run already failed: " + first_error_);
  task->id = next_task_++;
  std::vector<uint64_t> before = tracker_.add(task->id, uses);
  for (uint64_t id : after) {
    if (id == 0 || id >= task->id) {
      throw InvalidArgument("task '" + name + "': after={" + std::to_string(id) +
                            "} is not an earlier task of this run");
    }
    before.push_back(id);
  }
  ++outstanding_;
  for (uint64_t id : before) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;  // finished already (successfully: failures skip below)
    it->second->dependents.push_back(task);
    ++task->pending;
  }
  live_[task->id] = task;
  if (task->pending == 0) make_ready(task);
  return task;
}

void Scheduler::make_ready(const std::shared_ptr<TaskState>& task) {
  task->status = TaskStatus::kReady;
  if (task->sub) {
    sub_ready_.push_back(task);
    sub_ready_cv_.notify_one();
  } else {
    chip_ready_[task->worker].push_back(task);
  }
}

void Scheduler::finish(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error) {
  std::lock_guard lock(mutex_);
  tracker_.finished(task->id);
  live_.erase(task->id);
  --outstanding_;
  progress_marker_.fetch_add(1);
  if (!ok) {
    task->error = error;
    task->status = TaskStatus::kFailed;
    if (first_error_.empty()) first_error_ = error;
    skip_dependents(task, "task " + std::to_string(task->id) + " ('" + task->name + "') failed");
    return;
  }
  task->status = TaskStatus::kSucceeded;
  for (const auto& next : task->dependents) {
    if (next->status == TaskStatus::kWaiting && --next->pending == 0) make_ready(next);
  }
}

// Consumers of a failed task never run (mutex_ held).
void Scheduler::skip_dependents(const std::shared_ptr<TaskState>& task, const std::string& why) {
  for (const auto& next : task->dependents) {
    if (terminal(next->status)) continue;
    next->error = "skipped: " + why;
    next->status = TaskStatus::kSkipped;
    tracker_.finished(next->id);
    live_.erase(next->id);
    --outstanding_;
    skip_dependents(next, why);
  }
}

void Scheduler::loop() {
  transport::Backoff backoff;
  while (!stop_) {
    worker_.team().progress();
    const bool worked = dispatch() | collect();
    if (worked) {
      backoff = transport::Backoff();
    } else {
      backoff.pause();
    }
  }
}

bool Scheduler::dispatch() {
  std::vector<std::pair<std::shared_ptr<TaskState>, uint64_t>> to_post;
  {
    std::lock_guard lock(mutex_);
    for (int c = 0; c < chips_; ++c) {
      while (!chip_ready_[c].empty() && posted_[c] - completed_[c] < kRingSlots) {
        auto task = chip_ready_[c].front();
        chip_ready_[c].pop_front();
        task->status = TaskStatus::kRunning;
        const uint64_t slot = posted_[c]++ % kRingSlots;
        in_flight_[c][slot] = task;
        to_post.emplace_back(std::move(task), slot);
      }
    }
  }
  for (const auto& [task, slot] : to_post)
    post(*task, slot);
  return !to_post.empty();
}

void Scheduler::post(const TaskState& task, uint64_t slot) {
  const int chip = task.worker;
  TaskDesc& desc = outbox_[chip][slot];
  desc = TaskDesc{};
  desc.kind = DescKind::kTask;
  desc.kernel = task.fn;
  desc.task_id = task.id;
  desc.nargs = static_cast<uint32_t>(task.args.size());
  for (size_t i = 0; i < task.args.size(); ++i) {
    const Tensor& t = task.args[i].tensor;
    ArgDesc& a = desc.args[i];
    a.offset = t.offset_;
    a.bytes = t.bytes();
    a.access = static_cast<uint32_t>(task.args[i].access);
    a.ndim = static_cast<uint32_t>(t.shape().size());
    for (size_t d = 0; d < t.shape().size(); ++d)
      a.shape[d] = t.shape()[d];
  }
  Team& team = worker_.team();
  team.put(chip + 1, team.offset("ring") + slot * kDescStride, &desc, sizeof(desc));
  team.signal(chip + 1, kPostedSignal);
}

bool Scheduler::collect() {
  Team& team = worker_.team();
  bool any = false;
  for (int c = 0; c < chips_; ++c) {
    const uint64_t arrived = team.signal_value(kDoneSignalBase + static_cast<uint32_t>(c));
    while (completed_[c] < arrived) {
      const uint64_t slot = completed_[c] % kRingSlots;
      Completion record;
      std::memcpy(
          &record,
          team.local_ptr(team.offset("completions") + (c * kRingSlots + slot) * kCompletionStride),
          sizeof(record));
      std::shared_ptr<TaskState> task;
      {
        std::lock_guard lock(mutex_);
        task = std::move(in_flight_[c][slot]);
        ++completed_[c];
      }
      any = true;
      if (!task) continue;  // the acknowledgement of an end-of-run marker
      record.message[kMessageBytes - 1] = '\0';
      finish(task, record.ok != 0, record.message);
    }
  }
  return any;
}

void Scheduler::sub_worker() {
  for (;;) {
    std::shared_ptr<TaskState> task;
    {
      std::unique_lock lock(mutex_);
      sub_ready_cv_.wait(lock, [this] { return stop_subs_ || !sub_ready_.empty(); });
      if (stop_subs_) return;
      task = sub_ready_.front();
      sub_ready_.pop_front();
      task->status = TaskStatus::kRunning;
    }
    std::vector<TaskContext::Arg> args;
    for (const TensorArg& a : task->args) {
      args.push_back({a.tensor.data_, a.tensor.bytes(), a.tensor.shape(), a.access});
    }
    TaskContext context(-1, task->id, std::move(args));
    try {
      worker_.sub(task->fn).fn(context);
      finish(task, true, {});
    } catch (const std::exception& e) {
      finish(task, false, "host sub-worker, sub '" + task->name + "': " + e.what());
    } catch (...) {
      finish(task, false, "host sub-worker, sub '" + task->name + "': unknown exception");
    }
  }
}

void Scheduler::wait_for_drain() {
  const auto limit = worker_.timeout();
  uint64_t seen = progress_marker_.load();
  auto last_progress = std::chrono::steady_clock::now();
  transport::Backoff backoff;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (outstanding_ == 0) return;
    }
    if (progress_marker_.load() != seen) {
      seen = progress_marker_.load();
      last_progress = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_progress > limit) {
      std::lock_guard lock(mutex_);
      std::string stuck;
      for (int c = 0; c < chips_ && stuck.empty(); ++c) {
        if (posted_[c] > completed_[c]) {
          const auto& t = in_flight_[c][completed_[c] % kRingSlots];
          stuck = "task " + std::to_string(t->id) + " ('" + t->name + "') on chip worker " +
                  std::to_string(c) + " (rank " + std::to_string(c + 1) + ")";
        }
      }
      throw Timeout("run: rank 0 (host) saw no task finish for " +
                    transport::format_seconds(limit) + "; " + std::to_string(outstanding_) +
                    " tasks outstanding" + (stuck.empty() ? "" : ", oldest in flight: " + stuck));
    }
    backoff.pause();
  }
}

// The marker takes a ring slot like a task and is acknowledged like one; the next run's
// collect() skips its acknowledgement. The host waits for ring space first (a chip still
// acknowledging earlier markers of back-to-back runs).
void Scheduler::post_end_of_run(int chip) {
  Team& team = worker_.team();
  team.wait_until(
      [&] {
        collect();
        return posted_[chip] - completed_[chip] < kRingSlots;
      },
      [&] {
        return "end of run: chip worker " + std::to_string(chip) +
               " has not acknowledged earlier descriptors";
      });
  const uint64_t slot = posted_[chip]++ % kRingSlots;
  in_flight_[chip][slot] = nullptr;
  TaskDesc& desc = outbox_[chip][slot];
  desc = TaskDesc{};
  desc.kind = DescKind::kEndRun;
  team.put(chip + 1, team.offset("ring") + slot * kDescStride, &desc, sizeof(desc));
  team.signal(chip + 1, kPostedSignal);
}

void Scheduler::end_run() {
  std::exception_ptr drain_error;
  try {
    wait_for_drain();
  } catch (...) {
    drain_error = std::current_exception();
  }
  stop_ = true;
  thread_.join();
  for (int c = 0; c < chips_; ++c)
    post_end_of_run(c);
  worker_.team().flush();
  if (drain_error) std::rethrow_exception(drain_error);
  std::lock_guard lock(mutex_);
  if (!first_error_.empty()) throw RemoteFailure(first_error_);
}

}  // namespace rankflow::runtime
