// Open MPI's point-to-point on two members, for the `mpi` entries (see mpi_pairwise.h).
#include "api/mpi_pairwise.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>

#include "rankflow/error.h"
#include "transport/mpi_session.h"
#include "transport/progress.h"

namespace rankflow::api {
namespace {

constexpr int kTagSpan = 1 << 15;  // MPI guarantees tags up to 32767
// How long a Timeout waits for a cancelled receive that had already matched to land.
constexpr std::chrono::nanoseconds kAbandonWait = std::chrono::seconds(1);

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes != 0 && b_bytes != 0 && x < y + b_bytes && y < x + a_bytes;
}

const void* copied(const void* data, size_t bytes, std::vector<std::byte>& scratch) {
  if (bytes == 0) return data;  // nothing to keep apart (and no scratch to copy into)
  scratch.resize(bytes);
  std::memcpy(scratch.data(), data, bytes);
  return scratch.data();
}

std::string describe(const PairCall& call, const MPI_Request* requests) {
  const int peer = 1 - call.rank;
  std::string waiting;
  if (requests[0] != MPI_REQUEST_NULL) waiting = "its block from peer " + std::to_string(peer);
  if (requests[1] != MPI_REQUEST_NULL) {
    waiting += waiting.empty() ? "" : " and ";
    waiting += "peer " + std::to_string(peer) + " to take its block";
  }
  return std::string(call.operation) + ": rank " + std::to_string(call.rank) + " of 2 waited " +
         transport::format_seconds(call.timeout) + " for peer " + std::to_string(peer) + " (" +
         waiting + ", tag " + std::to_string(call.sequence % kTagSpan) +
         "): a member that never called it, or that chose another algorithm (every member must "
         "pass the same kind of buffer: all registered or symmetric, or all plain)";
}

// What one member sends to the other and receives from it (a block of zero bytes is still a
// message: both members must match it).
struct Transfer {
  const void* out = nullptr;
  size_t out_bytes = 0;
  bool sends = false;
  void* in = nullptr;
  size_t in_bytes = 0;
  bool receives = false;
};

// After a Timeout: cancels both requests. The receive is waited for (briefly) as well, since a
// message that matched it just before the cancel still lands in the caller's buffer; the send
// cannot be taken back (Open MPI does not cancel sends) and is freed, left for the peer.
void abandon(const PairCall& call, MPI_Request* requests) {
  for (int i = 0; i < 2; ++i) {
    if (requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests[i]);
  }
  auto received = [&] {
    int flag = 1;
    if (requests[0] != MPI_REQUEST_NULL) MPI_Test(&requests[0], &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  };
  try {
    transport::wait_until(
        received, [] {}, std::min(call.timeout, kAbandonWait), [] { return std::string(); });
  } catch (const Timeout&) {  // still arriving: it can only be freed
  }
  for (int i = 0; i < 2; ++i) {
    if (requests[i] != MPI_REQUEST_NULL) MPI_Request_free(&requests[i]);
  }
}

// Starts `t`'s receive and send, runs `local()` while they move, and waits for both. On a
// Timeout both are abandoned first.
template <typename Local>
void exchange(const PairCall& call, const Transfer& t, Local&& local) {
  const int peer = 1 - call.rank;
  const int tag = static_cast<int>(call.sequence % kTagSpan);
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  if (t.receives) {
    transport::check_mpi(
        MPI_Irecv(t.in, static_cast<int>(t.in_bytes), MPI_BYTE, peer, tag, call.comm, &requests[0]),
        "MPI_Irecv");
  }
  if (t.sends) {
    transport::check_mpi(MPI_Isend(t.out, static_cast<int>(t.out_bytes), MPI_BYTE, peer, tag,
                                   call.comm, &requests[1]),
                         "MPI_Isend");
  }
  local();
  int rc = MPI_SUCCESS;
  // MPI_Test one by one (not MPI_Testall), so that a completed request becomes null and a
  // Timeout names only what is still missing.
  auto done = [&] {
    for (MPI_Request& r : requests) {
      int flag = 0;
      if (r != MPI_REQUEST_NULL && rc == MPI_SUCCESS) rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }
    return rc != MPI_SUCCESS ||
           (requests[0] == MPI_REQUEST_NULL && requests[1] == MPI_REQUEST_NULL);
  };
  try {
    transport::wait_until(
        done, [] {}, call.timeout, [&] { return describe(call, requests); });
  } catch (const Timeout&) {
    abandon(call, requests);
    throw;
  }
  transport::check_mpi(rc, "MPI_Test");
}

}  // namespace

void pair_allgather(const PairCall& call, const void* send, void* recv, size_t block_bytes,
                    std::vector<std::byte>& scratch) {
  auto* result = static_cast<std::byte*>(recv);
  std::byte* mine = result + static_cast<size_t>(call.rank) * block_bytes;
  std::byte* theirs = result + static_cast<size_t>(1 - call.rank) * block_bytes;
  const bool in_place = send == mine;
  if (!in_place && overlaps(send, block_bytes, result, 2 * block_bytes)) {
    send = copied(send, block_bytes, scratch);
  }
  exchange(call, {send, block_bytes, true, theirs, block_bytes, true}, [&] {
    if (!in_place) std::memcpy(mine, send, block_bytes);
  });
}

void pair_all_to_all(const PairCall& call, const void* send, void* recv, size_t block_bytes,
                     std::vector<std::byte>& scratch) {
  const size_t me = static_cast<size_t>(call.rank), peer = 1 - me;
  const auto* input = static_cast<const std::byte*>(send);
  auto* result = static_cast<std::byte*>(recv);
  const bool in_place = send == recv;
  const std::byte* outgoing = input + peer * block_bytes;
  if (in_place) {  // the block leaving is where the one arriving lands
    outgoing = static_cast<const std::byte*>(copied(outgoing, block_bytes, scratch));
  } else if (overlaps(send, 2 * block_bytes, recv, 2 * block_bytes)) {
    input = static_cast<const std::byte*>(copied(send, 2 * block_bytes, scratch));
    outgoing = input + peer * block_bytes;
  }
  exchange(call, {outgoing, block_bytes, true, result + peer * block_bytes, block_bytes, true},
           [&] {
             if (!in_place)
               std::memcpy(result + me * block_bytes, input + me * block_bytes, block_bytes);
           });
}

void pair_broadcast(const PairCall& call, void* buffer, size_t bytes, int root) {
  if (call.rank == root) {
    exchange(call, {buffer, bytes, true, nullptr, 0, false}, [] {});
  } else {
    exchange(call, {nullptr, 0, false, buffer, bytes, true}, [] {});
  }
}

}  // namespace rankflow::api
