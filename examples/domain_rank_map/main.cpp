// domain_rank_map: two overlapping domains over three chips, their dense ranks and their data.
//
// even = [0, 2] and tail = [1, 2]. Run 1 allocates both at once and checks, without moving data:
// dense ranks in the order of the worker list, the error for a non-member, and that chip 2 holds
// a separate window in each domain. Runs 2 and 3 each allreduce in one domain with
// in_w[i] = 100 w + i: even must give 200 + 2i and tail 300 + 2i, so data moved only among
// members.
//
//   mpirun -n 4 build/examples/domain_rank_map/domain_rank_map
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace {

constexpr size_t kCount = 256;

// out = {domain rank, domain size, address of this member's "scratch"}
void where_am_i(rankflow::TaskContext& t) {
  rankflow::DomainContext& d = t.domain(1);
  auto out = t.output<int64_t>(0);
  out[0] = d.rank();
  out[1] = d.size();
  out[2] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(d.buffer("scratch").data()));
}

void allreduce(rankflow::TaskContext& t) {
  auto in = t.input<float>(0);
  auto out = t.output<float>(1);
  t.domain(2).communicator().allreduce(in.data(), out.data(), in.size(), rankflow::DType::kF32,
                                       rankflow::ReduceOp::kSum);
}

bool check(bool ok, const char* what) {
  std::printf("  %-58s %s\n", what, ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
    auto facts = worker.register_kernel("where_am_i", where_am_i);
    auto reduce = worker.register_kernel("allreduce", allreduce);
    worker.init();
    if (worker.chips() != 3) throw rankflow::InvalidArgument("run with mpirun -n 4 (3 chips)");
    bool ok = true;
    worker.run([&](rankflow::Orchestrator& orch) {
      auto even = orch.allocate_domain("even", {0, 2}, 4096, {{"scratch", 1088}});
      auto tail = orch.allocate_domain("tail", {1, 2}, 4096, {{"scratch", 1088}});
      std::printf("run 1: both domains live, no data moved\n");
      ok &= check(even.rank_of(0) == 0 && even.rank_of(2) == 1,
                  "even: chip 0 -> rank 0, chip 2 -> rank 1");
      ok &= check(tail.rank_of(1) == 0 && tail.rank_of(2) == 1,
                  "tail: chip 1 -> rank 0, chip 2 -> rank 1");
      ok &= check(even.size() == 2 && tail.size() == 2, "both have 2 members");
      bool rejected = false;
      try {
        tail.rank_of(0);
      } catch (const rankflow::InvalidArgument&) {
        rejected = true;
      }
      ok &= check(rejected, "tail.rank_of(0) is an error: chip 0 is not a member");
      auto in_even = orch.host_tensor<int64_t>({3}), in_tail = orch.host_tensor<int64_t>({3});
      orch.submit(facts, {rankflow::out(in_even), rankflow::domain_arg(even)}, 2);
      orch.submit(facts, {rankflow::out(in_tail), rankflow::domain_arg(tail)}, 2).wait();
      auto e = in_even.host<int64_t>(), t = in_tail.host<int64_t>();
      ok &= check(e[0] == 1 && t[0] == 1, "chip 2's kernels see rank 1 in both domains");
      ok &= check(e[2] != 0 && t[2] != 0 && e[2] != t[2], "chip 2 has a distinct scratch in each");
      even.release();
      tail.release();
    });
    float worst[2] = {0, 0};
    const std::vector<int> members[2] = {{0, 2}, {1, 2}};
    const float base[2] = {200, 300};
    for (int d = 0; d < 2; ++d) {
      worker.run([&](rankflow::Orchestrator& orch) {
        auto domain = orch.allocate_domain(d == 0 ? "even" : "tail", members[d], 4096);
        std::vector<std::vector<rankflow::TensorArg>> args;
        std::vector<rankflow::Tensor> outs;
        for (int w : members[d]) {
          auto x = orch.host_tensor<float>({kCount});
          for (size_t i = 0; i < kCount; ++i)
            x.host<float>()[i] = static_cast<float>(100 * w + i);
          outs.push_back(orch.host_tensor<float>({kCount}));
          args.push_back(
              {rankflow::in(x), rankflow::out(outs.back()), rankflow::domain_arg(domain)});
        }
        orch.submit_group(reduce, args, members[d]).wait();
        for (const auto& out : outs) {
          for (size_t i = 0; i < kCount; ++i)
            worst[d] = std::max(worst[d], std::abs(out.host<float>()[i] - (base[d] + 2.0f * i)));
        }
      });
    }
    if (worker.is_host()) {
      std::printf("runs 2 and 3: one allreduce per domain\n");
      ok &= check(worst[0] <= 1e-3f, "even = in0 + in2 = 200 + 2i on chips 0 and 2");
      ok &= check(worst[1] <= 1e-3f, "tail = in1 + in2 = 300 + 2i on chips 1 and 2");
      std::printf(ok ? "domain_rank_map: communication checks PASSED\n"
                     : "domain_rank_map: communication checks FAILED\n");
    }
    worker.close();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "domain_rank_map: %s\n", e.what());
    return 1;
  }
}
