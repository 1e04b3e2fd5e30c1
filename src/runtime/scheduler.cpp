// Scheduler (see scheduler.h): checks and the common submission path. Host main thread, except
// run_sub, which each sub-worker thread runs.
#include "runtime/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "common/env.h"
#include "rankflow/error.h"
#include "runtime/builtin_kernels.h"
#include "runtime/dependencies.h"
#include "runtime/host_buffer.h"
#include "runtime/protocol.h"
#include "runtime/tensor_access.h"
#include "runtime/trace_writer.h"
#include "transport/progress.h"

namespace rankflow::runtime {
namespace {

using detail::TensorAccess;

bool reads(Access a) {
  return a == Access::kInput || a == Access::kInOut;
}
bool writes(Access a) {
  return a == Access::kOutput || a == Access::kInOut || a == Access::kOutputExisting;
}

size_t checked_bytes(const std::vector<size_t>& shape, DType dtype, const char* what) {
  if (shape.empty() || shape.size() > kMaxDims) {
    throw InvalidArgument(std::string(what) + ": shape needs 1 to " + std::to_string(kMaxDims) +
                          " dimensions, got " + std::to_string(shape.size()));
  }
  const size_t element_bytes = dtype_size(dtype);
  if (std::find(shape.begin(), shape.end(), size_t{0}) != shape.end()) return 0;
  size_t bytes = element_bytes;
  for (size_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      std::string text;
      for (size_t e : shape)
        text += (text.empty() ? "" : ", ") + std::to_string(e);
      throw InvalidArgument(std::string(what) + ": shape {" + text + "} of " +
                            std::string(to_string(dtype)) + " holds more bytes than size_t counts");
    }
  }
  return bytes;
}

void check_config(const CallConfig& config, std::string_view name) {
  if (config.threads < 1 || config.threads > 256) {
    throw InvalidArgument("task '" + std::string(name) + "': CallConfig::threads is " +
                          std::to_string(config.threads) + "; it must be 1..256");
  }
  if (config.scratch_bytes > (size_t{1} << 30)) {
    throw InvalidArgument("task '" + std::string(name) + "': CallConfig::scratch_bytes " +
                          std::to_string(config.scratch_bytes) + " exceeds 1 GiB");
  }
  const RuntimeEnv& env = config.runtime_env;
  const auto bad = [&](const char* field, uint64_t value, const char* rule) {
    throw InvalidArgument("task '" + std::string(name) + "': CallConfig::runtime_env." + field +
                          " is " + std::to_string(value) + "; it must be 0 (no bound) or " + rule);
  };
  const uint32_t window = env.ring_task_window;
  if (window != 0 && (window < 4 || (window & (window - 1)) != 0 || window > INT32_MAX)) {
    bad("ring_task_window", window, "a power of two >= 4");
  }
  if (env.ring_heap != 0 && (env.ring_heap < 1024 || env.ring_heap > (uint64_t{1} << 40))) {
    bad("ring_heap", env.ring_heap, ">= 1024 bytes (and at most 1 TiB)");
  }
  if (env.ring_dep_pool != 0 && (env.ring_dep_pool < 4 || env.ring_dep_pool > INT32_MAX)) {
    bad("ring_dep_pool", env.ring_dep_pool, "4 to INT32_MAX");
  }
}

// CallConfig::runtime_env.ring_heap: the scratch arena and a staging copy of each host-memory
// argument of one member must fit.
void check_heap(const CallConfig& config, const std::vector<TaskArg>& args, std::string_view name) {
  const uint64_t heap = config.runtime_env.ring_heap;
  if (heap == 0) return;
  uint64_t staged = 0;
  for (const TaskArg& a : args) {
    if (a.kind == ArgKind::kTensor && a.tensor.home() < 0) staged += a.tensor.extent_bytes();
  }
  if (config.scratch_bytes + staged > heap) {
    throw InvalidArgument(
        "task '" + std::string(name) + "': CallConfig::runtime_env.ring_heap of " +
        std::to_string(heap) + " bytes cannot hold its scratch arena (" +
        std::to_string(config.scratch_bytes) + " bytes) and the staging of its host arguments (" +
        std::to_string(staged) + " bytes)");
  }
}

void check_counts(const std::vector<TaskArg>& args, std::string_view name) {
  size_t scalars = 0;
  for (const TaskArg& a : args)
    scalars += a.kind == ArgKind::kScalar;
  const size_t tensors = args.size() - scalars;
  if (tensors > kMaxTensorArgs) {
    throw InvalidArgument("task '" + std::string(name) + "': " + std::to_string(tensors) +
                          " tensor and domain arguments, at most " +
                          std::to_string(kMaxTensorArgs));
  }
  if (scalars > kMaxScalarArgs) {
    throw InvalidArgument("task '" + std::string(name) + "': " + std::to_string(scalars) +
                          " scalar arguments, at most " + std::to_string(kMaxScalarArgs));
  }
}

// Which argument the k-th byte use of `args` comes from: its position among the tensor and
// domain arguments (uses_of makes one use per tensor argument that is not kNoDep).
size_t position_of_use(const std::vector<TaskArg>& args, size_t k) {
  size_t position = 0;
  for (const TaskArg& a : args) {
    if (a.kind == ArgKind::kScalar) continue;
    if (a.kind == ArgKind::kTensor && a.access != Access::kNoDep && k-- == 0) return position;
    ++position;
  }
  return position;
}

// Throws InvalidArgument for two arguments that conflict (find_conflict), naming them by their
// positions: `uses` are those of member_args[member] alone, or (member < 0) of every member.
void check_arguments(std::span<const ByteUse> uses, const std::vector<std::vector<TaskArg>>& args,
                     int member, std::string_view name) {
  const auto conflict = find_conflict(uses);
  if (!conflict) return;
  auto position = [&](size_t use) { return std::to_string(position_of_use(args[member], use)); };
  auto which = [&](size_t use) -> std::string {  // in a group: the member holding use `use`
    for (size_t m = 0; m < args.size(); ++m) {
      size_t count = 0;
      for (const TaskArg& a : args[m])
        count += a.kind == ArgKind::kTensor && a.access != Access::kNoDep;
      if (use < count) {
        return "member " + std::to_string(m) + "'s argument " +
               std::to_string(position_of_use(args[m], use));
      }
      use -= count;
    }
    return "an argument";  // (not reached: every use comes from a member)
  };
  const std::string task = "task '" + std::string(name) + "': ";
  const size_t r = conflict->reader, w = conflict->writer;
  if (member >= 0 && conflict->both_write) {
    throw InvalidArgument(task + "arguments " + position(r) + " and " + position(w) +
                          " are both written and overlap");
  }
  if (member >= 0) {
    throw InvalidArgument(task + "argument " + position(r) + " reads bytes that argument " +
                          position(w) + " writes; pass the range once as inout");
  }
  throw InvalidArgument(task + which(r) + (conflict->both_write ? " and " : " reads bytes that ") +
                        which(w) +
                        (conflict->both_write ? " are both written and overlap" : " writes"));
}

}  // namespace

