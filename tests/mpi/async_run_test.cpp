// Asynchronous runs and scopes (issue 14, items 3 and 4) under mpirun (host + 1 or 2 chips, both
// transport settings). Worker::submit returns once the body has built the run's graph, while its
// tasks execute: the next body runs meanwhile, runs are admitted up to the admission depth and
// execute in submission order, a RunHandle's waits all see one result, a timed wait does not
// cancel, and a body that throws cancels the run's unstarted tasks. Scopes reclaim their
// intermediates once the tasks that named them are done. The proofs of overlap use sub tasks
// that wait for the host's own threads (a gate), so they hold on any machine, however slow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common/expect_error.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;

Worker* g_worker = nullptr;
constexpr size_t kArenaBytes = size_t{1} << 20;
KernelHandle g_add;   // inout f32 += scalar 0
KernelHandle g_copy;  // out = in (f32)
SubHandle g_gate;     // waits (up to 20 s) until g_gate_open, then out[0] = 1
SubHandle g_count;    // ++g_counted
SubHandle g_hold;     // waits (up to 20 s) until g_hold_open, then out[0] = 1
std::atomic<bool> g_gate_open{false};
std::atomic<bool> g_hold_open{false};
std::atomic<int> g_counted{0};

void add(TaskContext& t) {
  const float delta = t.scalar<float>(0);
  for (float& x : t.output<float>(0))
    x += delta;
}

void copy(TaskContext& t) {
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  std::copy(in.begin(), in.end(), out.begin());
}

void wait_until_open(TaskContext& t, const std::atomic<bool>& open, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!open.load()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(std::string("the ") + what + " never opened");
    std::this_thread::sleep_for(1ms);
  }
  t.output<float>(0)[0] = 1;
}

void gate(TaskContext& t) {
  wait_until_open(t, g_gate_open, "gate");
}

void hold(TaskContext& t) {
  wait_until_open(t, g_hold_open, "hold");
}

void count(TaskContext&) {
  ++g_counted;
}

struct Sentinel : std::runtime_error {
  Sentinel() : std::runtime_error("sentinel from the body") {}
};

// Run 1 holds a sub task until run 2's body opens the gate: run 2's body therefore runs while
// run 1 executes (were submit to wait for run 1, the gate would never open and run 1 would
// fail).
TEST(AsyncRun, TheNextBodyRunsWhileTheRunBeforeExecutes) {
  g_gate_open = false;
  bool first_done_in_second_body = true;
  RunHandle first = g_worker->submit([&](Orchestrator& orch) {
    auto flag = orch.host_tensor<float>({1});
    orch.submit_sub(g_gate, {out(flag)});
  });
  const bool done_after_submit = first.done();
  RunHandle second = g_worker->submit([&](Orchestrator& orch) {
    first_done_in_second_body = first.done();
    g_gate_open = true;
    orch.submit_sub(g_count, {});
  });
  first.wait();
  second.wait();
  EXPECT_TRUE(first.done());
  EXPECT_TRUE(second.done());
  if (g_worker->is_host()) {
    EXPECT_FALSE(done_after_submit);
    EXPECT_FALSE(first_done_in_second_body);
    EXPECT_EQ(second.number(), first.number() + 1);
  }
}

// With the default depth of 2, a third submission ends the oldest run before its body runs,
// and only the oldest: the second run is held until the third body lets it go (were the third
// submission to wait for both, the hold would never open and the second run would fail).
TEST(AsyncRun, ASubmissionBeyondTheDepthWaitsForTheOldestBeforeItsBody) {
  g_gate_open = false;
  g_hold_open = false;
  bool first_done_in_third_body = false, second_done_in_third_body = true;
  RunHandle first = g_worker->submit(
      [&](Orchestrator& orch) { orch.submit_sub(g_gate, {out(orch.host_tensor<float>({1}))}); });
  RunHandle second = g_worker->submit([&](Orchestrator& orch) {
    g_gate_open = true;
    orch.submit_sub(g_hold, {out(orch.host_tensor<float>({1}))});
  });
  RunHandle third = g_worker->submit([&](Orchestrator&) {
    first_done_in_third_body = first.done();
    second_done_in_third_body = second.done();
    g_hold_open = true;
  });
  third.wait();
  EXPECT_TRUE(first.done() && second.done() && third.done());
  if (g_worker->is_host()) {
    EXPECT_TRUE(first_done_in_third_body);
    EXPECT_FALSE(second_done_in_third_body);  // one run may still be in flight besides it
  }
}

