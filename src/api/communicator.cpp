// Communicator (library mode, see rankflow/communicator.h): argument checks, requests, and the
// dispatch of each collective through its algorithm table (collectives/registry.h). Where the
// buffers go (symmetric memory or the staging window) is api/buffer_placement's. Runs on the
// calling thread (and, with RANKFLOW_PROGRESS=thread, requests advance on the progress thread
// under its lock).
#include "rankflow/communicator.h"

#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "api/buffer_placement.h"
#include "api/communicator_internal.h"
#include "api/registrations.h"
#include "collectives/registry.h"
#include "common/log.h"
#include "rankflow/error.h"
#include "transport/team_state.h"

namespace rankflow {

struct RequestState {
  std::shared_ptr<CommunicatorImpl> owner;          // keeps the staging window alive
  std::shared_ptr<SymmetricAllocation> allocation;  // or the symmetric buffer's
  coll::CollContext* context = nullptr;
  coll::CollTask task;
  // Copy-out from staging once complete.
  void* copy_to = nullptr;
  const std::byte* copy_from = nullptr;
  size_t copy_bytes = 0;
  std::atomic<bool> finished = false;  // read by Request::done() without the driver lock
  std::exception_ptr error;            // what the progress thread met, rethrown by test/wait

  void complete_once() {
    if (finished.load(std::memory_order_relaxed)) return;
    if (copy_bytes > 0) std::memcpy(copy_to, copy_from, copy_bytes);
    finished.store(true, std::memory_order_release);
  }
  // One step without blocking; true when complete (or failed: `error` holds why).
  bool step() {
    if (finished.load(std::memory_order_relaxed) || error) return true;
    try {
      if (!context->poll(task)) return false;
    } catch (...) {
      error = std::current_exception();
      return true;
    }
    complete_once();
    return true;
  }
  void rethrow_error() {
    if (error) std::rethrow_exception(std::exchange(error, {}));
  }
};

void* SymmetricBuffer::data() const {
  return allocation_ ? allocation_->base : nullptr;
}
size_t SymmetricBuffer::bytes() const {
  return allocation_ ? allocation_->bytes : 0;
}

namespace {

size_t checked_bytes(size_t count, DType dtype, size_t blocks, const char* operation) {
  const size_t es = dtype_size(dtype);
  if (count > (SIZE_MAX / es) / std::max<size_t>(blocks, 1)) {
    throw InvalidArgument(std::string(operation) + ": count " + std::to_string(count) +
                          " overflows the size of a buffer");
  }
  return count * es * blocks;
}

}  // namespace

class CommunicatorImpl {
 public:
  // The overrides are read first: a bad value fails before anything collective is made.
  explicit CommunicatorImpl(MPI_Comm comm)
      : overrides_(coll::overrides_from_environment()), context_(transport::Context::acquire()) {
    if (comm == MPI_COMM_NULL) throw InvalidArgument("Communicator::from_mpi: MPI_COMM_NULL");
    int inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    if (inter)
      throw InvalidArgument("Communicator::from_mpi: inter-communicators are not supported");
    MPI_Request request;
    transport::check_mpi(MPI_Comm_idup(comm, &comm_, &request), "MPI_Comm_idup");
    context_->mpi_wait(request, "Communicator::from_mpi (communicator duplication)");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    placement_ = std::make_unique<api::BufferPlacement>(context_, comm_);
    registrations_ = std::make_unique<api::Registrations>(context_, comm_);
  }

  ~CommunicatorImpl() {
    try {
      close();
    } catch (const std::exception& e) {
      log::warn("closing communicator: ", e.what());
    }
  }

  void close() {
    if (comm_ == MPI_COMM_NULL) return;
    transport::ProgressThread::Guard guard(progress_thread());
    finish_outstanding();
    placement_->close();
    MPI_Comm_free(&comm_);
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return live(), comm_; }

  SymmetricBuffer alloc(size_t bytes) {
    live();
    return SymmetricBuffer(placement_->alloc(bytes));
  }

  // See Communicator::register_buffer: the staging window grows to the largest buffer any
  // member registered, here, once.
  RegisteredBuffer register_buffer(void* ptr, size_t bytes) {
    transport::ProgressThread::Guard guard(progress_thread());
    live();
    finish_outstanding();
    size_t largest = 0;
    auto registration = registrations_->add(ptr, bytes, largest);
    placement_->prepare_staging(largest);
    return RegisteredBuffer(std::move(registration));
  }
  void deregister(RegisteredBuffer& buffer) {
    if (!buffer.registration_) {
      throw InvalidArgument("Communicator::deregister: an empty RegisteredBuffer");
    }
    live();
    registrations_->remove(*buffer.registration_);
  }
  size_t staging_bytes() const { return placement_->staging_bytes(); }

