// Communication domains, both sides. The host keeps a DomainState per allocate_domain (its
// RunDomains, run_domains.h, on the main thread); each member chip builds the domain when the
// creation descriptor reaches it (its main thread) and tears it down at the end of the run.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rankflow/domain.h"
#include "runtime/protocol.h"
#include "transport/context.h"

namespace rankflow::detail {

struct DomainState {
  uint32_t id = 0;
  uint64_t run = 0;  // the run that allocated it
  std::string name;
  std::vector<int> workers;
  size_t window_bytes = 0;
  std::vector<BufferSpec> buffers;
  std::vector<size_t> buffer_offsets;  // in every member's window
  uint64_t creation_task = 0;          // the group task whose members build it
  std::atomic<bool> released{false};

  // The public handle of a state, and the state behind a handle (null for an empty one).
  static Domain handle(std::shared_ptr<DomainState> state) { return Domain(std::move(state)); }
  static const std::shared_ptr<DomainState>& of(const Domain& domain) { return domain.state_; }
  static const DomainState& live(const Domain& domain, const char* operation) {
    return domain.live(operation);
  }
};

}  // namespace rankflow::detail

namespace rankflow::runtime {

using detail::DomainState;

// A domain's named buffer as a Tensor (Domain::buffer_tensor) is its own allocation for the
// dependency tracker: one id per domain, member and buffer, in a range BufferIds never reaches.
constexpr uint64_t kDomainBufferBit = uint64_t{1} << 63;
constexpr uint32_t kMaxDomainId = (1u << 24) - 1;  // travels in an ArgRecord's space (protocol.h)
inline uint64_t domain_buffer_id(uint32_t domain, uint32_t rank, uint32_t buffer) {
  return kDomainBufferBit | (uint64_t{domain} << 32) | (uint64_t{rank} << 8) | buffer;
}
inline bool is_domain_buffer(uint64_t id) {
  return (id & kDomainBufferBit) != 0;
}
inline uint32_t domain_of_buffer(uint64_t id) {
  return static_cast<uint32_t>((id & ~kDomainBufferBit) >> 32);
}

// The buffers a member's team holds: the named ones, then the rest of the window.
std::vector<BufferSpec> domain_team_buffers(const std::vector<BufferSpec>& named,
                                            size_t window_bytes);

// Checks a domain request (before anything happens) and describes it for the members.
DomainDesc describe_domain(const std::string& name, const std::vector<int>& workers,
                           size_t window_bytes, const std::vector<BufferSpec>& buffers, int chips);

// The chip's side of allocate_domain: the creation task's payload (another rank's bytes) as a
// DomainDesc, for chip worker `chip` of `chips`. It accepts only what the host can have sent
// (describe_domain's checks, the team layout every member builds, `chip` a member), before any
// collective call: TransportError naming what was wrong.
DomainDesc decode_domain_desc(std::span<const std::byte> payload, int chips, int chip);

// What a member builds for a decoded DomainDesc, before any MPI call: the world ranks of its
// members and its team's buffers (the host's named ones where the host placed them, the rest of
// the window, then what the domain's collectives need); buffers[symmetric - 1] ends the
// symmetric part the communicator's collectives may run in place on.
struct DomainPlan {
  std::string name;
  std::vector<int> ranks;
  std::vector<BufferSpec> buffers;
  size_t symmetric = 0;
};
// For a DomainDesc decode_domain_desc accepted.
DomainPlan plan_domain(const DomainDesc& desc);

// A chip's domains of the current run, by id.
class ChipDomains {
 public:
  // Collective over the domain's members: communicator, zeroed window, collectives.
  void create(const std::shared_ptr<transport::Context>& context, const DomainDesc& desc);
  DomainContext& find(uint32_t id, int chip) const;
  // Collective per domain, in id order on every member: after the run.
  void close_all();

 private:
  std::map<uint32_t, std::unique_ptr<DomainContext>> domains_;
};

}  // namespace rankflow::runtime
