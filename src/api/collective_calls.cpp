// Each collective of Communicator dispatched through its algorithm table
// (collectives/registry.h): the argument checks, the choice by size and buffer kind, and the
// launch, straight from and into the caller's memory where the algorithm pushes, through
// BufferPlacement otherwise, or as Open MPI's own collective where the table says so
// (api/mpi_collectives.h). Runs on the calling thread.
#include <cstddef>
#include <string_view>
#include <vector>

#include "api/communicator_impl.h"
#include "api/mpi_collectives.h"
#include "api/mpi_pairwise.h"
#include "collectives/registry.h"
#include "rankflow/communicator.h"

namespace rankflow {

using Kind = api::CollectiveKind;

void CommunicatorImpl::compare_arguments(api::CallArguments args, const void* send,
                                         size_t send_blocks, const void* recv, size_t recv_blocks) {
  {
    transport::ProgressThread::Guard guard(progress_thread());
    live();
    finish_outstanding();
    args.buffers =
        placement_->kind_of(send, api::bytes_or_zero(args.count, args.dtype, send_blocks), recv,
                            api::bytes_or_zero(args.count, args.dtype, recv_blocks));
  }
  // The wait needs nothing of this communicator's: without the lock, the progress thread goes
  // on advancing the program's requests on other communicators meanwhile.
  const transport::Context::CallScope scope = call_scope(api::name_of(args.collective));
  arguments_.compare(*context_, args);
}

namespace {

// Launches `chosen` on send/recv: straight from and into the caller's memory where it pushes
// (nothing staged), else through prepare_pair, copying in and out only what the algorithm does
// not do itself. `args(src, dst, src_ptr, dst_ptr, streams)` builds the algorithm's arguments.
// A non-blocking call's caller may write a plain send as soon as the call returns, and the
// algorithm may run later (test, wait, the progress thread): pushing algorithms then push from
// the request's own copy of send, and algorithms that stage their source themselves get it
// copied in before they start (src_ptr null then). (The pushed and streamed algorithms push in
// the call itself, and finish there where every peer's push is already in, or, in a blocking
// call, once it is (CollContext::call_blocks): their waits for a free slot, and their errors,
// then come from the call.)
template <typename Args, typename MakeArgs>
void prepare_algorithm(CommunicatorImpl& impl, RequestState& state,
                       const coll::Algorithm<Args>& chosen, size_t bytes, const void* send,
                       size_t send_bytes, void* recv, size_t recv_bytes, MakeArgs&& args,
                       bool blocking) {
  const auto* src_ptr = static_cast<const std::byte*>(send);
  auto* dst_ptr = static_cast<std::byte*>(recv);
  coll::CollContext& staging = impl.staging();
  if (chosen.pushes.holds(bytes, impl.size(), staging.has_inbox())) {
    if (!blocking) src_ptr = state.keep_send(send, send_bytes);
    impl.prepare_local(state, chosen.label, blocking, [&](coll::CollContext& c) {
      return chosen.run(c, args(0, 0, src_ptr, dst_ptr, false));
    });
    return;
  }
  const bool copy_in = !chosen.stages_src || !blocking;
  const bool streams = chosen.streams_staged.holds(bytes, impl.size(), true);
  impl.prepare_pair(
      state, chosen.label, send, send_bytes, recv, recv_bytes, copy_in, !chosen.writes_dst, streams,
      [&](coll::CollContext& c, size_t src, size_t dst, std::byte* staged_recv) {
        const bool staged = staged_recv != nullptr;  // else symmetric memory
        return chosen.run(c, args(src, dst, !copy_in && staged ? src_ptr : nullptr,
                                  chosen.writes_dst ? staged_recv : nullptr, streams));
      });
}

Request allreduce_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                     size_t count, DType dtype, ReduceOp op, std::string_view algorithm) {
  if (impl.checks_arguments()) [[unlikely]] {
    impl.compare_arguments({.collective = Kind::kAllreduce,
                            .blocking = blocking,
                            .count = count,
                            .dtype = static_cast<int>(dtype),
                            .op = static_cast<int>(op),
                            .in_place = send == recv,
                            .algorithm = algorithm},
                           send, 1, recv, 1);
  }
  const coll::Reducer& reducer = coll::reducer(dtype, op);
  const size_t bytes = api::checked_bytes(count, dtype, 1, "allreduce");
  const bool open_mpi = impl.open_mpi_allowed(blocking) && api::mpi_takes_allreduce(count, dtype);
  const coll::AllreduceAlgorithm& chosen =
      impl.select_allreduce(algorithm, bytes, impl.buffers_of(send, bytes, recv, bytes), open_mpi);
  if (chosen.open_mpi) {
    return impl.run_open_mpi(chosen.label, [&](MPI_Comm comm, std::vector<std::byte>& scratch) {
      api::run_allreduce(comm, send, recv, count, dtype, op, scratch);
    });
  }
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(
        impl, state, chosen, bytes, send, bytes, recv, bytes,
        [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp, bool) {
          return coll::AllreduceArgs{
              src, dst, count, &reducer, sp, dp, coll::twophase_segments(impl.machine().profile)};
        },
        blocking);
  });
}

