// CommunicatorImpl: one library-mode communicator's state (its MPI duplicate, buffer placement,
// registrations, the request in flight, how it chooses algorithms: api/algorithm_choice.h,
// the overrides, the machine profile and the memo of choices, and RANKFLOW_CHECK_ARGS's
// comparison of every call's arguments: api/argument_check.h) and the launch of a collective
// through a RequestState; RequestState: one collective in flight. Internal to src/api: the
// public methods are in communicator.cpp, the collectives' dispatch through their tables in
// collective_calls.cpp. Runs on the calling thread (and, with RANKFLOW_PROGRESS=thread,
// requests advance on the progress thread under its lock).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/algorithm_choice.h"
#include "api/argument_check.h"
#include "api/buffer_placement.h"
#include "api/mpi_pairwise.h"
#include "api/registrations.h"
#include "collectives/collective.h"
#include "collectives/registry.h"
#include "common/log.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"
#include "transport/team_state.h"

namespace rankflow {

namespace api {

// count elements of dtype, `blocks` times, in bytes; InvalidArgument where that overflows size_t.
// (Checked with the overflow builtins: the two divisions it took were a visible part of a small
// collective's call.)
inline size_t checked_bytes(size_t count, DType dtype, size_t blocks, const char* operation) {
  size_t block_bytes = 0;
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, dtype_size(dtype), &block_bytes) ||
      __builtin_mul_overflow(block_bytes, blocks, &bytes)) {
    throw InvalidArgument(std::string(operation) + ": count " + std::to_string(count) +
                          " overflows the size of a buffer");
  }
  return bytes;
}

}  // namespace api

struct RequestState {
  std::shared_ptr<CommunicatorImpl> owner;                         // keeps the staging window alive
  std::shared_ptr<SymmetricAllocation> allocation;                 // or the symmetric buffer's
  std::shared_ptr<Registration> registered_send, registered_recv;  // or the registered ones
  coll::CollContext* context = nullptr;
  coll::CollTask task;
  // Copy-out from staging once complete.
  void* copy_to = nullptr;
  const std::byte* copy_from = nullptr;
  size_t copy_bytes = 0;
  std::atomic<bool> finished = false;  // read by Request::done() without the driver lock
  std::exception_ptr error;            // what the progress thread met, rethrown by test/wait
  uint32_t unfinished_tests = 0;       // Request::test calls that found it unfinished
  // A non-blocking call's own copy of the caller's send, for algorithms that read it after the
  // call returned (the caller may write a plain send buffer at once).
  std::vector<std::byte> send_copy;

  std::byte* keep_send(const void* send, size_t bytes) {
    const auto* from = static_cast<const std::byte*>(send);
    send_copy.assign(from, from + bytes);
    return send_copy.data();
  }

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

class CommunicatorImpl {
 public:
  // The overrides and the machine profile are read first: a bad value fails before anything
  // collective is made.
  explicit CommunicatorImpl(MPI_Comm comm) : context_(transport::Context::acquire()) {
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
    for (int world_rank : context_->world_ranks_of(comm_))
      shares_a_core_ = shares_a_core_ || context_->shares_core_with(world_rank);
    choice_.agree(comm_, *context_);
    arguments_.agree(comm_, *context_);
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
    // A blocking call that ended in a Timeout leaves its task suspended, and the task's frame may
    // hold pieces of the windows (a plain twophase call's hand-off header, which it clears when
    // destroyed): destroyed here, while the windows are still there.
    blocking_.task = coll::CollTask();
    placement_->close();
    arguments_.close();
    MPI_Comm_free(&comm_);
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return live(), comm_; }
  // True when a member is bound to this rank's core (more ranks than cores): a poll that finds
  // nothing should now and then let it run.
  bool shares_a_core() const { return shares_a_core_; }

  SymmetricBuffer alloc(size_t bytes) {
    live();
    const transport::Context::CallScope scope = call_scope("Communicator::alloc");
    return SymmetricBuffer(placement_->alloc(bytes));
  }

