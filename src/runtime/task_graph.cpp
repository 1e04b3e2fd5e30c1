// TaskGraph (see task_graph.h). Every function takes the graph's lock.
#include "runtime/task_graph.h"

#include <algorithm>

#include "rankflow/error.h"
#include "runtime/protocol.h"
#include "runtime/tensor_access.h"

namespace rankflow::runtime {

TaskGraph::TaskGraph(int chips, std::function<void(std::shared_ptr<TaskState>)> sub_ready,
                     std::function<void()> chip_ready)
    : chip_ready_(chips), sub_ready_(std::move(sub_ready)), chip_work_(std::move(chip_ready)) {}

void TaskGraph::begin_run() {
  std::lock_guard lock(mutex_);
  RunPart part;
  part.first_id = next_id_;
  if (spare_trackers_.empty()) {
    part.tracker = std::make_unique<DependencyTracker>();
  } else {
    part.tracker = std::move(spare_trackers_.back());
    spare_trackers_.pop_back();
  }
  if (runs_.empty()) {
    run_tasks_.clear();
    outcomes_.clear();
    first_id_ = next_id_;
    outstanding_.store(0, std::memory_order_release);
  }
  runs_.push_back(std::move(part));
}

void TaskGraph::end_run() {
  std::lock_guard lock(mutex_);
  if (runs_.empty()) return;
  runs_.front().tracker->clear();
  spare_trackers_.push_back(std::move(runs_.front().tracker));
  runs_.pop_front();
  if (runs_.empty()) return;
  RunPart& next = runs_.front();
  const size_t ended = next.first_id - first_id_;  // every entry of the ended run is empty
  run_tasks_.erase(run_tasks_.begin(), run_tasks_.begin() + static_cast<ptrdiff_t>(ended));
  outcomes_.erase(outcomes_.begin(), outcomes_.begin() + static_cast<ptrdiff_t>(ended));
  first_id_ = next.first_id;
  outstanding_.store(next.outstanding, std::memory_order_release);
  std::vector<std::shared_ptr<TaskState>> held;
  held.swap(next.held);
  for (const auto& task : held)
    make_ready(task);
}

TaskGraph::RunPart& TaskGraph::part_of(uint64_t id) {
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    if (id >= it->first_id) return *it;
  }
  return runs_.front();
}

bool TaskGraph::executing(uint64_t id) {
  std::lock_guard lock(mutex_);
  return runs_.size() < 2 || id < runs_[1].first_id;
}

// One task of the run `task` belongs to is done (finished, failed, skipped or cancelled).
void TaskGraph::count_done(const TaskState& task) {
  RunPart& part = part_of(task.id);
  --part.outstanding;
  if (&part == &runs_.front()) outstanding_.store(part.outstanding, std::memory_order_release);
}

void TaskGraph::cancel_unstarted(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (runs_.empty()) return;
  const uint64_t first = runs_.back().first_id;
  for (uint64_t id = first; id < next_id_; ++id) {
    const auto task = run_tasks_[id - first_id_];
    if (task == nullptr) continue;
    TaskStatus status = task->status.load();
    if (status == TaskStatus::kReady && task->sub) {  // the sub-worker pool may start it now
      if (!task->status.compare_exchange_strong(status, TaskStatus::kSkipped)) continue;
    } else if (status == TaskStatus::kWaiting || status == TaskStatus::kReady) {
      task->status = TaskStatus::kSkipped;
    } else {
      continue;  // running (or posted to its chip's ring): it finishes
    }
    task->error = "cancelled: " + why;
    task->release_args();
    task->stream.before.clear();
    run_tasks_[id - first_id_].reset();
    outcomes_[id - first_id_] = Outcome::kSkipped;
    count_done(*task);
  }
  runs_.back().held.clear();
}

std::vector<uint64_t> TaskGraph::unfinished_users(uint64_t buffer) {
  std::lock_guard lock(mutex_);
  std::vector<uint64_t> users;
  for (const auto& task : run_tasks_) {
    if (task == nullptr) continue;
    for (const auto& member : task->member_args) {
      const bool names = std::any_of(member.begin(), member.end(), [&](const TaskArg& a) {
        return a.kind == ArgKind::kTensor && detail::TensorAccess::buffer(a.tensor) == buffer;
      });
      if (names) {
        users.push_back(task->id);
        break;
      }
    }
  }
  return users;
}

bool TaskGraph::all_finished(const std::vector<uint64_t>& ids) {
  std::lock_guard lock(mutex_);
  return std::all_of(ids.begin(), ids.end(), [&](uint64_t id) {
    return id < first_id_ || id - first_id_ >= run_tasks_.size() ||
           run_tasks_[id - first_id_] == nullptr;
  });
}

