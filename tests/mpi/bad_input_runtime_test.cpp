// Bad input to runtime.h (issue 12): the Worker's lifecycle and options, the Orchestrator's
// memory, copies and submissions, TaskHandle waits, run failures and TaskContext in kernels and
// subs; one table (bad_input_worker.h says how its cases run). main() runs the tables of this
// file and of bad_input_dag_test.cpp under mpirun -n 1+N.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bad_input_worker.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "worker_test_main.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;
using E = ErrorCode;

void noop(TaskContext&) {}
void sleepy(TaskContext&) {
  std::this_thread::sleep_for(300ms);
}
void fail(TaskContext&) {
  throw std::runtime_error("deliberate failure");
}

// A Worker of this process besides g_worker, not initialised.
Worker fresh(WorkerOptions options = {}) {
  return Worker(*g_argc, *g_argv, options);
}

struct Wide {
  double a, b;
};

// Runs `use` on child memory of chip 0 that is freed afterwards, whatever `use` does.
template <typename Use>
void with_child(Orchestrator& o, std::vector<size_t> shape, Use&& use) {
  const Tensor c = o.alloc_child_tensor(0, std::move(shape), DType::kF32);
  try {
    use(c);
  } catch (...) {
    o.free_child(c);
    throw;
  }
  o.free_child(c);
}