  // See Communicator::register_buffer: the buffer is attached for collectives in place or, where
  // any member cannot, the staging window grows to the largest buffer any member registered,
  // here, once.
  RegisteredBuffer register_buffer(void* ptr, size_t bytes) {
    transport::ProgressThread::Guard guard(progress_thread());
    live();
    finish_outstanding();
    const transport::Context::CallScope scope = call_scope("");
    size_t largest = 0;
    auto registration = registrations_->add(ptr, bytes, largest);
    if (!placement_->registered().attach(registration)) {
      const api::BufferPlacement::Call call(*placement_, "Communicator::register_buffer");
      placement_->prepare_staging(largest);
    }
    return RegisteredBuffer(std::move(registration));
  }
  void deregister(RegisteredBuffer& buffer) {
    if (!buffer.registration_) {
      throw InvalidArgument("Communicator::deregister: an empty RegisteredBuffer");
    }
    transport::ProgressThread::Guard guard(progress_thread());
    live();
    finish_outstanding();  // a request in flight may use the buffer
    registrations_->remove(*buffer.registration_);
    api::RegisteredMemory::detach(*buffer.registration_);
  }
  size_t staging_bytes() const { return placement_->staging_bytes(); }

  // Collectives on [begin, end) of `team`'s window run in place (see BufferPlacement::adopt).
  void adopt(const Team& team, size_t begin, size_t end) {
    live();
    placement_->adopt(team, begin, end);
    adopted_ = true;
  }
  size_t staged_count() const { return placement_->staged_count(); }
  size_t next_staging_offset(size_t bytes) const { return placement_->alternate_half(bytes); }

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
      state.registered_send.reset();  // a blocking call holds nothing once it returns
      state.registered_recv.reset();
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
    const transport::Context::CallScope scope = call_scope("");
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
    const api::BufferPlacement::Call call(*placement_, operation);
    api::Placement p =
        placement_->place_pair(send, send_bytes, recv, recv_bytes, copy_in, copy_out, stream_in);
    state.context = p.context;
    state.context->set_operation(operation);
    state.copy_to = p.copy_to;
    state.copy_from = p.copy_from;
    state.copy_bytes = p.copy_bytes;
    state.allocation = std::move(p.allocation);
    state.registered_send = std::move(p.registered_send);
    state.registered_recv = std::move(p.registered_recv);
    state.task = make(*state.context, p.src, p.dst, p.staged_recv);
  }

