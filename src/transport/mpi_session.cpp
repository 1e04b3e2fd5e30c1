// MpiSession (see mpi_session.h).
#include "transport/mpi_session.h"

#include <mutex>

#include "common/log.h"
#include "rankflow/error.h"

namespace rankflow::transport {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw TransportError(std::string(what) + " failed: " + std::string(text, length));
}

std::shared_ptr<MpiSession> MpiSession::acquire(int* argc, char*** argv) {
  static std::mutex mutex;
  static std::weak_ptr<MpiSession> live;
  std::lock_guard lock(mutex);
  if (auto session = live.lock()) return session;

  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    throw InvalidState("MPI has already been finalised; rankflow cannot start after MPI_Finalize");
  }
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  }
  std::shared_ptr<MpiSession> session(new MpiSession(!initialised));
  live = session;
  return session;
}

MpiSession::~MpiSession() {
  if (!owns_mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace rankflow::transport
