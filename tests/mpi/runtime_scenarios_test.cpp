// The reference runtime's acceptance scenarios 1-7, 9, 27-30 and 34 (simpler-l3-runtime.md,
// section 9), one test each, adapted to C++: Python's ValueError/TypeError become
// InvalidArgument, RuntimeError becomes InvalidState or RemoteFailure, TimeoutError Timeout.
// Two deliberate differences, both documented in docs/runtime.md: write-after-read edges exist
// (the reference leaves them to the user), and a plain output after an output of the same bytes
// waits for it (otherwise the final value would be a race). Scenario 8 needs a communication
// domain and lives with the domain tests.
//
// Run as host + 2 chip workers (mpirun -n 3). Kernels that a missing edge would let overtake an
// earlier task sleep first, so a broken dependency shows up as a wrong value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Worker* g_worker = nullptr;
struct Handles {
  KernelHandle vector_add;  // out = a + b, after 50 ms
  KernelHandle add_one;     // out = in + 1, after 50 ms
  KernelHandle fill;        // out[...] = scalar in[0] over a strided view
  KernelHandle polynomial;  // f = (a + w + 1)(a + w + 2) + (a + w), w from child memory
  KernelHandle stamp;       // out = {start, end} steady-clock ns, sleeping scalar 0 ms between
  KernelHandle configured;  // out = {threads, scratch bytes}
  SubHandle check_sum;      // out[0] = 1 if in0 == a0 + b0 and in1 == a1 + b1 everywhere
  SubHandle boom;           // throws std::runtime_error("boom")
  SubHandle count;          // ++g_counter
} g_h;
std::atomic<int> g_counter{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void vector_add(TaskContext& t) {
  std::this_thread::sleep_for(50ms);
  auto a = t.input<float>(0), b = t.input<float>(1);
  auto c = t.output<float>(2);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = a[i] + b[i];
}
void add_one(TaskContext& t) {
  std::this_thread::sleep_for(50ms);
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = in[i] + 1;
}
void fill(TaskContext& t) {
  const float value = t.input<float>(0)[0];
  View<float> v = t.view<float>(1);
  for (size_t i = 0; i < v.shape()[0]; ++i) {
    for (size_t j = 0; j < v.shape()[1]; ++j)
      v(i, j) = value;
  }
}
void polynomial(TaskContext& t) {
  auto a = t.input<float>(0), w = t.input<float>(1);
  auto f = t.output<float>(2);
  for (size_t i = 0; i < f.size(); ++i) {
    const float s = a[i] + w[i];
    f[i] = (s + 1) * (s + 2) + s;
  }
}
void stamp(TaskContext& t) {  // scalar 0: milliseconds to sleep
  auto out = t.output<int64_t>(0);
  out[0] = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(t.scalar<int64_t>(0)));
  out[1] = now_ns();
}
void configured(TaskContext& t) {
  auto out = t.output<int64_t>(0);
  out[0] = t.config().threads;
  out[1] = static_cast<int64_t>(t.config().scratch_bytes);
}
void check_sum(TaskContext& t) {
  bool ok = true;
  for (int k = 0; k < 2; ++k) {
    auto a = t.input<float>(3 * k), b = t.input<float>(3 * k + 1), c = t.input<float>(3 * k + 2);
    for (size_t i = 0; i < c.size(); ++i)
      ok = ok && c[i] == a[i] + b[i];
  }
  t.output<float>(6)[0] = ok ? 1.0f : 0.0f;
}
void boom(TaskContext&) {
  std::this_thread::sleep_for(150ms);  // lets the body submit a consumer first
  throw std::runtime_error("boom");
}
void count(TaskContext&) {
  ++g_counter;
}

bool host() {
  return g_worker->is_host();
}

Tensor filled(Orchestrator& orch, std::vector<size_t> shape, float first, float step) {
  Tensor t = orch.host_tensor<float>(std::move(shape));
  float v = first;
  for (float& x : t.host<float>()) {
    x = v;
    v += step;
  }
  return t;
}

