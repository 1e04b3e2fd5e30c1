// Task arguments of every kind under mpirun (host + 1 or 2 chips): scalars reach kernels and
// subs as the bits they were given, the descriptor carries the reference's limits (256 tensor
// arguments, 128 scalars, 5 dimensions) and refuses more at submit, and the run keeps moving
// while the body is busy elsewhere (the scheduler thread takes over) or waits on a handle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

Worker* g_worker = nullptr;
struct Kernels {
  KernelHandle echo_scalars;  // out[i] = scalar i (as double), for every scalar
  KernelHandle sum_all;       // out (last tensor)[0] = sum of input tensors' first elements
  KernelHandle five_dims;     // writes index sums into a strided 5-D view
  KernelHandle bad_scalar;    // reads a scalar that does not exist
  KernelHandle increment;     // inout[0] += 1
  KernelHandle fail_if;       // throws when scalar 0 is nonzero
  SubHandle sub_scalars;      // out[0..3] = int, float, pointer, negative
  SubHandle wait_for_handle;  // waits on g_awaited, out[0] = 1 once it is done
} g_k;
TaskHandle g_awaited;  // set by the body before it submits wait_for_handle

void echo_scalars(TaskContext& t) {
  auto out = t.output<double>(0);
  out[0] = static_cast<double>(t.scalar<int32_t>(0));
  out[1] = static_cast<double>(t.scalar<float>(1));
  out[2] = t.scalar<double>(2);
  out[3] = static_cast<double>(t.scalar<uint64_t>(3));
  out[4] = static_cast<double>(t.scalars());
  out[5] = static_cast<double>(t.args());
  // Every later scalar i carries i (the 128-scalar case).
  for (size_t i = 4; i < t.scalars(); ++i)
    out[2 + i] = static_cast<double>(t.scalar<int64_t>(i));
}

void sum_all(TaskContext& t) {
  double sum = 0;
  for (size_t i = 0; i + 1 < t.args(); ++i)
    sum += t.input<float>(i)[0];
  t.output<float>(t.args() - 1)[0] = static_cast<float>(sum);
}

void five_dims(TaskContext& t) {
  View<float> v = t.view<float>(0);
  const auto& s = v.shape();
  for (size_t a = 0; a < s[0]; ++a)
    for (size_t b = 0; b < s[1]; ++b)
      for (size_t c = 0; c < s[2]; ++c)
        for (size_t d = 0; d < s[3]; ++d)
          for (size_t e = 0; e < s[4]; ++e)
            v(a, b, c, d, e) = static_cast<float>(10000 * a + 1000 * b + 100 * c + 10 * d + e);
}

void bad_scalar(TaskContext& t) {
  (void)t.scalar<int>(t.scalars());
}

void increment(TaskContext& t) {
  t.output<float>(0)[0] += 1;
}

void fail_if(TaskContext& t) {
  if (t.scalar<int>(0) != 0) throw std::runtime_error("asked to fail");
}

void wait_for_handle(TaskContext& t) {
  g_awaited.wait(20s);
  t.output<float>(0)[0] = 1;
}

void sub_scalars(TaskContext& t) {
  auto out = t.output<int64_t>(0);
  out[0] = t.scalar<int16_t>(0);
  out[1] = static_cast<int64_t>(t.scalar<float>(1) * 4);
  out[2] = *t.scalar<const int64_t*>(2);
  out[3] = t.scalar<int64_t>(3);
}

