// Bad input to the DAG runtime (issue 12), shared by the tables of runtime.h
// (bad_input_runtime_test.cpp, which has main), task_arg.h and domain.h
// (bad_input_dag_test.cpp). Every rank runs every case, so that the chips serve the host's runs:
// a case raises on the host (a bad call in the orchestration body, one run per case), on every
// rank (the Worker's lifecycle), or in a task (a kernel or sub calls its TaskContext badly; the
// host's run then throws RemoteFailure carrying that error's class and message).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../common/bad_input.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace rankflow::test {

inline Worker* g_worker = nullptr;  // host + chips, WorkerOptions as main() sets them
inline int* g_argc = nullptr;       // for the Workers that cases make
inline char*** g_argv = nullptr;

struct Kernels {
  KernelHandle noop;    // does nothing
  KernelHandle sleepy;  // sleeps 300 ms
  KernelHandle fail;    // throws "deliberate failure"
  KernelHandle probe;   // runs the in-task action named by its scalar 0
  SubHandle noop_sub;
  SubHandle fail_sub;
  SubHandle probe_sub;
};
inline Kernels g_k;

// The actions of in-task cases, numbered as the tables are built (alike on every rank).
inline std::vector<TaskFn>& actions() {
  static std::vector<TaskFn> all;
  return all;
}
inline void run_probe(TaskContext& t) {
  actions().at(t.scalar<uint32_t>(0))(t);
}

enum class Who { kHost, kEveryRank };

struct DagCase {
  std::string name;
  std::function<void()> call;  // on every rank
  ErrorCode code;
  std::vector<std::string> substrings;
  Who who = Who::kHost;  // who raises it; the others must raise nothing
  bool in_task = false;  // raised in a task: the host's run throws RemoteFailure carrying it
  int min_chips = 1;
};

// A bad call in the orchestration body, in a run of its own.
inline DagCase in_body(std::string name, ErrorCode code, std::vector<std::string> substrings,
                       std::function<void(Orchestrator&)> body, int min_chips = 1) {
  return {std::move(name),
          [body] { g_worker->run(body); },
          code,
          std::move(substrings),
          Who::kHost,
          false,
          min_chips};
}
// A call on every rank that the host alone raises on (say, two runs).
inline DagCase on_host(std::string name, ErrorCode code, std::vector<std::string> substrings,
                       std::function<void()> call, int min_chips = 1) {
  return {std::move(name), std::move(call), code,     std::move(substrings),
          Who::kHost,      false,           min_chips};
}
// A call that every rank makes and raises on.
inline DagCase on_every_rank(std::string name, ErrorCode code, std::vector<std::string> substrings,
                             std::function<void()> call) {
  return {std::move(name), std::move(call), code, std::move(substrings), Who::kEveryRank};
}
// `action` runs in the probe kernel or sub that `submit` submits with `probe` as its first
// argument (scalar 0).
inline DagCase in_task(std::string name, ErrorCode code, std::vector<std::string> substrings,
                       TaskFn action, std::function<void(Orchestrator&, const TaskArg&)> submit,
                       int min_chips = 1) {
  actions().push_back(std::move(action));
  const TaskArg probe = scalar(static_cast<uint32_t>(actions().size() - 1));
  return {std::move(name),
          [probe, submit] { g_worker->run([&](Orchestrator& o) { submit(o, probe); }); },
          code,
          std::move(substrings),
          Who::kHost,
          true,
          min_chips};
}

// Runs every case on every rank, then a run that shows the worker still works.
inline void run_dag_table(const std::vector<DagCase>& table) {
  const bool host = g_worker->is_host();
  std::vector<std::string> skipped;
  for (const DagCase& c : table) {
    if (g_worker->chips() < c.min_chips) {
      skipped.push_back(c.name);
      continue;
    }
    const ErrorCode raised = c.in_task ? ErrorCode::kRemoteFailure : c.code;
    const Outcome o = outcome_of(c.call, raised);
    if (c.who == Who::kEveryRank || host) {
      std::vector<std::string> substrings = c.substrings;
      if (c.in_task)
        substrings.insert(substrings.begin(), "rankflow " + std::string(to_string(c.code)));
      check_outcome(c.name + " (rank " + std::to_string(g_worker->rank()) + ")", o, raised,
                    substrings);
    } else {
      EXPECT_FALSE(o.threw) << c.name << ": rank " << g_worker->rank() << " raised " << o.what;
    }
  }
  bool done = false;
  EXPECT_NO_THROW(g_worker->run([&](Orchestrator& o) {
    o.submit(g_k.noop, {}, 0).wait();
    done = true;
  })) << "the worker after the table";
  if (host) {
    EXPECT_TRUE(done);
    std::printf("%zu cases, %zu skipped\n", table.size(), skipped.size());
    for (const std::string& name : skipped)
      std::printf("skipped (needs more chip workers): %s\n", name.c_str());
  }
}

}  // namespace rankflow::test