Scheduler::Scheduler(HostServices services)
    : services_(services),
      chips_(services.team.size() - 1),
      host_(services.team.local_ptr(services.team.offset("arena")),
            services.options.host_arena_bytes, ids_),
      child_(chips_, services.options.child_arena_bytes, ids_),
      domains_(chips_),
      graph_(
          chips_, [this](std::shared_ptr<TaskState> t) { subs_->enqueue(std::move(t)); },
          [this] {
            if (dispatcher_) dispatcher_->chip_work_queued();
          }) {
  auto dump = std::make_unique<GraphDump>(graph_);
  graph_dump_ = dump.get();
  observers_.add(std::move(dump));
  if (auto path = env::get("RANKFLOW_TRACE")) {
    observers_.add(std::make_unique<TraceWriter>(*path, chips_, services.options.num_sub_workers));
  }
  subs_ = std::make_unique<SubWorkerPool>(services.options.num_sub_workers,
                                          [this](const std::shared_ptr<TaskState>& task, int member,
                                                 int index) { run_sub(task, member, index); });
  dispatcher_ = std::make_shared<Dispatcher>(services.team, graph_, observers_, services.timeout,
                                             services.chip_shares_core);
  dispatcher_->set_before_wait([this](uint64_t task) {  // a handle of a run not executing yet
    if (catch_up_ && !graph_.executing(task)) {
      catch_up_([&] { return graph_.executing(task); });
    }
  });
}

