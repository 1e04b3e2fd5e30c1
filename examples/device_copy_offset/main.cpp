// device_copy_offset: partial copies into and out of child memory by base + offset, and every
// case the runtime must reject.
//
//   mpirun -n 3 build/examples/device_copy_offset/device_copy_offset
#include <cstdio>
#include <functional>
#include <string>

#include "rankflow/error.h"
#include "rankflow/runtime.h"

int main(int argc, char** argv) {
  try {
    rankflow::Worker worker(argc, argv);
    auto touch = worker.register_kernel("touch", [](rankflow::TaskContext&) {});
    worker.init();
    int failures = 0;
    auto expect_rejected = [&](const char* what, const std::function<void()>& fn) {
      try {
        fn();
        std::printf("  %-44s NOT rejected\n", what);
        ++failures;
      } catch (const rankflow::InvalidArgument& e) {
        std::printf("  %-44s rejected: %s\n", what, e.what());
      }
    };
    worker.run([&](rankflow::Orchestrator& orch) {
      auto dev = orch.alloc_child_tensor(0, {8, 4}, rankflow::DType::kI32);  // 8 rows of 4
      auto src = orch.host_tensor<int32_t>({3, 4});
      for (size_t i = 0; i < 12; ++i)
        src.host<int32_t>()[i] = static_cast<int32_t>(100 + i);
      orch.copy_to(dev.rows(2, 3), src);  // rows 2..4 of the allocation
      auto back = orch.host_tensor<int32_t>({8, 4});
      orch.copy_from(back.rows(5, 3), dev.rows(2, 3)).wait();  // into rows 5..7 on the host
      auto all = back.host<int32_t>();
      bool ok = true;
      for (size_t i = 0; i < 32; ++i) {
        const int32_t want = i >= 20 ? static_cast<int32_t>(100 + i - 20) : 0;
        ok = ok && all[i] == want;
      }
      std::printf("partial copy host rows 0-2 -> child rows 2-4 -> host rows 5-7: %s\n",
                  ok ? "exact" : "WRONG");
      failures += ok ? 0 : 1;

      std::printf("rejected cases:\n");
      expect_rejected("view outside the allocation", [&] { dev.rows(6, 3); });
      expect_rejected("copy of different sizes", [&] { orch.copy_to(dev.rows(0, 2), src); });
      if (orch.chips() > 1) {
        expect_rejected("child memory used on the wrong worker",
                        [&] { orch.submit(touch, {rankflow::in(dev)}, 1); });
      }
      expect_rejected("free of a view instead of the base",
                      [&] { orch.free_child(dev.rows(1, 2)); });
      expect_rejected("copy_to into host memory", [&] { orch.copy_to(back, src); });
      orch.free_child(dev);
      expect_rejected("double free", [&] { orch.free_child(dev); });
      expect_rejected("use after free (stale handle)",
                      [&] { orch.copy_from(back.rows(0, 3), dev.rows(0, 3)); });
    });
    if (worker.is_host()) {
      std::printf(failures == 0 ? "device_copy_offset: all checks passed\n"
                                : "device_copy_offset: %d checks FAILED\n",
                  failures);
    }
    worker.close();
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "device_copy_offset: %s\n", e.what());
    return 1;
  }
}
