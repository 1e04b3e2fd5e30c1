// rankflow/communicator.h: collectives for any MPI program (library mode).
//
//   MPI_Init(&argc, &argv);                       // the program owns MPI
//   auto comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
//   comm.allreduce(in.data(), out.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
//   auto buf = comm.alloc(bytes);                 // symmetric memory: zero-copy collectives
//   comm.allreduce(buf.data(), buf.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
//
// Every call is collective over the communicator: all members call it in the same order with
// the same counts. send == recv means in place, on every member of the call or on none (as with
// MPI_IN_PLACE): the staged paths lay the two out differently in the window, and a call that
// mixes them may return wrong results (detected only by the plain twophase allreduce where it
// hands its parts off, from 16 KiB on two members: InvalidArgument on every member). Buffers may be
// any memory; buffers from alloc() (send and recv in the same allocation), and a domain's buffers
// on the domain's communicator, skip the staging copies. Every member of a call passes the same
// kind: all symmetric (alloc or domain memory) or all plain, since the tables choose the algorithm
// by kind; members that mix kinds may choose different algorithms and end in rankflow::Timeout.
// RANKFLOW_ALLREDUCE, RANKFLOW_ALLGATHER, RANKFLOW_REDUCE_SCATTER, RANKFLOW_BROADCAST and
// RANKFLOW_ALL_TO_ALL, read here at creation, override the algorithm choice where the named
// algorithm can serve the message (docs/collectives.md). Errors are rankflow::Error; a member that
// never arrives ends the call with rankflow::Timeout after RANKFLOW_TIMEOUT_S. One thread at a time
// may use a communicator.
//
// The progress rule. When a blocking collective returns, nothing that any peer needs from this
// rank still depends on this rank calling into rankflow again: the program may go straight
// into its own MPI calls (or compute) on any transport, including UCX over TCP between hosts,
// where data moves only while its owner calls into UCX. The same holds once Request::wait()
// returns and once Request::test() has returned true. A request still in flight, as in MPI,
// advances only inside rankflow calls: the program must test() or wait() it to completion
// before it makes a blocking call (an MPI call included) that needs a peer which may itself be
// waiting on that request. RANKFLOW_PROGRESS=thread lifts that: a background thread advances
// requests in flight while the program computes or sits in MPI (docs/collectives.md).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "rankflow/types.h"

namespace rankflow {

class CommunicatorImpl;
struct SymmetricAllocation;
struct RequestState;
struct Registration;

// A non-blocking collective in flight. test() advances it without blocking; wait() completes
// it (see the progress rule above: until then it may need this rank's calls to advance). Recv
// buffers must not be read, nor send buffers of symmetric or registered memory written (they
// are used in place), before it completes; a plain send buffer may be written as soon as the
// call returns (the request keeps what it needs of it). A
// Timeout from wait(timeout) does not cancel: wait again or discard the communicator. Starting
// another collective on the same communicator completes this one first.
class Request {
 public:
  Request() = default;
  bool test();
  void wait();  // the communicator's timeout
  void wait(std::chrono::nanoseconds timeout);
  bool done() const;

 private:
  friend class CommunicatorImpl;
  explicit Request(std::shared_ptr<RequestState> state) : state_(std::move(state)) {}
  std::shared_ptr<RequestState> state_;
};

// Memory at the same place in every member's symmetric window; freed when the last handle goes
// (collectively: every member must release it). A collective on symmetric memory takes the same
// offset into the allocation on every member (the in-place allgather input excepted: each
// member's own block of recv).
class SymmetricBuffer {
 public:
  SymmetricBuffer() = default;
  void* data() const;
  size_t bytes() const;
  template <typename T>
  std::span<T> as() const {
    return {static_cast<T*>(data()), bytes() / sizeof(T)};
  }
  explicit operator bool() const { return allocation_ != nullptr; }

 private:
  friend class CommunicatorImpl;
  explicit SymmetricBuffer(std::shared_ptr<SymmetricAllocation> a) : allocation_(std::move(a)) {}
  std::shared_ptr<SymmetricAllocation> allocation_;
};

// The caller's own memory registered with a communicator (Communicator::register_buffer), as
// NCCL's ncclCommRegister or UCC's mem_map register memory that collectives reuse every
// iteration. It stays the caller's memory at the caller's address. Where every member maps the
// others' memory (one host, the default transports), its pages are shared with the members: a
// collective whose send and recv are both registered runs in place on them, zero-copy, as on
// alloc() memory (and under the same rule: every member passes the same offset into its k-th
// registration). Over UCX_TLS=tcp,self (other hosts), and for memory that cannot be shared (a
// file mapping, the stack, read-only pages), it is staged on every member, with the staging
// window made large enough at registration. docs/collectives.md, "Registered buffers", says what
// sharing does to the pages. data() and bytes() after deregister are an InvalidArgument.
class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  void* data() const;
  size_t bytes() const;
  // Registered and not yet deregistered.
  explicit operator bool() const;

