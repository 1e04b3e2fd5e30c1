// The DAG runtime under mpirun: rank 0 is the host, the others chip workers. Every rank runs
// every test; the orchestration bodies (and their assertions) run on the host only. Kernels
// sleep where a missing edge would let a later task overtake an earlier one, so a broken
// dependency shows up as a wrong value, not as luck.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "runtime/dependencies.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;

Worker* g_worker = nullptr;
struct Kernels {
  KernelHandle fill_slowly;   // out[i] = in[0] + 1 after 50 ms
  KernelHandle copy_slowly;   // out = in after 50 ms
  KernelHandle set_99;        // out[i] = 99
  KernelHandle increment;     // inout[i] += 1
  KernelHandle fail;          // throws
  KernelHandle throw_an_int;  // throws 42, not a std::exception
  KernelHandle fail_slowly;   // throws after 300 ms
  KernelHandle member;        // out[0] = 100 + group_rank, out[1] = group_size, out[2] = no_dep[0]
  KernelHandle configured;    // out = {threads, scratch bytes, scratch works}
  KernelHandle slow_mark;     // out[0] = 1 after 100 ms
  SubHandle double_it;        // out = 2 * in (on the host)
  SubHandle observe;          // reads its inputs: waits for their writers
  SubHandle hold;             // returns once g_release is set
} g_k;
std::atomic<bool> g_release{false};

void fill_slowly(TaskContext& t) {
  std::this_thread::sleep_for(50ms);
  const float v = t.input<float>(0)[0] + 1;
  for (float& x : t.output<float>(1))
    x = v;
}
void copy_slowly(TaskContext& t) {
  std::this_thread::sleep_for(50ms);
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  std::copy(in.begin(), in.end(), out.begin());
}
void set_99(TaskContext& t) {
  for (float& x : t.output<float>(0))
    x = 99;
}
void increment(TaskContext& t) {
  for (float& x : t.output<float>(0))
    x += 1;
}
void fail(TaskContext&) {
  throw std::runtime_error("deliberate failure");
}
void throw_an_int(TaskContext&) {
  throw 42;  // not a std::exception
}
void fail_slowly(TaskContext&) {
  std::this_thread::sleep_for(300ms);  // its consumers are posted behind it meanwhile
  throw std::runtime_error("deliberate slow failure");
}
void observe(TaskContext&) {}
void hold(TaskContext&) {
  while (!g_release.load())
    std::this_thread::sleep_for(1ms);
}
void member(TaskContext& t) {
  auto out = t.output<float>(0);
  out[0] = static_cast<float>(100 + t.group_rank());
  out[1] = static_cast<float>(t.group_size());
  out[2] = t.args() > 1 ? t.input<float>(1)[0] : -1;
}
void configured(TaskContext& t) {
  auto out = t.output<float>(0);
  out[0] = static_cast<float>(t.config().threads);
  out[1] = static_cast<float>(t.config().scratch_bytes);
  std::byte* a = t.scratch(100);
  std::byte* b = t.scratch(100);
  out[2] = (a != nullptr && b >= a + 100) ? 1.0f : 0.0f;
  try {
    t.scratch(t.config().scratch_bytes);  // more than is left
    out[3] = 0;
  } catch (const InvalidArgument&) {
    out[3] = 1;
  }
}
void slow_mark(TaskContext& t) {
  std::this_thread::sleep_for(100ms);
  t.output<float>(0)[0] = 1;
}
void double_it(TaskContext& t) {
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = 2 * in[i];
}

int last_chip() {
  return g_worker->chips() - 1;
}

TEST(RuntimeTest, ReadAfterWriteAcrossChipsAndSubs) {
  float result = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto seed = orch.host_tensor<float>({1});
    auto x = orch.host_tensor<float>({256});
    auto y = orch.host_tensor<float>({256});
    seed.host<float>()[0] = 1;
    orch.submit(g_k.fill_slowly, {in(seed), out(x)}, 0);     // x = 2 (slowly)
    orch.submit(g_k.increment, {inout(x)}, last_chip());     // x = 3: RAW + WAW
    orch.submit_sub(g_k.double_it, {in(x), out(y)}).wait();  // y = 6 on the host
    result = y.host<float>()[255];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(result, 6.0f);
  }
}

