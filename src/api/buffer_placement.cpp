// BufferPlacement (see buffer_placement.h): symmetric allocations, adopted windows and the
// staging window. Runs on the thread that calls the communicator.
#include "api/buffer_placement.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "api/collective_context.h"
#include "collectives/stage_copy.h"
#include "common/log.h"
#include "rankflow/error.h"
#include "transport/team_layout.h"
#include "transport/team_state.h"

namespace rankflow {

SymmetricAllocation::~SymmetricAllocation() {
  if (!owns_window || !coll) return;  // no window: its creation failed
  try {
    coll->team().close();
  } catch (const std::exception& e) {
    log::warn("releasing symmetric buffer: ", e.what());
  }
}

namespace api {
namespace {

// The names of collective_buffers() in an adopted window.
constexpr const char* kAdoptedInbox = "rankflow.inbox";
constexpr const char* kAdoptedControl = "rankflow.collectives";

// A team over `team`'s window with its own control area and the inbox (collective_buffers()).
Team collective_team_over(const Team& team) {
  using transport::TeamLayout;
  std::vector<TeamLayout::Placed> placed = {
      {"inbox", team.offset(kAdoptedInbox), team.bytes(kAdoptedInbox)}};
  const uint32_t slots = coll::CollContext::signal_slots_for(team.size());
  if (team.bytes(kAdoptedControl) < TeamLayout::control_bytes(slots)) {
    throw InvalidArgument("adopting a window: its control area holds " +
                          std::to_string(team.bytes(kAdoptedControl)) + " bytes, " +
                          std::to_string(TeamLayout::control_bytes(slots)) + " needed");
  }
  auto layout = TeamLayout::sharing(std::move(placed), team.offset(kAdoptedControl), slots);
  const auto& state = transport::TeamState::of(team);
  Team collective(std::make_shared<transport::TeamState>(state->window, std::move(layout)));
  collective.set_timeout(team.timeout());
  return collective;
}

}  // namespace

std::unique_ptr<coll::CollContext> make_collective_context(
    const std::shared_ptr<transport::Context>& context, MPI_Comm comm,
    std::vector<BufferSpec> buffers, const char* name) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  buffers.push_back({"inbox", coll::CollContext::inbox_buffer_bytes(size), 64});
  return std::make_unique<coll::CollContext>(transport::create_team(
      context, comm, std::move(buffers), name, coll::CollContext::signal_slots_for(size)));
}

std::vector<BufferSpec> collective_buffers(int members) {
  const uint32_t slots = coll::CollContext::signal_slots_for(members);
  return {{kAdoptedInbox, coll::CollContext::inbox_buffer_bytes(members), 64},
          {kAdoptedControl, transport::TeamLayout::control_bytes(slots),
           transport::TeamLayout::kSlotStride}};
}

BufferPlacement::BufferPlacement(std::shared_ptr<transport::Context> context, MPI_Comm comm)
    : context_(std::move(context)), comm_(comm), registered_(context_, comm) {
  grow_staging(kMinStage);
}

std::shared_ptr<SymmetricAllocation> BufferPlacement::alloc(size_t bytes) {
  if (bytes > transport::TeamLayout::kMaxBufferBytes) {
    throw InvalidArgument("Communicator::alloc: " + std::to_string(bytes) +
                          " bytes; a symmetric buffer holds at most " +
                          std::to_string(transport::TeamLayout::kMaxBufferBytes));
  }
  auto allocation = std::make_shared<SymmetricAllocation>();
  allocation->coll = make_collective_context(context_, comm_, {{"data", bytes, 4096}}, "symmetric");
  allocation->offset = allocation->coll->team().offset("data");
  allocation->bytes = bytes;
  allocation->base = allocation->coll->local(allocation->offset);
  if (timeout_.count() > 0) allocation->coll->team().set_timeout(timeout_);
  std::erase_if(allocations_, [](const Registered& r) { return r.allocation.expired(); });
  allocations_.push_back({allocation->base, bytes, allocation});
  return allocation;
}

void BufferPlacement::adopt(const Team& team, size_t begin, size_t end) {
  auto allocation = std::make_shared<SymmetricAllocation>();
  allocation->coll = std::make_unique<coll::CollContext>(collective_team_over(team));
  allocation->owns_window = false;
  allocation->offset = begin;
  allocation->bytes = end - begin;
  allocation->base = team.local_ptr(begin);
  if (timeout_.count() > 0) allocation->coll->team().set_timeout(timeout_);
  allocations_.push_back({allocation->base, allocation->bytes, allocation});
  adopted_.push_back(std::move(allocation));
}

Placement BufferPlacement::place_pair(const void* send, size_t send_bytes, void* recv,
                                      size_t recv_bytes, bool copy_in, bool copy_out,
                                      bool stream_in) {
  Placement p;
  if (auto a = symmetric_pair(send, send_bytes, recv, recv_bytes)) {
    auto offset_in = [&](const void* ptr) {
      return a->offset + static_cast<size_t>(static_cast<const std::byte*>(ptr) - a->base);
    };
    p.context = a->coll.get();
    p.src = offset_in(send);
    p.dst = offset_in(recv);
    p.allocation = std::move(a);
    return p;
  }
  if (registered_.holds(send, send_bytes, recv, recv_bytes)) {
    p.context = &registered_.context();
    p.src = registered_.offset_of(send, send_bytes);
    p.dst = registered_.offset_of(recv, recv_bytes);
    p.registered_send = registered_.holding(send, send_bytes);
    p.registered_recv = registered_.holding(recv, recv_bytes);
    return p;
  }
  const size_t need = std::max(send_bytes, recv_bytes);
  coll::CollContext& stage = staged(need);
  const size_t half = alternate_half(need);
  ++staged_count_;
  p.context = &stage;
  p.src = stage.team().offset("in") + half;
  p.dst = stage.team().offset(send == recv && !copy_in ? "in" : "out") + half;
  p.staged_recv = static_cast<std::byte*>(recv);
  if (copy_in) {
    coll::stage_copy(stage.local(p.src), static_cast<const std::byte*>(send), send_bytes,
                     stream_in);
  }
  if (copy_out && recv_bytes > 0) {
    p.copy_to = recv;
    p.copy_from = stage.local(p.dst);
    p.copy_bytes = recv_bytes;
  }
  return p;
}

// Every live team takes the limit now, and the windows made later take it when made (none is
// staged after a growth that failed: the next growth applies it).
void BufferPlacement::set_timeout(std::chrono::nanoseconds timeout) {
  timeout_ = timeout;
  if (staging_) staging_->team().set_timeout(timeout);
  for (const Registered& r : allocations_) {
    if (const auto allocation = r.allocation.lock()) allocation->coll->team().set_timeout(timeout);
  }
  registered_.set_timeout(timeout);
}

void BufferPlacement::close() {
  adopted_.clear();  // their windows belong to their owners
  registered_.close();
  if (staging_) staging_->team().close();
  staging_.reset();
}

// The symmetric allocation holding both ranges, or null.
std::shared_ptr<SymmetricAllocation> BufferPlacement::symmetric_pair(const void* send,
                                                                     size_t send_bytes,
                                                                     const void* recv,
                                                                     size_t recv_bytes) {
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    if (!it->holds(send, send_bytes) || !it->holds(recv, recv_bytes)) {
      ++it;
      continue;
    }
    if (auto allocation = it->allocation.lock()) return allocation;
    // Released. A later allocation may have the same addresses (its entry comes after this
    // one), so the search goes on: stopping here would stage on this member while a member
    // whose addresses differ runs in place, and the two would never meet.
    it = allocations_.erase(it);
  }
  return nullptr;
}

