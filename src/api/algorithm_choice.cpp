// The members' agreement on a machine profile (see algorithm_choice.h). Runs on the thread that
// makes the communicator.
#include "api/algorithm_choice.h"

#include <cstdint>
#include <string>

#include "transport/mpi_session.h"

namespace rankflow::api {
namespace {

// The profile's name hashed (FNV-1a, kept below 2^62), 0 for none ("generic"): members agree on
// the name, whatever position it has in each member's list of profiles.
int64_t key_of(const coll::MachineProfile* profile) {
  if (profile == nullptr) return 0;
  uint64_t hash = 14695981039346656037ULL;
  for (char c : profile->name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return static_cast<int64_t>(hash >> 2) | 1;
}

}  // namespace

void AlgorithmChoice::agree(MPI_Comm comm, transport::Context& context) {
  const int64_t mine = key_of(local_profile_);
  // The smallest key and the largest (negated), in one reduction.
  long long local[2] = {mine, -mine};
  long long all[2] = {0, 0};
  MPI_Request request;
  transport::check_mpi(MPI_Iallreduce(local, all, 2, MPI_LONG_LONG, MPI_MIN, comm, &request),
                       "MPI_Iallreduce");
  context.mpi_wait(request, "Communicator::from_mpi (agreeing on the machine profile)");
  const bool same = all[0] == -all[1];
  if (!same) {
    log::info("the members detect different machines (profile ", coll::profile_name(local_profile_),
              " here): every member uses the generic tables");
  }
  machine_ = coll::machine_rules(same ? local_profile_ : nullptr);
}

}  // namespace rankflow::api
