// GraphDump: the observer that records the current run's graph so Orchestrator::dump_dot can
// write it as Graphviz DOT: one node per task (id, name, where it runs, status), one edge per
// dependency. It keeps a compact node per task, not the task's state, so finished states go
// back to the pool during the run; how each task ended comes from the graph when the dump is
// written (TaskGraph::outcomes), so nothing here runs when a task finishes. Submissions and
// dumps come from the host's main thread only: no lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/observer.h"
#include "runtime/task_graph.h"

namespace rankflow::runtime {

class GraphDump : public TaskObserver {
 public:
  explicit GraphDump(TaskGraph& graph) : graph_(graph) {}
  void run_began(uint64_t) override;
  void task_submitted(const std::shared_ptr<TaskState>& task) override;
  void write(const std::string& path) const;

 private:
  struct Node {
    uint64_t id;
    std::string_view name;  // the kernel table's entry
    bool sub;
    uint32_t members;            // chip workers (one for a single task, none for a sub)
    size_t workers_at, deps_at;  // into workers_ and deps_
    uint32_t deps;
  };
  // Each node's status in DOT: pending, done, failed or skipped.
  std::vector<const char*> statuses() const;

  TaskGraph& graph_;
  std::vector<Node> nodes_;  // by id - the run's first id (ids of one run are consecutive)
  std::vector<int> workers_;
  std::vector<uint64_t> deps_;
};

}  // namespace rankflow::runtime