TEST(RuntimeScenarios, S01_LifecycleSmoke) {
  bool ran = false;
  g_worker->run([&](Orchestrator&) { ran = true; });  // an empty run returns
  EXPECT_EQ(ran, host());
  EXPECT_THROW(g_worker->init(), InvalidState);  // re-init
  // init after close: checked in main(), after the last test closed the worker.
}

TEST(RuntimeScenarios, S02_DirectedDispatchAndFanIn) {
  float verdict = -1;
  g_worker->run([&](Orchestrator& orch) {
    std::vector<TensorArg> check_args;
    for (int chip = 0; chip < 2; ++chip) {
      auto a = filled(orch, {128, 128}, 0.5f * chip, 0.25f);
      auto b = filled(orch, {128, 128}, 3.0f, -0.125f);
      auto c = orch.host_tensor<float>({128, 128});
      orch.submit(g_h.vector_add, {in(a), in(b), out(c)}, chip);
      check_args.insert(check_args.end(), {in(a), in(b), in(c)});
    }
    auto result = orch.host_tensor<float>({1});
    check_args.push_back(out(result));
    TaskHandle check = orch.submit_sub(g_h.check_sum, check_args);
    EXPECT_THAT(check.depends_on(), ElementsAre(1, 2));  // fan-in of both chip tasks
    check.wait();
    verdict = result.host<float>()[0];
  });
  if (host()) {
    EXPECT_EQ(verdict, 1.0f) << "the sub ran before both chip tasks finished";
  }
}

TEST(RuntimeScenarios, S03_InferredChainOnOneWorkerAndAcrossWorkers) {
  std::vector<float> same, across;
  g_worker->run([&](Orchestrator& orch) {
    for (int second : {0, 1}) {
      auto seed = filled(orch, {64}, 10, 1);
      auto x = orch.host_tensor<float>({64});
      auto y = orch.host_tensor<float>({64});
      orch.submit(g_h.add_one, {in(seed), out_existing(x)}, 0);  // T1 writes X
      TaskHandle t2 = orch.submit(g_h.add_one, {in(x), out(y)}, second);
      EXPECT_THAT(t2.depends_on(), ElementsAre(t2.id() - 1));
      t2.wait();
      (second == 0 ? same : across).assign(y.host<float>().begin(), y.host<float>().end());
    }
  });
  if (host()) {
    for (size_t i = 0; i < 64; ++i) {
      EXPECT_EQ(same[i], 12.0f + i);
      EXPECT_EQ(across[i], 12.0f + i);
    }
  }
}

TEST(RuntimeScenarios, S04_DisjointSlicesRunIndependently) {
  std::vector<float> matrix;
  g_worker->run([&](Orchestrator& orch) {
    // Byte-offset slices of a vector.
    auto x = orch.host_tensor<float>({2, 32});
    auto ones = filled(orch, {32}, 1, 0);
    TaskHandle low = orch.submit(g_h.add_one, {in(ones), out(x.rows(0, 1).view({32}))}, 0);
    TaskHandle high = orch.submit(g_h.add_one, {in(ones), out(x.rows(1, 1).view({32}))}, 1);
    EXPECT_THAT(high.depends_on(), IsEmpty());
    auto copy = orch.host_tensor<float>({2, 32});
    TaskHandle reader = orch.submit(g_h.add_one, {in(x), out(copy)}, 0);
    EXPECT_THAT(reader.depends_on(), ElementsAre(low.id(), high.id()));
    // Column blocks of a matrix, written at once by two chips: strided views, no edge, and
    // neither chip's write may touch the other's columns (staged write-back under TCP).
    auto m = filled(orch, {16, 16}, -1, 0);
    auto one = filled(orch, {1}, 1, 0), two = filled(orch, {1}, 2, 0);
    TaskHandle left = orch.submit(g_h.fill, {in(one), out(m.slice(1, 0, 4))}, 0);
    TaskHandle right = orch.submit(g_h.fill, {in(two), out(m.slice(1, 8, 12))}, 1);
    EXPECT_THAT(right.depends_on(), IsEmpty());
    TaskHandle whole = orch.submit(g_h.add_one, {in(m), out(orch.host_tensor<float>({256}))}, 0);
    EXPECT_THAT(whole.depends_on(), ElementsAre(left.id(), right.id()));
    whole.wait();
    matrix.assign(m.host<float>().begin(), m.host<float>().end());
  });
  if (host()) {
    for (size_t r = 0; r < 16; ++r) {
      for (size_t c = 0; c < 16; ++c) {
        const float expected = c < 4 ? 1.0f : (c >= 8 && c < 12) ? 2.0f : -1.0f;
        EXPECT_EQ(matrix[r * 16 + c], expected) << "row " << r << ", column " << c;
      }
    }
  }
}