TEST(RuntimeTest, WriteAfterReadWaitsForTheReader) {
  float copied = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({64});
    auto y = orch.host_tensor<float>({64});
    for (float& v : x.host<float>())
      v = 5;
    orch.submit(g_k.copy_slowly, {in(x), out(y)}, 0);  // reads x for 50 ms
    orch.submit(g_k.set_99, {out(x)}, last_chip());    // must wait: write-after-read
    orch.submit_sub(g_k.observe, {in(y)}).wait();
    copied = y.host<float>()[63];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(copied, 5.0f) << "the writer overtook the reader";
  }
}

TEST(RuntimeTest, ExplicitAfterOrdersUnrelatedTasks) {
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto seed = orch.host_tensor<float>({1});
    auto x = orch.host_tensor<float>({8});
    auto y = orch.host_tensor<float>({8});
    seed.host<float>()[0] = 41;
    TaskHandle first = orch.submit(g_k.fill_slowly, {in(seed), out(x)}, 0);  // x = 42, slowly
    // No tensor links these; `after` does. The sub reads x through no_dep.
    orch.submit_sub(g_k.double_it, {no_dep(x), out(y)}, {first.id()}).wait();
    value = y.host<float>()[7];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(value, 84.0f);
  }
}

TEST(RuntimeTest, DisjointRowsOfOneTensorNeedNoEdge) {
  std::vector<float> top, bottom;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4, 16});
    orch.submit(g_k.set_99, {out(x.rows(0, 2))}, 0);
    orch.submit(g_k.increment, {inout(x.rows(2, 2))}, last_chip());
    orch.submit_sub(g_k.observe, {in(x)}).wait();
    auto all = x.host<float>();
    top.assign(all.begin(), all.begin() + 32);
    bottom.assign(all.begin() + 32, all.end());
  });
  if (g_worker->is_host()) {
    EXPECT_THAT(top, ::testing::Each(99.0f));
    EXPECT_THAT(bottom, ::testing::Each(1.0f));
  }
}

TEST(RuntimeTest, FailureSkipsConsumersFinishesOthersAndTheNextRunWorks) {
  std::string error;
  float consumer = -1, independent = -1;
  try {
    g_worker->run([&](Orchestrator& orch) {
      auto x = orch.host_tensor<float>({8});
      auto y = orch.host_tensor<float>({8});
      auto z = orch.host_tensor<float>({8});
      // The failure waits until every task is in: a submit after the host saw it would throw.
      auto gate = orch.host_tensor<float>({1});
      g_release = false;
      struct Release {
        ~Release() { g_release = true; }
      } release_on_exit;
      orch.submit_sub(g_k.hold, {out(gate)});
      orch.submit(g_k.fail, {in(gate), out(x)}, 0);
      orch.submit(g_k.increment, {inout(x)}, last_chip());  // consumer: never runs
      orch.submit(g_k.set_99, {out(z)}, last_chip());       // independent: runs
      orch.submit_sub(g_k.double_it, {in(x), out(y)});      // consumer: never runs
      TaskHandle independent_done = orch.submit_sub(g_k.observe, {in(z)});
      g_release = true;
      independent_done.wait();
      consumer = x.host<float>()[0] + y.host<float>()[0];
      independent = z.host<float>()[0];
    });
  } catch (const RemoteFailure& e) {
    error = e.what();
  }
  if (g_worker->is_host()) {
    EXPECT_THAT(error, ::testing::HasSubstr("kernel 'fail'"));
    EXPECT_THAT(error, ::testing::HasSubstr("deliberate failure"));
    EXPECT_THAT(error, ::testing::HasSubstr("rank 1, chip worker 0"));
    EXPECT_EQ(independent, 99.0f);
    EXPECT_EQ(consumer, 0.0f) << "a consumer of the failed task ran";
  }
  float after = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4});
    orch.submit(g_k.set_99, {out(x)}, 0);
    orch.submit_sub(g_k.observe, {in(x)}).wait();
    after = x.host<float>()[3];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(after, 99.0f) << "the run after a failure must work";
  }
}

