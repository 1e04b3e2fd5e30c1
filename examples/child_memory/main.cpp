// child_memory: a weight loaded into a chip's own memory once and reused by two tasks.
//
// w = 3 is copied into child memory on chip 0 once. Two tasks on chip 0 each read a host input
// (a = 2) and the resident weight and compute (a + w + 1)(a + w + 2) + (a + w) = 47 into their
// own output. The weight never travels again; the host checks every element of both outputs.
//
//   mpirun -n 2 build/examples/child_memory/child_memory
#include <cstdio>

#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace {

constexpr size_t kN = 4096;

void affine(rankflow::TaskContext& t) {
  auto a = t.input<float>(0);
  auto w = t.input<float>(1);  // child memory: lives on this chip
  auto y = t.output<float>(2);
  for (size_t i = 0; i < y.size(); ++i) {
    const float s = a[i] + w[i];
    y[i] = (s + 1) * (s + 2) + s;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv);
    auto kernel = worker.register_kernel("affine", affine);
    worker.init();
    size_t wrong = 0;
    worker.run([&](rankflow::Orchestrator& orch) {
      auto w_host = orch.host_tensor<float>({kN});
      for (float& v : w_host.host<float>())
        v = 3;
      auto w = orch.alloc_child_tensor(0, {kN}, rankflow::DType::kF32);
      orch.copy_to(w, w_host);  // the only time the weight moves
      rankflow::Tensor outs[2];
      rankflow::TaskHandle tasks[2];
      for (int k = 0; k < 2; ++k) {
        auto a = orch.host_tensor<float>({kN});
        for (float& v : a.host<float>())
          v = 2;
        outs[k] = orch.host_tensor<float>({kN});
        tasks[k] =
            orch.submit(kernel, {rankflow::in(a), rankflow::in(w), rankflow::out(outs[k])}, 0);
      }
      for (int k = 0; k < 2; ++k) {
        tasks[k].wait();
        for (float v : outs[k].host<float>())
          wrong += v != 47.0f;
      }
      orch.free_child(w);
    });
    if (worker.is_host()) {
      std::printf(wrong == 0 ? "child_memory: weight loaded once into chip 0, two tasks reused it, "
                               "every output is 47: OK\n"
                             : "child_memory: %zu wrong outputs\n",
                  wrong);
    }
    worker.close();
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child_memory: %s\n", e.what());
    return 1;
  }
}