// Runs depend on nothing across runs, yet each sees the last one's writes to a persistent
// buffer: runs execute one after another in submission order.
TEST(AsyncRun, RunsExecuteInSubmissionOrder) {
  constexpr size_t kN = 1024;
  const int chips = g_worker->chips();
  HostBuffer buffer = g_worker->create_buffer(kN * sizeof(float));
  std::vector<RunHandle> runs;
  std::vector<Tensor> seen;  // what each run read before adding (host tensors die with the run)
  HostBuffer readings = g_worker->create_buffer(8 * kN * sizeof(float));
  for (int k = 0; k < 8; ++k) {
    runs.push_back(g_worker->submit([&, k](Orchestrator& orch) {
      const Tensor whole = buffer.tensor<float>({kN});
      const Tensor reading = readings.tensor<float>({kN}, k * kN * sizeof(float));
      orch.submit(g_copy, {in(whole), out(reading)}, k % chips);
      orch.submit(g_add, {scalar(float(k + 1)), inout(whole)}, (k + 1) % chips);
    }));
  }
  for (RunHandle& r : runs)
    r.wait();
  if (g_worker->is_host()) {
    auto values = readings.as<float>();
    float expected = 0;
    for (int k = 0; k < 8; ++k) {
      ASSERT_EQ(values[k * kN], expected) << "run " << k + 1 << " read too early or too late";
      ASSERT_EQ(values[k * kN + kN - 1], expected) << "run " << k + 1;
      expected += static_cast<float>(k + 1);
    }
    EXPECT_EQ(buffer.as<float>()[0], expected);
  }
  g_worker->release_buffer(readings);
  g_worker->release_buffer(buffer);
}

TEST(AsyncRun, EveryWaitSeesTheSameFailure) {
  RunHandle failed = g_worker->submit([&](Orchestrator& orch) {
    orch.submit(g_add, {scalar(1.0f), inout(orch.host_tensor<float>({4}))}, 0);
    orch.submit(g_add, {scalar(1.0f)}, 0);  // argument 0 is missing: the kernel throws
  });
  if (!g_worker->is_host()) return failed.wait();  // a chip's handle is done and clean
  std::string first, second;
  try {
    failed.wait();
  } catch (const RemoteFailure& e) {
    first = e.what();
  }
  try {
    failed.wait(1s);
  } catch (const RemoteFailure& e) {
    second = e.what();
  }
  EXPECT_THAT(first, ::testing::HasSubstr("task argument 0 does not exist"));
  EXPECT_EQ(first, second);
  EXPECT_TRUE(failed.done());
}

// A wait that times out leaves the run running: it finishes, its tasks not cancelled.
TEST(AsyncRun, ATimedWaitDoesNotCancel) {
  g_gate_open = false;
  g_counted = 0;
  RunHandle run = g_worker->submit([&](Orchestrator& orch) {
    auto flag = orch.host_tensor<float>({1});
    orch.submit_sub(g_gate, {out(flag)});
    orch.submit_sub(g_count, {in(flag)});
  });
  if (g_worker->is_host()) {
    expect_error(ErrorCode::kTimeout,
                 "RunHandle::wait: run " + std::to_string(run.number()) + " did not end within",
                 [&] { run.wait(50ms); });
    EXPECT_FALSE(run.done());
    expect_error(ErrorCode::kInvalidArgument, "RunHandle::wait: a negative timeout",
                 [&] { run.wait(-1ms); });
  }
  g_gate_open = true;
  run.wait();
  EXPECT_TRUE(run.done());
  if (g_worker->is_host()) {
    EXPECT_EQ(g_counted.load(), 1);
  }
}

