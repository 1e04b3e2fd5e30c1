// Scheduler (see scheduler.h). submit() runs on the main thread, loop() on the scheduler thread,
// sub_worker() on each sub-worker thread. The graph (live tasks, ready queues, the dependency
// tracker, in_flight_, completed_ counts, run state) is under mutex_. The descriptor outbox and
// the posts to the chips' rings (post(), the ring reads in collect()) run on the scheduler
// thread alone, outside the lock; progress_marker_ is atomic.
#include "runtime/scheduler.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "common/env.h"
#include "rankflow/error.h"
#include "runtime/worker_impl.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

// How long the scheduler thread and the host's main thread yield before they sleep.
constexpr std::chrono::microseconds kStayAwake{200};
// While a run is open the host tells every chip it is alive this often, so chips waiting for
// the next task restart their RANKFLOW_TIMEOUT_S deadline instead of giving up on a long body.
constexpr std::chrono::milliseconds kHeartbeatEvery{250};

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool terminal(TaskStatus s) {
  return s == TaskStatus::kSucceeded || s == TaskStatus::kFailed || s == TaskStatus::kSkipped;
}

}  // namespace

Scheduler::Scheduler(WorkerImpl& worker) : worker_(worker), chips_(worker.chips()) {
  arena_ = worker_.team().local_ptr(worker_.team().offset("arena"));
  host_arena_ = RangeAllocator(worker_.options().host_arena_bytes);
  chip_ready_.resize(chips_);
  in_flight_.assign(chips_, std::vector<std::shared_ptr<TaskState>>(kRingSlots));
  posted_.assign(chips_, 0);
  completed_.assign(chips_, 0);
  outbox_.assign(chips_, std::vector<TaskDesc>(kRingSlots));
  child_arenas_.assign(chips_, RangeAllocator(worker_.options().child_arena_bytes));
  for (int i = 0; i < worker_.options().num_sub_workers; ++i) {
    subs_.emplace_back([this, i] { sub_worker(i); });
  }
  if (auto path = env::get("RANKFLOW_TRACE")) trace_path_ = *path;
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    shutdown_ = true;
  }
  wake_.notify_all();
  sub_ready_cv_.notify_all();
  thread_.join();
  for (std::thread& t : subs_)
    t.join();
}

void Scheduler::begin_run() {
  std::lock_guard lock(mutex_);
  ++run_number_;
  tracker_.clear();
  live_.clear();
  first_error_.clear();
  outstanding_ = 0;
  ending_ = false;
  ended_ = false;
  run_open_ = true;
  last_beat_ = std::chrono::steady_clock::now();
  run_tasks_.clear();
  submitted_this_run_ = false;
  wake_.notify_one();
}

const std::string& Scheduler::name_of(bool sub, uint32_t fn) const {
  static const std::string copy_name = "copy";
  static const std::string domain_name = "allocate_domain";
  if (!sub && fn == kCopyKernel) return copy_name;
  if (!sub && fn == kCreateDomainKernel) return domain_name;
  if (fn >= (sub ? worker_.sub_count() : worker_.kernel_count())) {
    throw InvalidArgument(std::string(sub ? "submit_sub" : "submit") + ": handle " +
                          std::to_string(fn) + " is not a registered " +
                          (sub ? "sub callable" : "kernel") + " (use the handle " +
                          (sub ? "register_sub" : "register_kernel") + " returned)");
  }
  return sub ? worker_.sub(fn).name : worker_.kernel(fn).name;
}

namespace {

void check_config(const CallConfig& config, const std::string& name) {
  if (config.threads < 1 || config.threads > 256) {
    throw InvalidArgument("task '" + name + "': CallConfig::threads is " +
                          std::to_string(config.threads) + "; it must be 1..256");
  }
  if (config.scratch_bytes > (size_t{1} << 30)) {
    throw InvalidArgument("task '" + name + "': CallConfig::scratch_bytes " +
                          std::to_string(config.scratch_bytes) + " exceeds 1 GiB");
  }
}

}  // namespace

