// RegisteredMemory: registered buffers (Communicator::register_buffer) as symmetric memory. It
// owns one collective context whose window holds only the collectives' control area and inbox:
// each registration is attached to that window as a segment (transport::Window::attach). On one
// host the caller's pages are then shared with the members (remapped onto shareable memory with
// their contents, transport/user_memory.h), so peers read and write them in place as they do
// comm.alloc memory; elsewhere (UCX_TLS=tcp,self, other hosts) they are registered with UCX in
// place. A collective whose send and recv both lie in attached registrations runs on this
// context without staging. Where any member cannot attach its buffer (memory that is not private
// anonymous), the registration stays staged on every member.
//
// Threads: the thread that calls the communicator (under the progress thread's lock when one
// runs). A registration's last handle detaches it when it goes, so it must go on that thread too
// (or after the communicator closed), with no collective on the buffer in flight: a request in
// flight holds its registrations itself.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "api/registrations.h"
#include "collectives/coll_context.h"
#include "transport/context.h"

namespace rankflow::api {

class RegisteredMemory {
 public:
  RegisteredMemory(std::shared_ptr<transport::Context> context, MPI_Comm comm)
      : context_(std::move(context)), comm_(comm) {}
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;

  // Collective: attaches `r` (every member its own, in the same order). True when it is
  // attached on every member; false on every member (logged with the reason) when it stays
  // staged.
  bool attach(const std::shared_ptr<Registration>& r);
  // Local: `r` is staged again (its memory private, with its contents).
  static void detach(Registration& r) { r.attachment.reset(); }

  // Whether send and recv both lie in attached registrations.
  bool holds(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes) const;
  // The offset in context()'s window of `bytes` at `address`, which holds() covered (by the
  // range, not the address alone: the end of one buffer may be the start of the next).
  size_t offset_of(const void* address, size_t bytes) const;
  // The attached registration holding [address, address + bytes), or null.
  std::shared_ptr<Registration> holding(const void* address, size_t bytes) const;
  coll::CollContext& context() { return *coll_; }

  void set_timeout(std::chrono::nanoseconds timeout);
  // Collective: detaches every registration and releases the window.
  void close();

 private:
  std::shared_ptr<transport::Context> context_;
  MPI_Comm comm_;
  std::unique_ptr<coll::CollContext> coll_;  // made at the first attach
  std::chrono::nanoseconds timeout_{0};
  // Each attached registration, and its address for the per-call lookup.
  struct Attached {
    std::weak_ptr<Registration> weak;
    const Registration* registration;
  };
  // Calls use(attached, registration) for the attached registration holding [address,
  // address + bytes), while it is sure to live; false when none holds it. Without a progress
  // thread every registration's last handle goes on this thread (above), so a live weak_ptr
  // (expired(): a plain load) means a live registration. With one, a request that thread
  // finishes may drop the last handle (a request holds its registrations), so the lookup takes a
  // reference (lock(): two atomic read-modify-writes) and holds it while `use` runs.
  template <typename Use>
  bool visit(const void* address, size_t bytes, Use&& use) const;

  std::vector<Attached> attached_;
};

}  // namespace rankflow::api
