// Domain buffers as tensors (issue 14, item 8) under mpirun (host + 2 chips, both transport
// settings): Domain::buffer_tensor names one member's copy of a named buffer; tasks on that
// member read and write it in place in the domain's window, copies move data between it and the
// host, and dependencies on it are inferred as for any tensor. Bad uses are refused at submit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/expect_error.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

Worker* g_worker = nullptr;
KernelHandle g_fill;         // out f32 = scalar 0 (f32)
KernelHandle g_read_window;  // tensor 0 in, domain 1, tensor 2 out: out = window's "x"
KernelHandle g_peer_get;     // domain 0; member 1 gets member 0's "x" into tensor 1
KernelHandle g_noop;

constexpr size_t kN = 64;  // floats in buffer "x"

void fill(TaskContext& t) {
  const float value = t.scalar<float>(0);
  for (float& x : t.output<float>(0))
    x = value;
}

// Reads the window through the domain, not through the tensor: both must be the same memory.
void read_window(TaskContext& t) {
  const auto through_tensor = t.input<float>(0);
  const auto window = t.domain(1).buffer_as<float>("x");
  if (through_tensor.data() != window.data()) {
    throw std::runtime_error("the buffer's tensor is not the member's window");
  }
  std::copy(window.begin(), window.end(), t.output<float>(2).begin());
}

void peer_get(TaskContext& t) {
  DomainContext& d = t.domain(0);
  if (d.rank() != 1) return;
  auto out = t.output<float>(1);
  d.team().get(0, d.team().offset("x"), out.data(), out.size_bytes());
  d.team().flush();
}

void noop(TaskContext&) {}

Domain make_domain(Orchestrator& orch) {
  return orch.allocate_domain("d", {0, 1}, 4096, {{"x", kN * sizeof(float)}, {"odd", 10}});
}

TEST(DomainBuffer, ATaskReadingWhatAKernelWroteThereWaitsForIt) {
  std::vector<float> seen(2 * kN);
  std::vector<uint64_t> reader_deps[2];
  uint64_t writer_ids[2] = {};
  g_worker->run([&](Orchestrator& orch) {
    Domain d = make_domain(orch);
    std::vector<Tensor> results;
    for (int w = 0; w < 2; ++w) {
      const Tensor x = d.buffer_tensor<float>("x", w);
      writer_ids[w] = orch.submit(g_fill, {out(x), scalar(float(w + 1))}, w).id();
      results.push_back(orch.host_tensor<float>({kN}));
      TaskHandle reader = orch.submit(g_read_window, {in(x), domain_arg(d), out(results[w])}, w);
      reader.wait();
      reader_deps[w] = reader.depends_on();
    }
    for (int w = 0; w < 2; ++w) {
      auto r = results[w].host<float>();
      std::copy(r.begin(), r.end(), seen.begin() + w * kN);
    }
  });
  if (!g_worker->is_host()) return;
  for (int w = 0; w < 2; ++w) {
    EXPECT_THAT(reader_deps[w], ::testing::Contains(writer_ids[w])) << "member " << w;
    for (size_t i = 0; i < kN; ++i)
      ASSERT_EQ(seen[w * kN + i], float(w + 1)) << "member " << w << ", element " << i;
  }
}

TEST(DomainBuffer, CopiesMoveDataBetweenTheHostAndAMembersBuffer) {
  std::vector<float> back(kN);
  uint64_t copy_in = 0;
  std::vector<uint64_t> copy_out_deps;
  g_worker->run([&](Orchestrator& orch) {
    Domain d = make_domain(orch);
    auto source = orch.host_tensor<float>({kN});
    for (size_t i = 0; i < kN; ++i)
      source.host<float>()[i] = static_cast<float>(i) * 0.5f;
    const Tensor x1 = d.buffer_tensor<float>("x", 1);
    copy_in = orch.copy_to(x1, source).id();
    auto result = orch.host_tensor<float>({kN});
    TaskHandle out_copy = orch.copy_from(result, x1);
    out_copy.wait();
    copy_out_deps = out_copy.depends_on();
    auto r = result.host<float>();
    std::copy(r.begin(), r.end(), back.begin());
  });
  if (!g_worker->is_host()) return;
  EXPECT_THAT(copy_out_deps, ::testing::Contains(copy_in));
  for (size_t i = 0; i < kN; ++i)
    ASSERT_EQ(back[i], static_cast<float>(i) * 0.5f) << "element " << i;
}