// Consumers on the failed task's own chip are posted behind it while it runs (they follow it in
// the chip's ring rather than wait for it): the chip must skip them, exactly them.
// An exception of any other type fails the task the same way, with the kernel named.
TEST(RuntimeTest, ANonStdExceptionInAKernelIsARemoteFailureNamingIt) {
  std::string error;
  try {
    g_worker->run([&](Orchestrator& orch) {
      auto x = orch.host_tensor<float>({4});
      orch.submit(g_k.throw_an_int, {out(x)}, last_chip());
    });
  } catch (const RemoteFailure& e) {
    error = e.what();
  }
  if (g_worker->is_host()) {
    EXPECT_THAT(error, ::testing::HasSubstr("kernel 'throw_an_int': unknown exception"));
    EXPECT_THAT(error, ::testing::HasSubstr("chip worker " + std::to_string(last_chip())));
  }
  float after = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4});
    orch.submit(g_k.set_99, {out(x)}, last_chip());
    orch.submit_sub(g_k.observe, {in(x)}).wait();
    after = x.host<float>()[3];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(after, 99.0f) << "the run after the failure must work";
  }
}

TEST(RuntimeTest, ConsumersStreamedBehindAFailingTaskOnItsChipNeverRun) {
  float consumer = -1, consumer_of_consumer = -1, independent = -1;
  std::string error, consumer_error;
  try {
    g_worker->run([&](Orchestrator& orch) {
      auto x = orch.host_tensor<float>({8});
      auto y = orch.host_tensor<float>({8});
      auto z = orch.host_tensor<float>({8});
      orch.submit(g_k.fail_slowly, {out(x)}, 0);
      TaskHandle first = orch.submit(g_k.increment, {inout(x)}, 0);  // follows it: skipped
      TaskHandle between = orch.submit(g_k.set_99, {out(z)}, 0);     // independent: runs
      orch.submit(g_k.fill_slowly, {in(x), out(y)}, 0);  // follows the consumer: skipped
      between.wait();
      independent = z.host<float>()[0];
      try {
        first.wait();
      } catch (const RemoteFailure& e) {
        consumer_error = e.what();
      }
      consumer = x.host<float>()[0];
      consumer_of_consumer = y.host<float>()[0];
    });
  } catch (const RemoteFailure& e) {
    error = e.what();
  }
  if (g_worker->is_host()) {
    EXPECT_THAT(error, ::testing::HasSubstr("deliberate slow failure"));
    EXPECT_THAT(consumer_error, ::testing::HasSubstr("skipped: task "));
    EXPECT_THAT(consumer_error, ::testing::HasSubstr("('fail_slowly') failed"));
    EXPECT_EQ(independent, 99.0f) << "a task between the failure and its consumers was skipped";
    EXPECT_EQ(consumer, 0.0f) << "the consumer of the failed task ran";
    EXPECT_EQ(consumer_of_consumer, 0.0f) << "the consumer's consumer ran";
  }
}

TEST(RuntimeTest, BadSubmissionsAreErrorsAtSubmit) {
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({8});
    EXPECT_THROW(orch.submit(g_k.set_99, {out(x)}, orch.chips()), InvalidArgument);
    EXPECT_THROW(orch.submit(g_k.copy_slowly, {out(x), out(x.rows(2, 2))}, 0), InvalidArgument);
    EXPECT_THROW(orch.submit(g_k.copy_slowly, {in(x), out(x)}, 0), InvalidArgument);
    EXPECT_THROW(orch.submit(g_k.set_99, {out(Tensor())}, 0), InvalidArgument);
    EXPECT_THROW(orch.submit(g_k.set_99, {out(x)}, 0, {12345}), InvalidArgument);
    EXPECT_THROW(orch.host_tensor<float>({size_t{1} << 40}), InvalidArgument);
  });
}

