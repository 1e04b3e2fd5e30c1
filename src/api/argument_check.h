// ArgumentCheck: with RANKFLOW_CHECK_ARGS=on, the members of a communicator compare each
// collective's arguments before it runs: which collective, blocking or not, count, dtype,
// reduction, root, the allreduce algorithm asked for, in place or not, and the kind of buffers
// (symmetric, registered, plain). Members that differ would otherwise choose different
// algorithms and wait for each other until a Timeout, or return wrong data without an error
// (docs/failure-model.md); with the check every member throws the same InvalidArgument naming
// what differs, and since no member started the call, the communicator stays usable. It costs
// one small MPI_Iallgather a call, so it is off by default: a debugging aid, like MPICH's
// collective checks. The members agree at creation whether it is on (on where any member set
// it), so a variable seen by some ranks only cannot put them out of step.
//
// Owns, where on: its own duplicate of the communicator (so the comparisons are never matched
// with the program's or rankflow's other MPI collectives on it) and the request and buffers of
// the comparison in flight. A comparison that does not complete (a Timeout) cannot be
// cancelled: its request and buffers are then left to MPI for the rest of the process (never
// freed, since a late member's arguments may still land in them), and so is the duplicate.
// Runs on the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/buffer_placement.h"
#include "rankflow/types.h"
#include "transport/context.h"

namespace rankflow::api {

enum class CollectiveKind : uint8_t {
  kAllreduce,
  kAllgather,
  kReduceScatter,
  kBroadcast,
  kAllToAll,
  kBarrier
};
const char* name_of(CollectiveKind collective);

// One member's arguments to one collective call, as compared: raw, before the call checks
// them, so that a bad value on one member is a difference every member sees. -1 where the
// collective takes no such argument (a barrier's count, a broadcast's reduction).
struct CallArguments {
  CollectiveKind collective = CollectiveKind::kBarrier;
  bool blocking = true;
  uint64_t count = 0;
  int dtype = -1;  // DType as its value
  int op = -1;     // ReduceOp as its value
  int root = -1;
  bool in_place = false;            // send == recv (allgather: send at this member's block of recv)
  std::string_view algorithm = {};  // allreduce: the name asked for ("auto", "ring", ...)
  BufferKind buffers = BufferKind::kPlain;
};

// The bytes of `blocks` blocks of `count` elements of `dtype`, or 0 where the dtype does not
// exist or the size overflows (the call itself refuses those, after the comparison).
size_t bytes_or_zero(uint64_t count, int dtype, size_t blocks);

class ArgumentCheck {
 public:
  // Reads RANKFLOW_CHECK_ARGS (on|off, default off; InvalidArgument for anything else).
  ArgumentCheck();

  // Collective over `comm`, once, when the communicator is made: on for every member where it is
  // on for any; where on, the check's own duplicate of `comm` is made here.
  void agree(MPI_Comm comm, transport::Context& context);
  bool enabled() const { return enabled_; }

  // Collective (only where enabled()): returns once every member passed the same arguments;
  // else throws InvalidArgument on every member, naming the first argument that differs and
  // what each member passed. Its wait has the limit of the current CallScope; after one that
  // did not complete (a Timeout: a member did not arrive) every later call is InvalidState.
  void compare(transport::Context& context, const CallArguments& mine);

  // Frees the check's communicator, except after a comparison that did not complete (MPI
  // cannot cancel its request; freeing the communicator under it can crash MPI_Finalize,
  // docs/failure-model.md known gap 2): that one is left to MPI.
  void close();

  static constexpr size_t kWords = 12;  // one member's arguments, encoded (argument_check.cpp)
  using Words = std::array<uint64_t, kWords>;

 private:
  // The comparison's MPI request and buffers, in one block that outlives this object where the
  // request never completed.
  struct Exchange {
    MPI_Request request = MPI_REQUEST_NULL;
    Words mine{};
    std::vector<Words> all;  // every member's, in member order
  };

  bool enabled_ = false;
  MPI_Comm comm_ = MPI_COMM_NULL;       // the check's own duplicate, where enabled
  std::unique_ptr<Exchange> exchange_;  // null once abandoned to MPI
  std::string waiting_;                 // what the wait's Timeout says
};

}  // namespace rankflow::api