// Sub-workers call into the dispatcher and the scheduler thread into the pool: the sub-workers
// stop first (the pool stays), then the scheduler thread, then the pool goes.
Scheduler::~Scheduler() {
  for (const auto& weak : buffers_) {  // their memory goes with the worker's window
    if (auto state = weak.lock()) state->closed = true;
  }
  subs_->stop();
  dispatcher_.reset();
  subs_.reset();
}

uint64_t Scheduler::begin_run() {
  const uint64_t run = ++run_.number;
  if (run_.in_flight++ == 0) run_.front = run;
  graph_.begin_run();
  host_.begin_run(run);
  child_.begin_run(run);
  domains_.begin_run(run);
  scopes_.body_ended();
  observers_.run_began(run);
  if (run == run_.front) dispatcher_->begin_run();
  return run;
}

// A run that timed out once is ended the same way: its late tasks are collected under its own
// graph (their ids and dependents are its own), then the chips get its end.
bool Scheduler::end_front_run(std::string& first_error,
                              std::optional<std::chrono::steady_clock::time_point> deadline) {
  const bool timed_out_before = run_.timed_out;
  run_.timed_out = true;  // until the chips have left the run
  try {
    if (!dispatcher_->finish_run(deadline)) {
      run_.timed_out = timed_out_before;
      return false;
    }
  } catch (const Timeout& e) {
    if (!timed_out_before) throw;
    throw Timeout(std::string("the run ") + std::to_string(run_.front) +
                  " that timed out is still running: " + e.what());
  }
  run_.timed_out = false;
  first_error = graph_.first_error();
  close_run(run_.front);
  {
    Dispatcher::Kicking kicking;  // this thread posts the next run's held tasks right below
    graph_.end_run();             // the next run in flight executes: its held tasks are ready
  }
  ++run_.front;
  if (--run_.in_flight > 0) {
    dispatcher_->begin_run();
    // Posted now, not by the scheduler thread: on the host's one core that thread would wait
    // for the body that runs next.
    dispatcher_->kick();
  }
  return true;
}

void Scheduler::close_run(uint64_t run) {
  host_.end_run(run);
  child_.end_run(run);
  domains_.end_run(run);
  observers_.run_ended(run);
}

uint64_t Scheduler::scope_begin() {
  return scopes_.begin();
}

void Scheduler::scope_end() {
  scopes_.end(graph_, host_);
  reclaim();
}

void Scheduler::scope_end(uint64_t token) {
  scopes_.end_through(token, graph_, host_);
  reclaim();
}

// The worker checked `bytes` against the arena's capacity (on every rank) and the handle.
HostBuffer Scheduler::create_buffer(size_t bytes) {
  reclaim();  // intermediates whose last user finished give their memory back first
  auto state = std::make_shared<detail::HostBufferState>();
  state->whole = with_earlier_runs_ended([&] { return host_.create_persistent(bytes); });
  state->bytes = bytes;
  state->on_host = true;
  std::erase_if(buffers_, [](const auto& b) { return b.expired(); });
  buffers_.push_back(state);
  return detail::HostBufferState::handle(std::move(state));
}

void Scheduler::release_buffer(HostBuffer& buffer) {
  const auto& state = detail::HostBufferState::of(buffer);
  const uint64_t id = TensorAccess::buffer(state->whole);
  const uint64_t named = host_.last_run_naming(id);
  if (named != 0 && run_.in_flight > 0 && named >= run_.front) {
    throw InvalidState("release_buffer: run " + std::to_string(named) +
                       " names this buffer and is still in flight; release it after the run "
                       "(wait for its RunHandle)");
  }
  host_.release_persistent(id);
  graph_.forget(id);
  state->released = true;
}

void Scheduler::reclaim() {
  const auto forget = [&](uint64_t buffer) { graph_.forget(buffer); };
  host_.reclaim(forget);
  scopes_.reclaim(graph_, host_, forget);
}

