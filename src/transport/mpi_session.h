// MpiSession: initialises MPI only when the embedding program has not, and finalises only what
// rankflow initialised. Held by Context; the last holder's release finalises. Main thread only.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

namespace rankflow::transport {

class MpiSession {
 public:
  // Returns the live session, creating it (and calling MPI_Init_thread if needed) on first use.
  static std::shared_ptr<MpiSession> acquire(int* argc, char*** argv);
  ~MpiSession();

  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  bool initialised_by_rankflow() const { return owns_mpi_; }

 private:
  explicit MpiSession(bool owns_mpi) : owns_mpi_(owns_mpi) {}
  bool owns_mpi_;
};

// Throws TransportError naming `what` when an MPI call fails.
void check_mpi(int rc, const char* what);

}  // namespace rankflow::transport