std::vector<TaskGraph::Outcome> TaskGraph::outcomes(uint64_t& first) {
  std::lock_guard lock(mutex_);
  first = first_id_;
  return outcomes_;
}

std::string TaskGraph::first_error() {
  std::lock_guard lock(mutex_);
  return runs_.empty() ? std::string() : runs_.front().first_error;
}

std::string TaskGraph::newest_error() {
  std::lock_guard lock(mutex_);
  return runs_.empty() ? std::string() : runs_.back().first_error;
}

void TaskGraph::forget(uint64_t buffer) {
  std::lock_guard lock(mutex_);
  for (RunPart& part : runs_)
    part.tracker->forget(buffer);
}

void TaskGraph::add(const std::shared_ptr<TaskState>& task, const std::vector<ByteUse>& uses,
                    const std::vector<uint64_t>& after) {
  std::lock_guard lock(mutex_);
  RunPart& run = runs_.back();
  if (!run.first_error.empty()) throw RemoteFailure("this run already failed: " + run.first_error);
  const uint64_t id = next_id_;
  for (uint64_t a : after) {
    if (a < run.first_id || a >= id) {
      throw InvalidArgument("task '" + std::string(task->name) + "': after={" + std::to_string(a) +
                            "} is not an earlier task of this run");
    }
  }
  std::vector<uint64_t>& before = task->deps;  // a pooled state's vector: no allocation
  run.tracker->find(id, uses, before);
  if (!after.empty()) {
    before.insert(before.end(), after.begin(), after.end());
    std::sort(before.begin(), before.end());
    before.erase(std::unique(before.begin(), before.end()), before.end());
  }
  if (const uint32_t pool = task->config.runtime_env.ring_dep_pool;
      pool != 0 && before.size() > pool) {
    throw InvalidArgument("task '" + std::string(task->name) + "' depends on " +
                          std::to_string(before.size()) +
                          " earlier tasks, more than its CallConfig::runtime_env.ring_dep_pool "
                          "of " +
                          std::to_string(pool));
  }
  run.tracker->record(id, uses);
  ++next_id_;
  task->id = id;
  run_tasks_.push_back(task);
  outcomes_.push_back(Outcome::kPending);
  ++run.outstanding;
  if (runs_.size() == 1) outstanding_.store(run.outstanding, std::memory_order_release);
  for (uint64_t d : task->deps) {
    const auto& predecessor = run_tasks_[d - first_id_];
    if (predecessor == nullptr) continue;  // it succeeded (a failure ends the run's submits)
    predecessor->dependents.push_back(task);
    if (streams_behind(*predecessor, *task)) {
      task->stream.before.push_back(predecessor);
    } else {
      ++task->pending;
    }
  }
  if (task->pending == 0) make_ready(task);
}

// Whether `task` may follow `predecessor` in its chip's ring without waiting for it: both are
// single tasks of one chip and the predecessor is already in that chip's FIFO (queued or
// posted), so whatever makes `task` ready puts it behind. The chip runs its ring in order.
bool TaskGraph::streams_behind(const TaskState& predecessor, const TaskState& task) {
  if (task.sub || predecessor.sub || task.workers.size() != 1 || predecessor.workers.size() != 1 ||
      predecessor.workers[0] != task.workers[0]) {
    return false;
  }
  const TaskStatus s = predecessor.status.load(std::memory_order_relaxed);
  return s == TaskStatus::kReady || s == TaskStatus::kRunning;
}

void TaskGraph::make_ready(const std::shared_ptr<TaskState>& task) {
  task->status = TaskStatus::kReady;
  if (held_back(*task)) {  // its run executes once the earlier ones have ended
    part_of(task->id).held.push_back(task);
    return;
  }
  task->ready_sequence = ++ready_counter_;
  if (task->sub) {
    sub_ready_(task);
    return;
  }
  if (task->workers.size() == 1) {
    chip_ready_[task->workers[0]].push_back(task);
  } else {
    group_ready_.push_back(task);
  }
  chip_work_();
}

void TaskGraph::finish(const std::shared_ptr<TaskState>& task, bool ok, const std::string& error) {
  if (task->id < first_id_) return;  // of a run that was given up (never: begin_run drains)
  std::lock_guard lock(mutex_);
  // Skipped while in flight (a streamed predecessor failed): its chip skipped it too.
  if (terminal(task->status.load(std::memory_order_relaxed))) return;
  const int members = static_cast<int>(task->member_args.size());
  if (members > 1) {  // a group finishes when its last member does
    auto& m = task->members;
    ++m.done;
    if (!ok && m.ok) {
      m.ok = false;
      m.error = error;
    }
    if (m.done < members) return;
    complete(task, m.ok, m.error);
    return;
  }
  complete(task, ok, error);
}

