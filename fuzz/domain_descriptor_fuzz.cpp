// Fuzz target: domain descriptors, the allocate_domain payload (a DomainDesc, protocol.h) that
// the host writes and every member chip decodes before it builds the domain.
//
// Feeds, chosen by the first byte:
//  - even: the rest as the payload chip worker first-byte / 2 of 64 receives: decode_domain_desc,
//    then plan_domain and the TeamLayout its members build (runtime/domains.h,
//    transport/team_layout.h), the part of the built-in kernel that runs before any MPI call;
//  - odd: the rest as a host-side request (name, workers, window and buffers, through
//    FuzzedDataProvider) to RunDomains::allocate on a host of 1 to 64 chips, and a payload it
//    accepts back through the chip's decode.
//
// A failure is: a crash, hang or sanitizer report; the chip's decode throwing anything but a
// TransportError; anything thrown after the decode accepted a payload (the members would fail
// one by one inside a collective creation); a payload the chip accepts that the host's own
// checks (describe_domain) refuse on 64 chips; the host throwing anything but
// InvalidArgument or InvalidState; a payload the host produced that the chip refuses or decodes
// to another domain than the one requested.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "rankflow/team.h"
#include "runtime/domains.h"
#include "runtime/run_domains.h"
#include "transport/team_layout.h"

namespace {

using namespace rankflow;
using namespace rankflow::runtime;

// The request a plan stands for, as the host's describe_domain takes it.
struct Request {
  std::string name;
  std::vector<int> workers;
  size_t window_bytes;
  std::vector<BufferSpec> buffers;
};

Request request_of(const DomainDesc& desc, const DomainPlan& plan) {
  Request r{plan.name, {}, desc.window_bytes, {}};
  for (uint32_t m = 0; m < desc.members; ++m)
    r.workers.push_back(desc.workers[m]);
  for (uint32_t b = 0; b < desc.buffers; ++b)
    r.buffers.push_back(plan.buffers[b]);
  return r;
}

// What a member does with a payload before its first MPI call; nothing here may throw once the
// decode accepted it.
Request chip_side(std::span<const std::byte> payload, int chips, int chip, bool* accepted) {
  DomainDesc desc{};
  *accepted =
      fuzz::refused_or_ran<TransportError>([&] { desc = decode_domain_desc(payload, chips, chip); },
                                           "decode_domain_desc", "allocate_domain");
  if (!*accepted) return {};
  Request request;
  fuzz::must_run(
      [&] {
        const DomainPlan plan = plan_domain(desc);
        transport::TeamLayout layout(plan.buffers, Team::kDefaultSignalSlots);
        fuzz::expect(plan.symmetric >= 1 && plan.symmetric <= plan.buffers.size(),
                     "a plan without its symmetric part");
        request = request_of(desc, plan);
      },
      "planning an accepted domain");
  return request;
}

void from_chip(std::span<const std::byte> payload, int chip) {
  bool accepted = false;
  const Request r = chip_side(payload, static_cast<int>(kMaxDomainMembers), chip, &accepted);
  if (!accepted) return;
  // The host would have sent it to some host of up to kMaxDomainMembers chips.
  fuzz::must_run(
      [&] {
        (void)describe_domain(r.name, r.workers, r.window_bytes, r.buffers,
                              static_cast<int>(kMaxDomainMembers));
      },
      "the host's checks of a payload the chip accepted");
}

void from_host(FuzzedDataProvider& in) {
  const int chips = in.ConsumeIntegralInRange<int>(1, 64);
  Request r;
  r.name = in.ConsumeRandomLengthString(64);
  const size_t members = in.ConsumeIntegralInRange<size_t>(0, 66);
  for (size_t m = 0; m < members; ++m)
    r.workers.push_back(in.ConsumeIntegralInRange<int>(-2, 66));
  r.window_bytes = in.ConsumeIntegral<size_t>();
  const size_t buffers = in.ConsumeIntegralInRange<size_t>(0, 17);
  for (size_t b = 0; b < buffers; ++b) {
    BufferSpec spec;
    spec.name = in.ConsumeRandomLengthString(64);
    spec.bytes = in.ConsumeIntegral<size_t>();
    spec.alignment = size_t{1} << in.ConsumeIntegralInRange<int>(0, 63);
    if (in.ConsumeBool()) spec.alignment = in.ConsumeIntegral<size_t>();
    r.buffers.push_back(std::move(spec));
  }
  RunDomains domains(chips);
  domains.begin_run(1);
  std::vector<std::byte> payload;
  bool allocated = false;
  try {
    (void)domains.allocate(r.name, r.workers, r.window_bytes, r.buffers, payload);
    allocated = true;
  } catch (const Error& e) {
    fuzz::expect(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kInvalidState,
                 std::string("RunDomains::allocate: ") + e.what());
    if (fuzz::verbose()) std::fprintf(stderr, "rankflow fuzz: allocate refused: %s\n", e.what());
  } catch (const std::exception& e) {
    fuzz::fail(std::string("RunDomains::allocate threw: ") + e.what());
  }
  if (!allocated) return;
  bool accepted = false;
  const Request back = chip_side(payload, chips, r.workers.front(), &accepted);
  fuzz::expect(accepted, "the chip refused a payload the host produced");
  fuzz::expect(back.name == r.name, "the chip decoded the name '" + back.name + "' (" +
                                        std::to_string(back.name.size()) + " bytes) for '" +
                                        r.name + "' (" + std::to_string(r.name.size()) + " bytes)");
  fuzz::expect(back.workers == r.workers && back.window_bytes == r.window_bytes &&
                   back.buffers.size() == r.buffers.size(),
               "the chip decoded other workers, window or buffers than the host described");
  for (size_t b = 0; b < r.buffers.size(); ++b) {
    fuzz::expect(back.buffers[b].name == r.buffers[b].name &&
                     back.buffers[b].bytes == r.buffers[b].bytes &&
                     back.buffers[b].alignment == r.buffers[b].alignment,
                 "buffer " + std::to_string(b) + " decoded as '" + back.buffers[b].name + "' (" +
                     std::to_string(back.buffers[b].name.size()) + " bytes) for '" +
                     r.buffers[b].name + "' (" + std::to_string(r.buffers[b].name.size()) +
                     " bytes), or with another size or alignment");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  if ((data[0] & 1) == 0) {
    from_chip({bytes + 1, size - 1}, data[0] >> 1);
  } else {
    FuzzedDataProvider in(data + 1, size - 1);
    from_host(in);
  }
  return 0;
}
