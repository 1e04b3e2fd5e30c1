// GraphDump: the observer that keeps the current run's tasks so Orchestrator::dump_dot can
// write the graph as Graphviz DOT: one node per task (id, name, where it runs, status), one
// edge per dependency. Host main thread only (submissions and dumps both come from the body).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/observer.h"

namespace rankflow::runtime {

class GraphDump : public TaskObserver {
 public:
  void run_began(uint64_t) override { tasks_.clear(); }
  void task_submitted(const std::shared_ptr<TaskState>& task) override { tasks_.push_back(task); }
  void write(const std::string& path) const;

 private:
  std::vector<std::shared_ptr<TaskState>> tasks_;
};

}  // namespace rankflow::runtime
