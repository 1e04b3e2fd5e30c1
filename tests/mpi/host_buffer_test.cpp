// Persistent host buffers (issue 14, item 2) under mpirun (host + 1 or 2 chips, both transport
// settings): Worker::create_buffer's memory lives across runs, the host reads and writes it in
// place between runs, tasks name views of it with dependencies as for any tensor, and
// release_buffer refuses while a run in flight names it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/expect_error.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

Worker* g_worker = nullptr;
int* g_argc = nullptr;
char*** g_argv = nullptr;
constexpr size_t kArenaBytes = size_t{4} << 20;
KernelHandle g_add;   // inout f32 view += scalar 0 (f32)
KernelHandle g_copy;  // out = in (f32)

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

TEST(HostBuffer, ContentsLiveAcrossRunsAndTheHostWritesThemInPlace) {
  constexpr size_t kN = 4096;  // floats per chip
  const int chips = g_worker->chips();
  HostBuffer buffer = g_worker->create_buffer(kN * sizeof(float) * chips);
  if (g_worker->is_host()) {
    auto values = buffer.as<float>();
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float x) { return x == 0; }));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(i);
  }
  for (int step = 1; step <= 3; ++step) {
    g_worker->run([&](Orchestrator& orch) {
      // Host tensors of the run around the buffer: they go at its end, the buffer stays.
      auto scratch = orch.host_tensor<float>({kN});
      for (int c = 0; c < chips; ++c) {
        const Tensor part = buffer.tensor<float>({kN}, c * kN * sizeof(float));
        orch.submit(g_add, {scalar(float(step)), inout(part)}, c);
      }
      orch.submit(g_copy, {in(buffer.tensor<float>({kN})), out(scratch)}, 0);
    });
    if (g_worker->is_host()) {
      // Between runs the host reads what the chips wrote, and writes the next input in place.
      auto values = buffer.as<float>();
      const float added = static_cast<float>(step * (step + 1) / 2);
      for (size_t i = 0; i < values.size(); i += 511) {
        ASSERT_EQ(values[i], static_cast<float>(i) + added) << "element " << i << ", step " << step;
      }
    }
  }
  g_worker->release_buffer(buffer);
}

TEST(HostBuffer, DependenciesOnItsViewsAreInferredAsForAnyTensor) {
  HostBuffer buffer = g_worker->create_buffer(2 * 1024 * sizeof(float));
  std::vector<uint64_t> reader_deps, other_deps;
  uint64_t writer = 0;
  float read_back = 0;
  g_worker->run([&](Orchestrator& orch) {
    const Tensor low = buffer.tensor<float>({1024});
    const Tensor high = buffer.tensor<float>({1024}, 1024 * sizeof(float));
    auto result = orch.host_tensor<float>({1024});
    TaskHandle w = orch.submit(g_add, {scalar(5.0f), inout(low)}, 0);
    TaskHandle r = orch.submit(g_copy, {in(low), out(result)}, orch.chips() - 1);
    TaskHandle o = orch.submit(g_add, {scalar(1.0f), inout(high)}, orch.chips() - 1);
    r.wait();
    writer = w.id();
    reader_deps = r.depends_on();
    other_deps = o.depends_on();
    read_back = result.host<float>()[7];
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(reader_deps, std::vector<uint64_t>{writer});  // read after write
    EXPECT_TRUE(other_deps.empty());                        // disjoint bytes: no edge
    EXPECT_EQ(read_back, 5.0f);
  }
  g_worker->release_buffer(buffer);
}

TEST(HostBuffer, ReleaseWhileARunInFlightNamesItIsInvalidState) {
  HostBuffer buffer = g_worker->create_buffer(4096);
  HostBuffer other = g_worker->create_buffer(4096);
  Tensor stale;
  g_worker->run([&](Orchestrator& orch) {
    stale = buffer.tensor<float>({16});
    orch.submit(g_add, {scalar(1.0f), inout(stale)}, 0).wait();
    // Its task is done, but the run that named it is still in flight.
    expect_error(ErrorCode::kInvalidState, "names this buffer and is still in flight",
                 [&] { g_worker->release_buffer(buffer); });
    // A buffer this run does not name may go now.
    g_worker->release_buffer(other);
  });
  g_worker->release_buffer(buffer);  // after the run: fine
  EXPECT_TRUE(buffer.released());
  if (g_worker->is_host()) {
    expect_error(ErrorCode::kInvalidState, "HostBuffer::data: the buffer was released",
                 [&] { (void)buffer.data(); });
    expect_error(ErrorCode::kInvalidState, "HostBuffer::tensor: the buffer was released",
                 [&] { (void)buffer.tensor<float>({1}); });
    expect_error(ErrorCode::kInvalidArgument, "release_buffer: the buffer was released already",
                 [&] { g_worker->release_buffer(buffer); });
  }
  g_worker->run([&](Orchestrator& orch) {
    expect_error(ErrorCode::kInvalidArgument, "argument 0 is not a tensor of this run", [&] {
      orch.submit(g_add, {scalar(1.0f), inout(stale)}, 0);
    });
  });
}

// Host tensors and intermediates of many runs come and go around a live buffer: the arena gives
// back exactly their memory each run (a leak would exhaust it, a double release would hand the
// buffer's bytes to a tensor and the zero-fill would clear them).
TEST(HostBuffer, RunMemoryComesAndGoesAroundIt) {
  HostBuffer buffer = g_worker->create_buffer(kArenaBytes / 4);
  if (g_worker->is_host()) std::fill_n(buffer.as<uint8_t>().data(), buffer.bytes(), uint8_t{0xAB});
  for (int run = 0; run < 12; ++run) {
    g_worker->run([&](Orchestrator& orch) {
      auto big = orch.host_tensor<float>({kArenaBytes / 2 / sizeof(float)});
      for (int i = 0; i < 4; ++i) {
        Tensor scratch = orch.alloc<float>({kArenaBytes / 64 / sizeof(float)});
        orch.submit(g_add, {scalar(1.0f), inout(scratch)}, 0).wait();
      }  // each intermediate's memory comes back during the run
      orch.submit(g_add, {scalar(1.0f), inout(big.rows(0, 16))}, 0);
    });
  }
  if (g_worker->is_host()) {
    auto bytes = buffer.as<uint8_t>();
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0xAB; }));
  }
  // What the runs used is free again: all but the buffer fits.
  g_worker->run([&](Orchestrator& orch) {
    (void)orch.host_tensor<uint8_t>({kArenaBytes - kArenaBytes / 4});
  });
  g_worker->release_buffer(buffer);
}

