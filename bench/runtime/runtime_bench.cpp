// runtime_bench: the DAG runtime's own overhead, with no-op kernels.
//
//   mpirun -n 3 --bind-to core build/bench/rankflow_runtime_bench [--quick]
//
// 1. A run with one no-op task: time per run.
// 2. Runs of N independent no-op tasks on one chip, N = 1..256: marginal time per task.
// 3. A chain of 256 dependent no-op tasks alternating between two chip workers (one if only one
//    chip): time per task.
// 4. Dependency inference at scale, n = 1k, 10k, 100k tasks on views of one allocation: each
//    task writes its own element; each writes its own row block of a 2-D tensor; each writes
//    its own column block (a strided view); a chain where task i reads element i and writes
//    element i+1. Time per task: flat when inference is (targets: independent tasks <= 1 us,
//    the chain no more than the 256-task chain above).
// 5. A persistent 64 MiB host buffer (Worker::create_buffer) reused across 100 runs, each run
//    a task reading a 4 KiB view of it, beside what a program without one does: a 64 MiB
//    host_tensor per run (zero-filled by the runtime) loaded from the program's own array.
//    Time per run, and the bytes the host writes per run to get the data to the task.
// 6. Pipelined runs: each run's body works 50 us on the host (preparing inputs) and submits a
//    task that works 50 us on chip 0; run() back to back (body, then the task) beside
//    submit() with the admission depth of 2 (the next body while the task runs). Time per run.
// Medians over batches, beside the reference L3 runtime's published figures, after the
// machine's phase: Open MPI's 4 B allreduce over the same ranks (the machine is shared, and its
// speed changes by a factor of two or more from one hour to the next).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "rankflow/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Open MPI's 4 B allreduce over every rank, median of batches (before init: nothing of
// rankflow's runs yet).
double mpi_phase_us(int batches) {
  std::vector<double> samples;
  float in = 1, out = 0;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    for (int i = 0; i < 1000; ++i)
      MPI_Allreduce(&in, &out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                      1000);
  }
  return median(samples);
}

