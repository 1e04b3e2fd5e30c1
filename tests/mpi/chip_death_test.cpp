// A chip worker that dies mid-task (a segfault in its kernel, or abort) must not leave the host
// hanging: the chip prints which task killed it, and mpirun ends the job. CTest checks the
// report and that the job ended within the test's timeout; the exit status is non-zero.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rankflow/runtime.h"

int main(int argc, char** argv) {
  const bool use_abort = argc > 1 && std::strcmp(argv[1], "--abort") == 0;
  rankflow::Worker worker(argc, argv, {.num_sub_workers = 0});
  auto crash = worker.register_kernel("crash", [use_abort](rankflow::TaskContext&) {
    if (use_abort) std::abort();
    std::raise(SIGSEGV);
  });
  worker.init();
  worker.run([&](rankflow::Orchestrator& orch) { orch.submit(crash, {}, 0).wait(); });
  std::printf("chip_death_test: the run returned after the chip died\n");  // never expected
  worker.close();
  return 1;
}
