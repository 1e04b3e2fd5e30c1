// per_task_runtime_env: three tasks, three CallConfigs; each kernel reports what it saw.
//
// The kernel writes the thread count and scratch size its task was given, and proves the scratch
// arena is really that large by filling it and checking it back. It also reports its RuntimeEnv
// (the reference's ring task window, heap and dependency pool), which the host enforces: the
// window bounds the descriptors in flight on the task's chip, the heap its scratch plus the
// staging of its host arguments, the pool its predecessors. The host then checks that each
// task saw its own config and not a neighbour's.
//
//   mpirun -n 3 build/examples/per_task_runtime_env/per_task_runtime_env
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "rankflow/error.h"
#include "rankflow/runtime.h"

namespace {

void report_config(rankflow::TaskContext& t) {
  auto out = t.output<int64_t>(0);
  const size_t bytes = t.config().scratch_bytes;
  std::byte* scratch = t.scratch(bytes);
  std::memset(scratch, 0x5A, bytes);
  bool intact = true;
  for (size_t i = 0; i < bytes; ++i)
    intact = intact && scratch[i] == std::byte{0x5A};
  out[0] = t.config().threads;
  out[1] = static_cast<int64_t>(bytes);
  out[2] = intact ? 1 : 0;
  out[3] = t.worker();
  out[4] = t.config().runtime_env.ring_task_window;
  out[5] = static_cast<int64_t>(t.config().runtime_env.ring_heap);
  out[6] = t.config().runtime_env.ring_dep_pool;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv);
    auto report = worker.register_kernel("report_config", report_config);
    worker.init();
    const rankflow::CallConfig configs[3] = {
        {.threads = 1, .scratch_bytes = 4096},
        {.threads = 2,
         .scratch_bytes = 1 << 20,
         .runtime_env = {.ring_task_window = 4, .ring_heap = 2 << 20, .ring_dep_pool = 16}},
        {.threads = 4, .scratch_bytes = 64, .runtime_env = {.ring_task_window = 16}}};
    int failures = 0;
    worker.run([&](rankflow::Orchestrator& orch) {
      rankflow::Tensor seen[3];
      rankflow::TaskHandle tasks[3];
      for (int i = 0; i < 3; ++i) {
        seen[i] = orch.host_tensor<int64_t>({7});
        tasks[i] = orch.submit(report, {rankflow::out(seen[i])}, i % orch.chips(), {}, configs[i]);
      }
      for (int i = 0; i < 3; ++i) {
        tasks[i].wait();
        auto v = seen[i].host<int64_t>();
        const rankflow::RuntimeEnv& env = configs[i].runtime_env;
        const bool ok = v[0] == configs[i].threads &&
                        v[1] == static_cast<int64_t>(configs[i].scratch_bytes) && v[2] == 1 &&
                        v[4] == env.ring_task_window &&
                        v[5] == static_cast<int64_t>(env.ring_heap) && v[6] == env.ring_dep_pool;
        std::printf(
            "task %d on chip %lld: threads %lld, scratch %lld bytes, scratch usable: %s, task "
            "window %lld, heap %lld, dependency pool %lld -> %s\n",
            i, static_cast<long long>(v[3]), static_cast<long long>(v[0]),
            static_cast<long long>(v[1]), v[2] ? "yes" : "no", static_cast<long long>(v[4]),
            static_cast<long long>(v[5]), static_cast<long long>(v[6]),
            ok ? "its own config" : "WRONG");
        failures += ok ? 0 : 1;
      }
    });
    if (worker.is_host()) {
      std::printf(failures == 0 ? "per_task_runtime_env: every task saw its own config: OK\n"
                                : "per_task_runtime_env: FAILED\n");
    }
    worker.close();
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "per_task_runtime_env: %s\n", e.what());
    return 1;
  }
}