  // Collectives on [begin, end) of `team`'s window run in place (see BufferPlacement::adopt).
  void adopt(const Team& team, size_t begin, size_t end) {
    live();
    placement_->adopt(team, begin, end);
  }
  size_t staged_count() const { return placement_->staged_count(); }

  // Runs `prepare(state)`, then completes the state at once (blocking calls reuse one state and
  // allocate nothing) or hands it out as a Request (and to the progress thread, if there is
  // one). Completes any earlier request first.
  template <typename Prepare>
  Request launch(bool blocking, Prepare&& prepare) {
    transport::ProgressThread::Guard guard(progress_thread());
    live();
    finish_outstanding();
    if (blocking) {
      RequestState& state = blocking_;
      state.allocation.reset();
      state.copy_bytes = 0;
      state.finished.store(false, std::memory_order_relaxed);
      prepare(state);
      complete(state);
      state.task = coll::CollTask();
      return Request();
    }
    auto state = std::make_shared<RequestState>();
    state->owner = self_.lock();
    prepare(*state);
    outstanding_ = state;
    if (transport::ProgressThread* thread = progress_thread()) {
      thread->add([weak = std::weak_ptr<RequestState>(state)] {
        auto live_state = weak.lock();
        return !live_state || live_state->step();
      });
    }
    return Request(state);
  }

  // The background progress thread (RANKFLOW_PROGRESS=thread), or null.
  transport::ProgressThread* progress_thread() const { return context_->progress_thread(); }

  // Returns once every member has called `operation`: Timeout (after the communicator's
  // timeout) instead of a blocking MPI call that would hang on a member that never comes.
  void wait_for_every_member(const char* operation) {
    if (comm_ == MPI_COMM_NULL)
      throw InvalidState(std::string(operation) + ": communicator used after close()");
    MPI_Request request;
    transport::check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
    context_->mpi_wait(request, std::string(operation) + " (member " + std::to_string(rank_) +
                                    " of " + std::to_string(size_) +
                                    " waited for every member to call it)");
  }

  // Prepares `make(coll, src_offset, dst_offset, staged_recv)` with send/recv in one window
  // (BufferPlacement::place_pair); staged_recv is the caller's recv when staged, null on
  // symmetric memory.
  template <typename Make>
  void prepare_pair(RequestState& state, const char* operation, const void* send, size_t send_bytes,
                    void* recv, size_t recv_bytes, bool copy_in, bool copy_out, bool stream_in,
                    Make&& make) {
    api::Placement p =
        placement_->place_pair(send, send_bytes, recv, recv_bytes, copy_in, copy_out, stream_in);
    state.context = p.context;
    state.context->set_operation(operation);
    state.copy_to = p.copy_to;
    state.copy_from = p.copy_from;
    state.copy_bytes = p.copy_bytes;
    state.allocation = std::move(p.allocation);
    state.task = make(*state.context, p.src, p.dst, p.staged_recv);
  }

  // Prepares `make(staging)` on the caller's own memory: for algorithms that push from local
  // buffers and never let peers read them (the pushed and streamed paths), so nothing is staged.
  template <typename Make>
  void prepare_local(RequestState& state, const char* operation, Make&& make) {
    state.context = &placement_->staging();
    state.context->set_operation(operation);
    state.task = make(*state.context);
  }

  coll::CollContext& staging() {
    live();
    return placement_->staging();
  }

  void complete(RequestState& state, std::chrono::nanoseconds timeout = {}) {
    state.rethrow_error();
    if (state.finished.load(std::memory_order_acquire)) return;
    state.context->run(state.task, timeout);
    state.complete_once();
  }

  void finish_outstanding() {
    if (outstanding_.expired()) return;  // the usual case, checked without an atomic update
    if (auto previous = outstanding_.lock(); previous && !previous->finished) complete(*previous);
    outstanding_.reset();
  }

  static Communicator make(MPI_Comm comm) {
    auto impl = std::make_shared<CommunicatorImpl>(comm);
    impl->self_ = impl;
    return Communicator(std::move(impl));
  }
  static CommunicatorImpl& of(const Communicator& communicator) { return *communicator.impl_; }

  void set_timeout(std::chrono::nanoseconds timeout) {
    live();
    placement_->set_timeout(timeout);
  }