std::shared_ptr<TaskState> Scheduler::submit(bool sub, uint32_t fn,
                                             std::vector<std::vector<TensorArg>> member_args,
                                             std::vector<int> workers, std::vector<uint64_t> after,
                                             CallConfig config,
                                             std::shared_ptr<const DomainDesc> domain_setup) {
  const std::string& name = name_of(sub, fn);
  check_config(config, name);
  if (!sub && (workers.empty() || workers.size() != member_args.size())) {
    throw InvalidArgument("task '" + name + "': " + std::to_string(workers.size()) +
                          " workers for " + std::to_string(member_args.size()) +
                          " argument lists; a group needs one of each per member");
  }
  std::vector<ByteUse> uses;
  for (size_t m = 0; m < member_args.size(); ++m) {
    if (member_args[m].size() > kMaxArgs) {
      throw InvalidArgument("task '" + name + "': " + std::to_string(member_args[m].size()) +
                            " arguments, at most " + std::to_string(kMaxArgs));
    }
    const int worker = sub ? -1 : workers.at(m);
    const auto member_uses = uses_of(member_args[m], name, worker);
    uses.insert(uses.end(), member_uses.begin(), member_uses.end());
  }
  if (member_args.size() > 1) check_task_uses(uses, name.c_str());
  for (size_t m = 0; m < workers.size(); ++m) {
    if (workers[m] < 0 || workers[m] >= chips_) {
      throw InvalidArgument("task '" + name + "': worker " + std::to_string(workers[m]) +
                            " does not exist; chip workers are 0.." + std::to_string(chips_ - 1));
    }
    for (size_t k = 0; k < m; ++k) {
      if (workers[k] == workers[m]) {
        throw InvalidArgument("group '" + name + "': worker " + std::to_string(workers[m]) +
                              " appears twice; members run on distinct workers");
      }
    }
  }
  auto task = std::make_shared<TaskState>();
  task->sub = sub;
  task->fn = fn;
  task->workers = std::move(workers);
  task->member_args = std::move(member_args);
  task->config = config;
  task->name = name;
  task->domain_setup = std::move(domain_setup);

  std::lock_guard lock(mutex_);
  if (!first_error_.empty()) throw RemoteFailure("this run already failed: " + first_error_);
  for (size_t m = 0; m < task->member_args.size(); ++m)
    check_domain_args(task->member_args[m], name, sub ? -1 : task->workers[m], after);
  if (!task->domain_setup) submitted_this_run_ = true;
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
  std::sort(before.begin(), before.end());
  before.erase(std::unique(before.begin(), before.end()), before.end());
  task->deps = before;
  run_tasks_.push_back(task);
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
  task->ready_sequence = ++ready_counter_;
  if (task->sub) {
    sub_ready_.push_back(task);
    sub_ready_cv_.notify_one();
  } else if (task->workers.size() == 1) {
    chip_ready_[task->workers[0]].push_back(task);
    wake_.notify_one();
  } else {
    group_ready_.push_back(task);
    wake_.notify_one();
  }
}

void Scheduler::finish(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error) {
  std::lock_guard lock(mutex_);
  live_.erase(task->id);
  task->member_args.clear();  // lets go of alloc tensors this task was the last user of
  --outstanding_;
  progress_marker_.fetch_add(1);
  if (outstanding_ == 0) wake_.notify_one();  // the run may be ending
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
    live_.erase(next->id);
    next->member_args.clear();
    --outstanding_;
    skip_dependents(next, why);
  }
}

// Sleeps on wake_ while there is nothing to post and nothing in flight; otherwise polls
// completions, backing off. Ends the run on every chip once the host asked and the run drained.
void Scheduler::loop() {
  transport::Backoff backoff;
  for (;;) {
    bool end_now = false;
    bool beat_now = false;
    {
      std::unique_lock lock(mutex_);
      auto busy = [&] {
        if (shutdown_ || (ending_ && !ended_ && outstanding_ == 0)) return true;
        for (int c = 0; c < chips_; ++c) {
          if (!chip_ready_[c].empty() || posted_[c] != completed_[c]) return true;
        }
        return !group_ready_.empty();
      };
      if (!busy()) {
        // Stay awake, yielding, for a short while before parking: the next submit of a run
        // usually follows within microseconds, and a futex wake-up costs more than that.
        const auto until = std::chrono::steady_clock::now() + kStayAwake;
        while (!busy() && std::chrono::steady_clock::now() < until) {
          lock.unlock();
          sched_yield();
          lock.lock();
        }
        wake_.wait_for(lock, kHeartbeatEvery, busy);
        backoff = transport::Backoff();
      }
      if (shutdown_) return;
      end_now = ending_ && !ended_ && outstanding_ == 0;
      const auto now = std::chrono::steady_clock::now();
      beat_now = run_open_ && now - last_beat_ >= kHeartbeatEvery;
      if (beat_now) last_beat_ = now;
    }
    if (beat_now) {
      for (int c = 0; c < chips_; ++c)
        worker_.team().signal(c + 1, kHeartbeatSignal);
    }
    if (end_now) {
      for (int c = 0; c < chips_; ++c)
        post_end_of_run(c);
      worker_.team().flush();
      std::lock_guard lock(mutex_);
      ended_ = true;
      run_open_ = false;
      host_cv_.notify_all();
      continue;
    }
    worker_.team().progress();
    const bool worked = dispatch() | collect();
    if (worked) {
      backoff = transport::Backoff();
    } else {
      backoff.pause();
    }
  }
}