// The body throws after submitting: what had started finishes, what had not (the task behind
// the gate) never starts, and the body's own exception (its type kept) reaches the caller.
TEST(AsyncRun, ABodyThatThrowsCancelsTheUnstartedTasks) {
  g_gate_open = false;
  g_counted = 0;
  TaskHandle gated, after_gate;
  std::thread opener;  // opens the gate once the task behind it was cancelled
  const auto body = [&](Orchestrator& orch) {
    auto flag = orch.host_tensor<float>({1});
    gated = orch.submit_sub(g_gate, {out(flag)});
    after_gate = orch.submit_sub(g_count, {in(flag)});  // waits for the gate: never starts
    orch.submit(g_add, {scalar(1.0f), inout(orch.host_tensor<float>({4}))}, 0);
    opener = std::thread([behind = after_gate] {
      while (!behind.done())
        std::this_thread::sleep_for(1ms);
      g_gate_open = true;  // a gate that started finishes now; one that did not was cancelled
    });
    throw Sentinel();
  };
  if (!g_worker->is_host()) {
    g_worker->submit(body).wait();  // a chip serves the run; the body is the host's
    return;
  }
  bool caught = false;
  try {
    g_worker->submit(body);
  } catch (const Sentinel&) {
    caught = true;
  }
  opener.join();
  EXPECT_TRUE(caught) << "the body's exception lost its type";
  EXPECT_EQ(g_counted.load(), 0) << "a task that had not started ran after the body threw";
  ASSERT_TRUE(after_gate.done());
  expect_error(ErrorCode::kRemoteFailure, "cancelled: the orchestration body threw: sentinel",
               [&] { after_gate.wait(); });
  // The worker goes on: the next run is clean.
  g_worker->run([&](Orchestrator& orch) { orch.submit_sub(g_count, {}); });
  EXPECT_EQ(g_counted.load(), 1);
}

// A body that waits for its own task ends the runs before it first (else it would wait for a
// task that cannot start).
TEST(AsyncRun, ABodyWaitingForItsOwnTaskEndsTheEarlierRunsFirst) {
  g_gate_open = false;
  RunHandle first = g_worker->submit(
      [&](Orchestrator& orch) { orch.submit_sub(g_gate, {out(orch.host_tensor<float>({1}))}); });
  bool first_done = false;
  float value = 0;
  RunHandle second = g_worker->submit([&](Orchestrator& orch) {
    g_gate_open = true;
    auto x = orch.host_tensor<float>({4});
    TaskHandle added = orch.submit(g_add, {scalar(2.5f), inout(x)}, 0);
    added.wait();
    first_done = first.done();
    value = x.host<float>()[0];
  });
  second.wait();
  if (g_worker->is_host()) {
    EXPECT_TRUE(first_done);
    EXPECT_EQ(value, 2.5f);
  }
}

// done() alone ends a run whose tasks are all done: polling it needs no wait.
TEST(AsyncRun, DoneTurnsTrueWithoutAWait) {
  RunHandle run = g_worker->submit([&](Orchestrator& orch) { orch.submit_sub(g_count, {}); });
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!run.done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(run.done());
  run.wait();
}

// A handle kept from a body that was held behind an earlier run: waiting on it after submit
// returned ends the earlier run first.
TEST(AsyncRun, WaitingOnAKeptHandleOfAHeldRunEndsTheRunsBeforeIt) {
  g_gate_open = false;
  g_counted = 0;
  RunHandle first = g_worker->submit(
      [&](Orchestrator& orch) { orch.submit_sub(g_gate, {out(orch.host_tensor<float>({1}))}); });
  TaskHandle kept;
  RunHandle second =
      g_worker->submit([&](Orchestrator& orch) { kept = orch.submit_sub(g_count, {}); });
  g_gate_open = true;
  if (g_worker->is_host()) {
    kept.wait();
    EXPECT_TRUE(first.done());
    EXPECT_EQ(g_counted.load(), 1);
  }
  second.wait();
}

