// GraphDump (see graph_dump.h).
#include "runtime/graph_dump.h"

#include <algorithm>
#include <fstream>

#include "rankflow/error.h"

namespace rankflow::runtime {

void GraphDump::run_began(uint64_t) {
  nodes_.clear();
  workers_.clear();
  deps_.clear();
}

void GraphDump::task_submitted(const std::shared_ptr<TaskState>& task) {
  const size_t members = task->sub ? task->member_args.size() : task->workers.size();
  nodes_.push_back({task->id, task->name, task->sub, static_cast<uint32_t>(members),
                    workers_.size(), deps_.size(), static_cast<uint32_t>(task->deps.size())});
  workers_.insert(workers_.end(), task->workers.begin(), task->workers.end());
  deps_.insert(deps_.end(), task->deps.begin(), task->deps.end());
}

std::vector<const char*> GraphDump::statuses() const {
  uint64_t first = 0;
  const std::vector<TaskGraph::Outcome> outcomes = graph_.outcomes(first);
  std::vector<const char*> status(nodes_.size(), "pending");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const uint64_t at = nodes_[i].id - first;
    if (nodes_[i].id < first || at >= outcomes.size()) continue;
    switch (outcomes[at]) {
      case TaskGraph::Outcome::kDone: status[i] = "done"; break;
      case TaskGraph::Outcome::kFailed: status[i] = "failed"; break;
      case TaskGraph::Outcome::kSkipped: status[i] = "skipped"; break;
      case TaskGraph::Outcome::kPending: break;
    }
  }
  return status;
}

void GraphDump::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw InvalidArgument("dump_dot: cannot write '" + path + "'");
  const std::vector<const char*> status = statuses();
  out << "digraph rankflow_run {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    out << "  t" << n.id << " [label=\"" << n.id << ": " << n.name << "\\n";
    if (n.sub) {
      out << (n.members > 1 ? "host sub-workers, a group of " + std::to_string(n.members)
                            : std::string("host sub-worker"));
    } else {
      out << "chip ";
      for (uint32_t m = 0; m < n.members; ++m)
        out << (m > 0 ? "," : "") << workers_[n.workers_at + m];
    }
    out << "\\n" << status[i] << "\"" << (n.members > 1 ? ", style=bold" : "") << "];\n";
    for (uint32_t d = 0; d < n.deps; ++d)
      out << "  t" << deps_[n.deps_at + d] << " -> t" << n.id << ";\n";
  }
  out << "}\n";
}

}  // namespace rankflow::runtime