// Posts ready work in the order it became ready. Each chip runs its single tasks FIFO. The group
// at the head of the group queue reserves its workers: single tasks that became ready after it
// wait, and it launches, all members at once, as soon as every one of its workers is idle.
bool Scheduler::dispatch() {
  std::vector<std::tuple<std::shared_ptr<TaskState>, size_t, uint64_t>> to_post;
  {
    std::lock_guard lock(mutex_);
    launch_groups(to_post);
    // The group now at the head reserves its workers: singles that became ready after it wait.
    std::vector<uint64_t> hold_from(chips_, UINT64_MAX);
    if (!group_ready_.empty()) {
      for (int w : group_ready_.front()->workers)
        hold_from[w] = group_ready_.front()->ready_sequence;
    }
    for (int c = 0; c < chips_; ++c) {
      while (!chip_ready_[c].empty() && chip_ready_[c].front()->ready_sequence < hold_from[c] &&
             posted_[c] - completed_[c] < kRingSlots) {
        auto task = chip_ready_[c].front();
        chip_ready_[c].pop_front();
        task->status = TaskStatus::kRunning;
        const uint64_t slot = posted_[c]++ % kRingSlots;
        in_flight_[c][slot] = task;
        to_post.emplace_back(std::move(task), 0, slot);
      }
    }
  }
  for (const auto& [task, member, slot] : to_post)
    post(*task, member, slot);
  return !to_post.empty();
}

// Launches the group at the head of the group queue, all members at once, when every one of its
// workers is idle with no single task queued that became ready before the group; then the next
// group is the head (mutex_ held).
void Scheduler::launch_groups(
    std::vector<std::tuple<std::shared_ptr<TaskState>, size_t, uint64_t>>& out) {
  while (!group_ready_.empty()) {
    const auto group = group_ready_.front();
    for (int w : group->workers) {
      const bool earlier_queued =
          !chip_ready_[w].empty() && chip_ready_[w].front()->ready_sequence < group->ready_sequence;
      if (posted_[w] != completed_[w] || earlier_queued) return;
    }
    group_ready_.pop_front();
    group->status = TaskStatus::kRunning;
    for (size_t m = 0; m < group->workers.size(); ++m) {
      const int c = group->workers[m];
      const uint64_t slot = posted_[c]++ % kRingSlots;
      in_flight_[c][slot] = group;
      out.emplace_back(group, m, slot);
    }
  }
}

void Scheduler::post(const TaskState& task, size_t member, uint64_t slot) {
  const int chip = task.workers[member];
  const std::vector<TensorArg>& args = task.member_args[member];
  TaskDesc& desc = outbox_[chip][slot];
  desc = TaskDesc{};
  desc.kind = DescKind::kTask;
  desc.kernel = task.fn;
  desc.task_id = task.id;
  desc.nargs = static_cast<uint32_t>(args.size());
  desc.group_rank = static_cast<uint32_t>(member);
  desc.group_size = static_cast<uint32_t>(task.workers.size());
  desc.threads = static_cast<uint32_t>(task.config.threads);
  desc.scratch_bytes = task.config.scratch_bytes;
  if (task.domain_setup) {
    std::memcpy(static_cast<void*>(desc.args), task.domain_setup.get(), sizeof(DomainDesc));
    desc.payload_bytes = sizeof(DomainDesc);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i].tensor;
    ArgDesc& a = desc.args[i];
    a.offset = t.offset_;
    a.bytes = t.bytes();
    a.extent = t.extent_bytes();
    a.access = static_cast<uint32_t>(args[i].access);
    a.ndim = static_cast<uint32_t>(t.shape().size());
    for (size_t d = 0; d < t.shape().size(); ++d) {
      a.shape[d] = t.shape()[d];
      a.strides[d] = t.strides()[d];
    }
    a.space = args[i].domain ? kDomainSpace : t.home_ >= 0 ? kChildSpace : kHostSpace;
    if (args[i].domain) a.offset = args[i].domain->id;
    a.element_bytes = static_cast<uint32_t>(dtype_size(t.dtype()));
  }
  Team& team = worker_.team();
  team.put(chip + 1, team.offset("ring") + slot * kDescStride, &desc, used_bytes(desc));
  team.signal(chip + 1, kPostedSignal);
}

// A group finishes when its last member does, failed if any member failed.
void Scheduler::member_done(const std::shared_ptr<TaskState>& task, bool ok,
                            const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    ++task->members_done;
    if (!ok && task->members_ok) {
      task->members_ok = false;
      task->member_error = error;
    }
    if (task->members_done < static_cast<int>(task->workers.size())) return;
  }
  finish(task, task->members_ok, task->member_error);
}