// An intermediate of a scope goes back to the arena once its users are done, even while the
// body keeps its Tensor: 8 steps of half the arena each fit only if every step's memory returns.
TEST(Scope, IntermediatesAreReclaimedAtTheScopesEnd) {
  constexpr size_t kHalf = kArenaBytes / 2 / sizeof(float);
  std::vector<Tensor> kept;
  g_worker->run([&](Orchestrator& orch) {
    for (int step = 0; step < 8; ++step) {
      auto s = orch.scope();
      Tensor tmp = orch.alloc<float>({kHalf});
      orch.submit(g_add, {scalar(1.0f), inout(tmp)}, step % orch.chips());
      kept.push_back(tmp);  // without the scope, this copy would hold the memory
    }
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(kept.size(), 8u);
  }
}

TEST(Scope, AnIntermediateIsDeadAfterItsScope) {
  g_worker->run([&](Orchestrator& orch) {
    Tensor tmp;
    {
      auto s = orch.scope();
      tmp = orch.alloc<float>({16});
      orch.submit(g_add, {scalar(1.0f), inout(tmp)}, 0);
    }
    if (g_worker->is_host()) {
      expect_error(ErrorCode::kInvalidArgument, "is not a tensor of this run", [&] {
        orch.submit(g_add, {scalar(1.0f), inout(tmp)}, 0);
      });
    }
  });
}

// Nested scopes: the inner one's end leaves the outer one's intermediates alive.
TEST(Scope, NestedScopesEndInnermostFirst) {
  constexpr size_t kN = 64;
  float outer_value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto result = orch.host_tensor<float>({kN});
    orch.scope_begin();
    Tensor outer = orch.alloc<float>({kN});
    orch.submit(g_copy, {in(result), out(outer)}, 0);
    {
      auto inner_scope = orch.scope();
      Tensor inner = orch.alloc<float>({kN});
      orch.submit(g_copy, {in(outer), out(inner)}, 0);
      orch.submit(g_add, {scalar(3.0f), inout(inner)}, 0);
      orch.submit(g_copy, {in(inner), out(outer)}, 0);
    }
    orch.submit(g_add, {scalar(1.0f), inout(outer)}, 0);  // the outer one is still alive
    orch.submit(g_copy, {in(outer), out(result)}, 0);
    orch.scope_end();
    TaskHandle last = orch.submit(g_add, {scalar(0.0f), inout(result)}, 0);
    last.wait();
    outer_value = result.host<float>()[kN - 1];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(outer_value, 4.0f);
  }
}

// A Scope ends its own scope only: one the body ended by hand leaves the enclosing one open.
TEST(Scope, AScopeEndedByHandLeavesTheEnclosingOneToItsOwner) {
  g_worker->run([&](Orchestrator& orch) {
    orch.scope_begin();
    Tensor outer = orch.alloc<float>({16});
    {
      auto inner = orch.scope();
      orch.scope_end();                                   // ends `inner`'s scope by hand
    }                                                     // `inner` has nothing left to end
    orch.submit(g_add, {scalar(1.0f), inout(outer)}, 0);  // the outer scope is still open
    orch.scope_end();
  });
}

TEST(Scope, BadScopesAreInvalidState) {
  g_worker->run([&](Orchestrator& orch) {
    if (!g_worker->is_host()) return;
    expect_error(ErrorCode::kInvalidState, "scope_end: no scope is open",
                 [&] { orch.scope_end(); });
    for (int i = 0; i < 64; ++i)
      orch.scope_begin();
    expect_error(ErrorCode::kInvalidState, "64 scopes are open already",
                 [&] { orch.scope_begin(); });
    // Scopes left open end with the run.
  });
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 2, .host_arena_bytes = kArenaBytes});
  g_worker = &worker;
  g_add = worker.register_kernel("add", add);
  g_copy = worker.register_kernel("copy", copy);
  g_gate = worker.register_sub("gate", gate);
  g_count = worker.register_sub("count", count);
  g_hold = worker.register_sub("hold", hold);
  return run_all_tests_on(worker) == 0 ? 0 : 1;
}