Request allgather_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                     size_t count, DType dtype) {
  if (impl.checks_arguments()) [[unlikely]] {
    const size_t block = api::bytes_or_zero(count, static_cast<int>(dtype), 1);
    const size_t members = static_cast<size_t>(impl.size());
    impl.compare_arguments(
        {.collective = Kind::kAllgather,
         .blocking = blocking,
         .count = count,
         .dtype = static_cast<int>(dtype),
         .in_place = send == static_cast<const std::byte*>(recv) + impl.rank() * block},
        send, 1, recv, members);
  }
  const size_t block = api::checked_bytes(count, dtype, 1, "allgather");
  const size_t total =
      api::checked_bytes(count, dtype, static_cast<size_t>(impl.size()), "allgather");
  const size_t es = dtype_size(dtype);
  const bool open_mpi = impl.open_mpi_allowed(blocking) && api::mpi_takes_exchange(block);
  const auto& chosen = impl.select(coll::allgather_table(), block,
                                   impl.buffers_of(send, block, recv, total), open_mpi);
  if (chosen.open_mpi && impl.size() == 2) {
    return impl.run_open_mpi_pair(chosen.label, [&](const api::PairCall& call, auto& scratch) {
      api::pair_allgather(call, send, recv, block, scratch);
    });
  }
  if (chosen.open_mpi) {
    return impl.run_open_mpi(chosen.label, [&](MPI_Comm comm, std::vector<std::byte>& scratch) {
      api::run_allgather(comm, impl.size(), send, recv, block, scratch);
    });
  }
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(
        impl, state, chosen, block, send, block, recv, total,
        [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp, bool s) {
          return coll::ExchangeArgs{src, dst, block, es, sp, dp, s};
        },
        blocking);
  });
}

Request reduce_scatter_on(CommunicatorImpl& impl, bool blocking, const void* send, void* recv,
                          size_t count, DType dtype, ReduceOp op) {
  if (impl.checks_arguments()) [[unlikely]] {
    impl.compare_arguments({.collective = Kind::kReduceScatter,
                            .blocking = blocking,
                            .count = count,
                            .dtype = static_cast<int>(dtype),
                            .op = static_cast<int>(op),
                            .in_place = send == recv},
                           send, static_cast<size_t>(impl.size()), recv, 1);
  }
  const coll::Reducer& reducer = coll::reducer(dtype, op);
  const size_t block = api::checked_bytes(count, dtype, 1, "reduce_scatter");
  const size_t total =
      api::checked_bytes(count, dtype, static_cast<size_t>(impl.size()), "reduce_scatter");
  const bool open_mpi =
      impl.open_mpi_allowed(blocking) && api::mpi_takes_reduce_scatter(count, dtype);
  const auto& chosen = impl.select(coll::reduce_scatter_table(), block,
                                   impl.buffers_of(send, total, recv, block), open_mpi);
  if (chosen.open_mpi) {
    return impl.run_open_mpi(chosen.label, [&](MPI_Comm comm, std::vector<std::byte>& scratch) {
      api::run_reduce_scatter(comm, impl.size(), send, recv, count, dtype, op, scratch);
    });
  }
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(
        impl, state, chosen, block, send, total, recv, block,
        [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp, bool) {
          return coll::ReduceScatterArgs{src, dst, count, &reducer, sp, dp};
        },
        blocking);
  });
}