TEST(TaskArgsTest, ScalarsReachKernelsAsTheirBitsInOrder) {
  std::vector<double> got;
  g_worker->run([&](Orchestrator& orch) {
    auto result = orch.host_tensor<double>({8});
    // Scalars interleave with tensors; tensor 0 is still `result`.
    orch.submit(g_k.echo_scalars,
                {scalar(int32_t{-7}), out_existing(result), scalar(2.5f), scalar(-0.125),
                 scalar(uint64_t{1} << 60)},
                orch.chips() - 1)
        .wait();
    auto h = result.host<double>();
    got.assign(h.begin(), h.end());
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(got[0], -7.0);
    EXPECT_EQ(got[1], 2.5);
    EXPECT_EQ(got[2], -0.125);
    EXPECT_EQ(got[3], static_cast<double>(uint64_t{1} << 60));
    EXPECT_EQ(got[4], 4.0);  // scalars
    EXPECT_EQ(got[5], 1.0);  // tensor arguments
  }
}

TEST(TaskArgsTest, SubsTakeScalarsToo) {
  std::vector<int64_t> got;
  g_worker->run([&](Orchestrator& orch) {
    static const int64_t pointee = 4242;
    auto result = orch.host_tensor<int64_t>({4});
    orch.submit_sub(g_k.sub_scalars, {scalar(int16_t{-300}), scalar(0.75f), scalar(&pointee),
                                      out(result), scalar(int64_t{-1})})
        .wait();
    auto h = result.host<int64_t>();
    got.assign(h.begin(), h.end());
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(got, (std::vector<int64_t>{-300, 3, 4242, -1}));
  }
}

TEST(TaskArgsTest, TheReferenceLimitsTravelWhole) {
  float sum = 0;
  std::vector<double> scalars;
  g_worker->run([&](Orchestrator& orch) {
    // 255 inputs and one output: 256 tensor arguments, each a distinct tensor.
    std::vector<TaskArg> args;
    for (int i = 0; i < 255; ++i) {
      auto x = orch.host_tensor<float>({1});
      x.host<float>()[0] = static_cast<float>(i + 1);
      args.push_back(in(x));
    }
    auto total = orch.host_tensor<float>({1});
    args.push_back(out(total));
    orch.submit(g_k.sum_all, args, 0).wait();
    sum = total.host<float>()[0];
    // 128 scalars.
    auto echoed = orch.host_tensor<double>({130});
    std::vector<TaskArg> with_scalars{out_existing(echoed), scalar(int32_t{1}), scalar(2.0f),
                                      scalar(3.0), scalar(uint64_t{4})};
    for (int64_t i = 4; i < 128; ++i)
      with_scalars.push_back(scalar(i));
    orch.submit(g_k.echo_scalars, with_scalars, orch.chips() - 1).wait();
    auto h = echoed.host<double>();
    scalars.assign(h.begin(), h.end());
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(sum, 255.0f * 256.0f / 2.0f);
    EXPECT_EQ(scalars[4], 128.0);
    for (int i = 4; i < 128; ++i)
      EXPECT_EQ(scalars[2 + i], static_cast<double>(i)) << "scalar " << i;
  }
}

TEST(TaskArgsTest, FiveDimensionalStridedViewsRoundTrip) {
  std::vector<float> got;
  g_worker->run([&](Orchestrator& orch) {
    // A 2x3x2x3x4 box inside a 2x3x4x3x5 tensor: strided in two dimensions.
    auto x = orch.host_tensor<float>({2, 3, 4, 3, 5});
    auto box = x.slice(2, 1, 3).slice(4, 0, 4);
    orch.submit(g_k.five_dims, {out_existing(box)}, 0).wait();
    auto h = x.host<float>();
    got.assign(h.begin(), h.end());
  });
  if (!g_worker->is_host()) return;
  size_t i = 0;
  for (size_t a = 0; a < 2; ++a)
    for (size_t b = 0; b < 3; ++b)
      for (size_t c = 0; c < 4; ++c)
        for (size_t d = 0; d < 3; ++d)
          for (size_t e = 0; e < 5; ++e, ++i) {
            const bool inside = c >= 1 && c < 3 && e < 4;
            const float want =
                inside ? static_cast<float>(10000 * a + 1000 * b + 100 * (c - 1) + 10 * d + e) : 0;
            ASSERT_EQ(got[i], want) << "element " << a << b << c << d << e;
          }
}

TEST(TaskArgsTest, BeyondTheLimitsIsAnErrorAtSubmit) {
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({1});
    std::vector<TaskArg> tensors(257, in(x));
    try {
      orch.submit(g_k.sum_all, tensors, 0);
      ADD_FAILURE() << "257 tensor arguments were accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("257 tensor and domain arguments, at most 256"));
    }
    std::vector<TaskArg> scalars{out(x)};
    for (int i = 0; i < 129; ++i)
      scalars.push_back(scalar(i));
    try {
      orch.submit(g_k.echo_scalars, scalars, 0);
      ADD_FAILURE() << "129 scalars were accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("129 scalar arguments, at most 128"));
    }
    try {
      orch.host_tensor<float>({1, 1, 1, 1, 1, 1});
      ADD_FAILURE() << "a 6-D tensor was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("1 to 5 dimensions"));
    }
    auto y = orch.host_tensor<float>({4, 4});
    EXPECT_THROW(y.view({1, 1, 1, 1, 2, 2}), InvalidArgument);
    struct Wide {
      double a, b;
    };
    EXPECT_THROW(scalar(Wide{1, 2}), InvalidArgument);
    EXPECT_THROW(domain_arg(Domain()), InvalidState);
  });
}

TEST(TaskArgsTest, ReadingAMissingScalarFailsTheTaskWithItsName) {
  std::string error;
  try {
    g_worker->run([&](Orchestrator& orch) { orch.submit(g_k.bad_scalar, {scalar(1)}, 0); });
  } catch (const RemoteFailure& e) {
    error = e.what();
  }
  if (g_worker->is_host()) {
    EXPECT_THAT(error, HasSubstr("kernel 'bad_scalar'"));
    EXPECT_THAT(error, HasSubstr("task scalar 1 does not exist; the task has 1 scalars"));
  }
}

// The body submits more than a ring holds, then computes without calling the runtime: the
// scheduler thread must post the rest meanwhile.
TEST(TaskArgsTest, TheRunMovesWhileTheBodyIsBusyElsewhere) {
  bool all_done_while_busy = false;
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({1});
    std::vector<TaskHandle> handles;
    for (int i = 0; i < 48; ++i)  // a chain: one in flight at a time, 47 queued
      handles.push_back(orch.submit(g_k.increment, {inout(x)}, i % orch.chips()));
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!handles.back().done() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(1ms);  // busy elsewhere: no submit, no wait
    }
    all_done_while_busy = handles.back().done();
    value = x.host<float>()[0];
  });
  if (g_worker->is_host()) {
    EXPECT_TRUE(all_done_while_busy);
    EXPECT_EQ(value, 48.0f);
  }
}