  void barrier() {
    transport::ProgressThread::Guard guard(progress_thread());
    live();
    finish_outstanding();
    placement_->staging().team().barrier();
  }

  void check_root(int root, const char* operation) const {
    if (root < 0 || root >= size_) {
      throw InvalidArgument(std::string(operation) + ": root " + std::to_string(root) +
                            " is not a member; valid roots are 0.." + std::to_string(size_ - 1));
    }
  }

  const coll::AllreduceAlgorithm& select_allreduce(std::string_view requested, size_t bytes,
                                                   coll::Buffers buffers) const {
    if (requested != "auto") return coll::allreduce_table().find(requested);
    return select(coll::allreduce_table(), overrides_.allreduce, bytes, buffers);
  }
  // Which kind of memory send and recv are (BufferPlacement::symmetric): the tables choose by it.
  coll::Buffers buffers_of(const void* send, size_t send_bytes, const void* recv,
                           size_t recv_bytes) {
    live();
    return placement_->symmetric(send, send_bytes, recv, recv_bytes) ? coll::Buffers::kSymmetric
                                                                     : coll::Buffers::kPlain;
  }
  // The algorithm of `table` for a message of `bytes` (see registry.h), logged at debug level.
  template <typename Args>
  const coll::Algorithm<Args>& select(const coll::AlgorithmTable<Args>& table,
                                      const typename coll::AlgorithmTable<Args>::Rules& rules,
                                      size_t bytes, coll::Buffers buffers) const {
    live();
    const auto& chosen =
        table.choose(bytes, size_, placement_->staging().has_inbox(), rules, buffers);
    if (log_choices_) table.log_choice(bytes, size_, rules, chosen);
    return chosen;
  }
  const coll::Overrides& overrides() const { return overrides_; }

 private:
  void live() const {
    if (comm_ == MPI_COMM_NULL) throw InvalidState("communicator used after close()");
  }

  coll::Overrides overrides_;  // RANKFLOW_ALLREDUCE and the others, read when created
  bool log_choices_ = log::enabled(env::LogLevel::kDebug);
  std::shared_ptr<transport::Context> context_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<api::BufferPlacement> placement_;  // symmetric memory and staging
  std::unique_ptr<api::Registrations> registrations_;
  std::weak_ptr<RequestState> outstanding_;
  RequestState blocking_;
  std::weak_ptr<CommunicatorImpl> self_;
};

Communicator Communicator::from_mpi(MPI_Comm comm) {
  return CommunicatorImpl::make(comm);
}

namespace api {

Communicator communicator_over(MPI_Comm comm, const Team& team, size_t begin, size_t end) {
  Communicator communicator = CommunicatorImpl::make(comm);
  CommunicatorImpl::of(communicator).adopt(team, begin, end);
  return communicator;
}

size_t staged_collectives(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).staged_count();
}

size_t staging_bytes(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).staging_bytes();
}

}  // namespace api

int Communicator::rank() const {
  return impl_->rank();
}
int Communicator::size() const {
  return impl_->size();
}
MPI_Comm Communicator::mpi_comm() const {
  return impl_->comm();
}
SymmetricBuffer Communicator::alloc(size_t bytes) const {
  return impl_->alloc(bytes);
}
RegisteredBuffer Communicator::register_buffer(void* ptr, size_t bytes) const {
  return impl_->register_buffer(ptr, bytes);
}
void Communicator::deregister(RegisteredBuffer& buffer) const {
  impl_->deregister(buffer);
}

namespace {
const Registration& live_registration(const std::shared_ptr<Registration>& r, const char* what) {
  if (!r) throw InvalidArgument(std::string("RegisteredBuffer::") + what + " on an empty handle");
  if (!r->live) {
    throw InvalidArgument(std::string("RegisteredBuffer::") + what +
                          " after deregister: the buffer is no longer registered");
  }
  return *r;
}
}  // namespace

void* RegisteredBuffer::data() const {
  return live_registration(registration_, "data").base;
}
size_t RegisteredBuffer::bytes() const {
  return live_registration(registration_, "bytes").bytes;
}
RegisteredBuffer::operator bool() const {
  return registration_ != nullptr && registration_->live;
}
void Communicator::barrier() const {
  impl_->barrier();
}
void Communicator::set_timeout(std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) throw InvalidArgument("Communicator::set_timeout: must be positive");
  impl_->set_timeout(timeout);
}
void Communicator::close() {
  if (impl_) impl_->close();
}

