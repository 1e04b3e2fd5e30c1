// allreduce: every allreduce algorithm inside a DAG kernel, over a domain of all chip workers.
//
// Each chip r holds in_r[i] = i + 100 r (256 floats). One group task per algorithm runs on every
// chip; its kernel calls the domain's allreduce with that algorithm, and every chip must end with
// out[i] = P i + 50 P (P - 1) for P chips. Works for any number of chips from 2 up.
//
//   mpirun -n 5 build/examples/allreduce/allreduce    # host + 4 chips
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "rankflow/runtime.h"

namespace {

constexpr size_t kCount = 256;
const char* const kAlgorithms[] = {"onephase", "twophase", "ring", "bidirectional_ring", "ibing"};

// args: in, out, domain; scalars: element count, nranks, algorithm index (as the reference's
// kernels take theirs).
void allreduce(rankflow::TaskContext& t) {
  const auto count = t.scalar<uint64_t>(0);
  const auto nranks = t.scalar<int32_t>(1);
  const auto algorithm = kAlgorithms[t.scalar<int32_t>(2)];
  rankflow::DomainContext& domain = t.domain(2);
  if (nranks != domain.size()) {
    throw std::runtime_error("nranks " + std::to_string(nranks) + " but the domain has " +
                             std::to_string(domain.size()) + " members");
  }
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  domain.communicator().allreduce(in.data(), out.data(), count, rankflow::DType::kF32,
                                  rankflow::ReduceOp::kSum, algorithm);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
    auto kernel = worker.register_kernel("allreduce", allreduce);
    worker.init();
    const int p = worker.chips();
    std::vector<std::string> results;
    for (int a = 0; a < 5; ++a) {
      worker.run([&](rankflow::Orchestrator& orch) {
        std::vector<int> workers;
        for (int w = 0; w < p; ++w)
          workers.push_back(w);
        auto domain = orch.allocate_domain("all", workers, 1 << 16);
        std::vector<std::vector<rankflow::TaskArg>> args;
        std::vector<rankflow::Tensor> outs;
        for (int r = 0; r < p; ++r) {
          auto in_r = orch.host_tensor<float>({kCount});
          for (size_t i = 0; i < kCount; ++i)
            in_r.host<float>()[i] = static_cast<float>(i + 100 * r);
          outs.push_back(orch.host_tensor<float>({kCount}));
          args.push_back({rankflow::in(in_r), rankflow::out(outs.back()),
                          rankflow::domain_arg(domain), rankflow::scalar(uint64_t{kCount}),
                          rankflow::scalar(int32_t{p}), rankflow::scalar(int32_t{a})});
        }
        orch.submit_group(kernel, args, workers).wait();
        double max_diff = 0;
        for (int r = 0; r < p; ++r) {
          for (size_t i = 0; i < kCount; ++i) {
            const double expected = p * static_cast<double>(i) + 50.0 * p * (p - 1);
            max_diff = std::max(max_diff, std::abs(outs[r].host<float>()[i] - expected));
          }
        }
        results.push_back(std::string(kAlgorithms[a]) + (max_diff <= 1e-3 ? ": OK" : ": WRONG"));
      });
    }
    bool ok = true;
    if (worker.is_host()) {
      for (const auto& line : results) {
        std::printf("allreduce over %d chips, %s\n", p, line.c_str());
        ok = ok && line.ends_with("OK");
      }
      if (ok) std::printf("allreduce: every algorithm gave P*i + 50*P*(P-1) on every chip\n");
    }
    worker.close();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce: %s\n", e.what());
    return 1;
  }
}