TEST(TaskArgsTest, WaitingOnAHandleDrivesTheRun) {
  float value = 0;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({1});
    TaskHandle last;
    for (int i = 0; i < 40; ++i)
      last = orch.submit(g_k.increment, {inout(x)}, 0);
    last.wait(10s);
    value = x.host<float>()[0];
    EXPECT_THROW(TaskHandle().wait(), InvalidState);
  });
  if (g_worker->is_host()) {
    EXPECT_EQ(value, 40.0f);
  }
}

// Without a trace the host reads completion records only when a chip counts a failure: every
// failure among many completions in flight must still be seen, and only those.
TEST(TaskArgsTest, EveryFailureIsSeenWithoutATrace) {
  std::vector<TaskHandle> handles;
  std::string error;
  try {
    g_worker->run([&](Orchestrator& orch) {
      for (int i = 0; i < 200; ++i) {
        try {
          handles.push_back(
              orch.submit(g_k.fail_if, {scalar(i % 7 == 3 ? 1 : 0)}, i % orch.chips()));
        } catch (const RemoteFailure&) {  // a failure seen already ends the submissions
          break;
        }
      }
    });
  } catch (const RemoteFailure& e) {
    error = e.what();
  }
  if (!g_worker->is_host()) return;
  EXPECT_THAT(error, HasSubstr("asked to fail"));
  ASSERT_GT(handles.size(), 3u);
  for (size_t i = 0; i < handles.size(); ++i) {
    const bool should_fail = i % 7 == 3;
    bool failed = false;
    try {
      handles[i].wait(1s);
    } catch (const RemoteFailure&) {
      failed = true;
    }
    EXPECT_EQ(failed, should_fail) << "task " << i;
  }
}

// A sub task that waits on a chip task's handle while the body holds the driver role at the
// end of the run: it must see the task finish (not spin until the timeout).
TEST(TaskArgsTest, ASubWaitingOnAHandleSeesItFinish) {
  float flag = 0;
  const auto start = std::chrono::steady_clock::now();
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({1});
    auto done = orch.host_tensor<float>({1});
    g_awaited = orch.submit(g_k.increment, {inout(x)}, 0);
    orch.submit_sub(g_k.wait_for_handle, {out(done)});
    // The run ends at once: the body drives while the sub waits.
    flag = 0;
    (void)done;
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (g_worker->is_host()) {
    EXPECT_TRUE(g_awaited.done());
    EXPECT_LT(seconds, 5.0) << "the sub's wait stalled the run";
  }
  g_awaited = TaskHandle();
  (void)flag;
}

// A body that keeps submitting dependent tasks sees earlier ones finish meanwhile (its kicks
// collect completions when the new task cannot go out).
TEST(TaskArgsTest, ADependentChainAdvancesWhileTheBodySubmits) {
  bool first_done_while_submitting = false;
  g_worker->run([&](Orchestrator& orch) {
    auto x = orch.host_tensor<float>({1});
    TaskHandle first = orch.submit(g_k.increment, {inout(x)}, 0);
    const auto until = std::chrono::steady_clock::now() + 5s;
    for (int i = 0; i < 100000 && std::chrono::steady_clock::now() < until; ++i) {
      orch.submit(g_k.increment, {inout(x)}, i % orch.chips());
      if (first.done()) {
        first_done_while_submitting = true;
        break;
      }
    }
  });
  if (g_worker->is_host()) {
    EXPECT_TRUE(first_done_while_submitting);
  }
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 1});
  g_worker = &worker;
  g_k.echo_scalars = worker.register_kernel("echo_scalars", echo_scalars);
  g_k.sum_all = worker.register_kernel("sum_all", sum_all);
  g_k.five_dims = worker.register_kernel("five_dims", five_dims);
  g_k.bad_scalar = worker.register_kernel("bad_scalar", bad_scalar);
  g_k.increment = worker.register_kernel("increment", increment);
  g_k.fail_if = worker.register_kernel("fail_if", fail_if);
  g_k.sub_scalars = worker.register_sub("sub_scalars", sub_scalars);
  g_k.wait_for_handle = worker.register_sub("wait_for_handle", wait_for_handle);
  return run_all_tests_on(worker);
}