bool Scheduler::collect() {
  Team& team = worker_.team();
  bool any = false;
  for (int c = 0; c < chips_; ++c) {
    const uint64_t arrived = team.signal_value(kDoneSignalBase + static_cast<uint32_t>(c));
    while (completed_[c] < arrived) {
      const uint64_t slot = completed_[c] % kRingSlots;
      Completion record;
      const std::byte* arrived_record =
          team.local_ptr(team.offset("completions") + (c * kRingSlots + slot) * kCompletionStride);
      std::memcpy(&record, arrived_record, offsetof(Completion, message));
      if (!record.ok) {
        std::memcpy(record.message, arrived_record + offsetof(Completion, message), kMessageBytes);
      }
      std::shared_ptr<TaskState> task;
      {
        std::lock_guard lock(mutex_);
        task = std::move(in_flight_[c][slot]);
        ++completed_[c];
      }
      any = true;
      if (!task) continue;  // the acknowledgement of an end-of-run marker
      record.message[kMessageBytes - 1] = '\0';
      record_span(*task, c, record.start_ns, record.end_ns, record.ok != 0);
      member_done(task, record.ok != 0, record.message);
    }
  }
  return any;
}

void Scheduler::sub_worker(int index) {
  for (;;) {
    std::shared_ptr<TaskState> task;
    {
      std::unique_lock lock(mutex_);
      sub_ready_cv_.wait(lock, [this] { return shutdown_ || !sub_ready_.empty(); });
      if (shutdown_) return;
      task = sub_ready_.front();
      sub_ready_.pop_front();
      task->status = TaskStatus::kRunning;
    }
    std::vector<TaskContext::Arg> args;
    for (const TensorArg& a : task->member_args[0]) {
      args.push_back(
          {a.tensor.data_, a.tensor.bytes(), a.tensor.shape(), a.access, a.tensor.strides()});
    }
    TaskContext context(-1, task->id, std::move(args), 0, 1, task->config);
    const uint64_t start = now_ns();
    bool ok = true;
    std::string error;
    try {
      worker_.sub(task->fn).fn(context);
    } catch (const std::exception& e) {
      ok = false;
      error = "host sub-worker, sub '" + task->name + "': " + e.what();
    } catch (...) {
      ok = false;
      error = "host sub-worker, sub '" + task->name + "': unknown exception";
    }
    record_span(*task, -1 - index, start, now_ns(), ok);
    finish(task, ok, error);
  }
}

// The host's main thread: sleeps until the scheduler thread has drained the run and ended it
// on every chip. Times out when no task finishes for RANKFLOW_TIMEOUT_S.
void Scheduler::wait_for_drain() {
  const auto limit = worker_.timeout();
  uint64_t seen = progress_marker_.load();
  auto last_progress = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  ending_ = true;
  wake_.notify_one();
  // Short runs end within microseconds: yield to the scheduler thread before sleeping.
  const auto until = std::chrono::steady_clock::now() + kStayAwake;
  while (!ended_ && std::chrono::steady_clock::now() < until) {
    lock.unlock();
    sched_yield();
    lock.lock();
  }
  while (!host_cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return ended_; })) {
    if (progress_marker_.load() != seen) {
      seen = progress_marker_.load();
      last_progress = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - last_progress <= limit) continue;
    std::string stuck;
    for (int c = 0; c < chips_ && stuck.empty(); ++c) {
      if (posted_[c] > completed_[c] && in_flight_[c][completed_[c] % kRingSlots]) {
        const auto& t = in_flight_[c][completed_[c] % kRingSlots];
        stuck = "task " + std::to_string(t->id) + " ('" + t->name + "') on chip worker " +
                std::to_string(c) + " (rank " + std::to_string(c + 1) + ")";
      }
    }
    throw Timeout("run: rank 0 (host) saw no task finish for " + transport::format_seconds(limit) +
                  "; " + std::to_string(outstanding_) + " tasks outstanding" +
                  (stuck.empty() ? "" : ", oldest in flight: " + stuck));
  }
}

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
  team.put(chip + 1, team.offset("ring") + slot * kDescStride, &desc, used_bytes(desc));
  team.signal(chip + 1, kPostedSignal);
}

void Scheduler::end_run() {
  wait_for_drain();
  std::lock_guard lock(mutex_);
  ending_ = false;
  release_run_memory();
  if (!trace_path_.empty()) write_trace();
  if (!first_error_.empty()) throw RemoteFailure(first_error_);
}

}  // namespace rankflow::runtime