// Memory the earlier runs in flight hold comes back at their end: when `allocate` finds no
// room (InvalidArgument) with runs before the newest still in flight, they end first and it
// tries again.
template <typename Allocate>
Tensor Scheduler::with_earlier_runs_ended(Allocate&& allocate) {
  try {
    return allocate();
  } catch (const InvalidArgument&) {
    if (run_.in_flight <= 1 || !catch_up_) throw;
  }
  catch_up_([&] { return run_.in_flight <= 1; });
  reclaim();
  return allocate();
}

Tensor Scheduler::host_tensor(std::vector<size_t> shape, DType dtype) {
  const size_t bytes = checked_bytes(shape, dtype, "host_tensor");
  reclaim();
  return with_earlier_runs_ended([&] { return host_.host_tensor(shape, dtype, bytes); });
}

// Waits for leases to come back while the arena is full, driving the run meanwhile.
Tensor Scheduler::alloc(std::vector<size_t> shape, DType dtype) {
  const size_t bytes = checked_bytes(shape, dtype, "alloc");
  if (RangeAllocator::rounded(bytes) > host_.capacity()) {
    throw InvalidArgument("alloc: " + std::to_string(bytes) + " bytes exceed the host arena (" +
                          std::to_string(host_.capacity()) +
                          " bytes; raise WorkerOptions::host_arena_bytes)");
  }
  const auto limit = services_.options.alloc_timeout;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    reclaim();
    if (auto t = host_.try_alloc(shape, dtype, bytes)) {
      scopes_.note_alloc(TensorAccess::buffer(*t));
      return std::move(*t);
    }
    if (const std::string error = graph_.newest_error(); !error.empty()) {
      throw RemoteFailure("this run already failed: " + error);
    }
    if (const size_t before = run_.in_flight; before > 1 && catch_up_) {
      catch_up_([&] { return run_.in_flight <= 1; });  // earlier runs hold memory: they end
      if (run_.in_flight < before) continue;
    }
    const auto reclaimable = [&] {
      return host_.has_released() || scopes_.any_reclaimable(graph_);
    };
    if (!dispatcher_->wait_until(reclaimable, deadline)) {
      throw Timeout("alloc: rank 0 (host) waited " + transport::format_seconds(limit) + " for " +
                    std::to_string(bytes) + " bytes of the host arena (" +
                    std::to_string(host_.used()) + " of " + std::to_string(host_.capacity()) +
                    " bytes in use); drop the Tensors of intermediates you no longer need, or "
                    "raise WorkerOptions::host_arena_bytes");
    }
  }
}

Tensor Scheduler::alloc_child(int worker, std::vector<size_t> shape, DType dtype) {
  const size_t bytes = checked_bytes(shape, dtype, "alloc_child_tensor");
  return with_earlier_runs_ended([&] { return child_.alloc(worker, shape, dtype, bytes); });
}

void Scheduler::free_child(const Tensor& base) {
  child_.free(base);
}

std::shared_ptr<TaskState> Scheduler::submit(bool sub, uint32_t fn,
                                             std::vector<std::vector<TaskArg>> member_args,
                                             std::vector<int> workers, std::vector<uint64_t> after,
                                             CallConfig config) {
  auto task = user_task(sub, fn, config);
  task->member_args = std::move(member_args);
  task->workers = std::move(workers);
  return enter(std::move(task), after);
}

// One member: its arguments and worker go into the pooled state's own vectors (no allocation
// in steady state).
std::shared_ptr<TaskState> Scheduler::submit_one(bool sub, uint32_t fn,
                                                 std::span<const TaskArg> args, int worker,
                                                 std::vector<uint64_t>& after, CallConfig config) {
  auto task = user_task(sub, fn, config);
  task->member_args.resize(1);
  task->member_args[0].assign(args.begin(), args.end());
  if (!sub) task->workers.assign(1, worker);
  return enter(std::move(task), after);
}

std::shared_ptr<TaskState> Scheduler::copy(const Tensor& dst, const Tensor& src, const char* what) {
  const Tensor& child = dst.home() >= 0 ? dst : src;
  const Tensor& host = dst.home() >= 0 ? src : dst;
  if (child.home() < 0 || host.home() >= 0) {
    throw InvalidArgument(std::string(what) + ": needs one child tensor and one host tensor");
  }
  if (!dst.contiguous() || !src.contiguous()) {
    throw InvalidArgument(std::string(what) + ": both views must be contiguous");
  }
  if (dst.bytes() != src.bytes()) {
    throw InvalidArgument(std::string(what) + ": sizes differ (" + std::to_string(dst.bytes()) +
                          " and " + std::to_string(src.bytes()) + " bytes)");
  }
  auto task = fresh_task(false, kCopyKernel, {});
  task->member_args.assign(1, {out_existing(dst), in(src)});
  task->workers.assign(1, child.home());
  std::vector<uint64_t> after;
  return enter(std::move(task), after);
}

