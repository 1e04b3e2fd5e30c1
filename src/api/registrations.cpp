// Registrations (see registrations.h). Runs on the thread that calls the communicator.
#include "api/registrations.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "rankflow/error.h"
#include "transport/mpi_session.h"
#include "transport/team_layout.h"

namespace rankflow::api {
namespace {

std::string describe(const std::byte* base, size_t bytes) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<const void*>(base));
  return std::to_string(bytes) + " bytes at " + address;
}

}  // namespace

std::shared_ptr<Registration> Registrations::add(void* base, size_t bytes, size_t& largest) {
  auto* at = static_cast<std::byte*>(base);
  std::string problem;
  if (at == nullptr) {
    problem = "a null pointer";
  } else if (bytes == 0) {
    problem = "empty (0 bytes)";
  } else if (reinterpret_cast<uintptr_t>(at) > UINTPTR_MAX - bytes) {
    problem = describe(at, bytes) + ", which wraps around the address space";
  } else if (bytes > transport::TeamLayout::kMaxBufferBytes) {
    problem = describe(at, bytes) + ", more than a staging window can hold (" +
              std::to_string(transport::TeamLayout::kMaxBufferBytes) + " bytes)";
  }
  std::erase_if(live_, [](const std::weak_ptr<Registration>& r) { return r.expired(); });
  for (const auto& weak : live_) {
    const auto r = weak.lock();
    if (!problem.empty() || !r->live || r->base >= at + bytes || at >= r->base + r->bytes) continue;
    problem = describe(at, bytes) + ", which overlaps the registered buffer of " +
              describe(r->base, r->bytes);
  }
  int size = 0, rank = 0;
  MPI_Comm_size(comm_, &size);
  MPI_Comm_rank(comm_, &rank);
  // Per member: whether its registration is good, and its bytes.
  const unsigned long long mine[2] = {problem.empty() ? 1ull : 0ull, bytes};
  std::vector<unsigned long long> all(2 * static_cast<size_t>(size));
  MPI_Request request;
  transport::check_mpi(MPI_Iallgather(mine, 2, MPI_UNSIGNED_LONG_LONG, all.data(), 2,
                                      MPI_UNSIGNED_LONG_LONG, comm_, &request),
                       "MPI_Iallgather(register_buffer)");
  context_->mpi_wait(request, "Communicator::register_buffer (member " + std::to_string(rank) +
                                  " of " + std::to_string(size) +
                                  " waited for every member to register its buffer)");
  std::string failed;
  largest = 0;
  for (int m = 0; m < size; ++m) {
    if (all[2 * m] == 0) failed += (failed.empty() ? "" : ", ") + std::to_string(m);
    largest = std::max<size_t>(largest, all[2 * m + 1]);
  }
  if (!failed.empty()) {
    throw InvalidArgument("Communicator::register_buffer: " +
                          (problem.empty() ? std::string("this member's buffer is good, but ")
                                           : "this member's buffer is " + problem + "; ") +
                          "the registration failed on member(s) " + failed + " of " +
                          std::to_string(size) + ", so it is made on none");
  }
  auto registration = std::make_shared<Registration>(Registration{at, bytes, true, 0, nullptr});
  live_.push_back(registration);
  return registration;
}

void Registrations::remove(Registration& r) {
  if (!r.live) {
    throw InvalidArgument("Communicator::deregister: the buffer of " + describe(r.base, r.bytes) +
                          " is already deregistered");
  }
  r.live = false;
}

}  // namespace rankflow::api
