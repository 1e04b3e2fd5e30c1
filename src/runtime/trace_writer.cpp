// TraceWriter (see trace_writer.h).
#include "runtime/trace_writer.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iomanip>

#include "rankflow/error.h"

namespace rankflow::runtime {

void TraceWriter::task_left(const TaskState& task, const TaskSpan& span) {
  std::lock_guard lock(mutex_);
  spans_.push_back({task.id, std::string(task.name), span, task.deps});
}

void TraceWriter::run_ended(uint64_t) {
  std::lock_guard lock(mutex_);
  write();
}

// Chrome trace-event JSON (mutex_ held): one "complete" event per span, tracks named after the
// chip workers and sub-workers, dependencies in each event's args.
//
// A chip stamps its spans with its own clock, which on another host counts from another origin
// (a day apart is common). Every span of chip c moves onto the host's clock by the same amount,
// the least lag_ns of c's spans: the clocks' offset plus the shortest delivery delay seen (on
// one host, just that delay). That is never more than any of c's spans' own lag, so no task
// ends in the trace after the host collected it, and a task the host started afterwards (every
// dependent task) starts after it ends; a chip's spans keep their order and lengths.
void TraceWriter::write() const {
  std::ofstream out(path_);
  if (!out) throw InvalidArgument("RANKFLOW_TRACE: cannot write '" + path_ + "'");
  out << std::fixed << std::setprecision(3);  // microseconds to the nanosecond, never 1e+06
  out << "{\"traceEvents\": [\n";
  std::vector<int64_t> shift(static_cast<size_t>(chips_), INT64_MAX);
  for (const Span& s : spans_) {
    const int t = s.where.track;
    if (t >= 0 && t < chips_) shift[t] = std::min(shift[t], s.where.lag_ns);
  }
  auto start_of = [&](const TaskSpan& w) {  // on the host's clock
    const int t = w.track;
    return static_cast<int64_t>(w.start_ns) + (t >= 0 && t < chips_ ? shift[t] : 0);
  };
  int64_t origin = INT64_MAX;
  for (const Span& s : spans_)
    origin = std::min(origin, start_of(s.where));
  bool first = true;
  auto separator = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int c = 0; c < chips_; ++c) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " << c
        << ", \"args\": {\"name\": \"chip worker " << c << " (rank " << c + 1 << ")\"}}";
  }
  for (int k = 0; k < sub_workers_; ++k) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " << 1000 + k
        << ", \"args\": {\"name\": \"host sub-worker " << k << "\"}}";
  }
  for (const Span& s : spans_) {
    separator();
    const TaskSpan& w = s.where;
    const int tid = w.track >= 0 ? w.track : 1000 + (-1 - w.track);
    const double ts = static_cast<double>(start_of(w) - origin) / 1000.0;
    const double dur = static_cast<double>(w.end_ns - std::min(w.end_ns, w.start_ns)) / 1000.0;
    out << "{\"ph\": \"X\", \"name\": \"" << s.name << "\", \"pid\": 0, \"tid\": " << tid
        << ", \"ts\": " << ts << ", \"dur\": " << dur << ", \"args\": {\"task\": " << s.task
        << ", \"ok\": " << (w.ok ? "true" : "false") << ", \"deps\": [";
    for (size_t i = 0; i < s.deps.size(); ++i)
      out << (i ? ", " : "") << s.deps[i];
    out << "]}}";
  }
  out << "\n]}\n";
}

}  // namespace rankflow::runtime