Request broadcast_on(CommunicatorImpl& impl, bool blocking, void* buffer, size_t count, DType dtype,
                     int root) {
  if (impl.checks_arguments()) [[unlikely]] {
    impl.compare_arguments({.collective = Kind::kBroadcast,
                            .blocking = blocking,
                            .count = count,
                            .dtype = static_cast<int>(dtype),
                            .root = root},
                           buffer, 1, buffer, 1);
  }
  impl.check_root(root, "broadcast");
  const size_t bytes = api::checked_bytes(count, dtype, 1, "broadcast");
  const bool is_root = impl.rank() == root;
  const bool open_mpi = impl.open_mpi_allowed(blocking) && api::mpi_takes_exchange(bytes);
  const auto& chosen = impl.select(coll::broadcast_table(), bytes,
                                   impl.buffers_of(buffer, bytes, buffer, bytes), open_mpi);
  if (chosen.open_mpi && impl.size() == 2) {
    return impl.run_open_mpi_pair(chosen.label, [&](const api::PairCall& call, auto&) {
      api::pair_broadcast(call, buffer, bytes, root);
    });
  }
  if (chosen.open_mpi) {
    return impl.run_open_mpi(chosen.label, [&](MPI_Comm comm, std::vector<std::byte>&) {
      api::run_broadcast(comm, buffer, bytes, root);
    });
  }
  auto* ptr = static_cast<std::byte*>(buffer);
  return impl.launch(blocking, [&](RequestState& state) {
    if (chosen.pushes.holds(bytes, impl.size(), impl.staging().has_inbox())) {
      // A non-blocking root pushes from its own copy (the caller may write the buffer at once).
      std::byte* from = is_root && !blocking ? state.keep_send(ptr, bytes) : ptr;
      impl.prepare_local(state, chosen.label, blocking, [&](coll::CollContext& c) {
        return chosen.run(c, {0, bytes, root, from, nullptr});
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
  if (impl.checks_arguments()) [[unlikely]] {
    const size_t members = static_cast<size_t>(impl.size());
    impl.compare_arguments({.collective = Kind::kAllToAll,
                            .blocking = blocking,
                            .count = count,
                            .dtype = static_cast<int>(dtype),
                            .in_place = send == recv},
                           send, members, recv, members);
  }
  const size_t block = api::checked_bytes(count, dtype, 1, "all_to_all");
  const size_t total =
      api::checked_bytes(count, dtype, static_cast<size_t>(impl.size()), "all_to_all");
  const bool open_mpi = impl.open_mpi_allowed(blocking) && api::mpi_takes_exchange(block);
  const auto& chosen = impl.select(coll::all_to_all_table(), block,
                                   impl.buffers_of(send, total, recv, total), open_mpi);
  if (chosen.open_mpi && impl.size() == 2) {
    return impl.run_open_mpi_pair(chosen.label, [&](const api::PairCall& call, auto& scratch) {
      api::pair_all_to_all(call, send, recv, block, scratch);
    });
  }
  if (chosen.open_mpi) {
    return impl.run_open_mpi(chosen.label, [&](MPI_Comm comm, std::vector<std::byte>& scratch) {
      api::run_all_to_all(comm, impl.size(), send, recv, block, scratch);
    });
  }
  return impl.launch(blocking, [&](RequestState& state) {
    prepare_algorithm(
        impl, state, chosen, block, send, total, recv, total,
        [&](size_t src, size_t dst, const std::byte* sp, std::byte* dp, bool s) {
          return coll::ExchangeArgs{src, dst, block, dtype_size(dtype), sp, dp, s};
        },
        blocking);
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
  if (impl_->checks_arguments()) [[unlikely]]
    impl_->compare_arguments({.collective = Kind::kBarrier, .blocking = false}, nullptr, 0, nullptr,
                             0);
  return impl_->launch(false, [&](RequestState& state) {
    impl_->prepare_local(state, "barrier", false,
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

}  // namespace rankflow