TEST(RuntimeScenarios, S05_TagSemantics) {
  Tensor child;
  g_worker->run([&](Orchestrator& orch) {
    auto src = filled(orch, {8}, 1, 0);
    auto x = orch.host_tensor<float>({8});
    auto y = orch.host_tensor<float>({8});
    TaskHandle w1 = orch.submit(g_h.add_one, {in(src), out(x)}, 0);
    // Output after output: an edge here (the reference has none; without it the final value of
    // x would depend on timing).
    TaskHandle w2 = orch.submit(g_h.add_one, {in(src), out(x)}, 1);
    EXPECT_THAT(w2.depends_on(), ElementsAre(w1.id()));
    TaskHandle rw = orch.submit(g_h.add_one, {in(src), inout(x)}, 0);  // RAW/WAW after w2
    EXPECT_THAT(rw.depends_on(), ElementsAre(w2.id()));
    TaskHandle reader = orch.submit(g_h.add_one, {in(x), out(y)}, 1);
    TaskHandle writer = orch.submit(g_h.add_one, {in(src), out(x)}, 0);  // WAR edge
    EXPECT_THAT(writer.depends_on(), ElementsAre(rw.id(), reader.id()));
    TaskHandle free_rider =
        orch.submit(g_h.add_one, {no_dep(x), out(orch.host_tensor<float>({8}))}, 1);
    EXPECT_THAT(free_rider.depends_on(), IsEmpty());
    child = orch.alloc_child_tensor(0, {8}, DType::kF32);
    orch.copy_to(child, src);
  });
  g_worker->run([&](Orchestrator& orch) {  // no dependencies cross runs
    TaskHandle later = orch.copy_from(orch.host_tensor<float>({8}), child);
    EXPECT_THAT(later.depends_on(), IsEmpty());
    orch.free_child(child);
  });
}

TEST(RuntimeScenarios, S06_SubmitValidation) {
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({8});
    auto y = orch.host_tensor<float>({8});
    // Two written arguments over the same bytes; a read of bytes another argument writes.
    EXPECT_THROW(orch.submit(g_h.vector_add, {in(y), out(x), out(x.rows(2, 2))}, 0),
                 InvalidArgument);
    EXPECT_THROW(orch.submit(g_h.add_one, {in(x), out(x.rows(0, 4))}, 0), InvalidArgument);
    EXPECT_THROW(orch.submit(g_h.add_one, {in(x), out(y)}, -1), InvalidArgument);
    EXPECT_THROW(orch.submit(g_h.add_one, {in(x), out(y)}, orch.chips()), InvalidArgument);
    EXPECT_THROW(orch.submit(KernelHandle{}, {in(x), out(y)}, 0), InvalidArgument);
    EXPECT_THROW(orch.submit_sub(SubHandle{}, {in(x)}), InvalidArgument);
    // Groups: one argument list per worker, distinct workers.
    EXPECT_THROW(orch.submit_group(g_h.add_one, {{in(x), out(y)}}, {0, 1}), InvalidArgument);
    EXPECT_THROW(orch.submit_group(
                     g_h.add_one, {{in(x), out(y.rows(0, 4))}, {in(x), out(y.rows(4, 4))}}, {1, 1}),
                 InvalidArgument);
    // Child memory belongs to its chip: not to a sub-worker, not to another chip.
    auto child = orch.alloc_child_tensor(0, {8}, DType::kF32);
    EXPECT_THROW(orch.submit_sub(g_h.count, {in(child)}), InvalidArgument);
    EXPECT_THROW(orch.submit(g_h.add_one, {in(child), out(y)}, 1), InvalidArgument);
    orch.free_child(child);
  });
}

