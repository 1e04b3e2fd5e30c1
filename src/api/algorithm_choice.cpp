// The members' agreement on a machine profile (see algorithm_choice.h). Runs on the thread that
// makes the communicator.
#include "api/algorithm_choice.h"

#include <string>

#include "transport/mpi_session.h"

namespace rankflow::api {
namespace {

// 0 for none ("generic"), else 1 + the profile's position in machine_profiles().
int index_of(const coll::MachineProfile* profile) {
  const auto profiles = coll::machine_profiles();
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (&profiles[i] == profile) return static_cast<int>(i) + 1;
  }
  return 0;
}

}  // namespace

void AlgorithmChoice::agree(MPI_Comm comm, transport::Context& context) {
  const int mine = index_of(local_profile_);
  int local[2] = {mine, -mine};  // the smallest index and the largest, in one reduction
  int all[2] = {0, 0};
  MPI_Request request;
  transport::check_mpi(MPI_Iallreduce(local, all, 2, MPI_INT, MPI_MIN, comm, &request),
                       "MPI_Iallreduce");
  context.mpi_wait(request, "Communicator::from_mpi (agreeing on the machine profile)");
  const bool same = all[0] == -all[1];
  const coll::MachineProfile* agreed = same ? local_profile_ : nullptr;
  if (!same) {
    log::info("the members detect different machines (profile ", coll::profile_name(local_profile_),
              " here): every member uses the generic tables");
  }
  machine_ = coll::machine_rules(agreed);
}

}  // namespace rankflow::api
