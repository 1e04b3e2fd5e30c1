// rankflow/runtime.h: the host/chip DAG runtime (orchestrated mode).
//
// Under `mpirun -n 1+N`, rank 0 is the host and ranks 1..N are chip workers (worker id =
// rank - 1). Every rank runs the same main(): registers the same kernels and sub callables,
// calls init(), then run() and close() collectively. The orchestration body passed to run()
// executes on the host only; it creates tensors and submits tasks, and the runtime infers
// dependencies from the byte ranges each task reads and writes (read-after-write,
// write-after-write and write-after-read), dispatching each task once its predecessors are done:
// directed tasks to a chip worker, sub tasks to a host thread.
//
//   rankflow::Worker worker(argc, argv, {.num_sub_workers = 1});
//   auto add = worker.register_kernel("vector_add", vector_add);
//   worker.init();
//   worker.run([&](rankflow::Orchestrator& orch) {
//     auto a = orch.host_tensor<float>({128}); ...
//     orch.submit(add, {rankflow::in(a), rankflow::in(b), rankflow::out(c)}, /*worker=*/0);
//   });
//   worker.close();
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "rankflow/domain.h"
#include "rankflow/host_buffer.h"
#include "rankflow/task_arg.h"
#include "rankflow/tensor.h"
#include "rankflow/types.h"

namespace rankflow {

namespace detail {
class WorkerImpl;           // one rank's runtime
struct TaskState;           // the runtime's record of a submitted task
class OrchestratorBackend;  // what an Orchestrator drives (the host's scheduler)
struct RunRecord;           // a submitted run's number and result
}  // namespace detail

// The reference's RuntimeEnv: what the task may use on its chip, each 0 for no bound. Checked
// at submit (InvalidArgument naming the field): a task window is a power of two >= 4, a heap
// >= 1024 bytes, a dependency pool >= 4, each at most INT32_MAX (the heap: 1 TiB).
struct RuntimeEnv {
  // Descriptors in flight on the task's chip when it is posted, itself included: it waits in
  // its chip's FIFO until fewer than this many are (the chip's ring holds 16).
  uint32_t ring_task_window = 0;
  // Bytes the chip sets aside for the task: its scratch arena plus a staging copy of each of
  // its host-memory arguments (staged where the host's window is not mapped). More is an
  // InvalidArgument at submit.
  uint64_t ring_heap = 0;
  // Predecessors the task may have, inferred and explicit (finished ones too: the count does
  // not depend on timing; a domain argument adds the domain's creation). More is an
  // InvalidArgument at submit.
  uint32_t ring_dep_pool = 0;
};

// Per-task settings that travel with the task to where it runs; validated at submit.
struct CallConfig {
  int threads = 1;           // threads the chip may use for this task (1..256)
  size_t scratch_bytes = 0;  // per-task scratch arena the kernel allocates from (<= 1 GiB)
  RuntimeEnv runtime_env{};
};

// What a kernel or sub callable sees: its arguments as typed spans, and where it runs. Tensor
// and domain arguments are numbered in order among themselves, scalars among themselves
// (rankflow/task_arg.h).
class TaskContext {
 public:
  // A contiguous argument as a span (InvalidArgument for a strided view: use view<T>).
  template <typename T>
  std::span<const T> input(size_t i) const {
    const Arg& a = contiguous_arg(i);
    return {reinterpret_cast<const T*>(a.data), a.bytes / sizeof(T)};
  }
  template <typename T>
  std::span<T> output(size_t i) const {
    const Arg& a = contiguous_arg(i);
    return {reinterpret_cast<T*>(a.data), a.bytes / sizeof(T)};
  }
  // Any argument, strided or not, indexed per dimension.
  template <typename T>
  View<T> view(size_t i) const {
    const Arg& a = arg(i);
    return {reinterpret_cast<T*>(a.data), a.shape, a.strides};
  }
  // The communication domain passed as argument i with domain_arg (InvalidArgument otherwise).
  DomainContext& domain(size_t i) const;
  // Scalar i as a T of at most 8 bytes, from the bits rankflow::scalar carried (InvalidArgument
  // for an index out of range or a wider type).
  template <typename T>
  T scalar(size_t i) const {
    static_assert(std::is_trivially_copyable_v<T>, "a scalar is trivially copyable");
    const uint64_t bits = scalar_bits(i, sizeof(T));
    T value;
    std::memcpy(&value, &bits, sizeof(T) < 8 ? sizeof(T) : 8);
    return value;
  }
  size_t args() const { return args_.size(); }  // tensor and domain arguments
  size_t scalars() const { return scalars_.size(); }
  const Dims& shape(size_t i) const { return arg(i).shape; }
  int worker() const { return where_.worker; }  // chip worker id, or -1 on a sub-worker
  uint64_t task_id() const { return where_.task_id; }
  int group_rank() const { return where_.group_rank; }  // member index in a group task, else 0
  int group_size() const { return where_.group_size; }  // members of the group, else 1
  const CallConfig& config() const { return config_; }
  // `bytes` from this task's scratch arena (CallConfig::scratch_bytes), 64-byte aligned;
  // InvalidArgument when the arena is exhausted. Freed when the task ends.
  std::byte* scratch(size_t bytes);

