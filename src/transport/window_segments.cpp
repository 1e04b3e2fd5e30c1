// Window segments (see window.h, "Segments"): attaching the members' own memory to a window,
// detaching it, and where an offset lands (the window itself or a segment). Runs on the thread
// that uses the Context.
#include <mpi.h>

#include <string>
#include <vector>

#include "rankflow/error.h"
#include "transport/mpi_session.h"
#include "transport/window.h"

namespace rankflow::transport {

Window::Target Window::target(int peer, size_t offset, size_t bytes, const char* operation) const {
  const Peer& p = peer_at(peer, operation);
  const size_t segment = offset / kSegmentStride;  // 0: the window itself
  const size_t within = offset % kSegmentStride;
  const Extent* extent = nullptr;
  if (segment > 0 && segment <= p.segments.size()) extent = &p.segments[segment - 1];
  const uint64_t base = segment == 0 ? p.base : extent != nullptr ? extent->base : 0;
  const size_t limit = segment == 0 ? p.bytes : extent != nullptr ? extent->bytes : 0;
  if (segment > 0 && limit == 0) {
    throw OutOfBounds(std::string(operation) + ": " + where(peer) + ", offset " +
                      std::to_string(offset) + " + length " + std::to_string(bytes) +
                      " exceeds the peer's window size " + std::to_string(p.bytes) +
                      ", and its segment " + std::to_string(segment) + " is not attached" +
                      (segment <= p.segments.size() ? " (it was detached)" : ""));
  }
  if (within > limit || bytes > limit - within) {
    throw OutOfBounds(
        std::string(operation) + ": " + where(peer) + ", offset " + std::to_string(offset) +
        " + length " + std::to_string(bytes) + " exceeds the peer's " +
        (segment == 0 ? std::string("window") : "segment " + std::to_string(segment)) + " size " +
        std::to_string(limit));
  }
  std::byte* mapped = segment == 0 ? p.mapped : extent->mapped;
  return {base + within, segment == 0 ? p.rkey : extent->rkey,
          mapped == nullptr ? nullptr : mapped + within};
}

// The lowest member for which `succeeded` is false, or -1 (collective).
int Window::first_failure(bool succeeded, const char* what) const {
  std::vector<int> all(static_cast<size_t>(size()), 0);
  int mine = succeeded ? 1 : 0;
  MPI_Request request;
  check_mpi(MPI_Iallgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm_, &request),
            "MPI_Iallgather(segment)");
  context_->mpi_wait(request, std::string(what) + " for window '" + name_ + "'");
  for (int r = 0; r < size(); ++r)
    if (all[r] == 0) return r;
  return -1;
}

// Three steps, each ending in an agreement so that every member fails alike: make the memory
// reachable, exchange the records, map the peers'. A member whose step failed still takes part
// in the exchanges (with an empty record), so none waits for it.
size_t Window::attach(void* base, size_t bytes) {
  if (closed_) throw InvalidState("attach on closed window '" + name_ + "'");
  const size_t index = segments_.size() + 1;  // the same on every member
  std::unique_ptr<UserMemory> memory;
  std::string failure;  // why this member could not
  if (index >= kMaxSegments) {
    failure = "more than " + std::to_string(kMaxSegments - 1) + " segments in the window's life";
  } else {
    try {
      memory = std::make_unique<UserMemory>(context_->ucp(), static_cast<std::byte*>(base), bytes,
                                            mapped_everywhere_);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  const std::string segment = "segment " + std::to_string(index);
  refuse_unless_all(failure.empty(), segment, failure, "could not make its memory reachable");

  std::vector<std::byte> mine;
  try {
    mine = pack_record(memory->memh(), memory->base(), memory->bytes(), memory->runs());
  } catch (const Error& e) {
    failure = e.what();
  }
  const auto records = allgather_records(mine, "segment key exchange");
  std::vector<Extent> extents(static_cast<size_t>(size()));
  for (int r = 0; r < size() && failure.empty(); ++r) {
    try {
      extents[r] = unpack_record(r, records[r], memory->base(), &failure);
      // Where the window is mapped everywhere its protocols store straight into peers' memory,
      // so a segment must be too.
      if (extents[r].mapped == nullptr && mapped_everywhere_ && failure.empty())
        failure = "member " + std::to_string(r) + "'s memory cannot be mapped here";
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) {
    for (Extent& e : extents)
      release_extent(e);
  }
  refuse_unless_all(failure.empty(), segment, failure, "could not reach every peer's memory");
  for (int r = 0; r < size(); ++r)
    peers_[r].segments.push_back(extents[r]);
  segments_.push_back(std::move(memory));
  return index * kSegmentStride;
}

// Collective: throws the same TransportError on every member unless every member succeeded,
// naming the lowest that did not (and, on the members that failed, why).
void Window::refuse_unless_all(bool succeeded, const std::string& segment,
                               const std::string& failure, const char* what) const {
  const int failed = first_failure(succeeded, "segment agreement");
  if (failed < 0) return;
  throw TransportError("window '" + name_ + "': " + segment + " is attached on no member: " +
                       (succeeded ? "member " + std::to_string(failed) + " (rank " +
                                        std::to_string(peers_[failed].world_rank) + ") " + what
                                  : failure));
}

void Window::detach(size_t offset) {
  if (closed_) return;  // the segments go with the window's release
  const size_t segment = offset / kSegmentStride;
  if (offset % kSegmentStride != 0 || segment == 0 || segment > segments_.size() ||
      segments_[segment - 1] == nullptr) {
    throw InvalidArgument("detach on window '" + name_ + "': offset " + std::to_string(offset) +
                          " is no attached segment");
  }
  for (Peer& peer : peers_)
    release_extent(peer.segments[segment - 1]);
  segments_[segment - 1].reset();
}

void Window::release_extent(Extent& extent) {
  if (extent.rkey != nullptr) ucp_rkey_destroy(extent.rkey);
  extent = Extent{};
}

void Window::release_segments() {
  for (Peer& peer : peers_) {
    for (Extent& extent : peer.segments)
      release_extent(extent);
    peer.segments.clear();
  }
  segments_.clear();  // the members' memory is private again
}

}  // namespace rankflow::transport