TEST(RuntimeTest, ThrowingOrchestrationPropagatesAndTheNextRunWorks) {
  bool caught = false;
  try {
    g_worker->run([&](Orchestrator& orch) {
      auto x = orch.host_tensor<float>({8});
      orch.submit(g_k.set_99, {out(x)}, 0);
      throw std::logic_error("the body gave up");
    });
  } catch (const std::logic_error& e) {
    caught = std::string(e.what()) == "the body gave up";
  }
  if (g_worker->is_host()) {
    EXPECT_TRUE(caught);
  }
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({8});
    orch.submit(g_k.set_99, {out(x)}, last_chip()).wait();
    value = x.host<float>()[0];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(value, 99.0f);
  }
}

TEST(RuntimeTest, ManyTasksKeepEveryChipBusyInOrder) {
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({16});
    // 100 increments alternate between chips; each depends on the previous (RAW + WAW).
    for (int i = 0; i < 100; ++i)
      orch.submit(g_k.increment, {inout(x)}, i % orch.chips());
    orch.submit_sub(g_k.observe, {in(x)}).wait();
    value = x.host<float>()[15];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(value, 100.0f);
  }
}

TEST(RuntimeTest, GroupMembersSeeTheirRankAndLaunchTogether) {
  if (g_worker->chips() < 2) GTEST_SKIP() << "needs two chip workers";
  std::vector<float> rows;
  g_worker->run([&](Orchestrator& orch) {
    auto marker = orch.host_tensor<float>({1});
    auto later = orch.host_tensor<float>({1});
    auto x = orch.host_tensor<float>({2, 4});
    orch.submit(g_k.slow_mark, {out(marker)}, 0);  // chip 0 busy for 100 ms
    // The group needs chips 0 and 1 at once: member 1 may only start once chip 0 is idle, so it
    // reads marker == 1 (no_dep: no edge, only the all-or-nothing launch orders them).
    orch.submit_group(g_k.member, {{out(x.rows(0, 1))}, {out(x.rows(1, 1)), no_dep(later)}},
                      {0, 1});
    // Submitted after the group, for a reserved (idle) chip: must not overtake the group.
    orch.submit(g_k.set_99, {out(later)}, 1);
    orch.submit_sub(g_k.observe, {in(x), in(later)}).wait();
    auto all = x.host<float>();
    rows.assign(all.begin(), all.end());
    rows.push_back(marker.host<float>()[0]);
  });
  if (g_worker->is_host()) {
    ASSERT_EQ(rows.size(), 9u);
    EXPECT_EQ(rows[0], 100.0f);
    EXPECT_EQ(rows[1], 2.0f);
    EXPECT_EQ(rows[4], 101.0f);
    EXPECT_EQ(rows[5], 2.0f);
    EXPECT_EQ(rows[6], 0.0f) << "a single task overtook the group reserving its worker";
    EXPECT_EQ(rows[8], 1.0f);
  }
}

TEST(RuntimeTest, GroupAndConfigMistakesAreErrorsAtSubmit) {
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4});
    EXPECT_THROW(orch.submit_group(g_k.member, {{out(x)}, {out(x)}}, {0, 0}), InvalidArgument);
    EXPECT_THROW(orch.submit_group(g_k.member, {{out(x)}}, {0, 1}), InvalidArgument);
    EXPECT_THROW(orch.submit(g_k.configured, {out(x)}, 0, {}, {.threads = 0}), InvalidArgument);
    EXPECT_THROW(orch.submit(g_k.configured, {out(x)}, 0, {}, {.scratch_bytes = size_t{1} << 31}),
                 InvalidArgument);
  });
}