void TaskGraph::complete(const std::shared_ptr<TaskState>& task, bool ok,
                         const std::string& error) {
  task->release_args();         // lets go of alloc tensors this task was the last user of
  task->stream.before.clear();  // (posting cleared it; a task never posted still holds it)
  run_tasks_[task->id - first_id_].reset();  // a finished state goes back to the pool
  outcomes_[task->id - first_id_] = ok ? Outcome::kDone : Outcome::kFailed;
  count_done(*task);
  finished_.store(finished_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (!ok) {
    task->error = error;
    task->status = TaskStatus::kFailed;
    RunPart& run = part_of(task->id);
    if (run.first_error.empty()) run.first_error = error;
    skip_dependents(
        *task, "task " + std::to_string(task->id) + " ('" + std::string(task->name) + "') failed");
    return;
  }
  task->status = TaskStatus::kSucceeded;
  for (const auto& next : task->dependents) {
    if (next->status == TaskStatus::kWaiting && !follows_in_stream(*next, task) &&
        --next->pending == 0) {
      make_ready(next);
    }
  }
}

// Whether `task` counted `predecessor` as streamed (not among its pending ones).
bool TaskGraph::follows_in_stream(const TaskState& task,
                                  const std::shared_ptr<TaskState>& predecessor) {
  const auto& before = task.stream.before;
  return std::find(before.begin(), before.end(), predecessor) != before.end();
}

// Consumers of a failed task never run.
void TaskGraph::skip_dependents(const TaskState& task, const std::string& why) {
  for (const auto& next : task.dependents) {
    if (terminal(next->status)) continue;
    next->error = "skipped: " + why;
    next->status = TaskStatus::kSkipped;
    next->release_args();
    next->stream.before.clear();  // else it and its streamed predecessor hold each other
    run_tasks_[next->id - first_id_].reset();  // `next` itself is held by task.dependents
    outcomes_[next->id - first_id_] = Outcome::kSkipped;
    count_done(*next);
    skip_dependents(*next, why);
  }
}

// Ready work in the order it became ready. Each chip runs its single tasks FIFO; the group at
// the head of the group queue reserves its workers: single tasks that became ready after it
// wait until it has launched.
bool TaskGraph::take_ready(std::vector<uint32_t>& room, std::vector<Posting>& out) {
  std::lock_guard lock(mutex_);
  take_groups(room, out);
  const bool held = !group_ready_.empty();
  if (held) {
    hold_from_.assign(chip_ready_.size(), UINT64_MAX);
    for (int w : group_ready_.front()->workers)
      hold_from_[w] = group_ready_.front()->ready_sequence;
  }
  for (size_t c = 0; c < chip_ready_.size(); ++c) {
    auto& queue = chip_ready_[c];
    const uint64_t hold = held ? hold_from_[c] : UINT64_MAX;
    while (!queue.empty() && room[c] > 0) {
      std::shared_ptr<TaskState>& next = queue.front();
      if (terminal(next->status.load(std::memory_order_relaxed))) {
        queue.pop_front();  // skipped while queued: a streamed predecessor failed
        continue;
      }
      if (next->ready_sequence >= hold) break;
      const uint32_t window = next->config.runtime_env.ring_task_window;
      if (window != 0 && kRingSlots - room[c] >= window) break;  // its chip is busy enough
      next->status = TaskStatus::kRunning;
      out.push_back({std::move(next), 0});
      queue.pop_front();
      --room[c];
    }
  }
  bool left = !group_ready_.empty();
  for (size_t c = 0; c < chip_ready_.size() && !left; ++c)
    left = !chip_ready_[c].empty();
  return left;
}

void TaskGraph::take_groups(std::vector<uint32_t>& room, std::vector<Posting>& out) {
  while (!group_ready_.empty()) {
    const auto group = group_ready_.front();
    if (terminal(group->status.load(std::memory_order_relaxed))) {
      group_ready_.pop_front();  // cancelled while queued
      continue;
    }
    for (int w : group->workers) {
      const auto& queue = chip_ready_[w];
      const bool earlier_queued =
          !queue.empty() && queue.front()->ready_sequence < group->ready_sequence;
      if (room[w] != kRingSlots || earlier_queued) return;
    }
    group_ready_.pop_front();
    group->status = TaskStatus::kRunning;
    for (size_t m = 0; m < group->workers.size(); ++m) {
      --room[group->workers[m]];
      out.push_back({group, m});
    }
  }
}

}  // namespace rankflow::runtime
