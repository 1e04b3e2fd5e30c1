// Soak of the DAG runtime (issue 12): 10,000 runs of a small DAG (chips, a sub-worker, an
// intermediate, a dependency chain), then 10,000 domain create/release cycles, each with an
// allreduce among its members. Every run's result is checked. After a warm-up, every rank
// measures its resident memory, open descriptors and the machine's shared-memory segments;
// growth of 5% or more, or anything left open, fails the job (exit code 1 on that rank).
//
//   mpirun -n 3 build/tests/soak_runtime [runs] [domain_cycles]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "soak_figures.h"

namespace {

constexpr size_t kElements = 64;

void fill(rankflow::TaskContext& t) {
  for (float& v : t.output<float>(0))
    v = t.scalar<float>(0);
}

void add_one(rankflow::TaskContext& t) {
  for (float& v : t.output<float>(0))
    v += 1.0f;
}

void sum(rankflow::TaskContext& t) {
  float total = 0;
  for (float v : t.input<float>(0))
    total += v;
  t.output<float>(1)[0] = total;
}

void domain_allreduce(rankflow::TaskContext& t) {
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  t.domain(2).communicator().allreduce(in.data(), out.data(), in.size(), rankflow::DType::kF32,
                                       rankflow::ReduceOp::kSum);
}

struct Kernels {
  rankflow::KernelHandle fill, add_one, domain_allreduce;
  rankflow::SubHandle sum;
};

// chip 0 fills an intermediate with `seed`, the last chip adds one to it in its child memory,
// a sub sums the copy back on the host: the host checks the sum.
bool small_dag(rankflow::Worker& worker, const Kernels& k, int seed) {
  float total = -1;
  const int last = worker.chips() - 1;
  worker.run([&](rankflow::Orchestrator& orch) {
    auto scratch = orch.alloc<float>({kElements});
    auto x = orch.host_tensor<float>({kElements});
    auto y = orch.host_tensor<float>({1});
    auto child = orch.alloc_child_tensor(last, {kElements}, rankflow::DType::kF32);
    orch.submit(k.fill, {rankflow::out(scratch), rankflow::scalar(static_cast<float>(seed))}, 0);
    orch.copy_to(child, scratch);
    orch.submit(k.add_one, {rankflow::inout(child)}, last);
    orch.copy_from(x, child);
    orch.submit_sub(k.sum, {rankflow::in(x), rankflow::out(y)}).wait();
    orch.free_child(child);
    total = y.host<float>()[0];
  });
  return !worker.is_host() || total == static_cast<float>(kElements) * static_cast<float>(seed + 1);
}

// A domain over every chip, an allreduce of each member's rank + seed, then release.
bool domain_cycle(rankflow::Worker& worker, const Kernels& k, int seed) {
  bool ok = true;
  worker.run([&](rankflow::Orchestrator& orch) {
    std::vector<int> members;
    for (int c = 0; c < worker.chips(); ++c)
      members.push_back(c);
    auto d = orch.allocate_domain("soak", members, 4096, {{"scratch", 64}});
    std::vector<rankflow::Tensor> in, out;
    std::vector<std::vector<rankflow::TaskArg>> args;
    for (int c : members) {
      in.push_back(orch.host_tensor<float>({8}));
      out.push_back(orch.host_tensor<float>({8}));
      for (float& v : in.back().host<float>())
        v = static_cast<float>(c + seed);
      args.push_back({rankflow::in(in.back()), rankflow::out(out.back()), rankflow::domain_arg(d)});
    }
    orch.submit_group(k.domain_allreduce, args, members).wait();
    const int n = static_cast<int>(members.size());
    const float expected = static_cast<float>(n * seed + n * (n - 1) / 2);
    for (const auto& o : out)
      for (float v : o.host<float>())
        ok = ok && v == expected;
    d.release();
  });
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int cycles = argc > 2 ? std::atoi(argv[2]) : 10000;
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 1});
    Kernels k{worker.register_kernel("fill", fill), worker.register_kernel("add_one", add_one),
              worker.register_kernel("domain_allreduce", domain_allreduce),
              worker.register_sub("sum", sum)};
    worker.init();
    const int rank = worker.rank();
    bool ok = true;
    for (int i = 0; i < 200; ++i)  // warm-up: pools, arenas and caches reach their size
      ok &= small_dag(worker, k, i) && (i % 10 != 0 || domain_cycle(worker, k, i));
    auto before = rankflow::soak::measure();
    auto start = std::chrono::steady_clock::now();
    auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    for (int i = 0; i < runs; ++i) {
      if (!small_dag(worker, k, i)) {
        std::fprintf(stderr, "[rank %d] run %d of the small DAG gave a wrong sum\n", rank, i);
        ok = false;
        break;
      }
    }
    auto after = rankflow::soak::measure();
    ok &= rankflow::soak::report(rank, (std::to_string(runs) + " runs of a small DAG").c_str(),
                                 seconds(), before, after);
    before = after;
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < cycles; ++i) {
      if (!domain_cycle(worker, k, i)) {
        std::fprintf(stderr, "[rank %d] domain cycle %d gave a wrong allreduce\n", rank, i);
        ok = false;
        break;
      }
    }
    after = rankflow::soak::measure();
    ok &= rankflow::soak::report(rank,
                                 (std::to_string(cycles) + " domain create/release cycles").c_str(),
                                 seconds(), before, after);
    worker.close();
    if (rank == 0) std::printf("soak_runtime: %s\n", ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
  } catch (const rankflow::Error& e) {
    std::fprintf(stderr, "soak_runtime: %s\n", e.what());
    return 1;
  }
}
