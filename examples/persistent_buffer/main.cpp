// persistent_buffer: a working set that lives across runs, updated in place.
//
// The host keeps a model's weights (one row per chip) in a Worker::create_buffer buffer. Each
// step is one run: every chip computes the dot product of its row with that step's input and
// writes it into a per-step result; a kernel registered after init() on every chip then scales
// the weights in place for the next step (w *= 1 + 1/64), and a sub-worker group of two
// checks both halves of the result at once. Between runs the host reads the results straight
// from the buffer and compares each with the value computed on the host: nothing is copied in
// or out per step.
//
//   mpirun -n 3 build/examples/persistent_buffer/persistent_buffer   # host + 2 chips
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "rankflow/runtime.h"

namespace {

constexpr size_t kCols = 1024;
constexpr int kSteps = 20;
constexpr float kGrowth = 1.0f + 1.0f / 64;

// args: weights row (in), input (in), result (out, one float).
void dot(rankflow::TaskContext& t) {
  auto w = t.input<float>(0);
  auto x = t.input<float>(1);
  double sum = 0;
  for (size_t i = 0; i < w.size(); ++i)
    sum += static_cast<double>(w[i]) * x[i];
  t.output<float>(2)[0] = static_cast<float>(sum);
}

// args: weights row (inout); scalar 0: the factor.
void scale(rankflow::TaskContext& t) {
  const float factor = t.scalar<float>(0);
  for (float& w : t.output<float>(0))
    w *= factor;
}

// A group of two sub tasks, one per half of the results: each checks its half is finite and
// positive (the host checks the exact values).
void check_half(rankflow::TaskContext& t) {
  for (float r : t.input<float>(0)) {
    if (!(std::isfinite(r) && r > 0)) {
      throw std::runtime_error("member " + std::to_string(t.group_rank()) + " saw " +
                               std::to_string(r));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 2});
    auto dot_kernel = worker.register_kernel("dot", dot);
    auto check = worker.register_sub("check_half", check_half);
    worker.init();
    const int chips = worker.chips();
    if (chips < 2) throw std::runtime_error("run with mpirun -n 3 or more (2+ chips)");
    // Registered after init, on every rank: every chip has it when this returns.
    auto scale_kernel = worker.register_kernel("scale", scale);

    // Weights: one row per chip, then every step's results (a column per step).
    const size_t weight_bytes = chips * kCols * sizeof(float);
    rankflow::HostBuffer model =
        worker.create_buffer(weight_bytes + kSteps * chips * sizeof(float));
    std::vector<double> expected_weights(chips * kCols);
    if (worker.is_host()) {
      auto w = model.as<float>();
      for (size_t i = 0; i < chips * kCols; ++i) {
        w[i] = 1.0f + static_cast<float>(i % 7) / 8;
        expected_weights[i] = w[i];
      }
    }
    int mismatches = 0;
    for (int step = 0; step < kSteps; ++step) {
      worker.run([&](rankflow::Orchestrator& orch) {
        auto input = orch.host_tensor<float>({kCols});
        for (size_t i = 0; i < kCols; ++i)
          input.host<float>()[i] = static_cast<float>((i + step) % 5) / 4;
        const auto results = model.tensor<float>({static_cast<size_t>(chips)},
                                                 weight_bytes + step * chips * sizeof(float));
        for (int c = 0; c < chips; ++c) {
          const auto row = model.tensor<float>({kCols}, c * kCols * sizeof(float));
          orch.submit(
              dot_kernel,
              {rankflow::in(row), rankflow::in(input), rankflow::out(results.slice(0, c, c + 1))},
              c);
          // Runs after the dot product read the row (write-after-read, inferred).
          orch.submit(scale_kernel, {rankflow::inout(row), rankflow::scalar(kGrowth)}, c);
        }
        const size_t half = chips / 2;
        orch.submit_sub_group(check, {{rankflow::in(results.slice(0, 0, half))},
                                      {rankflow::in(results.slice(0, half, chips))}});
      });
      if (!worker.is_host()) continue;
      // Between runs: the results and the scaled weights, read in place.
      const auto all = model.as<float>();
      for (int c = 0; c < chips; ++c) {
        double want = 0;
        for (size_t i = 0; i < kCols; ++i)
          want += expected_weights[c * kCols + i] * ((i + step) % 5) / 4.0;
        const float got = all[chips * kCols + step * chips + c];
        if (std::abs(got - want) > 1e-4 * want) ++mismatches;
      }
      for (size_t i = 0; i < chips * kCols; ++i) {
        expected_weights[i] = static_cast<float>(expected_weights[i] * kGrowth);
        if (all[i] != static_cast<float>(expected_weights[i])) ++mismatches;
      }
    }
    worker.release_buffer(model);
    worker.unregister(scale_kernel);
    if (worker.is_host()) {
      if (mismatches == 0) {
        std::printf("persistent_buffer: %d steps, every checksum matched: OK\n", kSteps);
      } else {
        std::printf("persistent_buffer: %d mismatches\n", mismatches);
      }
    }
    worker.close();
    return mismatches == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "persistent_buffer: %s\n", e.what());
    return 1;
  }
}
