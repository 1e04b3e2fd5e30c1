// Registration after init() and unregister (issue 14, item 5), and the Worker's introspection
// (item 7), under mpirun (host + 1 or 2 chips, both transport settings):
// - a kernel or sub registered between runs runs in the next run, on every chip;
// - a registration the ranks disagree on is refused on every rank and kept on none;
// - inside a run, registration is InvalidState; an unregistered handle is InvalidArgument;
// - the 64-slot limit per target, and a freed slot counts again;
// - committed_child_memory follows alloc_child_tensor and free_child; live_domains the run's
//   domains.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "../common/expect_error.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

using ::testing::HasSubstr;

Worker* g_worker = nullptr;
constexpr int kRegisteredAtStart = 1;  // main() registers the kernel `noop` before init
KernelHandle g_noop;

void noop(TaskContext&) {}

// A sub task that tries what only the body's thread may do; scalar 0: where its errors go.
SubHandle g_from_task;
void from_task(TaskContext& t) {
  auto& errors = *t.scalar<std::vector<std::string>*>(0);
  const auto attempt = [&](auto&& fn) {
    try {
      fn();
      errors.push_back("no error");
    } catch (const InvalidState& e) {
      errors.push_back(e.what());
    }
  };
  attempt([] { g_worker->register_kernel("from_a_task", noop); });
  attempt([] { g_worker->create_buffer(64); });
  attempt([] { g_worker->live_domains(); });
}

// out[0] = scalar 0 + the chip worker id (or -1 on a sub-worker) * 1000.
void stamp(TaskContext& t) {
  t.output<int64_t>(0)[0] = t.scalar<int64_t>(0) + 1000 * t.worker();
}

// Runs `kernel` on every chip and `sub` on a sub-worker, each stamping 7; what the host read.
std::vector<int64_t> stamps_of(KernelHandle kernel, SubHandle sub) {
  std::vector<int64_t> got;
  g_worker->run([&](Orchestrator& orch) {
    std::vector<Tensor> results;
    std::vector<TaskHandle> tasks;
    for (int c = 0; c < orch.chips(); ++c) {
      results.push_back(orch.host_tensor<int64_t>({1}));
      tasks.push_back(orch.submit(kernel, {scalar(int64_t{7}), out(results.back())}, c));
    }
    results.push_back(orch.host_tensor<int64_t>({1}));
    tasks.push_back(orch.submit_sub(sub, {scalar(int64_t{7}), out(results.back())}));
    for (size_t i = 0; i < tasks.size(); ++i) {
      tasks[i].wait();
      got.push_back(results[i].host<int64_t>()[0]);
    }
  });
  return got;
}

TEST(LateRegistration, AKernelAndASubRegisteredAfterInitRunOnEveryChip) {
  const KernelHandle kernel = g_worker->register_kernel("late_stamp", stamp);
  const SubHandle sub = g_worker->register_sub("late_stamp_sub", stamp);
  const std::vector<int64_t> got = stamps_of(kernel, sub);
  if (g_worker->is_host()) {
    std::vector<int64_t> want;
    for (int c = 0; c < g_worker->chips(); ++c)
      want.push_back(7 + 1000 * c);
    want.push_back(7 - 1000);
    EXPECT_EQ(got, want);
  }
  g_worker->unregister(kernel);
  g_worker->unregister(sub);
}