TEST(RuntimeScenarios, S07_FailurePropagation) {
  g_counter = 0;
  std::string error;
  bool second_submit_threw = false;
  float consumer_output = -1;
  try {
    g_worker->run([&](Orchestrator& orch) {
      auto x = orch.host_tensor<float>({4});
      auto y = orch.host_tensor<float>({4});
      TaskHandle failing = orch.submit_sub(g_h.boom, {out(x)});
      orch.submit(g_h.add_one, {in(x), out(y)}, 0);  // a consumer: never runs
      EXPECT_THROW(failing.wait(), RemoteFailure);
      try {
        orch.submit_sub(g_h.count, {});
      } catch (const RemoteFailure&) {
        second_submit_threw = true;
      }
      consumer_output = y.host<float>()[0];
    });
  } catch (const RemoteFailure& e) {
    error = e.what();
  }
  if (host()) {
    EXPECT_THAT(error, HasSubstr("sub-worker"));
    EXPECT_THAT(error, HasSubstr("sub 'boom'"));
    EXPECT_THAT(error, HasSubstr("boom"));
    EXPECT_TRUE(second_submit_threw) << "a submit after an observed failure must throw";
    EXPECT_EQ(g_counter.load(), 0);
  }
  g_worker->run([&](Orchestrator& orch) { orch.submit_sub(g_h.count, {}).wait(); });
  g_worker->run([&](Orchestrator& orch) { orch.submit_sub(g_h.count, {}).wait(); });
  if (host()) {
    EXPECT_EQ(g_counter.load(), 2) << "healthy runs after a failure";
  }
  if (host()) {
    EXPECT_EQ(consumer_output, 0.0f) << "a consumer of the failed task ran";
  }
  // A throwing orchestration body: that exception, synchronously; the task it never got to
  // submit does not run.
  struct Sentinel : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  bool caught = false;
  try {
    g_worker->run([&](Orchestrator&) { throw Sentinel("sentinel"); });
  } catch (const Sentinel&) {
    caught = true;
  }
  EXPECT_EQ(caught, host());
  if (host()) {
    EXPECT_EQ(g_counter.load(), 2);
  }
}

TEST(RuntimeScenarios, S09_GroupWaitsForABusyTargetAndLaunchesWhole) {
  std::vector<int64_t> busy, member0, member1, later;
  g_worker->run([&](Orchestrator& orch) {
    auto ms = [](int64_t v) { return scalar(v); };
    auto s0 = orch.host_tensor<int64_t>({2}), g0 = orch.host_tensor<int64_t>({2});
    auto g1 = orch.host_tensor<int64_t>({2}), s1 = orch.host_tensor<int64_t>({2});
    orch.submit(g_h.stamp, {ms(200), out(s0)}, 0);  // keeps chip 0 busy
    orch.submit_group(g_h.stamp, {{ms(20), out(g0)}, {ms(20), out(g1)}}, {0, 1});
    // Ready after the group: chip 1 is reserved for the group, so this waits for it.
    orch.submit(g_h.stamp, {ms(0), out(s1)}, 1).wait();
    orch.submit_sub(g_h.count, {in(g0), in(g1), in(s0)}).wait();
    busy.assign(s0.host<int64_t>().begin(), s0.host<int64_t>().end());
    member0.assign(g0.host<int64_t>().begin(), g0.host<int64_t>().end());
    member1.assign(g1.host<int64_t>().begin(), g1.host<int64_t>().end());
    later.assign(s1.host<int64_t>().begin(), s1.host<int64_t>().end());
  });
  if (host()) {
    EXPECT_GE(member0[0], busy[1]) << "member 0 started before its worker was free";
    EXPECT_GE(member1[0], busy[1]) << "member 1 launched without member 0 (partial launch)";
    EXPECT_GE(later[0], member1[1]) << "a single overtook the group that reserved its worker";
  }
}