  struct Arg {
    std::byte* data;  // the first element
    size_t bytes;     // of the elements
    Dims shape;
    Access access;
    Dims strides;                     // in elements; empty or row-major when contiguous
    DomainContext* domain = nullptr;  // a domain_arg
  };
  struct Placement {
    int worker = -1;
    uint64_t task_id = 0;
    int group_rank = 0;
    int group_size = 1;
  };
  TaskContext(Placement where, std::vector<Arg> args, std::vector<uint64_t> scalars,
              CallConfig config = {})
      : where_(where), args_(std::move(args)), scalars_(std::move(scalars)), config_(config) {}

 private:
  const Arg& arg(size_t i) const;
  const Arg& contiguous_arg(size_t i) const;
  uint64_t scalar_bits(size_t i, size_t bytes) const;
  Placement where_;
  std::vector<Arg> args_;
  std::vector<uint64_t> scalars_;
  CallConfig config_;
  std::vector<std::byte> scratch_;
  size_t scratch_used_ = 0;
};

using TaskFn = std::function<void(TaskContext&)>;

struct KernelHandle {
  uint32_t index = UINT32_MAX;
};
struct SubHandle {
  uint32_t index = UINT32_MAX;
};

// A submitted task: its id (for explicit `after` dependencies) and its completion.
class TaskHandle {
 public:
  TaskHandle() = default;
  uint64_t id() const;
  bool done() const;
  // The earlier tasks of the run this one waits for (inferred and explicit), sorted.
  std::vector<uint64_t> depends_on() const;
  // Waits for completion and throws the task's error if it failed. wait(): Timeout once no
  // task of the run has finished for the worker's timeout (RANKFLOW_TIMEOUT_S), so a long
  // chain is waited for as long as it moves. wait(timeout): Timeout if this task has not
  // finished within `timeout`. Neither cancels the task.
  void wait() const;
  void wait(std::chrono::nanoseconds timeout) const;

 private:
  friend class detail::OrchestratorBackend;
  explicit TaskHandle(std::shared_ptr<detail::TaskState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::TaskState> state_;
};

// The host-side graph builder handed to the orchestration body.
class Orchestrator {
 public:
  // A zero-filled host tensor for this run (freed when the run ends).
  Tensor host_tensor(std::vector<size_t> shape, DType dtype);
  template <typename T>
  Tensor host_tensor(std::vector<size_t> shape);
  // A runtime-managed intermediate in host memory, its contents undefined until a task writes
  // them. Its memory is reclaimed as soon as the last copy of the returned Tensor (and of its
  // views) is gone and every task that uses it has finished, so a loop that allocates a
  // temporary per step reuses the same memory. When the host arena is full, alloc waits for
  // memory to be reclaimed, and throws Timeout after WorkerOptions::alloc_timeout.
  Tensor alloc(std::vector<size_t> shape, DType dtype);
  template <typename T>
  Tensor alloc(std::vector<size_t> shape);