TEST(BadInput, RuntimeH) {
  const int chips = g_worker->chips();
  const std::string last = std::to_string(chips - 1), sc = std::to_string(chips);
  const std::string no_worker = "does not exist; chip workers are 0.." + last;
  const size_t huge = size_t{1} << 62;
  const std::string big = "4194304 bytes";  // {1 << 20} f32: past both arenas
  const auto in_kernel = [](Orchestrator& o, const TaskArg& p) {
    auto x = o.host_tensor<float>({4, 4});
    o.submit(g_k.probe, {p, in(x), out(o.host_tensor<float>({4}))}, 0);
  };
  const auto in_sub = [](Orchestrator& o, const TaskArg& p) { o.submit_sub(g_k.probe_sub, {p}); };
  const std::vector<DagCase> table = {
      // The Worker: options, registration, lifecycle.
      on_every_rank("WorkerOptions with negative sub-workers", E::kInvalidArgument,
                    {"WorkerOptions: num_sub_workers must be >= 0"},
                    [] { fresh({.num_sub_workers = -1}); }),
      on_every_rank("WorkerOptions with an empty host arena", E::kInvalidArgument,
                    {"host_arena_bytes > 0"}, [] { fresh({.host_arena_bytes = 0}); }),
      in_body("register_kernel inside a run", E::kInvalidState,
              {"register_kernel: called inside a run", "between runs, on every rank"},
              [](Orchestrator&) { g_worker->register_kernel("late", noop); }),
      in_body("register_sub inside a run", E::kInvalidState, {"register_sub: called inside a run"},
              [](Orchestrator&) { g_worker->register_sub("late", noop); }),
      on_every_rank("unregister a handle never registered", E::kInvalidArgument,
                    {"unregister(kernel): handle 4000 is not a registered kernel"},
                    [] { g_worker->unregister(KernelHandle{4000}); }),
      on_every_rank("unregister a built-in kernel", E::kInvalidArgument,
                    {"unregister(kernel): handle 4294967040 is a built-in kernel, which cannot be "
                     "unregistered"},
                    [] { g_worker->unregister(KernelHandle{0xFFFFFF00u}); }),
      on_every_rank("init twice", E::kInvalidState, {"init: the worker is already initialised"},
                    [] { g_worker->init(); }),
      on_every_rank("run before init", E::kInvalidState, {"run: the worker is not initialised yet"},
                    [] { fresh().run([](Orchestrator&) {}); }),
      on_every_rank("register_kernel without a name", E::kInvalidArgument,
                    {"register_kernel needs a name and a callable"},
                    [] { fresh().register_kernel("", noop); }),
      on_every_rank("register_kernel without a callable", E::kInvalidArgument,
                    {"register_kernel needs a name and a callable"},
                    [] { fresh().register_kernel("k", nullptr); }),
      on_every_rank("register_sub without a callable", E::kInvalidArgument,
                    {"register_sub needs a name and a callable"},
                    [] { fresh().register_sub("s", TaskFn()); }),
      on_every_rank("init after close", E::kInvalidState, {"init: the worker is closed"},
                    [] {
                      Worker w = fresh();
                      w.close();
                      w.init();
                    }),
      on_every_rank("run after close", E::kInvalidState, {"run: the worker is closed"},
                    [] {
                      Worker w = fresh();
                      w.close();
                      w.run([](Orchestrator&) {});
                    }),
      on_every_rank("register_kernel after close", E::kInvalidState,
                    {"register_kernel: the worker is closed"},
                    [] {
                      Worker w = fresh();
                      w.close();
                      w.register_kernel("k", noop);
                    }),
      on_every_rank("registrations that differ between ranks", E::kInvalidArgument,
                    {"init: rank 1 registered different kernels or subs than rank 0",
                     "register the same names in the same order on every rank"},
                    [] {
                      Worker w = fresh();
                      w.register_kernel(w.rank() == 1 ? "other" : "k", noop);
                      w.init();
                    }),
      on_host(
          "submit_sub on a worker without sub-workers", E::kInvalidArgument,
          {"submit_sub('lonely'): the worker has no sub-workers", "WorkerOptions::num_sub_workers"},
          [] {
            Worker w = fresh({.num_sub_workers = 0,
                              .host_arena_bytes = size_t{1} << 16,
                              .child_arena_bytes = 4096});
            const SubHandle lonely = w.register_sub("lonely", noop);
            w.init();
            w.run([&](Orchestrator& o) { o.submit_sub(lonely, {}); });
            w.close();
          }),
      // Host memory.
      in_body("host_tensor without dimensions", E::kInvalidArgument,
              {"host_tensor: shape needs 1 to 5 dimensions, got 0"},
              [](Orchestrator& o) { o.host_tensor<float>({}); }),
      in_body("host_tensor of six dimensions", E::kInvalidArgument,
              {"host_tensor: shape needs 1 to 5 dimensions, got 6"},
              [](Orchestrator& o) {
                o.host_tensor<float>({1, 1, 1, 1, 1, 1});
              }),
      in_body("host_tensor larger than the arena", E::kInvalidArgument,
              {"host_tensor: " + big + " do not fit in the host arena",
               "of 1048576 bytes in use; raise WorkerOptions::host_arena_bytes"},
              [](Orchestrator& o) { o.host_tensor<float>({size_t{1} << 20}); }),
      in_body("host_tensor whose size overflows", E::kInvalidArgument,
              {"host_tensor: shape {" + std::to_string(huge) + ", 8} of f32",
               "more bytes than size_t counts"},
              [huge](Orchestrator& o) {
                o.host_tensor<float>({huge, 8});
              }),
      in_body("host_tensor of a dtype that does not exist", E::kInvalidArgument,
              {"unknown dtype 99"},
              [](Orchestrator& o) { o.host_tensor({4}, static_cast<DType>(99)); }),
      in_body("alloc without dimensions", E::kInvalidArgument,
              {"alloc: shape needs 1 to 5 dimensions, got 0"},
              [](Orchestrator& o) { o.alloc<float>({}); }),
      in_body("alloc larger than the arena", E::kInvalidArgument,
              {"alloc: " + big + " exceed the host arena (1048576 bytes",
               "raise WorkerOptions::host_arena_bytes"},
              [](Orchestrator& o) { o.alloc<float>({size_t{1} << 20}); }),
      in_body("alloc whose size overflows", E::kInvalidArgument,
              {"alloc: shape {8, " + std::to_string(huge) + "} of f64", "more bytes than"},
              [huge](Orchestrator& o) {
                o.alloc<double>({8, huge});
              }),
      in_body("alloc while the arena stays full", E::kTimeout,
              {"alloc: rank 0 (host) waited 0.5 s for 655360 bytes of the host arena",
               "raise WorkerOptions::host_arena_bytes"},
              [](Orchestrator& o) {
                const Tensor held = o.alloc<float>({160 * 1024});
                o.alloc<float>({160 * 1024});
              }),
      // Child memory.
      in_body("alloc_child_tensor on a worker past the last", E::kInvalidArgument,
              {"alloc_child_tensor: worker " + sc + " " + no_worker},
              [chips](Orchestrator& o) { o.alloc_child_tensor(chips, {4}, DType::kF32); }),
      in_body("alloc_child_tensor on worker -1", E::kInvalidArgument,
              {"alloc_child_tensor: worker -1 " + no_worker},
              [](Orchestrator& o) { o.alloc_child_tensor(-1, {4}, DType::kF32); }),
      in_body("alloc_child_tensor larger than the child arena", E::kInvalidArgument,
              {"alloc_child_tensor: " + big + " do not fit in chip worker 0's child arena",
               "(65536 bytes; raise WorkerOptions::child_arena_bytes)"},
              [](Orchestrator& o) { o.alloc_child_tensor(0, {size_t{1} << 20}, DType::kF32); }),
      in_body("alloc_child_tensor without dimensions", E::kInvalidArgument,
              {"alloc_child_tensor: shape needs 1 to 5 dimensions, got 0"},
              [](Orchestrator& o) { o.alloc_child_tensor(0, {}, DType::kF32); }),
      in_body("free_child of a host tensor", E::kInvalidArgument,
              {"free_child: not a child allocation"},
              [](Orchestrator& o) { o.free_child(o.host_tensor<float>({4})); }),
      in_body("free_child of an empty tensor", E::kInvalidArgument,
              {"free_child: not a child allocation"},
              [](Orchestrator& o) { o.free_child(Tensor()); }),
      in_body("free_child twice", E::kInvalidArgument,
              {"free_child: this child allocation was already freed"},
              [](Orchestrator& o) {
                const Tensor c = o.alloc_child_tensor(0, {4}, DType::kF32);
                o.free_child(c);
                o.free_child(c);
              }),
      in_body("free_child of a view", E::kInvalidArgument,
              {"free_child: pass the tensor alloc_child_tensor returned, not a view",
               "(this one starts 8 bytes into the allocation)"},
              [](Orchestrator& o) {
                with_child(o, {4}, [&](const Tensor& c) { o.free_child(c.rows(2, 2)); });
              }),
      in_body("a freed child tensor as an argument", E::kInvalidArgument,
              {"task 'noop': argument 0 is child memory that was freed (a stale handle)"},
              [](Orchestrator& o) {
                const Tensor c = o.alloc_child_tensor(0, {4}, DType::kF32);
                o.free_child(c);
                o.submit(g_k.noop, {in(c)}, 0);
              }),
      in_body("child memory in a sub", E::kInvalidArgument,
              {"task 'noop_sub': argument 0 is child memory of chip worker 0, but the task runs "
               "on a host sub-worker"},
              [](Orchestrator& o) {
                with_child(o, {4}, [&](const Tensor& c) { o.submit_sub(g_k.noop_sub, {in(c)}); });
              }),
      in_body(
          "child memory on another chip", E::kInvalidArgument,
          {"task 'noop': argument 1 is child memory of chip worker 0, but the task runs on "
           "chip worker 1"},
          [](Orchestrator& o) {
            with_child(o, {4}, [&](const Tensor& c) {
              o.submit(g_k.noop, {in(o.host_tensor<float>({1})), in(c)}, 1);
            });
          },
          2),
      // Copies between host and child memory.
      in_body(
          "copy_to into host memory", E::kInvalidArgument,
          {"copy_to: the destination is not child memory"},
          [](Orchestrator& o) { o.copy_to(o.host_tensor<float>({4}), o.host_tensor<float>({4})); }),
      in_body("copy_from out of host memory", E::kInvalidArgument,
              {"copy_from: the source is not child memory"},
              [](Orchestrator& o) {
                o.copy_from(o.host_tensor<float>({4}), o.host_tensor<float>({4}));
              }),
      in_body("copy_to from child memory", E::kInvalidArgument,
              {"copy_to: needs one child tensor and one host tensor"},
              [](Orchestrator& o) {
                with_child(o, {4}, [&](const Tensor& a) {
                  with_child(o, {4}, [&](const Tensor& b) { o.copy_to(a, b); });
                });
              }),
      in_body("copy_to of another size", E::kInvalidArgument,
              {"copy_to: sizes differ (16 and 32 bytes)"},
              [](Orchestrator& o) {
                with_child(o, {4},
                           [&](const Tensor& c) { o.copy_to(c, o.host_tensor<float>({8})); });
              }),
      in_body("copy_from into a strided view", E::kInvalidArgument,
              {"copy_from: both views must be contiguous"},
              [](Orchestrator& o) {
                with_child(o, {8}, [&](const Tensor& c) {
                  o.copy_from(o.host_tensor<float>({4, 4}).slice(1, 0, 2), c);
                });
              }),
      in_body("copy_to a freed child tensor", E::kInvalidArgument,
              {"task 'copy': argument 0 is child memory that was freed (a stale handle)"},
              [](Orchestrator& o) {
                const Tensor c = o.alloc_child_tensor(0, {4}, DType::kF32);
                o.free_child(c);
                o.copy_to(c, o.host_tensor<float>({4}));
              }),
      on_host("copy_to from a host tensor of an earlier run", E::kInvalidArgument,
              {"task 'copy': argument 1 is not a tensor of this run"},
              [] {
                Tensor old;
                g_worker->run([&](Orchestrator& o) { old = o.host_tensor<float>({4}); });
                g_worker->run([&](Orchestrator& o) {
                  with_child(o, {4}, [&](const Tensor& c) { o.copy_to(c, old); });
                });
              }),
      // Submissions: where, what, after whom, with which config.
      in_body("submit to a worker past the last", E::kInvalidArgument,
              {"task 'noop': worker " + sc + " " + no_worker},
              [chips](Orchestrator& o) { o.submit(g_k.noop, {}, chips); }),
      in_body("submit to worker -1", E::kInvalidArgument, {"task 'noop': worker -1 " + no_worker},
              [](Orchestrator& o) { o.submit(g_k.noop, {}, -1); }),
      in_body("submit of an empty kernel handle", E::kInvalidArgument,
              {"submit: handle 4294967295 is not a registered kernel",
               "use the handle register_kernel returned"},
              [](Orchestrator& o) { o.submit(KernelHandle{}, {}, 0); }),
      in_body("submit of a built-in kernel's id", E::kInvalidArgument,
              {"submit: handle 4294967040 is not a registered kernel"},
              [](Orchestrator& o) { o.submit(KernelHandle{0xFFFFFF00u}, {}, 0); }),
      in_body("submit_sub of an empty sub handle", E::kInvalidArgument,
              {"submit_sub: handle 4294967295 is not a registered sub callable",
               "use the handle register_sub returned"},
              [](Orchestrator& o) { o.submit_sub(SubHandle{}, {}); }),
      in_body("submit_sub of a built-in kernel's id", E::kInvalidArgument,
              {"submit_sub: handle 4294967041 is not a registered sub callable"},
              [](Orchestrator& o) { o.submit_sub(SubHandle{0xFFFFFF01u}, {}); }),
      in_body("after a task not submitted yet", E::kInvalidArgument,
              {"task 'noop': after={123456789} is not an earlier task of this run"},
              [](Orchestrator& o) { o.submit(g_k.noop, {}, 0, {123456789}); }),
      on_host("after a task of an earlier run", E::kInvalidArgument,
              {"task 'noop_sub': after={", "} is not an earlier task of this run"},
              [] {
                uint64_t earlier = 0;
                g_worker->run([&](Orchestrator& o) { earlier = o.submit(g_k.noop, {}, 0).id(); });
                g_worker->run([&](Orchestrator& o) { o.submit_sub(g_k.noop_sub, {}, {earlier}); });
              }),
      in_body("CallConfig with no threads", E::kInvalidArgument,
              {"task 'noop': CallConfig::threads is 0; it must be 1..256"},
              [](Orchestrator& o) { o.submit(g_k.noop, {}, 0, {}, {.threads = 0}); }),
      in_body("CallConfig with 257 threads", E::kInvalidArgument,
              {"CallConfig::threads is 257; it must be 1..256"},
              [](Orchestrator& o) { o.submit(g_k.noop, {}, 0, {}, {.threads = 257}); }),
      in_body("CallConfig with 2 GiB of scratch", E::kInvalidArgument,
              {"task 'noop': CallConfig::scratch_bytes 2147483648 exceeds 1 GiB"},
              [](Orchestrator& o) {
                o.submit(g_k.noop, {}, 0, {}, {.scratch_bytes = size_t{2} << 30});
              }),
      // CallConfig::runtime_env, as the reference's RuntimeEnv::validate, and its bounds.
      in_body("a task window that is not a power of two", E::kInvalidArgument,
              {"task 'noop': CallConfig::runtime_env.ring_task_window is 6; it must be 0 (no "
               "bound) or a power of two >= 4"},
              [](Orchestrator& o) {
                o.submit(g_k.noop, {}, 0, {}, {.runtime_env = {.ring_task_window = 6}});
              }),
      in_body("a task window of 2", E::kInvalidArgument,
              {"CallConfig::runtime_env.ring_task_window is 2"},
              [](Orchestrator& o) {
                o.submit(g_k.noop, {}, 0, {}, {.runtime_env = {.ring_task_window = 2}});
              }),
      in_body("a heap under 1024 bytes", E::kInvalidArgument,
              {"CallConfig::runtime_env.ring_heap is 1023; it must be 0 (no bound) or >= 1024 "
               "bytes"},
              [](Orchestrator& o) {
                o.submit(g_k.noop, {}, 0, {}, {.runtime_env = {.ring_heap = 1023}});
              }),
      in_body("a dependency pool under 4", E::kInvalidArgument,
              {"CallConfig::runtime_env.ring_dep_pool is 3; it must be 0 (no bound) or 4 to "
               "INT32_MAX"},
              [](Orchestrator& o) {
                o.submit_sub(g_k.noop_sub, {});
                o.submit(g_k.noop, {}, 0, {}, {.runtime_env = {.ring_dep_pool = 3}});
              }),
      in_body("a task whose scratch and arguments exceed its heap", E::kInvalidArgument,
              {"task 'noop': CallConfig::runtime_env.ring_heap of 2048 bytes cannot hold its "
               "scratch arena (1024 bytes) and the staging of its host arguments (4096 bytes)"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({1024});
                o.submit(g_k.noop, {in(x)}, 0, {},
                         {.scratch_bytes = 1024, .runtime_env = {.ring_heap = 2048}});
              }),
      in_body("a task with more predecessors than its dependency pool", E::kInvalidArgument,
              {"task 'noop' depends on 5 earlier tasks, more than its "
               "CallConfig::runtime_env.ring_dep_pool of 4"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({5});
                for (size_t i = 0; i < 5; ++i)
                  o.submit(g_k.noop, {out(x.slice(0, i, i + 1))}, 0);
                o.submit(g_k.noop, {in(x)}, 0, {}, {.runtime_env = {.ring_dep_pool = 4}});
              }),
      in_body("a group whose CallConfig is out of range", E::kInvalidArgument,
              {"CallConfig::threads is -3"},
              [](Orchestrator& o) { o.submit_group(g_k.noop, {{}}, {0}, {}, {.threads = -3}); }),
      in_body("a group with a worker twice", E::kInvalidArgument,
              {"group 'noop': worker 0 appears twice; members run on distinct workers"},
              [](Orchestrator& o) {
                o.submit_group(g_k.noop, {{}, {}}, {0, 0});
              }),
      in_body("a group with more workers than argument lists", E::kInvalidArgument,
              {"task 'noop': 2 workers for 1 argument lists; a group needs one of each"},
              [](Orchestrator& o) {
                o.submit_group(g_k.noop, {{}}, {0, 0});
              }),
      in_body("a group of no members", E::kInvalidArgument,
              {"task 'noop': 0 workers for 0 argument lists"},
              [](Orchestrator& o) { o.submit_group(g_k.noop, {}, {}); }),
      in_body("a group on a worker past the last", E::kInvalidArgument,
              {"task 'noop': worker 7 " + no_worker},
              [](Orchestrator& o) {
                o.submit_group(g_k.noop, {{}, {}}, {0, 7});
              }),
      // Waiting, and what a failed task leaves.
      in_body("wait on an empty TaskHandle", E::kInvalidState,
              {"TaskHandle::wait on an empty handle"}, [](Orchestrator&) { TaskHandle().wait(); }),
      in_body("wait shorter than the task", E::kTimeout,
              {"('sleepy') did not finish within 0.02 s"},
              [](Orchestrator& o) { o.submit(g_k.sleepy, {}, 0).wait(20ms); }),
      in_body("wait on a task that failed", E::kRemoteFailure,
              {"rank 1, chip worker 0, kernel 'fail': deliberate failure"},
              [](Orchestrator& o) { o.submit(g_k.fail, {}, 0).wait(); }),
      in_body("run throws its first task error", E::kRemoteFailure,
              {"rank 1, chip worker 0, kernel 'fail': deliberate failure"},
              [](Orchestrator& o) {
                o.submit(g_k.fail, {}, 0);
                o.submit(g_k.noop, {}, 0);
              }),
      in_body("a failed sub fails the run", E::kRemoteFailure,
              {"host sub-worker, sub 'fail_sub': deliberate failure"},
              [](Orchestrator& o) { o.submit_sub(g_k.fail_sub, {}); }),
      in_body("submit after a task of the run failed", E::kRemoteFailure,
              {"this run already failed: rank 1, chip worker 0, kernel 'fail'"},
              [](Orchestrator& o) {
                TaskHandle failed = o.submit(g_k.fail, {}, 0);
                try {
                  failed.wait();
                } catch (const RemoteFailure&) {
                }
                o.submit(g_k.noop, {}, 0);
              }),
      // Asynchronous runs and scopes; with the lifecycle cases above, the reference's section 2
      // (re-init, init after close, register after close, a bad handle, release while in use,
      // wait with a negative timeout).
      on_every_rank("WorkerOptions with an admission depth of 0", E::kInvalidArgument,
                    {"WorkerOptions::admission_depth is 0; at least 1 run must be admitted"},
                    [] { fresh({.admission_depth = 0}); }),
      on_every_rank("submit before init", E::kInvalidState,
                    {"submit: the worker is not initialised yet"},
                    [] { fresh().submit([](Orchestrator&) {}); }),
      on_every_rank("submit after close", E::kInvalidState, {"submit: the worker is closed"},
                    [] {
                      Worker w = fresh();
                      w.close();
                      w.submit([](Orchestrator&) {});
                    }),
      in_body("submit inside a run", E::kInvalidState,
              {"submit: called inside a run (from its own body or a task)"},
              [](Orchestrator&) { g_worker->submit([](Orchestrator&) {}); }),
      on_every_rank("RunHandle wait with a negative timeout", E::kInvalidArgument,
                    {"RunHandle::wait: a negative timeout (-0.001 s)"},
                    [] {
                      RunHandle run = g_worker->submit([](Orchestrator&) {});
                      try {
                        run.wait(-1ms);
                      } catch (...) {
                        run.wait();
                        throw;
                      }
                    }),
      on_every_rank("wait on an empty RunHandle", E::kInvalidState,
                    {"RunHandle::wait on an empty handle"}, [] { RunHandle().wait(); }),
      on_host("release_buffer while a submitted run names it", E::kInvalidState,
              {"release_buffer: run", "names this buffer and is still in flight"},
              [] {
                HostBuffer b = g_worker->create_buffer(64);
                RunHandle run = g_worker->submit([&](Orchestrator& o) {
                  o.submit(g_k.sleepy, {in(b.tensor<float>({16}))}, 0);
                });
                try {
                  g_worker->release_buffer(b);
                } catch (...) {
                  run.wait();
                  g_worker->release_buffer(b);
                  throw;
                }
                run.wait();
              }),
      in_body("scope_end with no scope open", E::kInvalidState, {"scope_end: no scope is open"},
              [](Orchestrator& o) { o.scope_end(); }),
      in_body("scopes nested past 64", E::kInvalidState,
              {"scope_begin: 64 scopes are open already (the most that nest)"},
              [](Orchestrator& o) {
                for (int i = 0; i <= 64; ++i)
                  o.scope_begin();
              }),
      in_body("an intermediate named after its scope ended", E::kInvalidArgument,
              {"task 'noop': argument 0 is not a tensor of this run"},
              [](Orchestrator& o) {
                Tensor tmp;
                {
                  auto step = o.scope();
                  tmp = o.alloc<float>({16});
                }
                o.submit(g_k.noop, {in(tmp)}, 0);
              }),
      in_task(
          "RunHandle wait from a task", E::kInvalidState,
          {"host sub-worker, sub 'probe_sub'", "RunHandle::wait: called from a task"},
          [](TaskContext&) { RunHandle().wait(); }, in_sub),
      in_body("dump_dot to a path that cannot be written", E::kInvalidArgument,
              {"dump_dot: cannot write '/nonexistent/rankflow/graph.dot'"},
              [](Orchestrator& o) { o.dump_dot("/nonexistent/rankflow/graph.dot"); }),
      // TaskContext, in a kernel (probe: scalar 0, then tensors 0 {4, 4} in and 1 {4} out).
      in_task(
          "input of an argument that does not exist", E::kInvalidArgument,
          {"task argument 5 does not exist; the task has 2 tensor and domain arguments"},
          [](TaskContext& t) { t.input<float>(5); }, in_kernel),
      in_task(
          "view of an argument that does not exist", E::kInvalidArgument,
          {"task argument 2 does not exist"}, [](TaskContext& t) { t.view<float>(2); }, in_kernel),
      in_task(
          "shape of an argument that does not exist", E::kInvalidArgument,
          {"task argument 9 does not exist"}, [](TaskContext& t) { t.shape(9); }, in_kernel),
      in_task(
          "input of a strided view", E::kInvalidArgument,
          {"task argument 0 is a strided view; read it with TaskContext::view<T>(0)"},
          [](TaskContext& t) { t.input<float>(0); },
          [](Orchestrator& o, const TaskArg& p) {
            o.submit(g_k.probe, {p, in(o.host_tensor<float>({4, 4}).slice(1, 1, 3))}, 0);
          }),
      in_task(
          "output of a strided view", E::kInvalidArgument,
          {"task argument 1 is a strided view; read it with TaskContext::view<T>(1)"},
          [](TaskContext& t) { t.output<float>(1); },
          [](Orchestrator& o, const TaskArg& p) {
            auto x = o.host_tensor<float>({4, 4});
            o.submit(g_k.probe, {p, in(x.slice(1, 0, 2)), out(x.slice(1, 2, 4))}, 0);
          }),
      in_task(
          "scalar that does not exist", E::kInvalidArgument,
          {"task scalar 3 does not exist; the task has 1 scalars"},
          [](TaskContext& t) { t.scalar<int>(3); }, in_kernel),
      in_task(
          "scalar read as a type wider than 8 bytes", E::kInvalidArgument,
          {"TaskContext::scalar: a type of 16 bytes; scalars carry at most 8"},
          [](TaskContext& t) { t.scalar<Wide>(0); }, in_kernel),
      in_task(
          "domain of a tensor argument", E::kInvalidArgument,
          {"task argument 0 is not a domain (pass one with rankflow::domain_arg)"},
          [](TaskContext& t) { t.domain(0); }, in_kernel),
      in_task(
          "domain of an argument that does not exist", E::kInvalidArgument,
          {"task argument 4 does not exist"}, [](TaskContext& t) { t.domain(4); }, in_kernel),
      in_task(
          "scratch without an arena", E::kInvalidArgument,
          {"scratch arena of 0 bytes cannot give 1 more (0 in use); raise "
           "CallConfig::scratch_bytes"},
          [](TaskContext& t) { t.scratch(1); }, in_kernel),
      in_task(
          "scratch past the arena", E::kInvalidArgument,
          {"scratch arena of 256 bytes cannot give 100 more (256 in use)"},
          [](TaskContext& t) {
            t.scratch(200);
            t.scratch(100);
          },
          [](Orchestrator& o, const TaskArg& p) {
            o.submit(g_k.probe, {p}, 0, {}, {.scratch_bytes = 256});
          }),
      in_task(
          "scalar that does not exist, in a sub", E::kInvalidArgument,
          {"host sub-worker, sub 'probe_sub'", "task scalar 1 does not exist"},
          [](TaskContext& t) { t.scalar<float>(1); }, in_sub),
      in_task(
          "input of an argument that does not exist, in a sub", E::kInvalidArgument,
          {"host sub-worker, sub 'probe_sub'", "task argument 0 does not exist"},
          [](TaskContext& t) { t.input<float>(0); }, in_sub),
  };
  run_dag_table(table);
}

}  // namespace
}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rankflow::test;
  rankflow::Worker worker(argc, argv,
                          {.num_sub_workers = 1,
                           .host_arena_bytes = size_t{1} << 20,
                           .child_arena_bytes = size_t{1} << 16,
                           .alloc_timeout = std::chrono::milliseconds(500)});
  g_worker = &worker;
  g_argc = &argc;
  g_argv = &argv;
  g_k.noop = worker.register_kernel("noop", noop);
  g_k.sleepy = worker.register_kernel("sleepy", sleepy);
  g_k.fail = worker.register_kernel("fail", fail);
  g_k.probe = worker.register_kernel("probe", run_probe);
  g_k.noop_sub = worker.register_sub("noop_sub", noop);
  g_k.fail_sub = worker.register_sub("fail_sub", fail);
  g_k.probe_sub = worker.register_sub("probe_sub", run_probe);
  return run_all_tests_on(worker);
}