Domain Scheduler::allocate_domain(std::string name, std::vector<int> workers, size_t window_bytes,
                                  std::vector<BufferSpec> buffers) {
  auto payload = std::make_shared<std::vector<std::byte>>();
  auto domain =
      domains_.allocate(std::move(name), workers, window_bytes, std::move(buffers), *payload);
  auto task = fresh_task(false, kCreateDomainKernel, {});
  task->member_args.assign(workers.size(), {});
  task->workers = std::move(workers);
  task->payload = std::move(payload);
  std::vector<uint64_t> after;
  domain->creation_task = enter(std::move(task), after)->id;
  return DomainState::handle(std::move(domain));
}

void Scheduler::check_workers(const std::vector<int>& workers, std::string_view name) const {
  for (size_t m = 0; m < workers.size(); ++m) {
    if (workers[m] < 0 || workers[m] >= chips_) {
      throw InvalidArgument("task '" + std::string(name) + "': worker " +
                            std::to_string(workers[m]) + " does not exist; chip workers are 0.." +
                            std::to_string(chips_ - 1));
    }
    for (size_t k = 0; k < m; ++k) {
      if (workers[k] == workers[m]) {
        throw InvalidArgument("group '" + std::string(name) + "': worker " +
                              std::to_string(workers[m]) +
                              " appears twice; members run on distinct workers");
      }
    }
  }
}

std::shared_ptr<TaskState> Scheduler::enter(std::shared_ptr<TaskState> task,
                                            std::vector<uint64_t>& after) {
  const TaskState& t = *task;
  const std::string_view name = services_.kernels.name(t.sub, t.fn);
  check_config(t.config, name);
  if (t.sub && subs_->threads() == 0) {
    throw InvalidArgument("submit_sub('" + std::string(name) +
                          "'): the worker has no sub-workers (WorkerOptions::num_sub_workers)");
  }
  if (t.sub && (t.member_args.empty() || t.member_args.size() > size_t(subs_->threads()))) {
    throw InvalidArgument("submit_sub_group('" + std::string(name) +
                          "'): " + std::to_string(t.member_args.size()) + " members for " +
                          std::to_string(subs_->threads()) +
                          " sub-workers; a group needs 1 to that many, each on its own "
                          "(WorkerOptions::num_sub_workers)");
  }
  if (!t.sub && (t.workers.empty() || t.workers.size() != t.member_args.size())) {
    throw InvalidArgument("task '" + std::string(name) + "': " + std::to_string(t.workers.size()) +
                          " workers for " + std::to_string(t.member_args.size()) +
                          " argument lists; a group needs one of each per member");
  }
  check_workers(t.workers, name);
  reclaim();
  uses_.clear();
  for (size_t m = 0; m < t.member_args.size(); ++m) {
    check_counts(t.member_args[m], name);
    check_heap(t.config, t.member_args[m], name);
    const int worker = t.sub ? -1 : t.workers[m];
    const size_t first = uses_.size();
    uses_of(t.member_args[m], name, worker, uses_);
    if (uses_.size() - first > 1) {
      check_arguments(std::span(uses_).subspan(first), t.member_args, static_cast<int>(m), name);
    }
    domains_.check_args(t.member_args[m], name, worker, after);
  }
  if (t.member_args.size() > 1) check_arguments(uses_, t.member_args, -1, name);
  task->name = name;
  task->driver = dispatcher_;
  {
    Dispatcher::Kicking kicking;  // this thread posts what became ready right below
    graph_.add(task, uses_, after);
  }
  if (t.fn != kCreateDomainKernel) domains_.note_submit();  // once the graph took the task
  observers_.task_submitted(task);
  if (!t.sub) dispatcher_->kick();
  return task;
}