  // Prepares `make(staging)` on the caller's own memory: for algorithms that push from local
  // buffers and never let peers read them (the pushed and streamed paths), so nothing is staged.
  // A blocking call's algorithm may wait for its peers in make() (CollContext::call_blocks).
  template <typename Make>
  void prepare_local(RequestState& state, const char* operation, bool blocking, Make&& make) {
    const api::BufferPlacement::Call call(*placement_, operation);
    state.context = &placement_->staging();
    state.context->set_operation(operation);
    coll::CollContext::CallBlocks blocks(*state.context, blocking);
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

  // RANKFLOW_CHECK_ARGS=on (api/argument_check.h): each call, before it checks anything itself,
  // asks checks_arguments() (one predictable branch) and, where true, compare_arguments(args,
  // send, send_blocks, recv, recv_blocks), send and recv holding that many blocks of `count`
  // elements: after any earlier request, every member's arguments and kind of buffers are
  // compared, the progress thread's lock released for the wait (collective_calls.cpp).
  bool checks_arguments() const { return arguments_.enabled(); }
  void compare_arguments(api::CallArguments args, const void* send, size_t send_blocks,
                         const void* recv, size_t recv_blocks);

  void check_root(int root, const char* operation) const {
    if (root < 0 || root >= size_) {
      throw InvalidArgument(std::string(operation) + ": root " + std::to_string(root) +
                            " is not a member; valid roots are 0.." + std::to_string(size_ - 1));
    }
  }

  const coll::AllreduceAlgorithm& select_allreduce(std::string_view requested, size_t bytes,
                                                   coll::Buffers buffers, bool open_mpi) const {
    if (requested != "auto") {
      const coll::AllreduceAlgorithm& named = coll::allreduce_table().find(requested);
      if (!named.open_mpi || open_mpi) return choice_.remember(named);  // else the table's choice
    }
    return select(coll::allreduce_table(), bytes, buffers, open_mpi);
  }
  // Whether a call may run Open MPI's own collective (coll::Algorithm::open_mpi): blocking
  // calls on a communicator the program made (a domain's serves kernels in the DAG runtime).
  bool open_mpi_allowed(bool blocking) const { return blocking && !adopted_; }
  // Runs the blocking Open MPI collective `run(comm, scratch)` on this communicator's duplicate,
  // after any earlier request. Every member arrives first, under the communicator's timeout
  // (barrier_arrival, a signal kind of its own): once all are here, each goes straight into the
  // same MPI call, so none waits there for a member that never comes or that chose another
  // algorithm (a member that dies inside it ends the job, as in the program's own MPI calls).
  // The progress thread's lock is released for the MPI call, which needs no UCX progress.
  template <typename Run>
  Request run_open_mpi(const char* label, Run&& run) {
    {
      transport::ProgressThread::Guard guard(progress_thread());
      live();
      finish_outstanding();
      coll::CollContext& staging = placement_->staging();
      staging.set_operation(label);
      coll::CollTask arrival = coll::barrier_arrival(staging);
      staging.run(arrival, {});
    }
    run(comm_, open_mpi_.scratch);
    return Request();
  }
  // On two members the exchanges run Open MPI's point-to-point instead, `run(call, scratch)`
  // (api/mpi_pairwise.h): its messages say both members are here, so no arrival goes first,
  // and its wait has the communicator's timeout. Each call gets the next sequence number.
  template <typename Run>
  Request run_open_mpi_pair(const char* label, Run&& run) {
    api::PairCall call{};
    {
      transport::ProgressThread::Guard guard(progress_thread());
      live();
      finish_outstanding();
      call = {comm_, rank_, label, placement_->staging().team().timeout(),
              open_mpi_.pair_sequence++};
    }
    run(call, open_mpi_.scratch);
    return Request();
  }
  // Which kind of memory send and recv are (BufferPlacement::symmetric): the tables choose by it.
  coll::Buffers buffers_of(const void* send, size_t send_bytes, const void* recv,
                           size_t recv_bytes) {
    live();
    return placement_->symmetric(send, send_bytes, recv, recv_bytes) ? coll::Buffers::kSymmetric
                                                                     : coll::Buffers::kPlain;
  }
  // The algorithm of `table` for a message of `bytes` (api/algorithm_choice.h).
  template <typename Args>
  const coll::Algorithm<Args>& select(const coll::AlgorithmTable<Args>& table, size_t bytes,
                                      coll::Buffers buffers, bool open_mpi = false) const {
    live();
    return choice_.select(table, bytes, size_, placement_->staging().has_inbox(), buffers,
                          open_mpi);
  }
  const coll::Overrides& overrides() const { return choice_.overrides(); }
  const coll::MachineRules& machine() const { return choice_.machine(); }
  const char* last_chosen_algorithm() const { return choice_.last_chosen(); }

 private:
  void live() const {
    if (comm_ == MPI_COMM_NULL) throw InvalidState("communicator used after close()");
  }
  // The scope of the MPI waits of alloc, registration and arrival: its diagnostics name
  // `operation`, and they take the communicator's set_timeout where one was set. (A collective's
  // own call takes none: BufferPlacement::Call names it, and the growth makes the scope.)
  transport::Context::CallScope call_scope(std::string_view operation) const {
    return transport::Context::CallScope(operation, placement_->timeout());
  }

  api::AlgorithmChoice choice_;   // overrides, machine profile, tables, memo
  api::ArgumentCheck arguments_;  // RANKFLOW_CHECK_ARGS
  std::shared_ptr<transport::Context> context_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<api::BufferPlacement> placement_;  // symmetric memory and staging
  std::unique_ptr<api::Registrations> registrations_;
  std::weak_ptr<RequestState> outstanding_;
  RequestState blocking_;
  std::weak_ptr<CommunicatorImpl> self_;
  bool adopted_ = false;  // a domain's communicator (adopt)
  bool shares_a_core_ = false;
  struct OpenMpiCalls {
    std::vector<std::byte> scratch;  // a copy of an overlapping input for Open MPI's call
    uint32_t pair_sequence = 0;      // run_open_mpi_pair's calls so far
  } open_mpi_;
};

}  // namespace rankflow