TEST(RuntimeScenarios, S27_ChildMemoryPersistence) {
  std::vector<float> f1, f2;
  g_worker->run([&](Orchestrator& orch) {
    auto w_src = filled(orch, {4096}, 3, 0);
    auto a = filled(orch, {4096}, 2, 0);
    auto w = orch.alloc_child_tensor(0, {4096}, DType::kF32);
    orch.copy_to(w, w_src);
    auto out1 = orch.host_tensor<float>({4096}), out2 = orch.host_tensor<float>({4096});
    orch.submit(g_h.polynomial, {in(a), in(w), out(out1)}, 0);
    orch.submit(g_h.polynomial, {in(a), in(w), out(out2)}, 0).wait();
    f1.assign(out1.host<float>().begin(), out1.host<float>().end());
    f2.assign(out2.host<float>().begin(), out2.host<float>().end());
    orch.free_child(w);
  });
  if (host()) {
    EXPECT_THAT(f1, ::testing::Each(47.0f));
    EXPECT_EQ(f1, f2);
  }
}

TEST(RuntimeScenarios, S28_DeviceCopyBounds) {
  std::vector<int32_t> back_values;
  g_worker->run([&](Orchestrator& orch) {
    auto dev = orch.alloc_child_tensor(0, {16}, DType::kI32);  // 64 bytes
    auto src = orch.host_tensor<int32_t>({4});
    for (int i = 0; i < 4; ++i)
      src.host<int32_t>()[i] = 100 + i;
    orch.copy_to(dev.rows(8, 4), src);  // interior partial copy: base + 32 bytes
    auto back = orch.host_tensor<int32_t>({4});
    orch.copy_from(back, dev.rows(8, 4)).wait();
    back_values.assign(back.host<int32_t>().begin(), back.host<int32_t>().end());
    EXPECT_THROW(dev.rows(13, 4), InvalidArgument);                    // overrun
    EXPECT_THROW(dev.view({4}, {}, size_t{0} - 4), InvalidArgument);   // underrun
    EXPECT_THROW(orch.copy_to(dev.rows(0, 5), src), InvalidArgument);  // size mismatch
    auto other = orch.alloc_child_tensor(1, {16}, DType::kI32);
    EXPECT_THROW(orch.submit(g_h.configured, {out(other)}, 0), InvalidArgument);  // wrong worker
    EXPECT_THROW(orch.free_child(dev.rows(4, 4)), InvalidArgument);  // interior pointer
    orch.free_child(dev);
    EXPECT_THROW(orch.free_child(dev), InvalidArgument);  // double free
    EXPECT_THROW(orch.copy_to(dev, orch.host_tensor<int32_t>({16})), InvalidArgument);  // stale
    orch.free_child(other);
  });
  if (host()) {
    EXPECT_THAT(back_values, ElementsAre(100, 101, 102, 103));
  }
}

TEST(RuntimeScenarios, S29_PerTaskConfig) {
  std::vector<std::vector<int64_t>> seen(3);
  g_worker->run([&](Orchestrator& orch) {
    const CallConfig configs[3] = {{1, 1 << 20}, {8, 8 << 20}, {4, 0}};
    std::vector<Tensor> outs;
    for (const CallConfig& c : configs) {
      outs.push_back(orch.host_tensor<int64_t>({2}));
      orch.submit(g_h.configured, {out(outs.back())}, 0, {}, c);
    }
    orch.submit_sub(g_h.count, {in(outs[0]), in(outs[1]), in(outs[2])}).wait();
    for (int i = 0; i < 3; ++i)
      seen[i].assign(outs[i].host<int64_t>().begin(), outs[i].host<int64_t>().end());
    auto x = orch.host_tensor<int64_t>({2});
    EXPECT_THROW(orch.submit(g_h.configured, {out(x)}, 0, {}, {0, 0}), InvalidArgument);
    EXPECT_THROW(orch.submit(g_h.configured, {out(x)}, 0, {}, {257, 0}), InvalidArgument);
    EXPECT_THROW(orch.submit(g_h.configured, {out(x)}, 0, {}, {1, size_t{2} << 30}),
                 InvalidArgument);
  });
  if (host()) {
    EXPECT_THAT(seen[0], ElementsAre(1, 1 << 20));
    EXPECT_THAT(seen[1], ElementsAre(8, 8 << 20));
    EXPECT_THAT(seen[2], ElementsAre(4, 0));
  }
}

