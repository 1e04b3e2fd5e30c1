// TaskState: the runtime's record of one submitted task, shared by the graph (task_graph.h),
// the chip links that post it, the sub-worker that runs it and the user's TaskHandle. Fields
// set at submit are read-only afterwards; the rest change under the graph's lock, except
// `status`, which handles read without it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rankflow/runtime.h"

namespace rankflow::runtime {
class Dispatcher;
enum class TaskStatus : int { kWaiting, kReady, kRunning, kSucceeded, kFailed, kSkipped };
inline bool terminal(TaskStatus s) {
  return s == TaskStatus::kSucceeded || s == TaskStatus::kFailed || s == TaskStatus::kSkipped;
}
}  // namespace rankflow::runtime

namespace rankflow::detail {

struct TaskState {
  // Set at submit.
  uint64_t id = 0;
  bool sub = false;
  uint32_t fn = 0;           // kernel or sub index, or a built-in kernel's id
  std::string_view name;     // the kernel table's entry (stable for the worker's lifetime)
  std::vector<int> workers;  // one per member; a single task has one; subs none
  std::vector<std::vector<TaskArg>> member_args;  // the arguments of each member
  // Lets go of the arguments (and the alloc tensors they hold) but keeps the vectors' room.
  void release_args() {
    for (std::vector<TaskArg>& member : member_args)
      member.clear();
  }
  CallConfig config;
  std::shared_ptr<const std::vector<std::byte>> payload;  // a built-in kernel's payload
  std::vector<uint64_t> deps;  // the tasks it waited for (for the trace and the DOT dump)
  std::weak_ptr<runtime::Dispatcher> driver;  // drives the run while a handle waits for it
  // Under the graph's lock.
  uint64_t ready_sequence = 0;  // when it became ready (orders chips' FIFOs against groups)
  int pending = 0;              // predecessors not finished yet
  struct Members {              // of a group: how many finished, and the first failure
    int done = 0;
    bool ok = true;
    std::string error;
  } members;
  std::vector<std::shared_ptr<TaskState>> dependents;
  // Predecessors on this task's own chip that were queued or in flight when it was submitted:
  // it need not wait for them (the chip runs its ring in order and skips it if one of them
  // fails). `sequence`: this task's place in the chip's ring once posted (the driver's).
  struct Stream {
    std::vector<std::shared_ptr<TaskState>> before;
    uint64_t sequence = 0;
  } stream;
  std::atomic<runtime::TaskStatus> status{runtime::TaskStatus::kWaiting};
  std::string error;  // written before status becomes kFailed or kSkipped
};

}  // namespace rankflow::detail

namespace rankflow::runtime {
using detail::TaskState;
}  // namespace rankflow::runtime