TEST(RuntimeTest, EachTaskSeesItsOwnCallConfig) {
  std::vector<float> seen;
  g_worker->run([&](Orchestrator& orch) {
    std::vector<Tensor> outs;
    for (int i = 0; i < 3; ++i) {
      outs.push_back(orch.host_tensor<float>({4}));
      orch.submit(g_k.configured, {out(outs.back())}, i % orch.chips(), {},
                  {.threads = 1 + i, .scratch_bytes = size_t{1024} << i});
    }
    for (const Tensor& t : outs)
      orch.submit_sub(g_k.observe, {in(t)}).wait();
    for (const Tensor& t : outs)
      seen.insert(seen.end(), t.host<float>().begin(), t.host<float>().end());
  });
  if (g_worker->is_host()) {
    ASSERT_EQ(seen.size(), 12u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(seen[4 * i + 0], 1.0f + i) << "task " << i << " threads";
      EXPECT_EQ(seen[4 * i + 1], static_cast<float>(1024 << i)) << "task " << i << " scratch";
      EXPECT_EQ(seen[4 * i + 2], 1.0f) << "scratch allocations must be distinct";
      EXPECT_EQ(seen[4 * i + 3], 1.0f) << "an exhausted scratch arena must be an error";
    }
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A file in this run's temporary directory (tests never write into the source tree).
std::string scratch_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("rankflow-runtime-test-" + std::to_string(getppid()) + "-" + name))
      .string();
}

// The trace event of task `id`: its start and length in microseconds.
struct TraceEvent {
  double ts = -1;
  double dur = -1;
};
TraceEvent trace_event(const std::string& trace, uint64_t id) {
  const size_t at = trace.find("\"args\": {\"task\": " + std::to_string(id) + ",");
  if (at == std::string::npos) return {};
  const size_t line = trace.rfind('\n', at) + 1;
  auto number = [&](const std::string& key) {
    const size_t k = trace.find("\"" + key + "\": ", line);
    return k < at ? std::stod(trace.substr(k + key.size() + 4)) : -1.0;
  };
  return {number("ts"), number("dur")};
}

// The graph dump says how each task ended: the failed one, its consumer (skipped) and the task
// it waited for (done).
TEST(RuntimeTest, DotDumpNamesFailedSkippedAndDoneTasks) {
  const std::string dot = scratch_file("outcomes.dot");
  std::string graph;
  uint64_t held = 0, failed = 0, skipped = 0;
  try {
    g_worker->run([&](Orchestrator& orch) {
      auto x = orch.host_tensor<float>({8});
      auto y = orch.host_tensor<float>({8});
      auto gate = orch.host_tensor<float>({1});
      g_release = false;  // the failure waits until every task is in
      struct Release {
        ~Release() { g_release = true; }
      } release_on_exit;
      held = orch.submit_sub(g_k.hold, {out(gate)}).id();
      failed = orch.submit(g_k.fail, {in(gate), out(x)}, 0).id();
      TaskHandle consumer = orch.submit_sub(g_k.double_it, {in(x), out(y)});
      skipped = consumer.id();
      g_release = true;
      EXPECT_THROW(consumer.wait(), Error);
      orch.dump_dot(dot);
      graph = read_file(dot);
    });
    if (g_worker->is_host()) ADD_FAILURE() << "the run must end in the kernel's failure";
  } catch (const RemoteFailure&) {
  }
  if (g_worker->is_host()) {
    auto node = [&](uint64_t id, const std::string& rest) {
      return std::to_string(id) + ": " + rest;
    };
    EXPECT_THAT(graph, ::testing::HasSubstr(node(held, "hold\\nhost sub-worker\\ndone")));
    EXPECT_THAT(graph, ::testing::HasSubstr(node(failed, "fail\\nchip 0\\nfailed")));
    EXPECT_THAT(graph,
                ::testing::HasSubstr(node(skipped, "double_it\\nhost sub-worker\\nskipped")));
    std::remove(dot.c_str());
  }
}