 private:
  friend class CommunicatorImpl;
  explicit RegisteredBuffer(std::shared_ptr<Registration> r) : registration_(std::move(r)) {}
  std::shared_ptr<Registration> registration_;
};

class Communicator {
 public:
  // Collective over `comm`. Initialises rankflow's transport on first use (and MPI, if the
  // program has not). `comm` must be an intra-communicator derived from MPI_COMM_WORLD.
  static Communicator from_mpi(MPI_Comm comm);

  int rank() const;
  int size() const;
  // The machine profile the algorithm tables use here: "generic", or the one every member
  // detected or was given with RANKFLOW_MACHINE (docs/collectives.md, "Machine profiles").
  std::string_view machine_profile() const;
  // rankflow's duplicate, for the program's own MPI calls. rankflow runs Open MPI's own
  // collectives on it too (the tables' mpi entries), in the order of its calls, as MPI allows.
  MPI_Comm mpi_comm() const;

  // Collective: a sub-communicator, as MPI_Comm_split.
  Communicator split(int color, int key) const;
  // Collective: `bytes` of symmetric memory on every member (zeroed).
  SymmetricBuffer alloc(size_t bytes) const;
  // Collective: registers `bytes` of the caller's own memory at `ptr` (members may register
  // different sizes), which must stay valid (not freed) until deregister or until the last
  // handle goes. A null pointer, no bytes, more than 2^48 bytes, or an overlap with a live
  // registration on any member is an InvalidArgument on every member. On one host the whole
  // pages the buffer spans become shared memory, with their contents: other data on its first
  // and last page keeps its value, but no other thread may write it while register_buffer or
  // deregister runs, and a child forked meanwhile shares those pages with this process. Where
  // the buffer is staged instead, the staging window holds two buffers (in and out) of the
  // largest size any member registered, rounded up to a power of two, until the communicator
  // closes.
  RegisteredBuffer register_buffer(void* ptr, size_t bytes) const;
  // Ends the registration on this member: its pages are private memory again, with their
  // contents (once no other registration, of any communicator, shares them). Call it on every
  // member, as register_buffer, with no collective on the buffer in flight; dropping the last
  // handle does the same, and so does close(). A buffer already deregistered, or an empty
  // handle, is an InvalidArgument.
  void deregister(RegisteredBuffer& buffer) const;

  // `algorithm`: "auto" (RANKFLOW_ALLREDUCE, then the built-in table) or one of onephase,
  // twophase, ring, bidirectional_ring, ibing, or mpi (Open MPI's MPI_Allreduce, for blocking
  // calls on types MPI has; elsewhere the table's choice runs instead). Where a table names
  // mpi for plain buffers, the blocking collectives below run Open MPI's own collective on the
  // communicator's duplicate (docs/collectives.md).
  void allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                 std::string_view algorithm = "auto") const;
  // recv holds size() * count elements; in place when send == recv + rank() * count elements.
  void allgather(const void* send, void* recv, size_t count, DType dtype) const;
  // send holds size() * count elements; recv gets this member's reduced block of `count`.
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) const;
  void broadcast(void* buffer, size_t count, DType dtype, int root) const;
  // send and recv hold size() blocks of `count` elements; block p goes to member p.
  void all_to_all(const void* send, void* recv, size_t count, DType dtype) const;
  void barrier() const;

  // Non-blocking variants: same arguments, a Request to test or wait on.
  Request iallreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                     std::string_view algorithm = "auto") const;
  Request iallgather(const void* send, void* recv, size_t count, DType dtype) const;
  Request ireduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                          ReduceOp op) const;
  Request ibroadcast(void* buffer, size_t count, DType dtype, int root) const;
  Request iall_to_all(const void* send, void* recv, size_t count, DType dtype) const;
  Request ibarrier() const;

  // The limit of every wait inside this communicator's collectives (default RANKFLOW_TIMEOUT_S),
  // including the MPI waits of the windows a call makes or releases (the staging window growing
  // for a larger call on plain memory), alloc, register_buffer and split's arrival.
  // After a Timeout the communicator's members are out of step: close it and make a new one.
  void set_timeout(std::chrono::nanoseconds timeout);

  // Releases rankflow's resources for this communicator (collective). Also done when the last
  // copy of the handle goes.
  void close();

 private:
  friend class CommunicatorImpl;
  explicit Communicator(std::shared_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<CommunicatorImpl> impl_;
};

}  // namespace rankflow