// A user's kernel or sub: built-in ids are the runtime's own.
std::shared_ptr<TaskState> Scheduler::user_task(bool sub, uint32_t fn, CallConfig config) {
  if (find_builtin(fn) != nullptr) {
    throw InvalidArgument(std::string(sub ? "submit_sub" : "submit") + ": handle " +
                          std::to_string(fn) + " is not a registered " +
                          (sub ? "sub callable" : "kernel"));
  }
  return fresh_task(sub, fn, config);
}

// A fresh state from the pool, its fields set; member_args and workers are the caller's.
std::shared_ptr<TaskState> Scheduler::fresh_task(bool sub, uint32_t fn, CallConfig config) {
  auto task = tasks_.make();
  task->sub = sub;
  task->fn = fn;
  task->config = config;
  return task;
}

// Validates every argument (host tensors of this run; live child memory of the task's own
// worker, inside its allocation) and appends the byte ranges it touches.
void Scheduler::uses_of(const std::vector<TaskArg>& args, std::string_view name, int worker,
                        std::vector<ByteUse>& uses) {
  size_t position = 0;
  for (const TaskArg& a : args) {
    if (a.kind == ArgKind::kScalar) continue;
    const size_t i = position++;
    if (a.kind == ArgKind::kDomain) continue;  // RunDomains::check_args
    const Tensor& t = a.tensor;
    auto which = [&] { return "task '" + std::string(name) + "': argument " + std::to_string(i); };
    const bool domain_buffer = is_domain_buffer(TensorAccess::buffer(t));  // RunDomains checks
    if (t.home() >= 0 && !domain_buffer) {
      child_.check_use(t, worker, which());
    } else if (t.home() < 0 &&
               (TensorAccess::data(t) == nullptr || !host_.use(TensorAccess::buffer(t)))) {
      throw InvalidArgument(which() +
                            " is not a tensor of this run (create it with host_tensor or alloc, "
                            "or name a live buffer of Worker::create_buffer; an alloc "
                            "intermediate made in a scope dies at the scope's end)");
    }
    if (a.access == Access::kNoDep) continue;
    const size_t begin = TensorAccess::offset(t) - TensorAccess::alloc_begin(t);
    ByteUse use{TensorAccess::buffer(t), begin, begin + t.extent_bytes(), reads(a.access),
                writes(a.access),        {}};
    if (!t.contiguous()) {  // the per-dimension box, for the exact overlap test
      use.layout.ndim = static_cast<uint32_t>(t.shape().size());
      use.layout.element_bytes = dtype_size(t.dtype());
      for (size_t d = 0; d < t.shape().size(); ++d) {
        use.layout.shape[d] = t.shape()[d];
        use.layout.stride[d] = t.strides()[d] * dtype_size(t.dtype());
      }
    }
    uses.push_back(use);
  }
}

void Scheduler::run_sub(const std::shared_ptr<TaskState>& task, int member, int index) {
  std::vector<TaskContext::Arg> args;
  std::vector<uint64_t> scalars;
  for (const TaskArg& a : task->member_args[member]) {
    if (a.kind == ArgKind::kScalar) {
      scalars.push_back(a.scalar_bits);
      continue;
    }
    const Tensor& t = a.tensor;
    args.push_back({TensorAccess::data(t), t.bytes(), t.shape(), a.access, t.strides()});
  }
  TaskContext context({-1, task->id, member, static_cast<int>(task->member_args.size())},
                      std::move(args), std::move(scalars), task->config);
  const auto start = std::chrono::steady_clock::now();
  bool ok = true;
  std::string error;
  try {
    services_.kernels.sub(task->fn)(context);
  } catch (const std::exception& e) {
    ok = false;
    error = "host sub-worker, sub '" + std::string(task->name) + "': " + e.what();
  } catch (...) {
    ok = false;
    error = "host sub-worker, sub '" + std::string(task->name) + "': unknown exception";
  }
  auto ns = [](std::chrono::steady_clock::time_point t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  observers_.task_left(*task, {-1 - index, ns(start), ns(std::chrono::steady_clock::now()), ok});
  graph_.finish(task, ok, error);
  dispatcher_->chip_work_queued();  // a driver waiting for the run's end looks again
}

}  // namespace rankflow::runtime