TEST(LateRegistration, AnUnregisteredHandleIsRefused) {
  const KernelHandle kernel = g_worker->register_kernel("soon_gone", stamp);
  const SubHandle sub = g_worker->register_sub("soon_gone_sub", stamp);
  g_worker->unregister(kernel);
  g_worker->unregister(sub);
  g_worker->run([&](Orchestrator& orch) {
    auto r = orch.host_tensor<int64_t>({1});
    expect_error(ErrorCode::kInvalidArgument, "('soon_gone') names a kernel that was unregistered",
                 [&] {
                   orch.submit(kernel, {scalar(int64_t{1}), out(r)}, 0);
                 });
    expect_error(ErrorCode::kInvalidArgument,
                 "('soon_gone_sub') names a sub callable that was unregistered", [&] {
                   orch.submit_sub(sub, {scalar(int64_t{1}), out(r)});
                 });
  });
  expect_error(ErrorCode::kInvalidArgument,
               "unregister(kernel): handle " + std::to_string(kernel.index) +
                   " ('soon_gone') was unregistered already",
               [&] { g_worker->unregister(kernel); });
  expect_error(ErrorCode::kInvalidArgument,
               "unregister(sub): handle 12345 is not a registered sub callable",
               [&] { g_worker->unregister(SubHandle{12345}); });
  // A later registration of the same name is a new handle that works.
  const KernelHandle again = g_worker->register_kernel("soon_gone", stamp);
  EXPECT_NE(again.index, kernel.index);
  const SubHandle sub_again = g_worker->register_sub("soon_gone_sub", stamp);
  const std::vector<int64_t> got = stamps_of(again, sub_again);
  if (g_worker->is_host()) {
    EXPECT_EQ(got.front(), 7);
  }
  g_worker->unregister(again);
  g_worker->unregister(sub_again);
}

TEST(LateRegistration, InsideARunItIsInvalidState) {
  g_worker->run([&](Orchestrator&) {
    expect_error(ErrorCode::kInvalidState, "register_kernel: called inside a run",
                 [&] { g_worker->register_kernel("in_run", noop); });
    expect_error(ErrorCode::kInvalidState, "unregister(kernel): called inside a run",
                 [&] { g_worker->unregister(g_noop); });
  });
}

TEST(LateRegistration, ARegistrationTheRanksDisagreeOnIsKeptNowhere) {
  const std::string name = g_worker->rank() == 1 ? "odd_one" : "even_one";
  expect_error(ErrorCode::kInvalidArgument,
               "rank 1 registered different kernels or subs than rank 0",
               [&] { g_worker->register_kernel(name, stamp); });
  // Refused on one rank (an empty name there): refused everywhere, naming that rank.
  const std::string maybe_empty = g_worker->rank() == 1 ? "" : "named";
  expect_error(ErrorCode::kInvalidArgument,
               g_worker->rank() == 1 ? "register_kernel needs a name" : "rank 1 refused it",
               [&] { g_worker->register_kernel(maybe_empty, stamp); });
  // Nothing was kept: the next agreed registration runs on every chip.
  const KernelHandle kernel = g_worker->register_kernel("agreed", stamp);
  const SubHandle sub = g_worker->register_sub("agreed_sub", stamp);
  const std::vector<int64_t> got = stamps_of(kernel, sub);
  if (g_worker->is_host()) {
    EXPECT_EQ(got.front(), 7);
  }
  g_worker->unregister(kernel);
  g_worker->unregister(sub);
}

TEST(LateRegistration, SixtyFourLiveKernelsAtMostAndAFreedSlotCountsAgain) {
  std::vector<KernelHandle> kernels;
  for (int i = kRegisteredAtStart; i < 64; ++i)
    kernels.push_back(g_worker->register_kernel("slot" + std::to_string(i), noop));
  expect_error(ErrorCode::kInvalidArgument,
               "64 kernels are registered already, the most a worker holds",
               [&] { g_worker->register_kernel("one_too_many", noop); });
  g_worker->unregister(kernels.back());
  kernels.back() = g_worker->register_kernel("fits_again", stamp);
  const SubHandle sub = g_worker->register_sub("slot_sub", stamp);
  const std::vector<int64_t> got = stamps_of(kernels.back(), sub);
  if (g_worker->is_host()) {
    EXPECT_EQ(got.front(), 7);
  }
  for (const KernelHandle k : kernels)
    g_worker->unregister(k);
  g_worker->unregister(sub);
}

// A sub task is not the body's thread: registration and buffer calls from it are refused.
TEST(LateRegistration, FromATaskItIsInvalidState) {
  std::vector<std::string> errors;
  g_worker->run(
      [&](Orchestrator& orch) { orch.submit_sub(g_from_task, {scalar(&errors)}).wait(); });
  if (g_worker->is_host()) {
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_THAT(errors[0], HasSubstr("register_kernel: called inside a run"));
    EXPECT_THAT(errors[1], HasSubstr("create_buffer: called from a task"));
    EXPECT_THAT(errors[2], HasSubstr("live_domains: called from a task"));
  }
}