TEST(HostBuffer, BadInputIsAnError) {
  expect_error(ErrorCode::kInvalidState, "HostBuffer::data: an empty handle",
               [] { (void)HostBuffer().data(); });
  // Checked alike on every rank.
  expect_error(ErrorCode::kInvalidArgument, "create_buffer: a buffer of 0 bytes",
               [] { g_worker->create_buffer(0); });
  expect_error(ErrorCode::kInvalidArgument, "more than the host arena holds",
               [] { g_worker->create_buffer(kArenaBytes + 1); });
  expect_error(ErrorCode::kInvalidArgument, "more than the host arena holds",
               [] { g_worker->create_buffer(~size_t{0}); });
  expect_error(ErrorCode::kInvalidArgument, "release_buffer: an empty handle", [] {
    HostBuffer empty;
    g_worker->release_buffer(empty);
  });
  {
    HostBuffer twice = g_worker->create_buffer(64);
    g_worker->release_buffer(twice);
    expect_error(ErrorCode::kInvalidArgument, "release_buffer: the buffer was released already",
                 [&] { g_worker->release_buffer(twice); });
  }
  if (!g_worker->is_host()) {
    HostBuffer b = g_worker->create_buffer(64);
    expect_error(ErrorCode::kInvalidState, "lives on the host (rank 0)", [&] { (void)b.data(); });
    g_worker->release_buffer(b);
    return;
  }
  HostBuffer big = g_worker->create_buffer(kArenaBytes * 3 / 4);
  expect_error(ErrorCode::kInvalidArgument, "create_buffer: 2097152 bytes do not fit",
               [] { g_worker->create_buffer(kArenaBytes / 2); });
  g_worker->release_buffer(big);
  HostBuffer b = g_worker->create_buffer(256);
  expect_error(ErrorCode::kInvalidArgument, "reaches outside its allocation of 256 bytes",
               [&] { (void)b.tensor<float>({65}); });
  expect_error(ErrorCode::kInvalidArgument, "reaches outside its allocation of 256 bytes",
               [&] { (void)b.tensor<float>({2}, 252); });
  g_worker->release_buffer(b);
  HostBuffer fits = g_worker->create_buffer(kArenaBytes / 2);  // released memory is reusable
  g_worker->release_buffer(fits);
}

// Before init (a second worker of this process, never initialised: two initialised workers
// would progress one UCX worker from two threads).
TEST(HostBuffer, NotBeforeInit) {
  Worker other(*g_argc, *g_argv, {.host_arena_bytes = 1 << 16, .child_arena_bytes = 4096});
  expect_error(ErrorCode::kInvalidState, "create_buffer: the worker is not initialised yet",
               [&] { other.create_buffer(64); });
  HostBuffer empty;
  expect_error(ErrorCode::kInvalidState, "release_buffer: the worker is not initialised yet",
               [&] { other.release_buffer(empty); });
}

// After the tests: a buffer of a worker that closed is dead, its memory gone with the window.
bool closed_worker_kills_its_buffers(Worker& worker) {
  HostBuffer b = worker.create_buffer(64);
  worker.close();
  bool ok = true;
  const auto check = [&](ErrorCode code, const std::string& text, auto&& fn) {
    try {
      fn();
      ok = false;
    } catch (const Error& e) {
      ok = ok && e.code() == code && std::string(e.what()).find(text) != std::string::npos;
    }
  };
  check(ErrorCode::kInvalidState, "release_buffer: the worker is closed",
        [&] { worker.release_buffer(b); });
  if (worker.is_host()) {
    check(ErrorCode::kInvalidState,
          "HostBuffer::data: the worker was closed, and its memory with it",
          [&] { (void)b.data(); });
  }
  if (!ok)
    std::fprintf(stderr, "rank %d: a closed worker's buffer still answered\n", worker.rank());
  return ok;
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 1, .host_arena_bytes = kArenaBytes});
  g_worker = &worker;
  g_argc = &argc;
  g_argv = &argv;
  g_add = worker.register_kernel("add", add);
  g_copy = worker.register_kernel("copy", copy);
  worker.init();
  print_only_failures_on(worker.rank());
  const int failed = RUN_ALL_TESTS();
  return failed == 0 && closed_worker_kills_its_buffers(worker) ? 0 : 1;
}