  // A task of `kernel` on chip worker `worker` (0..chips()-1); `after` adds explicit edges.
  // A braced list of arguments (`{in(a), out(b)}`) costs no allocation.
  TaskHandle submit(KernelHandle kernel, std::initializer_list<TaskArg> args, int worker,
                    std::vector<uint64_t> after = {}, CallConfig config = {});
  TaskHandle submit(KernelHandle kernel, const std::vector<TaskArg>& args, int worker,
                    std::vector<uint64_t> after = {}, CallConfig config = {});
  // One DAG node with one member per worker (distinct workers), launched all at once when every
  // target is idle; while it waits at the head of the group queue its targets take no new
  // single tasks. Member i gets args_per_member[i] and group_rank() == i.
  TaskHandle submit_group(KernelHandle kernel, std::vector<std::vector<TaskArg>> args_per_member,
                          std::vector<int> workers, std::vector<uint64_t> after = {},
                          CallConfig config = {});
  // A task of `sub` on any idle sub-worker thread of the host.
  TaskHandle submit_sub(SubHandle sub, std::initializer_list<TaskArg> args,
                        std::vector<uint64_t> after = {});
  TaskHandle submit_sub(SubHandle sub, const std::vector<TaskArg>& args,
                        std::vector<uint64_t> after = {});
  // One DAG node of args_per_member.size() members of `sub`, launched all at once on that many
  // distinct idle sub-worker threads (so members may wait for each other); while it waits at
  // the head of the sub-worker queue, the sub tasks behind it wait too. Member i gets
  // args_per_member[i] and group_rank() == i. 1 to WorkerOptions::num_sub_workers members
  // (InvalidArgument otherwise); dependencies as for any group.
  TaskHandle submit_sub_group(SubHandle sub, std::vector<std::vector<TaskArg>> args_per_member,
                              std::vector<uint64_t> after = {});

  int chips() const;

  // Child (device) memory: `shape` x `dtype` on chip `worker`, kept across tasks and runs until
  // free_child. Only tasks on that worker may use it. Its contents start undefined (memory a
  // freed allocation left behind): load it with copy_to or a kernel.
  Tensor alloc_child_tensor(int worker, std::vector<size_t> shape, DType dtype);
  // Copies between host memory and child memory, as tasks on the child's worker (ordered with
  // every other task by the same dependency rules). Views must lie inside one live allocation
  // and have the same size.
  TaskHandle copy_to(const Tensor& child_dst, const Tensor& host_src);
  TaskHandle copy_from(const Tensor& host_dst, const Tensor& child_src);
  // Frees a child allocation; `base` must be the tensor alloc_child_tensor returned. The memory is
  // reused only after the run, when every task that used it is done. Freeing twice, freeing a
  // view, or using the tensor afterwards is an InvalidArgument.
  void free_child(const Tensor& base);

  // A communication domain over chip `workers` (distinct, in range; domain rank r is
  // workers[r]) with a zeroed symmetric window of `window_bytes` holding `buffers` at the same
  // offsets on every member. Only before the run's first submit (InvalidState after). Every
  // argument is checked before anything happens: InvalidArgument for no or duplicate workers, a
  // worker out of range, a zero window, duplicate buffer names, buffers larger than the window,
  // or a name already live in this run. The domain lives until the run ends (see domain.h).
  Domain allocate_domain(std::string name, std::vector<int> workers, size_t window_bytes,
                         std::vector<BufferSpec> buffers = {});

