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

// An allgather block larger than this that the kernel writes into a peer's recv, out of place,
// goes this much at a time, each chunk copied into the member's own block while still in its
// cache (exchange_cross_memory.cpp, write_block_keeping_own).
inline constexpr size_t kKeptBlockChunk = size_t{256} << 10;
// The kernel writes (process_memory_writes()) that deliver one written block of `block` bytes to
// one peer out of place: one, or one a chunk for the allgather's kept block above
// kKeptBlockChunk (the first peer written; the own block is copied with it). In place, one.
size_t kernel_writes_of_block(size_t block, bool allgather);

// Every member's block of `send` (per_peer: block p of send for member p, all_to_all; else all
// of send, allgather) into each member's `out` at the sender's block, `block` bytes each,
// through the window region `region` (P blocks, the same offset on every member, which nothing
// else fills during the call: the members' headers).
CollTask cross_memory_exchange(CollContext& c, size_t region, size_t block, const std::byte* send,
                               std::byte* out, bool per_peer);

}  // namespace rankflow::coll