// The staging window, grown (collectively, in step on every member since all pass the same
// sizes) to hold `bytes` in each of its "in" and "out" buffers.
coll::CollContext& BufferPlacement::staged(size_t bytes) {
  if (!staging_ || bytes > stage_bytes_) {  // none: a growth failed (out of memory) before
    if (bytes > transport::TeamLayout::kMaxBufferBytes) {  // (and the doubling cannot overflow)
      throw InvalidArgument("a collective on " + std::to_string(bytes) +
                            " bytes of plain memory: more than a staging window can hold (" +
                            std::to_string(transport::TeamLayout::kMaxBufferBytes) + " bytes)");
    }
    size_t grown = std::max(stage_bytes_, kMinStage);
    while (grown < bytes)
      grown *= 2;
    grow_staging(grown);
  }
  return *staging_;
}

// Consecutive staged calls of up to 512 KiB that fit in half of the staging buffers take their
// halves in turn (every member counts the same calls, so all pick the same half). On the Intel
// Xeon of 2026-12-03, when each of two cores stages 32-45 KiB into lines that the other core
// read in the call just before and reads what the other staged, both run at about 60 % of the
// speed they reach on lines last touched two calls before: a two-member plain allreduce of
// 64-88 KiB took 13-17 us on one region and 8-11 us alternating (bench/micro
// BM_PairedStagingHandoff reproduces it; docs/performance.md). From 96 KiB to 512 KiB the two
// tied or alternating won by a few per cent; larger messages keep one region, so their staging
// stays within one cache-sized footprint. A call reads and writes only its own half (a larger
// one spans both). The alternation is for speed only: every staged algorithm still ends with a
// round that tells each member its peers have read what it staged, as with one region.
size_t BufferPlacement::alternate_half(size_t bytes) const {
  constexpr size_t kAlternateUpTo = 512 << 10;
  const size_t half = stage_bytes_ / 2;
  return bytes <= std::min(half, kAlternateUpTo) && staged_count_ % 2 == 1 ? half : 0;
}

// The old window goes first (its memory may be needed for the new one). If the new one cannot be
// made, there is none until the next staged call tries again.
void BufferPlacement::grow_staging(size_t bytes) {
  // The windows' MPI waits name the growth and take the communicator's limit.
  const std::string growing = "growing the staging window to " + std::to_string(bytes) + " bytes";
  const transport::Context::CallScope call(operation_ != nullptr ? operation_ : "", timeout_);
  const transport::Context::CallScope scope(growing, {});  // the limit of `call`
  // Released whether its close completes or throws (a member that never came): a closed window
  // must not stay as the staging window.
  std::unique_ptr<coll::CollContext> old = std::move(staging_);
  stage_bytes_ = 0;
  if (old) old->team().close();
  old.reset();
  staging_ = make_collective_context(context_, comm_, {{"in", bytes, 4096}, {"out", bytes, 4096}},
                                     "staging");
  if (timeout_.count() > 0) staging_->team().set_timeout(timeout_);
  stage_bytes_ = bytes;
}

}  // namespace api
}  // namespace rankflow
