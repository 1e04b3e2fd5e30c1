// BufferPlacement: where a communicator's collectives find their buffers. It owns the choice
// between zero-copy symmetric memory and the staging window: the registry of symmetric
// allocations (comm.alloc() memory, and a domain's window adopted by the domain's
// communicator), the staging window with its "in" and "out" buffers and its growth, and the
// placement of one collective's send and recv (in a symmetric allocation when both lie in the
// same one, else copied into and out of the staging window).
//
// Threads: the thread that calls the communicator (under the progress thread's lock when
// RANKFLOW_PROGRESS=thread runs one). Growth and alloc() are collective: every member makes the
// same calls with the same sizes, so the windows are made in step.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "api/registered_memory.h"
#include "collectives/coll_context.h"
#include "rankflow/team.h"
#include "transport/context.h"

namespace rankflow {

// Symmetric memory the collectives run on in place: `bytes` at window `offset` of `coll`'s team,
// `base` locally. SymmetricBuffer handles share it.
struct SymmetricAllocation {
  std::unique_ptr<coll::CollContext> coll;
  size_t offset = 0;  // of the data within the window
  size_t bytes = 0;
  std::byte* base = nullptr;
  bool owns_window = true;  // false for an adopted window (a domain's), closed by its owner
  ~SymmetricAllocation();
};

namespace api {

// What a collective's send and recv are: the caller's own memory, symmetric memory
// (Communicator::alloc, a domain's window), or attached registrations (register_buffer).
enum class BufferKind : uint8_t { kPlain, kSymmetric, kRegistered };

// Where one collective runs: the context, the offsets of send and recv in its window, and what
// to copy out once it completes.
struct Placement {
  coll::CollContext* context = nullptr;
  size_t src = 0;
  size_t dst = 0;
  // The caller's recv when the collective is staged; null on symmetric memory.
  std::byte* staged_recv = nullptr;
  std::shared_ptr<SymmetricAllocation> allocation;  // kept alive while the collective runs
  std::shared_ptr<Registration> registered_send, registered_recv;  // the same, when registered
  void* copy_to = nullptr;
  const std::byte* copy_from = nullptr;
  size_t copy_bytes = 0;
};

class BufferPlacement {
 public:
  // Collective over `comm` (borrowed; it must outlive close()): makes the staging window.
  BufferPlacement(std::shared_ptr<transport::Context> context, MPI_Comm comm);
  BufferPlacement(const BufferPlacement&) = delete;
  BufferPlacement& operator=(const BufferPlacement&) = delete;

  // Collective: `bytes` of zeroed symmetric memory in a window of its own.
  std::shared_ptr<SymmetricAllocation> alloc(size_t bytes);
  // Treats [begin, end) of `team`'s window as symmetric memory (every member adopts the same
  // range; nothing is communicated). The window must hold
  // the collective_buffers() of the team's size, under their names (see collective_buffers);
  // the collectives get a team of their own over it, whose signals never touch `team`'s.
  void adopt(const Team& team, size_t begin, size_t end);

  // send/recv in one window: their symmetric allocation when both lie in the same one, else the
  // staging window (grown to hold both), with send copied in now when `copy_in` (coll::stage_copy;
  // `stream_in`: the algorithm's Algorithm::streams_staged_src), and recv's copy out described
  // when `copy_out`.
  Placement place_pair(const void* send, size_t send_bytes, void* recv, size_t recv_bytes,
                       bool copy_in, bool copy_out, bool stream_in = false);
  // Whether send and recv lie in one symmetric allocation, or both in attached registrations
  // (place_pair then runs in place). (A scan of the allocations, taking no reference: most
  // programs have none or a few.)
  bool symmetric(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes) const {
    return kind_of(send, send_bytes, recv, recv_bytes) != BufferKind::kPlain;
  }
  // Which of the three kinds send and recv are, in symmetric()'s order.
  BufferKind kind_of(const void* send, size_t send_bytes, const void* recv,
                     size_t recv_bytes) const {
    for (const Registered& r : allocations_) {
      if (r.holds(send, send_bytes) && r.holds(recv, recv_bytes) && !r.allocation.expired())
        return BufferKind::kSymmetric;
    }
    return registered_.holds(send, send_bytes, recv, recv_bytes) ? BufferKind::kRegistered
                                                                 : BufferKind::kPlain;
  }
  // Registered buffers run in place where they can be attached (Communicator::register_buffer).
  RegisteredMemory& registered() { return registered_; }
  // The staging window's context, where collectives on the caller's own memory run.
  // The staging window as it is (remade at its smallest if a growth failed: every member
  // reaches this call in step, as every collective does).
  coll::CollContext& staging() {
    if (!staging_) grow_staging(kMinStage);
    return *staging_;
  }
  // Collective: grows the staging window (if needed) so that its buffers hold `bytes` each.
  void prepare_staging(size_t bytes) { staged(bytes); }
  size_t staging_bytes() const { return stage_bytes_; }
  // Collectives place_pair() has put into the staging window (for tests and diagnostics).
  size_t staged_count() const { return staged_count_; }
  // Where in each staging buffer the next staged call of `bytes` starts (see the .cpp).
  size_t alternate_half(size_t bytes) const;

  // While one lives, the windows this placement grows name `operation` in their diagnostics
  // (two plain stores per collective call; the growth itself makes the transport's CallScope).
  class Call {
   public:
    Call(BufferPlacement& placement, const char* operation)
        : placement_(placement), outer_(placement.operation_) {
      placement_.operation_ = operation;
    }
    ~Call() { placement_.operation_ = outer_; }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    BufferPlacement& placement_;
    const char* outer_;
  };

  void set_timeout(std::chrono::nanoseconds timeout);
  // The communicator's set_timeout, or 0 where none was set (RANKFLOW_TIMEOUT_S applies).
  std::chrono::nanoseconds timeout() const { return timeout_; }
  // Collective: releases the staging window and the adopted windows' collective teams.
  void close();

 private:
  static constexpr size_t kMinStage = size_t{1} << 20;

  std::shared_ptr<SymmetricAllocation> symmetric_pair(const void* send, size_t send_bytes,
                                                      const void* recv, size_t recv_bytes);
  coll::CollContext& staged(size_t bytes);
  void grow_staging(size_t bytes);

  struct Registered {
    const std::byte* base;
    size_t bytes;
    std::weak_ptr<SymmetricAllocation> allocation;
    bool holds(const void* p, size_t n) const {
      const auto* address = static_cast<const std::byte*>(p);
      return address >= base && n <= bytes && address - base <= static_cast<ptrdiff_t>(bytes - n);
    }
  };

  std::shared_ptr<transport::Context> context_;
  MPI_Comm comm_;
  std::unique_ptr<coll::CollContext> staging_;
  size_t stage_bytes_ = 0;
  std::chrono::nanoseconds timeout_{0};  // 0: the transport's default
  std::vector<Registered> allocations_;
  std::vector<std::shared_ptr<SymmetricAllocation>> adopted_;  // live as long as this
  RegisteredMemory registered_;
  size_t staged_count_ = 0;
  const char* operation_ = nullptr;  // the call under way (Call), for the growth's diagnostics
};

// The buffers a team's window needs so that a communicator can adopt it (BufferPlacement::adopt)
// for `members` members: the collectives' inbox and their control area, under names no user
// buffer takes. Append them to the window's buffers; their place does not matter.
std::vector<BufferSpec> collective_buffers(int members);

}  // namespace api
}  // namespace rankflow