Communicator Communicator::split(int color, int key) const {
  impl_->wait_for_every_member("Communicator::split");  // MPI_Comm_split itself cannot time out
  MPI_Comm sub = MPI_COMM_NULL;
  transport::check_mpi(MPI_Comm_split(impl_->comm(), color, key, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) {
    throw InvalidArgument("Communicator::split: color MPI_UNDEFINED leaves this rank out");
  }
  Communicator result = from_mpi(sub);
  MPI_Comm_free(&sub);
  return result;
}

namespace {

// Launches `chosen` on send/recv: straight from and into the caller's memory where it pushes
// (nothing staged), else through prepare_pair, copying in and out only what the algorithm does
// not do itself. `args(src, dst, src_ptr, dst_ptr)` builds the algorithm's arguments.
template <typename Args, typename MakeArgs>
void prepare_algorithm(CommunicatorImpl& impl, RequestState& state,
                       const coll::Algorithm<Args>& chosen, size_t bytes, const void* send,
                       size_t send_bytes, void* recv, size_t recv_bytes, MakeArgs&& args) {
  const auto* src_ptr = static_cast<const std::byte*>(send);
  auto* dst_ptr = static_cast<std::byte*>(recv);
  coll::CollContext& staging = impl.staging();
  if (chosen.pushes.holds(bytes, impl.size(), staging.has_inbox())) {
    impl.prepare_local(state, chosen.label, [&](coll::CollContext& c) {
      return chosen.run(c, args(0, 0, src_ptr, dst_ptr));
    });
    return;
  }
  impl.prepare_pair(state, chosen.label, send, send_bytes, recv, recv_bytes, !chosen.stages_src,
                    !chosen.writes_dst, chosen.streams_staged.holds(bytes, impl.size(), true),
                    [&](coll::CollContext& c, size_t src, size_t dst, std::byte* staged_recv) {
                      const bool staged = staged_recv != nullptr;  // else symmetric memory
                      return chosen.run(
                          c, args(src, dst, chosen.stages_src && staged ? src_ptr : nullptr,
                                  chosen.writes_dst ? staged_recv : nullptr));
                    });
}

Request allreduce_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                     size_t count, DType dtype, ReduceOp op, std::string_view algorithm) {
  const coll::Reducer& reducer = coll::reducer(dtype, op);
  const size_t bytes = checked_bytes(count, dtype, 1, "allreduce");
  const coll::AllreduceAlgorithm& chosen =
      impl.select_allreduce(algorithm, bytes, impl.buffers_of(send, bytes, recv, bytes));
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(impl, state, chosen, bytes, send, bytes, recv, bytes,
                      [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp) {
                        return coll::AllreduceArgs{src, dst, count, &reducer, sp, dp};
                      });
  });
}

Request allgather_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                     size_t count, DType dtype) {
  const size_t block = checked_bytes(count, dtype, 1, "allgather");
  const size_t total = checked_bytes(count, dtype, static_cast<size_t>(impl.size()), "allgather");
  const size_t es = dtype_size(dtype);
  const auto& chosen = impl.select(coll::allgather_table(), impl.overrides().allgather, block,
                                   impl.buffers_of(send, block, recv, total));
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(impl, state, chosen, block, send, block, recv, total,
                      [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp) {
                        return coll::ExchangeArgs{src, dst, block, es, sp, dp};
                      });
  });
}

Request reduce_scatter_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                          size_t count, DType dtype, ReduceOp op) {
  const coll::Reducer& reducer = coll::reducer(dtype, op);
  const size_t block = checked_bytes(count, dtype, 1, "reduce_scatter");
  const size_t total =
      checked_bytes(count, dtype, static_cast<size_t>(impl.size()), "reduce_scatter");
  const auto& chosen = impl.select(coll::reduce_scatter_table(), impl.overrides().reduce_scatter,
                                   block, impl.buffers_of(send, total, recv, block));
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(impl, state, chosen, block, send, total, recv, block,
                      [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp) {
                        return coll::ReduceScatterArgs{src, dst, count, &reducer, sp, dp};
                      });
  });
}

