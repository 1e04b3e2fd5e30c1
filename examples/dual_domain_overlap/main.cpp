// dual_domain_overlap: chip 1 belongs to two domains at once, with a rank and a window in each.
//
// left = [0, 1] and right = [1, 2]; inputs x_w[i] = 100 w + i (256 floats). Run 1 allreduces in
// left, run 2 in right; each member keeps its sum in its own child memory. Run 3 has no
// communication: two affine groups turn each kept sum into sum * (0.5 + 0.01 w) + 10 + w. The
// order reduce -> affine comes from the run boundary; the sums cross runs in child memory.
//
//   mpirun -n 4 build/examples/dual_domain_overlap/dual_domain_overlap
#include <cmath>
#include <cstdio>
#include <vector>

#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace {

constexpr size_t kCount = 256;

void allreduce(rankflow::TaskContext& t) {  // in (host), out (child memory), domain
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  t.domain(2).communicator().allreduce(in.data(), out.data(), in.size(), rankflow::DType::kF32,
                                       rankflow::ReduceOp::kSum);
}

void affine(rankflow::TaskContext& t) {  // reduced (child memory), out (host)
  const float w = static_cast<float>(t.worker());
  auto reduced = t.input<float>(0);
  auto out = t.output<float>(1);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = reduced[i] * (0.5f + 0.01f * w) + 10.0f + w;
}

struct Membership {
  const char* domain;
  std::vector<int> workers;
  float base;  // the reduced value at i = 0: sum over members of 100 w
};

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
    auto reduce = worker.register_kernel("allreduce", allreduce);
    auto scale = worker.register_kernel("affine", affine);
    worker.init();
    if (worker.chips() != 3) throw rankflow::InvalidArgument("run with mpirun -n 4 (3 chips)");
    const Membership domains[2] = {{"left", {0, 1}, 100}, {"right", {1, 2}, 300}};
    std::vector<std::vector<rankflow::Tensor>> kept(2);  // [domain][member]: child memory
    for (int d = 0; d < 2; ++d) {
      worker.run([&](rankflow::Orchestrator& orch) {
        auto domain = orch.allocate_domain(domains[d].domain, domains[d].workers, 4096);
        std::vector<std::vector<rankflow::TensorArg>> args;
        for (int w : domains[d].workers) {
          auto x = orch.host_tensor<float>({kCount});
          for (size_t i = 0; i < kCount; ++i)
            x.host<float>()[i] = static_cast<float>(100 * w + i);
          kept[d].push_back(orch.alloc_child_tensor(w, {kCount}, rankflow::DType::kF32));
          args.push_back(
              {rankflow::in(x), rankflow::out(kept[d].back()), rankflow::domain_arg(domain)});
        }
        std::printf("run %d: allreduce in %s; chip 1 is rank %d there\n", d + 1, domains[d].domain,
                    domain.rank_of(1));
        orch.submit_group(reduce, args, domains[d].workers);
      });
    }
    double worst = 0;
    bool finite = true;
    worker.run([&](rankflow::Orchestrator& orch) {
      std::vector<rankflow::Tensor> outs[2];
      std::vector<rankflow::TaskHandle> groups;
      for (int d = 0; d < 2; ++d) {
        std::vector<std::vector<rankflow::TensorArg>> args;
        for (size_t m = 0; m < 2; ++m) {
          outs[d].push_back(orch.host_tensor<float>({kCount}));
          args.push_back({rankflow::in(kept[d][m]), rankflow::out(outs[d].back())});
        }
        groups.push_back(orch.submit_group(scale, args, domains[d].workers));
      }
      for (int d = 0; d < 2; ++d) {
        groups[d].wait();
        for (size_t m = 0; m < 2; ++m) {
          const float w = static_cast<float>(domains[d].workers[m]);
          for (size_t i = 0; i < kCount; ++i) {
            const float expected = (domains[d].base + 2.0f * i) * (0.5f + 0.01f * w) + 10.0f + w;
            const float got = outs[d][m].host<float>()[i];
            finite = finite && std::isfinite(got);
            worst = std::max(worst, static_cast<double>(std::abs(got - expected)));
          }
          std::printf("run 3: affine[%s][chip %d][0] = %.2f\n", domains[d].domain,
                      domains[d].workers[m], outs[d][m].host<float>()[0]);
        }
        for (const auto& t : kept[d])
          orch.free_child(t);
      }
    });
    const bool ok = finite && worst <= 1e-3;
    if (worker.is_host()) {
      std::printf(ok ? "dual_domain_overlap: left = 100 + 2i, right = 300 + 2i, affine outputs "
                       "match: OK\n"
                     : "dual_domain_overlap: max error %g: FAILED\n",
                  worst);
    }
    worker.close();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dual_domain_overlap: %s\n", e.what());
    return 1;
  }
}