TEST(RuntimeTest, DotDumpAndTraceShowTasksAndEdges) {
  const std::string dot = scratch_file("graph.dot");
  std::string graph;
  uint64_t a_id = 0, b_id = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({8});
    auto y = orch.host_tensor<float>({8});
    TaskHandle a = orch.submit(g_k.set_99, {out(x)}, last_chip());
    TaskHandle b = orch.submit_sub(g_k.double_it, {in(x), out(y)});
    b.wait();
    orch.dump_dot(dot);
    graph = read_file(dot);
    EXPECT_THAT(graph, ::testing::HasSubstr("t" + std::to_string(a.id()) + " -> t" +
                                            std::to_string(b.id())));
    a_id = a.id();
    b_id = b.id();
  });
  if (g_worker->is_host()) {
    const std::string chip = std::to_string(last_chip());
    EXPECT_THAT(graph, ::testing::HasSubstr("set_99\\nchip " + chip + "\\ndone"));
    EXPECT_THAT(graph, ::testing::HasSubstr("double_it\\nhost sub-worker"));
    // RANKFLOW_TRACE is set by main(): the file has both tracks and the dependency.
    const std::string trace = read_file(std::getenv("RANKFLOW_TRACE"));
    EXPECT_THAT(trace, ::testing::HasSubstr("\"name\": \"chip worker " + chip + " (rank " +
                                            std::to_string(last_chip() + 1) + ")\""));
    EXPECT_THAT(trace, ::testing::HasSubstr("\"name\": \"host sub-worker 0\""));
    EXPECT_THAT(trace, ::testing::HasSubstr("\"name\": \"double_it\""));
    EXPECT_THAT(trace, ::testing::HasSubstr("\"ph\": \"X\""));
    // The sub task starts after the chip task it reads ends, on one timeline, even when the
    // chip is on another host whose clock counts from elsewhere (two_host.runtime.np3); to the
    // nanosecond, however long the trace.
    const TraceEvent set = trace_event(trace, a_id), dbl = trace_event(trace, b_id);
    ASSERT_GE(set.ts, 0) << "no trace event for task " << a_id;
    ASSERT_GE(dbl.ts, 0) << "no trace event for task " << b_id;
    EXPECT_GE(set.dur, 0);
    EXPECT_GE(dbl.ts, set.ts + set.dur - 1e-6) << "set_99 at " << set.ts << " us for " << set.dur
                                               << " us, double_it at " << dbl.ts << " us";
    EXPECT_FALSE(std::regex_search(trace, std::regex("\"(ts|dur)\": [0-9.]+e")))
        << "a time in exponent notation (rounded to 6 digits)";
  }
}

TEST(RuntimeTest, HostTensorsOfEveryDtype) {
  std::vector<size_t> sizes;
  g_worker->run([&](Orchestrator& orch) {
    for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI8, DType::kI16,
                    DType::kI32, DType::kI64, DType::kU8, DType::kU16, DType::kU32, DType::kU64}) {
      Tensor t = orch.host_tensor({3, 5}, d);
      EXPECT_EQ(t.dtype(), d);
      sizes.push_back(t.bytes());
    }
    EXPECT_EQ(orch.host_tensor<uint16_t>({2}).dtype(), DType::kU16);
  });
  if (g_worker->is_host()) {
    EXPECT_THAT(sizes, ::testing::ElementsAre(60, 120, 30, 30, 15, 30, 60, 120, 15, 30, 60, 120));
  }
}

TEST(RuntimeTest, ChildMemoryPersistsAcrossRunsAndIsReusedAfterFree) {
  Tensor dev;
  g_worker->run([&](Orchestrator& orch) {
    dev = orch.alloc_child_tensor(last_chip(), {16}, DType::kF32);
    auto src = orch.host_tensor<float>({16});
    for (size_t i = 0; i < 16; ++i)
      src.host<float>()[i] = static_cast<float>(i) + 0.5f;
    orch.copy_to(dev, src);
    orch.submit(g_k.increment, {inout(dev)}, last_chip());  // in place, on the chip
  });
  std::vector<float> seen;
  g_worker->run([&](Orchestrator& orch) {  // a later run still sees it
    auto back = orch.host_tensor<float>({16});
    orch.copy_from(back, dev).wait();
    seen.assign(back.host<float>().begin(), back.host<float>().end());
    orch.free_child(dev);
    EXPECT_THROW(orch.submit(g_k.increment, {inout(dev)}, last_chip()), InvalidArgument);
  });
  if (g_worker->is_host()) {
    ASSERT_EQ(seen.size(), 16u);
    for (size_t i = 0; i < 16; ++i)
      EXPECT_EQ(seen[i], static_cast<float>(i) + 1.5f) << i;
  }
  g_worker->run([&](Orchestrator& orch) {  // freed memory is reusable
    auto again = orch.alloc_child_tensor(last_chip(), {16}, DType::kF32);
    EXPECT_EQ(again.home(), last_chip());
    orch.free_child(again);
    EXPECT_THROW(orch.alloc_child_tensor(orch.chips(), {4}, DType::kF32), InvalidArgument);
    EXPECT_THROW(orch.alloc_child_tensor(0, {size_t{1} << 40}, DType::kF32), InvalidArgument);
  });
}

