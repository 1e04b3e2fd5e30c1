// async_pipeline: a stream of steps, one run each, with up to three runs in flight.
//
// The host keeps a weight vector in a persistent buffer, with three input slots beside it and
// one result per step. Step k is a run: its body writes the step's input into slot k % 3, then
// chip 0 multiplies weights and input into an intermediate (Orchestrator::alloc inside the
// step's scope) and chip 1 sums it into result k. Worker::submit returns as soon as the body
// has built the graph, so the host builds step k+1 (and k+2) while step k executes; the
// admission depth of 3 is what makes reusing slot k % 3 safe: submit(k) waits, before its body
// runs, until step k-3 has ended. Each scope gives its intermediate back once the sum has read
// it. At the end the host checks every result against its own sum.
//
//   mpirun -n 3 build/examples/async_pipeline/async_pipeline   # host + 2 chips
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "rankflow/runtime.h"

namespace {

constexpr size_t kCols = 4096;
constexpr int kSteps = 24;
constexpr int kDepth = 3;  // runs in flight, and input slots

// args: weights (in), input (in), product (out).
void multiply(rankflow::TaskContext& t) {
  auto w = t.input<float>(0);
  auto x = t.input<float>(1);
  auto p = t.output<float>(2);
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = w[i] * x[i];
}

// args: product (in), result (out, one float).
void sum(rankflow::TaskContext& t) {
  double total = 0;
  for (float v : t.input<float>(0))
    total += v;
  t.output<float>(1)[0] = static_cast<float>(total);
}

float input_value(int step, size_t i) {
  return static_cast<float>((i * 7 + step) % 11) / 8;
}
float weight(size_t i) {
  return 0.5f + static_cast<float>(i % 5) / 4;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv, {.admission_depth = kDepth});
    auto multiply_kernel = worker.register_kernel("multiply", multiply);
    auto sum_kernel = worker.register_kernel("sum", sum);
    worker.init();
    if (worker.chips() < 2) throw std::runtime_error("run with mpirun -n 3 or more (2+ chips)");

    // [weights | input slot 0 | slot 1 | slot 2 | one result per step]
    constexpr size_t kRow = kCols * sizeof(float);
    rankflow::HostBuffer buffer =
        worker.create_buffer((1 + kDepth) * kRow + kSteps * sizeof(float));
    // Views of the buffer are the host's (a chip's handle names nothing): made in the bodies.
    const size_t results_offset = (1 + kDepth) * kRow;
    if (worker.is_host()) {
      auto w = buffer.as<float>();
      for (size_t i = 0; i < kCols; ++i)
        w[i] = weight(i);
    }

    std::vector<rankflow::RunHandle> steps;
    int most_in_flight = 0;
    for (int step = 0; step < kSteps; ++step) {
      steps.push_back(worker.submit([&, step](rankflow::Orchestrator& orch) {
        // Step - kDepth has ended (admission), so nothing reads this slot any more.
        const size_t slot_offset = (1 + step % kDepth) * kRow;
        auto x = buffer.as<float>().subspan(slot_offset / sizeof(float), kCols);
        for (size_t i = 0; i < kCols; ++i)
          x[i] = input_value(step, i);
        const auto input = buffer.tensor<float>({kCols}, slot_offset);
        const auto weights = buffer.tensor<float>({kCols});
        const auto result = buffer.tensor<float>({1}, results_offset + step * sizeof(float));

        auto step_scope = orch.scope();  // the product dies with the step
        const auto product = orch.alloc<float>({kCols});
        orch.submit(multiply_kernel,
                    {rankflow::in(weights), rankflow::in(input), rankflow::out(product)}, 0);
        orch.submit(sum_kernel, {rankflow::in(product), rankflow::out(result)}, 1);
      }));
      const int in_flight = static_cast<int>(std::count_if(
          steps.begin(), steps.end(), [](const rankflow::RunHandle& h) { return !h.done(); }));
      most_in_flight = std::max(most_in_flight, in_flight);
    }
    for (rankflow::RunHandle& step : steps)
      step.wait();

    int mismatches = 0;
    if (worker.is_host()) {
      const auto got = buffer.as<float>().subspan(results_offset / sizeof(float), kSteps);
      for (int step = 0; step < kSteps; ++step) {
        double want = 0;
        for (size_t i = 0; i < kCols; ++i)
          want += static_cast<double>(weight(i) * input_value(step, i));
        if (std::abs(got[step] - want) > 1e-4 * want) {
          std::printf("step %d: %.6f, expected %.6f\n", step, got[step], want);
          ++mismatches;
        }
      }
      if (mismatches == 0) {
        std::printf("async_pipeline: %d steps, up to %d runs in flight, every result matched: OK\n",
                    kSteps, most_in_flight);
      }
    }
    worker.release_buffer(buffer);
    worker.close();
    return mismatches == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "async_pipeline: %s\n", e.what());
    return 1;
  }
}