Request broadcast_on(CommunicatorImpl& impl, bool blocking, void* buffer, size_t count, DType dtype,
                     int root) {
  impl.check_root(root, "broadcast");
  const size_t bytes = checked_bytes(count, dtype, 1, "broadcast");
  const bool is_root = impl.rank() == root;
  const auto& chosen = impl.select(coll::broadcast_table(), impl.overrides().broadcast, bytes,
                                   impl.buffers_of(buffer, bytes, buffer, bytes));
  auto* ptr = static_cast<std::byte*>(buffer);
  return impl.launch(blocking, [&](RequestState& state) {
    if (chosen.pushes.holds(bytes, impl.size(), impl.staging().has_inbox())) {
      impl.prepare_local(state, chosen.label, [&](coll::CollContext& c) {
        return chosen.run(c, {0, bytes, root, ptr, nullptr});
      });
      return;
    }
    // One buffer: the root stages it in "in"; the others fetch it straight into theirs. A
    // blocking root whose algorithm stages its source does so chunk by chunk while they fetch; a
    // non-blocking one stages it all now (the caller may reuse a plain buffer at once).
    const bool stage_now = is_root && (!chosen.stages_src || !blocking);
    const bool streams = chosen.streams_staged.holds(bytes, impl.size(), true);
    impl.prepare_pair(state, chosen.label, buffer, bytes, buffer, bytes, stage_now,
                      !chosen.writes_dst, streams,
                      [&](coll::CollContext& c, size_t at, size_t, std::byte* staged_recv) {
                        const bool staged = staged_recv != nullptr;  // else symmetric memory
                        const std::byte* from = is_root && !stage_now && staged ? ptr : nullptr;
                        return chosen.run(c, {at, bytes, root, staged_recv, from, streams});
                      });
  });
}

Request all_to_all_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                      size_t count, DType dtype) {
  const size_t block = checked_bytes(count, dtype, 1, "all_to_all");
  const size_t total = checked_bytes(count, dtype, static_cast<size_t>(impl.size()), "all_to_all");
  const auto& chosen = impl.select(coll::all_to_all_table(), impl.overrides().all_to_all, block,
                                   impl.buffers_of(send, total, recv, total));
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(impl, state, chosen, block, send, total, recv, total,
                      [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp) {
                        return coll::ExchangeArgs{src, dst, block, dtype_size(dtype), sp, dp};
                      });
  });
}

}  // namespace

Request Communicator::iallreduce(const void* send, void* recv, size_t count, DType dtype,
                                 ReduceOp op, std::string_view algorithm) const {
  return allreduce_on(*impl_, false, send, recv, count, dtype, op, algorithm);
}
Request Communicator::iallgather(const void* send, void* recv, size_t count, DType dtype) const {
  return allgather_on(*impl_, false, send, recv, count, dtype);
}
Request Communicator::ireduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                                      ReduceOp op) const {
  return reduce_scatter_on(*impl_, false, send, recv, count, dtype, op);
}
Request Communicator::ibroadcast(void* buffer, size_t count, DType dtype, int root) const {
  return broadcast_on(*impl_, false, buffer, count, dtype, root);
}
Request Communicator::iall_to_all(const void* send, void* recv, size_t count, DType dtype) const {
  return all_to_all_on(*impl_, false, send, recv, count, dtype);
}
Request Communicator::ibarrier() const {
  return impl_->launch(false, [&](RequestState& state) {
    impl_->prepare_local(state, "barrier",
                         [](coll::CollContext& c) { return coll::barrier_mesh(c); });
  });
}

void Communicator::allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                             std::string_view algorithm) const {
  allreduce_on(*impl_, true, send, recv, count, dtype, op, algorithm);
}
void Communicator::allgather(const void* send, void* recv, size_t count, DType dtype) const {
  allgather_on(*impl_, true, send, recv, count, dtype);
}
void Communicator::reduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                                  ReduceOp op) const {
  reduce_scatter_on(*impl_, true, send, recv, count, dtype, op);
}
void Communicator::broadcast(void* buffer, size_t count, DType dtype, int root) const {
  broadcast_on(*impl_, true, buffer, count, dtype, root);
}
void Communicator::all_to_all(const void* send, void* recv, size_t count, DType dtype) const {
  all_to_all_on(*impl_, true, send, recv, count, dtype);
}

bool Request::test() {
  if (!state_) throw InvalidState("Request::test on an empty request");
  if (state_->finished.load(std::memory_order_acquire)) return true;
  transport::ProgressThread::Guard guard(state_->owner->progress_thread());
  const bool complete = state_->step();
  state_->rethrow_error();
  return complete;
}

void Request::wait() {
  wait(std::chrono::nanoseconds::zero());
}

void Request::wait(std::chrono::nanoseconds timeout) {
  if (!state_) throw InvalidState("Request::wait on an empty request");
  if (state_->finished.load(std::memory_order_acquire)) return;
  transport::ProgressThread::Guard guard(state_->owner->progress_thread());
  state_->owner->complete(*state_, timeout);
}

bool Request::done() const {
  return state_ && state_->finished.load(std::memory_order_acquire);
}

}  // namespace rankflow