// Registered by CTest with RANKFLOW_TIMEOUT_S=1 (runtime.heartbeat.*): the body computes for
// 2.5 s between two submits; the chips must not time out while the host is alive.
TEST(RuntimeTest, LongOrchestrationDoesNotTimeChipsOut) {
  const char* limit = std::getenv("RANKFLOW_TIMEOUT_S");
  if (limit == nullptr || std::atof(limit) > 2) GTEST_SKIP() << "needs RANKFLOW_TIMEOUT_S <= 2";
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4});
    orch.submit(g_k.set_99, {out(x)}, 0).wait();
    std::this_thread::sleep_for(2500ms);  // longer than the chips' wait limit
    orch.submit(g_k.increment, {inout(x)}, last_chip()).wait();
    value = x.host<float>()[0];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(value, 100.0f);
  }
}

// The host's own work between two runs, longer than the chips' wait limit: the chips, already
// waiting for the second run's first task, keep hearing the host and do not give up.
TEST(RuntimeTest, HostWorkBetweenRunsDoesNotTimeChipsOut) {
  const char* limit = std::getenv("RANKFLOW_TIMEOUT_S");
  if (limit == nullptr || std::atof(limit) > 2) GTEST_SKIP() << "needs RANKFLOW_TIMEOUT_S <= 2";
  g_worker->run([&](Orchestrator& orch) {
    orch.submit(g_k.set_99, {out(orch.host_tensor<float>({4}))}, 0).wait();
  });
  if (g_worker->is_host()) std::this_thread::sleep_for(2500ms);
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4});
    orch.submit(g_k.set_99, {out(x)}, last_chip()).wait();
    value = x.host<float>()[0];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(value, 99.0f);
  }
}

TEST(RuntimeTest, LifecycleMisuseIsAnError) {
  g_worker->run([&](Orchestrator&) {
    EXPECT_THROW(g_worker->register_kernel("late", set_99), InvalidState);
  });
  EXPECT_THROW(g_worker->init(), InvalidState);
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  int failed = 0;
  // Read by the host at init; every rank names the same file (mpirun is their parent).
  const std::string trace = rankflow::test::scratch_file("trace.json");
  setenv("RANKFLOW_TRACE", trace.c_str(), 0);
  {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 2});
    g_worker = &worker;
    g_k.fill_slowly = worker.register_kernel("fill_slowly", fill_slowly);
    g_k.copy_slowly = worker.register_kernel("copy_slowly", copy_slowly);
    g_k.set_99 = worker.register_kernel("set_99", set_99);
    g_k.increment = worker.register_kernel("increment", increment);
    g_k.fail = worker.register_kernel("fail", fail);
    g_k.throw_an_int = worker.register_kernel("throw_an_int", throw_an_int);
    g_k.fail_slowly = worker.register_kernel("fail_slowly", fail_slowly);
    g_k.member = worker.register_kernel("member", member);
    g_k.configured = worker.register_kernel("configured", configured);
    g_k.slow_mark = worker.register_kernel("slow_mark", slow_mark);
    g_k.double_it = worker.register_sub("double_it", double_it);
    g_k.observe = worker.register_sub("observe", observe);
    g_k.hold = worker.register_sub("hold", hold);
    failed = run_all_tests_on(worker);
    EXPECT_THROW(worker.run([](rankflow::Orchestrator&) {}), rankflow::InvalidState);
    worker.close();  // twice is fine
  }
  std::remove(trace.c_str());
  std::remove(rankflow::test::scratch_file("graph.dot").c_str());
  return failed;
}
