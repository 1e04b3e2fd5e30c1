// GraphDump: the observer that records the current run's graph so Orchestrator::dump_dot can
// write it as Graphviz DOT: one node per task (id, name, where it runs, status), one edge per
// dependency. It keeps a compact node per task, not the task's state, so finished states go
// back to the pool during the run. Submissions and dumps come from the host's main thread;
// task_left from whichever thread saw a task finish, under the dump's own lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/observer.h"

namespace rankflow::runtime {

class GraphDump : public TaskObserver {
 public:
  void run_began(uint64_t) override;
  void task_submitted(const std::shared_ptr<TaskState>& task) override;
  void task_left(const TaskState& task, const TaskSpan& span) override;
  void write(const std::string& path) const;

 private:
  struct Node {
    uint64_t id;
    std::string_view name;  // the kernel table's entry
    bool sub;
    uint32_t members;            // chip workers (one for a single task, none for a sub)
    uint32_t members_left = 0;   // of them, how many left their worker
    bool failed = false;         // a member failed
    size_t workers_at, deps_at;  // into workers_ and deps_
    uint32_t deps;
  };
  Node* node_of(uint64_t id);
  static void record_left(Node& node, bool ok);
  // Statuses in DOT: a task that never left and has a failed or skipped predecessor was skipped.
  std::vector<const char*> statuses() const;

  mutable std::mutex mutex_;
  std::vector<Node> nodes_;  // by id - first_id_ (ids of one run are consecutive)
  std::vector<int> workers_;
  std::vector<uint64_t> deps_;
  uint64_t first_id_ = 0;
  // Tasks that left before task_submitted recorded them: (id, ok).
  std::vector<std::pair<uint64_t, bool>> early_;
};

}  // namespace rankflow::runtime
