// Registrations: the caller's own buffers registered with a communicator
// (Communicator::register_buffer), for codes that call collectives on the same arrays every
// iteration. It owns the list of live registrations, the checks of a new one (a null pointer,
// no bytes, overlap with a live one) and the agreement among the members that every one of them
// registered its buffer, so that a bad registration fails on every member alike instead of
// leaving the others waiting. What a registration buys is api::RegisteredMemory's: collectives
// in place on the caller's memory; where that cannot be, the staging window's size (the
// communicator makes it large enough at registration, api/buffer_placement.h, so no collective
// on registered memory grows it on the way).
//
// Threads: the thread that calls the communicator, as BufferPlacement.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "rankflow/communicator.h"
#include "transport/context.h"

namespace rankflow {

// One registered buffer; RegisteredBuffer handles share it. `live` turns false at deregister.
// `attachment`, where api::RegisteredMemory attached it, is its segment of that window at
// `window_offset`; releasing it (at deregister, or with the last handle) detaches the segment.
struct Registration {
  std::byte* base = nullptr;
  size_t bytes = 0;
  bool live = true;
  size_t window_offset = 0;
  std::shared_ptr<void> attachment;
};

namespace api {

class Registrations {
 public:
  Registrations(std::shared_ptr<transport::Context> context, MPI_Comm comm)
      : context_(std::move(context)), comm_(comm) {}

  // Collective: checks `base`/`bytes` here and agrees with every member that each one's is
  // good; InvalidArgument on every member (naming the members whose registration failed, and
  // why on those) otherwise. Returns the registration and, in `largest`, the most bytes any
  // member registered in this call (the same on every member: the staging window's size).
  std::shared_ptr<Registration> add(void* base, size_t bytes, size_t& largest);
  // Local: ends `r` (InvalidArgument if it is not live). Collective in the communicator's
  // sense: every member deregisters its buffer in the same order, as it registered it.
  void remove(Registration& r);
  size_t live() const { return live_.size(); }

 private:
  std::shared_ptr<transport::Context> context_;
  MPI_Comm comm_;
  std::vector<std::weak_ptr<Registration>> live_;
};

}  // namespace api
}  // namespace rankflow
