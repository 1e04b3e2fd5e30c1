// RegisteredMemory (see registered_memory.h): attaching registrations to the registered window
// and finding them for a collective. Runs on the thread that calls the communicator.
#include "api/registered_memory.h"

#include <exception>
#include <string>

#include "api/collective_context.h"
#include "common/log.h"
#include "rankflow/error.h"
#include "transport/progress_thread.h"
#include "transport/team_state.h"

namespace rankflow::api {
namespace {

// A registration's segment of the registered window: detached when the last reference goes.
struct Attachment {
  Attachment(std::weak_ptr<transport::Window> w, size_t at) : window(std::move(w)), offset(at) {}
  Attachment(const Attachment&) = delete;
  Attachment& operator=(const Attachment&) = delete;
  std::weak_ptr<transport::Window> window;
  size_t offset;
  ~Attachment() {
    const auto live = window.lock();
    if (!live) return;  // the communicator closed: its window restored the memory
    transport::ProgressThread::Guard guard(live->context().progress_thread());
    try {
      live->detach(offset);
    } catch (const std::exception& e) {
      log::warn("deregistering a buffer: ", e.what());
    }
  }
};

}  // namespace

bool RegisteredMemory::attach(const std::shared_ptr<Registration>& r) {
  if (!coll_) {
    coll_ = make_collective_context(context_, comm_, {}, "registered");
    if (timeout_.count() > 0) coll_->team().set_timeout(timeout_);
  }
  // Without shared memory a peer reaches the buffer through UCX's transfers, which measured
  // slower than the staged path (allgather of 1 MiB over tcp: 400 against 104 us).
  if (!coll_->team().mapped_everywhere()) return false;
  const std::shared_ptr<transport::Window> window = transport::TeamState::of(coll_->team())->window;
  size_t offset = 0;
  try {
    offset = window->attach(r->base, r->bytes);
  } catch (const TransportError& e) {
    log::info("register_buffer: collectives on this buffer stay staged: ", e.what());
    return false;
  }
  r->window_offset = offset;
  r->attachment = std::make_shared<Attachment>(window, offset);
  std::erase_if(attached_, [](const Attached& a) { return a.weak.expired(); });
  attached_.push_back({r, r.get()});
  return true;
}

template <typename Use>
bool RegisteredMemory::visit(const void* address, size_t bytes, Use&& use) const {
  const auto* at = static_cast<const std::byte*>(address);
  const bool shared_with_progress_thread = context_->progress_thread() != nullptr;
  for (const Attached& a : attached_) {
    std::shared_ptr<Registration> held;
    if (shared_with_progress_thread) {
      held = a.weak.lock();
      if (!held) continue;
    } else if (a.weak.expired()) {
      continue;
    }
    const Registration& r = *a.registration;
    if (!r.live || !r.attachment || at < r.base) continue;
    if (bytes > r.bytes || static_cast<size_t>(at - r.base) > r.bytes - bytes) continue;
    use(a, r);
    return true;
  }
  return false;
}

std::shared_ptr<Registration> RegisteredMemory::holding(const void* address, size_t bytes) const {
  std::shared_ptr<Registration> found;
  visit(address, bytes, [&](const Attached& a, const Registration&) { found = a.weak.lock(); });
  return found;
}

bool RegisteredMemory::holds(const void* send, size_t send_bytes, const void* recv,
                             size_t recv_bytes) const {
  if (attached_.empty()) return false;  // most programs register nothing
  auto nothing = [](const Attached&, const Registration&) {};
  return visit(send, send_bytes, nothing) && visit(recv, recv_bytes, nothing);
}

size_t RegisteredMemory::offset_of(const void* address, size_t bytes) const {
  size_t offset = 0;
  const bool found = visit(address, bytes, [&](const Attached&, const Registration& r) {
    offset = r.window_offset + static_cast<size_t>(static_cast<const std::byte*>(address) - r.base);
  });
  if (!found) throw InvalidState("RegisteredMemory::offset_of: the address is not attached");
  return offset;
}

void RegisteredMemory::set_timeout(std::chrono::nanoseconds timeout) {
  timeout_ = timeout;
  if (coll_) coll_->team().set_timeout(timeout);
}

void RegisteredMemory::close() {
  attached_.clear();
  if (coll_) coll_->team().close();
  coll_.reset();  // the window's release makes every attached buffer private memory again
}

}  // namespace rankflow::api
