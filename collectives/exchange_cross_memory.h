// The cross-memory exchange of allgather and all_to_all (exchange_cross_memory.cpp), which the
// `cross_memory` entries run through exchange_choice.cpp. Threads: the thread that drives the
// collective.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/collective.h"

namespace rankflow::coll {

// The bytes of the header each member writes at its block of the exchange's region: blocks
// smaller than this cannot run the exchange.
size_t cross_memory_header_bytes(int members);

// Every member's block of `send` (per_peer: block p of send for member p, all_to_all; else all
// of send, allgather) into each member's `out` at the sender's block, `block` bytes each,
// through the window region `region` (P blocks, the same offset on every member, which nothing
// else fills during the call: the members' headers).
CollTask cross_memory_exchange(CollContext& c, size_t region, size_t block, const std::byte* send,
                               std::byte* out, bool per_peer);

}  // namespace rankflow::coll