// Registered by CTest with RANKFLOW_TIMEOUT_S=1 (runtime.late_registration.heartbeat): the
// host works longer than the chips' wait limit between runs, then registers. The chips, waiting
// in the agreement, keep hearing the host and do not give up.
TEST(LateRegistration, AfterTheHostWorkedLongBetweenRuns) {
  const char* limit = std::getenv("RANKFLOW_TIMEOUT_S");
  if (limit == nullptr || std::atof(limit) > 2) GTEST_SKIP() << "needs RANKFLOW_TIMEOUT_S <= 2";
  if (g_worker->is_host()) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const KernelHandle kernel = g_worker->register_kernel("after_a_nap", stamp);
  const SubHandle sub = g_worker->register_sub("after_a_nap_sub", stamp);
  const std::vector<int64_t> got = stamps_of(kernel, sub);
  if (g_worker->is_host()) {
    EXPECT_EQ(got.front(), 7);
  }
  g_worker->unregister(kernel);
  g_worker->unregister(sub);
}

TEST(Introspection, CommittedChildMemoryFollowsAllocAndFree) {
  if (!g_worker->is_host()) {
    expect_error(ErrorCode::kInvalidState, "committed_child_memory: the host keeps this record",
                 [&] { g_worker->committed_child_memory(0); });
    g_worker->run([](Orchestrator&) {});
    g_worker->run([](Orchestrator&) {});
    return;
  }
  const int last = g_worker->chips() - 1;
  const size_t before = g_worker->committed_child_memory(last);
  Tensor kept;
  g_worker->run([&](Orchestrator& orch) {
    kept = orch.alloc_child_tensor(last, {1024}, DType::kF32);
    const Tensor gone = orch.alloc_child_tensor(last, {256}, DType::kF32);
    EXPECT_EQ(g_worker->committed_child_memory(last), before + 4096 + 1024);
    if (last > 0) {
      EXPECT_EQ(g_worker->committed_child_memory(0), 0u);
    }
    orch.free_child(gone);
    // Freed in this run: still held until the run ends.
    EXPECT_EQ(g_worker->committed_child_memory(last), before + 4096 + 1024);
  });
  EXPECT_EQ(g_worker->committed_child_memory(last), before + 4096);
  g_worker->run([&](Orchestrator& orch) { orch.free_child(kept); });
  EXPECT_EQ(g_worker->committed_child_memory(last), before);
  expect_error(
      ErrorCode::kInvalidArgument,
      "committed_child_memory: worker " + std::to_string(g_worker->chips()) + " does not exist",
      [&] { g_worker->committed_child_memory(g_worker->chips()); });
}

TEST(Introspection, LiveDomainsAreTheRunsUnreleasedDomains) {
  if (!g_worker->is_host()) {
    expect_error(ErrorCode::kInvalidState, "live_domains: the host keeps this record",
                 [&] { g_worker->live_domains(); });
  } else {
    EXPECT_TRUE(g_worker->live_domains().empty());
  }
  std::vector<std::string> during, after_release;
  std::vector<int> workers;
  g_worker->run([&](Orchestrator& orch) {
    std::vector<int> all(orch.chips());
    for (int c = 0; c < orch.chips(); ++c)
      all[c] = c;
    Domain a = orch.allocate_domain("alpha", all, 4096);
    orch.allocate_domain("beta", {orch.chips() - 1}, 4096);
    for (const auto& [name, d] : g_worker->live_domains())
      during.push_back(name);
    workers = g_worker->live_domains().at("alpha").workers();
    a.release();
    for (const auto& [name, d] : g_worker->live_domains())
      after_release.push_back(name);
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(during, (std::vector<std::string>{"alpha", "beta"}));
    EXPECT_EQ(static_cast<int>(workers.size()), g_worker->chips());
    EXPECT_EQ(after_release, (std::vector<std::string>{"beta"}));
    EXPECT_TRUE(g_worker->live_domains().empty());
  }
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 1});
  g_worker = &worker;
  g_noop = worker.register_kernel("noop", noop);
  g_from_task = worker.register_sub("from_task", from_task);
  return run_all_tests_on(worker);
}
