// ffn_tp_parallel: a tensor-parallel linear layer over two chips, written with the Team
// primitives of a communication domain.
//
// Stage 1 (one task per chip): partial_r = x_r @ w_r, a 64 x 64 x 64 float matmul. Stage 2 (one
// group over both chips): each member puts its partial into the peer's mailbox in the domain
// window, signals, waits for the peer's, and sums: y = partial_0 + partial_1 on both chips.
// Nothing orders the stages but the partial tensors: stage 2 reads what stage 1 wrote, so the
// runtime infers the edge and launches the group only after both matmuls.
//
//   mpirun -n 3 build/examples/ffn_tp_parallel/ffn_tp_parallel
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace {

constexpr size_t kM = 64, kK = 64, kN = 64;

void local_linear(rankflow::TaskContext& t) {  // x, w -> partial
  auto x = t.input<float>(0), w = t.input<float>(1);
  auto partial = t.output<float>(2);
  std::fill(partial.begin(), partial.end(), 0.0f);
  for (size_t i = 0; i < kM; ++i) {
    for (size_t k = 0; k < kK; ++k) {
      const float a = x[i * kK + k];
      for (size_t j = 0; j < kN; ++j)
        partial[i * kN + j] += a * w[k * kN + j];
    }
  }
}

// partial -> y, over the domain: mailbox[r] in every member's window receives rank r's partial.
void allreduce_sum(rankflow::TaskContext& t) {
  auto partial = t.input<float>(0);
  auto y = t.output<float>(1);
  rankflow::DomainContext& d = t.domain(2);
  rankflow::Team& team = d.team();
  const size_t slot_bytes = kM * kN * sizeof(float);
  const size_t mailbox = team.offset("mailbox");
  for (int peer = 0; peer < d.size(); ++peer) {
    if (peer == d.rank()) continue;
    team.put(peer, mailbox + d.rank() * slot_bytes, partial.data(), slot_bytes);
    team.signal(peer, 0);  // lands after the put
  }
  team.wait_signal(0, static_cast<uint64_t>(d.size() - 1), -1, "ffn allreduce_sum");
  auto boxes = d.buffer_as<float>("mailbox");
  std::copy(partial.begin(), partial.end(), y.begin());
  for (int peer = 0; peer < d.size(); ++peer) {
    if (peer == d.rank()) continue;
    for (size_t i = 0; i < y.size(); ++i)
      y[i] += boxes[peer * kM * kN + i];
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
    auto linear = worker.register_kernel("local_linear", local_linear);
    auto reduce = worker.register_kernel("allreduce_sum", allreduce_sum);
    worker.init();
    if (worker.chips() != 2) throw rankflow::InvalidArgument("run with mpirun -n 3 (2 chips)");
    bool ok = true;
    worker.run([&](rankflow::Orchestrator& orch) {
      auto domain = orch.allocate_domain("tp", {0, 1}, 2 * kM * kN * sizeof(float),
                                         {{"mailbox", 2 * kM * kN * sizeof(float)}});
      std::vector<rankflow::Tensor> x, w, partial, y;
      std::vector<uint64_t> stage1;
      for (int r = 0; r < 2; ++r) {
        x.push_back(orch.host_tensor<float>({kM, kK}));
        w.push_back(orch.host_tensor<float>({kK, kN}));
        for (size_t i = 0; i < kM * kK; ++i) {
          x[r].host<float>()[i] = (static_cast<float>(i) + 0.25f * r) / 32.0f;
          w[r].host<float>()[i] = (static_cast<float>(i) + 0.5f * (r + 1)) / 48.0f;
        }
        partial.push_back(orch.host_tensor<float>({kM, kN}));
        y.push_back(orch.host_tensor<float>({kM, kN}));
        stage1.push_back(
            orch.submit(
                    linear,
                    {rankflow::in(x[r]), rankflow::in(w[r]), rankflow::out_existing(partial[r])}, r)
                .id());
      }
      auto group = orch.submit_group(
          reduce,
          {{rankflow::in(partial[0]), rankflow::out_existing(y[0]), rankflow::domain_arg(domain)},
           {rankflow::in(partial[1]), rankflow::out_existing(y[1]), rankflow::domain_arg(domain)}},
          {0, 1});
      const auto deps = group.depends_on();
      const bool edge = std::includes(deps.begin(), deps.end(), stage1.begin(), stage1.end());
      std::printf("stage 2 waits for both stage-1 matmuls (inferred from partial_r): %s\n",
                  edge ? "yes" : "NO");
      ok = ok && edge;
      group.wait();
      double worst = 0;
      for (size_t i = 0; i < kM; ++i) {
        for (size_t j = 0; j < kN; ++j) {
          double golden = 0;
          for (int r = 0; r < 2; ++r) {
            for (size_t k = 0; k < kK; ++k)
              golden += static_cast<double>(x[r].host<float>()[i * kK + k]) *
                        w[r].host<float>()[k * kN + j];
          }
          for (int r = 0; r < 2; ++r) {
            const double got = y[r].host<float>()[i * kN + j];
            const double excess = std::abs(got - golden) - (1e-4 + 1e-4 * std::abs(golden));
            worst = std::max(worst, excess);
          }
        }
      }
      std::printf("y = x_0 @ w_0 + x_1 @ w_1 on both chips (rtol = atol = 1e-4): %s\n",
                  worst <= 0 ? "yes" : "NO");
      ok = ok && worst <= 0;
    });
    if (worker.is_host()) std::printf(ok ? "ffn_tp_parallel: OK\n" : "ffn_tp_parallel: FAILED\n");
    worker.close();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ffn_tp_parallel: %s\n", e.what());
    return 1;
  }
}