  // Scopes, as the reference's: an intermediate made with alloc inside a scope dies at the
  // scope's end. No later task may name it (InvalidArgument), and its memory returns to the
  // arena as soon as the tasks that named it have finished, even while the body still holds
  // its Tensor. Scopes nest up to 64 deep (InvalidState past that, and for scope_end with none
  // open); scopes left open end with the run. scope() is the RAII form:
  //   { auto step = orch.scope(); auto tmp = orch.alloc<float>({n}); ... }  // tmp dies here
  // A Scope ends its own scope (and any left open inside it); one ended already by hand, or
  // with its run, leaves nothing to end.
  class Scope {
   public:
    Scope(Scope&& other) noexcept : orch_(other.orch_), token_(other.token_) {
      other.orch_ = nullptr;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope() {
      if (orch_ != nullptr) orch_->close_scope(token_);
    }

   private:
    friend class Orchestrator;
    explicit Scope(Orchestrator& orch) : orch_(&orch), token_(orch.open_scope()) {}
    Orchestrator* orch_;
    uint64_t token_;
  };
  [[nodiscard]] Scope scope() { return Scope(*this); }
  void scope_begin();
  void scope_end();

  // Writes this run's graph so far as Graphviz DOT: one node per task (id, name, where it runs,
  // status), one edge per dependency. `dot -Tpng path -o graph.png` draws it. Call it from the
  // orchestration function's own thread, as submit: the dump reads the graph without a lock.
  void dump_dot(const std::string& path) const;

 private:
  friend class detail::OrchestratorBackend;
  explicit Orchestrator(detail::OrchestratorBackend& backend) : backend_(backend) {}
  uint64_t open_scope();
  void close_scope(uint64_t token) noexcept;
  detail::OrchestratorBackend& backend_;
};

// RANKFLOW_TRACE=path.json: after every run the host (re)writes a Chrome trace-event file of all
// runs so far, one track per chip worker and sub-worker, every task with its name, start, end
// and dependencies. Open it in Perfetto (ui.perfetto.dev) or chrome://tracing.
struct WorkerOptions {
  int num_sub_workers = 1;
  size_t host_arena_bytes = size_t{64} << 20;      // host tensors and intermediates of one run
  size_t child_arena_bytes = size_t{16} << 20;     // child memory on each chip worker
  std::chrono::milliseconds alloc_timeout{10000};  // Orchestrator::alloc waiting for memory
  // Runs in flight at once (Worker::submit): a submission beyond this many blocks, before its
  // body runs, until the oldest has ended. At least 1.
  int admission_depth = 2;
};

// A submitted run (Worker::submit). Every waiter sees the same terminal result: nothing, or
// the run's first task error (RemoteFailure) after the run drained.
class RunHandle {
 public:
  RunHandle() = default;
  uint64_t number() const;  // 1 for the worker's first run, then in submission order
  bool done() const;        // the run has ended (true at once on a chip)
  // Waits for the run's end (the runs before it end first) and throws its error if it failed.
  // wait(): Timeout once no task finished for the worker's timeout (RANKFLOW_TIMEOUT_S), as
  // run() does. wait(timeout): Timeout if the run has not ended within `timeout`;
  // InvalidArgument for a negative timeout. Neither cancels the run: wait again, or let
  // close() end it. InvalidState from a task, or on an empty handle.
  void wait() const;
  void wait(std::chrono::nanoseconds timeout) const;

