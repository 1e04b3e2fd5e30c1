// ArgumentCheck: with RANKFLOW_CHECK_ARGS=on, the members of a communicator compare each
// collective's arguments before it runs: which collective, blocking or not, count, dtype,
// reduction, root, the allreduce algorithm asked for, in place or not, and the kind of buffers
// (symmetric, registered, plain). Members that differ would otherwise choose different algorithms
// and wait for each other until a Timeout, or return wrong data without an error
// (docs/failure-model.md); with the check every member throws the same InvalidArgument naming what
// differs, and since no member started the call, the communicator stays usable. It costs one small
// MPI_Iallgather a call, so it is off by default: a debugging aid, like MPICH's collective checks.
// The members agree at creation whether it is on (on where any member set it), so a variable seen
// by some ranks only cannot put them out of step. Runs on the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

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
enum class BufferKind : uint8_t { kPlain, kSymmetric, kRegistered };

// One member's arguments to one collective call, as compared. -1 where the collective takes no
// such argument (a barrier's count, a broadcast's reduction).
struct CallArguments {
  CollectiveKind collective = CollectiveKind::kBarrier;
  bool blocking = true;
  uint64_t count = 0;
  int dtype = -1;  // DType as its value: a bad one is compared too, and then refused by the call
  int op = -1;     // ReduceOp as its value
  int root = -1;
  bool in_place = false;  // send == recv (allgather: send at this member's block of recv)
  BufferKind buffers = BufferKind::kPlain;
  std::string_view algorithm = {};  // allreduce: the name asked for ("auto", "ring", ...)

  static CallArguments of(CollectiveKind collective, bool blocking, size_t count, DType dtype) {
    CallArguments a;
    a.collective = collective;
    a.blocking = blocking;
    a.count = count;
    a.dtype = static_cast<int>(dtype);
    return a;
  }
};

class ArgumentCheck {
 public:
  // Reads RANKFLOW_CHECK_ARGS (on|off, default off; InvalidArgument for anything else).
  ArgumentCheck();

  // Collective over `comm`, once, when the communicator is made: on for every member where it is
  // on for any.
  void agree(MPI_Comm comm, transport::Context& context);
  bool enabled() const { return enabled_; }

  // Collective over `comm` (only where enabled()): returns once every member passed the same
  // arguments; else throws InvalidArgument on every member, naming the first argument that
  // differs and what each member passed. Its wait has the limit of the current CallScope.
  void compare(MPI_Comm comm, transport::Context& context, const CallArguments& mine) const;

 private:
  bool enabled_ = false;
};

}  // namespace rankflow::api
