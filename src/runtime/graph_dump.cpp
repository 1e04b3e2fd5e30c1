// GraphDump (see graph_dump.h).
#include "runtime/graph_dump.h"

#include <fstream>

#include "rankflow/error.h"

namespace rankflow::runtime {
namespace {

std::string placement(const TaskState& t) {
  if (t.sub) return "host sub-worker";
  std::string where = "chip ";
  for (size_t m = 0; m < t.workers.size(); ++m) {
    if (m > 0) where.push_back(',');
    where.append(std::to_string(t.workers[m]));
  }
  return where;
}

const char* status_name(TaskStatus s) {
  return s == TaskStatus::kSucceeded ? "done"
         : s == TaskStatus::kFailed  ? "failed"
         : s == TaskStatus::kSkipped ? "skipped"
                                     : "pending";
}

}  // namespace

void GraphDump::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw InvalidArgument("dump_dot: cannot write '" + path + "'");
  out << "digraph rankflow_run {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const auto& t : tasks_) {
    out << "  t" << t->id << " [label=\"" << t->id << ": " << t->name << "\\n"
        << placement(*t) << "\\n"
        << status_name(t->status.load()) << "\"" << (t->workers.size() > 1 ? ", style=bold" : "")
        << "];\n";
    for (uint64_t d : t->deps)
      out << "  t" << d << " -> t" << t->id << ";\n";
  }
  out << "}\n";
}

}  // namespace rankflow::runtime