 private:
  friend class detail::WorkerImpl;
  explicit RunHandle(std::shared_ptr<detail::RunRecord> record) : record_(std::move(record)) {}
  void wait_for(std::optional<std::chrono::nanoseconds> timeout) const;
  std::shared_ptr<detail::RunRecord> record_;
};

class Worker {
 public:
  // Initialises MPI if the program has not. Every rank constructs one.
  Worker(int& argc, char**& argv, WorkerOptions options = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // On every rank, in the same order. Before init() each rank registers on its own and init()
  // checks that they agree. After init() (between runs, never inside one: InvalidState) the
  // call is collective: it returns once every chip installed the kernel, and InvalidArgument
  // on every rank when any rank refused it or registered something else. A worker holds up to
  // 64 live kernels and 64 live sub callables (InvalidArgument past that).
  KernelHandle register_kernel(std::string name, TaskFn fn);
  SubHandle register_sub(std::string name, TaskFn fn);
  // Takes a registration back, on every rank, in the same order (collective after init, as
  // registration). Its slot counts no more towards the 64; the handle stays dead: submitting it,
  // or unregistering it again, is InvalidArgument.
  void unregister(KernelHandle kernel);
  void unregister(SubHandle sub);

  // Collective. Checks that every rank registered the same kernels and subs.
  void init();
  // Collective: the host runs `body`, chips serve its tasks until it returns and every task is
  // done. Throws the run's first task error (on the host) after the run drains. The same as
  // submit(body).wait().
  void run(const std::function<void(Orchestrator&)>& body);
  // Collective, asynchronous: the host runs `body` on the calling thread, building the run's
  // graph, and returns once the body has returned, while the tasks execute. Runs execute one
  // after another in submission order, never interleaved on the chips, so run k+1's graph is
  // built while run k executes; up to WorkerOptions::admission_depth runs are in flight (a
  // submission beyond that first waits for the oldest to end). Call it on every rank in the
  // same order as run(): a chip serves the run before its submit returns.
  // An exception from the body propagates (with its type) once the run's tasks that had
  // started have finished; the run's other tasks are cancelled, never started. A task that
  // the body waits for (TaskHandle::wait) or memory it waits for (alloc) ends the earlier runs
  // first. Registration, unregister and close() end every run in flight first.
  RunHandle submit(const std::function<void(Orchestrator&)>& body);
  // Collective. Safe to call twice; the destructor calls it.
  void close();

  bool is_host() const;
  int rank() const;
  int chips() const;

  // A zero-filled host buffer of `bytes` owned by the worker, valid across runs until
  // release_buffer (rankflow/host_buffer.h). Call it on every rank (a chip's handle names
  // nothing), after init(), between runs or in the body. InvalidArgument for 0 bytes or more
  // than the host arena has free.
  HostBuffer create_buffer(size_t bytes);
  // Frees a buffer's memory; its handle and tensors are dead afterwards (InvalidState, and
  // InvalidArgument as a task argument). InvalidState while a run that named the buffer is in
  // flight (release it after that run); InvalidArgument if released already.
  void release_buffer(HostBuffer& buffer);

  // Host only (InvalidState on a chip, or before init()). Bytes of chip `worker`'s child
  // memory held by alloc_child_tensor allocations (each rounded up to 64 bytes, as the arena
  // holds them), counting ones freed in the current run (reusable after it); InvalidArgument
  // for a worker out of range.
  size_t committed_child_memory(int worker) const;
  // The communication domains of the newest run admitted that are not released, by name
  // (empty once that run has ended: domains end with their run).
  std::map<std::string, Domain> live_domains() const;

 private:
  std::unique_ptr<detail::WorkerImpl> impl_;
};

// The DType of a C++ element type (for host_tensor<T>).
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::kF32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kF64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::kI8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::kI16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kI32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kI64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kU8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::kU16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::kU32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DType::kU64;
  else
    static_assert(sizeof(T) == 0, "no DType for this type; pass a DType (kF16, kBF16) instead");
}

template <typename T>
Tensor Orchestrator::host_tensor(std::vector<size_t> shape) {
  return host_tensor(std::move(shape), dtype_of<T>());
}
template <typename T>
Tensor Orchestrator::alloc(std::vector<size_t> shape) {
  return alloc(std::move(shape), dtype_of<T>());
}
template <typename T>
Tensor Domain::buffer_tensor(std::string_view buffer, int worker) const {
  return buffer_tensor(buffer, worker, dtype_of<T>());
}
template <typename T>
Tensor HostBuffer::tensor(std::vector<size_t> shape, size_t byte_offset) const {
  return tensor(std::move(shape), dtype_of<T>(), byte_offset);
}

}  // namespace rankflow