// The tensor is the symmetric window itself: a peer's get of the same buffer sees what a task
// wrote through member 0's tensor.
TEST(DomainBuffer, APeerSeesWhatATaskWroteThroughTheTensor) {
  std::vector<float> got(kN);
  g_worker->run([&](Orchestrator& orch) {
    Domain d = make_domain(orch);
    const Tensor x0 = d.buffer_tensor<float>("x", 0);
    orch.submit(g_fill, {out(x0), scalar(7.0f)}, 0);
    auto result = orch.host_tensor<float>({kN});
    // Member 0 names x0 (so the group waits for the fill); member 1 gets it from member 0.
    TaskHandle group = orch.submit_group(
        g_peer_get, {{domain_arg(d), in(x0)}, {domain_arg(d), out(result)}}, {0, 1});
    group.wait();
    auto r = result.host<float>();
    std::copy(r.begin(), r.end(), got.begin());
  });
  if (!g_worker->is_host()) return;
  for (size_t i = 0; i < kN; ++i)
    ASSERT_EQ(got[i], 7.0f) << "element " << i;
}

TEST(DomainBuffer, BadUsesAreRefused) {
  Tensor stale;
  g_worker->run([&](Orchestrator& orch) {
    Domain d = make_domain(orch);
    stale = d.buffer_tensor<float>("x", 0);
    expect_error(ErrorCode::kInvalidArgument, "domain 'd' has no buffer 'y'",
                 [&] { d.buffer_tensor("y", 0); });
    expect_error(ErrorCode::kInvalidArgument, "chip worker 5 is not a member",
                 [&] { d.buffer_tensor("x", 5); });
    expect_error(ErrorCode::kInvalidArgument,
                 "buffer 'odd' of 10 bytes does not hold whole f32 elements",
                 [&] { d.buffer_tensor<float>("odd", 0); });
    const Tensor x0 = d.buffer_tensor<float>("x", 0);
    expect_error(ErrorCode::kInvalidArgument,
                 "task 'noop': argument 0 is chip worker 0's buffer of domain 'd', but the task "
                 "runs on chip worker 1",
                 [&] { orch.submit(g_noop, {in(x0)}, 1); });
    expect_error(ErrorCode::kInvalidArgument,
                 "argument 0 is chip worker 0's buffer of domain 'd', but the task runs on a host "
                 "sub-worker",
                 [&] { orch.submit_sub(SubHandle{0}, {in(x0)}); });
  });
  g_worker->run([&](Orchestrator& orch) {
    expect_error(ErrorCode::kInvalidArgument, "is a buffer of a domain that was released",
                 [&] { orch.submit(g_noop, {in(stale)}, 0); });
    Domain d = make_domain(orch);
    d.release();
    expect_error(ErrorCode::kInvalidState, "Domain::buffer_tensor: domain 'd' was released",
                 [&] { d.buffer_tensor("x", 0); });
  });
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 1});
  g_worker = &worker;
  g_fill = worker.register_kernel("fill", fill);
  g_read_window = worker.register_kernel("read_window", read_window);
  g_peer_get = worker.register_kernel("peer_get", peer_get);
  g_noop = worker.register_kernel("noop", noop);
  worker.register_sub("noop_sub", noop);
  return run_all_tests_on(worker) == 0 ? 0 : 1;
}