// WorkerOptions in main(): a 1 MiB host arena and a 300 ms alloc timeout.
TEST(RuntimeScenarios, S30_IntermediatesAreReclaimedAfterTheirLastConsumer) {
  std::vector<float> results;
  g_worker->run([&](Orchestrator& orch) {
    // 40 steps of a 256 KiB intermediate each: 10 MiB through a 1 MiB arena.
    auto seed = filled(orch, {65536}, 1, 0);
    auto result = orch.host_tensor<float>({40});
    for (int step = 0; step < 40; ++step) {
      Tensor tmp = orch.alloc<float>({65536});
      orch.submit(g_h.add_one, {in(seed), out(tmp)}, step % 2);                  // T1 writes
      orch.submit(g_h.add_one, {in(tmp.rows(0, 1)), out(result.rows(step, 1))},  // T2 reads
                  1 - step % 2);
    }  // each tmp's last copy goes here; its memory returns once T2 is done
    orch.submit_sub(g_h.count, {in(result)}).wait();
    results.assign(result.host<float>().begin(), result.host<float>().end());
    // Held intermediates are never reclaimed: the arena runs out, alloc times out.
    std::vector<Tensor> held;
    EXPECT_THROW(
        {
          for (int i = 0; i < 8; ++i)
            held.push_back(orch.alloc<float>({65536}));
        },
        Timeout);
  });
  if (host()) {
    EXPECT_THAT(results, ::testing::Each(3.0f));
  }
}

TEST(RuntimeScenarios, S34_TaskHandleWaitAndReplay) {
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({4}), y = orch.host_tensor<float>({4});
    TaskHandle slow = orch.submit(g_h.add_one, {in(x), out(y)}, 0);  // 50 ms
    EXPECT_FALSE(slow.done()) << "submit returned after the task finished";
    EXPECT_THROW(slow.wait(1ms), Timeout);  // does not cancel
    slow.wait();
    slow.wait();  // replays the same result
    EXPECT_TRUE(slow.done());
    EXPECT_EQ(y.host<float>()[0], 1.0f);
  });
  std::string first, second;
  try {
    g_worker->run([&](Orchestrator& orch) {
      TaskHandle failing = orch.submit_sub(g_h.boom, {});
      try {
        failing.wait();
      } catch (const RemoteFailure& e) {
        first = e.what();
      }
      try {
        failing.wait();
      } catch (const RemoteFailure& e) {
        second = e.what();
      }
    });
  } catch (const RemoteFailure&) {
  }
  if (host()) {
    EXPECT_THAT(first, HasSubstr("boom"));
    EXPECT_EQ(first, second);
  }
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow;
  using namespace rankflow::test;
  int failed = 0;
  {
    Worker worker(argc, argv,
                  {.num_sub_workers = 1,
                   .host_arena_bytes = size_t{1} << 20,
                   .alloc_timeout = std::chrono::milliseconds(300)});
    g_worker = &worker;
    g_h.vector_add = worker.register_kernel("vector_add", vector_add);
    g_h.add_one = worker.register_kernel("add_one", add_one);
    g_h.fill = worker.register_kernel("fill", fill);
    g_h.polynomial = worker.register_kernel("polynomial", polynomial);
    g_h.stamp = worker.register_kernel("stamp", stamp);
    g_h.configured = worker.register_kernel("configured", configured);
    g_h.check_sum = worker.register_sub("check_sum", check_sum);
    g_h.boom = worker.register_sub("boom", boom);
    g_h.count = worker.register_sub("count", count);
    failed = run_all_tests_on(worker);
    try {  // scenario 1: init after close
      worker.init();
      std::fprintf(stderr, "S01: init after close did not throw\n");
      failed = 1;
    } catch (const InvalidState&) {
    }
  }
  return failed;
}