// Works (spins) for `us` microseconds: a stand-in for real work on either side.
void spin_us(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const int batches = quick ? 3 : 9;
  const int runs_per_batch = quick ? 20 : 200;
  try {
    constexpr size_t kPersistentBytes = size_t{64} << 20;
    // The persistent buffer and the run's own tensors share the host arena.
    rankflow::Worker worker(
        argc, argv, {.num_sub_workers = 1, .host_arena_bytes = kPersistentBytes + (8 << 20)});
    const double phase = mpi_phase_us(batches);
    auto noop = worker.register_kernel("noop", [](rankflow::TaskContext&) {});
    auto busy = worker.register_kernel(
        "busy", [](rankflow::TaskContext& t) { spin_us(t.scalar<double>(0)); });
    auto sum = worker.register_kernel("sum", [](rankflow::TaskContext& t) {
      float total = 0;
      for (float x : t.input<float>(0))
        total += x;
      t.output<float>(1)[0] = total;
    });
    worker.init();
    const int chips = worker.chips();
    // Times `runs` runs of `body`; every rank calls run(), only the host's clock counts.
    auto time_runs = [&](int runs, const std::function<void(rankflow::Orchestrator&)>& body) {
      std::vector<double> samples;
      for (int b = 0; b < batches; ++b) {
        const auto start = Clock::now();
        for (int r = 0; r < runs; ++r)
          worker.run(body);
        samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                          runs);
      }
      return median(samples);
    };
    const double one =
        time_runs(runs_per_batch, [&](rankflow::Orchestrator& orch) { orch.submit(noop, {}, 0); });
    std::vector<std::pair<int, double>> independent;
    for (int n : {1, 16, 64, 256}) {
      const int runs = std::max(2, runs_per_batch * 4 / (n + 3));
      independent.emplace_back(n, time_runs(runs, [&](rankflow::Orchestrator& orch) {
                                 for (int i = 0; i < n; ++i)
                                   orch.submit(noop, {}, 0);
                               }));
    }
    const double chain = time_runs(std::max(2, runs_per_batch / 20),
                                   [&](rankflow::Orchestrator& orch) {
                                     auto token = orch.host_tensor<float>({1});
                                     for (int i = 0; i < 256; ++i)
                                       orch.submit(noop, {rankflow::inout(token)}, i % chips);
                                   }) /
                         256;
    // Dependency inference at scale: one run of n tasks on views of one tensor, per task.
    struct ScaleCase {
      const char* name;
      std::function<void(rankflow::Orchestrator&, int)> body;
    };
    const std::vector<ScaleCase> scale_cases = {
        {"tasks writing one element each",
         [&](rankflow::Orchestrator& orch, int n) {
           auto t = orch.host_tensor<float>({static_cast<size_t>(n)});
           for (int i = 0; i < n; ++i)
             orch.submit(noop, {rankflow::out(t.slice(0, i, i + 1))}, 0);
         }},
        {"tasks writing one row block each",
         [&](rankflow::Orchestrator& orch, int n) {
           auto t = orch.host_tensor<float>({static_cast<size_t>(n), 4});
           for (int i = 0; i < n; ++i)
             orch.submit(noop, {rankflow::out(t.rows(i, 1))}, 0);
         }},
        {"tasks writing one column block each",
         [&](rankflow::Orchestrator& orch, int n) {
           auto t = orch.host_tensor<float>({4, static_cast<size_t>(n)});
           for (int i = 0; i < n; ++i)
             orch.submit(noop, {rankflow::out(t.slice(1, i, i + 1))}, 0);
         }},
        {"chain: read element i, write element i+1",
         [&](rankflow::Orchestrator& orch, int n) {
           auto t = orch.host_tensor<float>({static_cast<size_t>(n) + 1});
           for (int i = 0; i < n; ++i) {
             orch.submit(
                 noop,
                 {rankflow::in(t.slice(0, i, i + 1)), rankflow::out(t.slice(0, i + 1, i + 2))},
                 i % chips);
           }
         }},
    };
    std::vector<std::vector<double>> scale(scale_cases.size());
    const std::vector<int> scale_sizes =
        quick ? std::vector<int>{1000, 10000} : std::vector<int>{1000, 10000, 100000};
    for (size_t c = 0; c < scale_cases.size(); ++c) {
      for (int n : scale_sizes) {
        std::vector<double> samples;
        for (int b = 0; b < 3; ++b) {
          const auto start = Clock::now();
          worker.run([&](rankflow::Orchestrator& orch) { scale_cases[c].body(orch, n); });
          samples.push_back(
              std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n);
        }
        scale[c].push_back(median(samples));
      }
    }
    // A persistent buffer across runs, beside a host tensor loaded per run.
    const int buffer_runs = quick ? 10 : 100;
    constexpr size_t kViewFloats = 1024;
    auto read_view = [&](rankflow::Orchestrator& orch, const rankflow::Tensor& data, int run) {
      const size_t views = data.elements() / kViewFloats;
      auto result = orch.host_tensor<float>({1});
      orch.submit(sum,
                  {rankflow::in(
                       data.slice(0, (run % views) * kViewFloats, (run % views + 1) * kViewFloats)),
                   rankflow::out(result)},
                  0);
    };
    std::vector<double> persistent_samples, loaded_samples;
    {
      rankflow::HostBuffer buffer = worker.create_buffer(kPersistentBytes);
      if (worker.is_host()) std::fill_n(buffer.as<float>().data(), kPersistentBytes / 4, 1.0f);
      const rankflow::Tensor whole =
          worker.is_host() ? buffer.tensor<float>({kPersistentBytes / 4}) : rankflow::Tensor();
      for (int b = 0; b < 3; ++b) {
        const auto start = Clock::now();
        for (int r = 0; r < buffer_runs; ++r)
          worker.run([&](rankflow::Orchestrator& orch) { read_view(orch, whole, r); });
        persistent_samples.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - start).count() / buffer_runs);
      }
      worker.release_buffer(buffer);
    }
    {
      std::vector<float> program_array(worker.is_host() ? kPersistentBytes / 4 : 0, 1.0f);
      for (int b = 0; b < 3; ++b) {
        const auto start = Clock::now();
        for (int r = 0; r < buffer_runs; ++r) {
          worker.run([&](rankflow::Orchestrator& orch) {
            auto data = orch.host_tensor<float>({kPersistentBytes / 4});
            std::memcpy(data.host<float>().data(), program_array.data(), kPersistentBytes);
            read_view(orch, data, r);
          });
        }
        loaded_samples.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - start).count() / buffer_runs);
      }
    }
    // Pipelined runs: run() back to back against submit() with runs in flight.
    constexpr double kWorkUs = 50;
    const int pipelined_runs = quick ? 20 : 200;
    const auto step = [&](rankflow::Orchestrator& orch) {
      spin_us(kWorkUs);  // the body's own work
      orch.submit(busy, {rankflow::scalar(kWorkUs)}, 0);
    };
    std::vector<double> sequential_samples, pipelined_samples;
    for (int b = 0; b < 3; ++b) {
      auto start = Clock::now();
      for (int r = 0; r < pipelined_runs; ++r)
        worker.run(step);
      sequential_samples.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - start).count() / pipelined_runs);
      start = Clock::now();
      std::vector<rankflow::RunHandle> handles;
      for (int r = 0; r < pipelined_runs; ++r)
        handles.push_back(worker.submit(step));
      for (auto& h : handles)
        h.wait();
      pipelined_samples.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - start).count() / pipelined_runs);
    }
    if (worker.is_host()) {
      const double marginal = (independent.back().second - independent.front().second) /
                              (independent.back().first - independent.front().first);
      std::printf(
          "# rankflow runtime_bench: 1 host + %d chip worker(s), no-op kernels, medians of "
          "%d batches\n",
          chips, batches);
      std::printf("# machine phase: Open MPI 4 B allreduce over the same ranks %.2f us\n", phase);
      std::printf("%-44s %10s %12s %10s\n", "measure", "rankflow", "reference", "target");
      std::printf("%-44s %8.2f us %9.2f us %7s us\n", "one-task run", one, 53.8, "<= 2");
      for (const auto& [n, us] : independent) {
        std::printf("%-44s %8.2f us\n",
                    ("run of " + std::to_string(n) + " independent tasks").c_str(), us);
      }
      std::printf("%-44s %8.2f us %9.2f us %7s us\n", "marginal cost per additional task", marginal,
                  8.08, "<= 0.3");
      std::printf(
          "%-44s %8.2f us%s\n",
          ("256-task chain over " + std::to_string(std::min(chips, 2)) + " chip(s), per task")
              .c_str(),
          chain, chips >= 2 ? "                   <= 5 us" : "");
      std::printf("# dependency inference at scale, time per task (medians of 3 runs)\n");
      std::printf("%-44s", "measure");
      for (int n : scale_sizes)
        std::printf(" %9s", ("n=" + std::to_string(n)).c_str());
      std::printf("\n");
      for (size_t c = 0; c < scale_cases.size(); ++c) {
        std::printf("%-44s", scale_cases[c].name);
        for (double us : scale[c])
          std::printf(" %6.2f us", us);
        std::printf("\n");
      }
      const double persistent = median(persistent_samples), loaded = median(loaded_samples);
      std::printf(
          "# a 64 MiB working set across %d runs, a task reading a 4 KiB view of it per run "
          "(medians of 3 batches)\n",
          buffer_runs);
      std::printf("%-44s %10s %24s\n", "measure", "per run", "host writes per run");
      std::printf("%-44s %8.1f us %24s\n", "persistent buffer (create_buffer)", persistent, "0 B");
      std::printf("%-44s %8.1f us %24s\n", "host_tensor loaded per run", loaded,
                  "128 MiB (fill + copy)");
      std::printf("%-44s %9.1f x\n", "persistent buffer speed-up", loaded / persistent);
      const double sequential = median(sequential_samples), pipelined = median(pipelined_samples);
      std::printf(
          "# %d runs, each a 50 us body and a 50 us task on chip 0 (medians of 3 batches)\n",
          pipelined_runs);
      std::printf("%-44s %8.1f us\n", "run() back to back, per run", sequential);
      std::printf("%-44s %8.1f us\n", "submit(), 2 runs in flight, per run", pipelined);
      std::printf("%-44s %9.2f x\n", "pipelined speed-up", sequential / pipelined);
    }
    worker.close();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_bench: %s\n", e.what());
    return 1;
  }
}
