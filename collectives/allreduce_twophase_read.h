// The reading protocol of the two-phase allreduce on the caller's plain memory
// (allreduce_twophase_read.cpp): each member reads its part of every peer's input straight from
// the peer's buffer with one kernel copy, instead of each peer staging that part in its window.
// Threads: the thread that drives the collective.
#pragma once

#include <cstddef>

#include "collectives/collective.h"
#include "collectives/part_hand_off.h"

namespace rankflow::coll {

// Whether this member offers, in its PartHandOff header, to read its part of its peers' inputs
// in a call of `a` (plain, out of place, whole-precision accumulation; see the .cpp).
bool twophase_offers_reads(CollContext& c, const AllreduceArgs& a);
// Whether RANKFLOW_CROSS_MEMORY_DIRECTION=read asks for reads at every size (then a member
// offers to read rather than to stream the parts: TwophaseSegments::streams_from).
bool twophase_reads_forced();

// Before the first kReady, where this member offers: takes what the reading needs (scratch on
// three members or more), so that nothing after its peers rely on it can fail for memory.
void prepare_reading(CollContext& c, const AllreduceArgs& a);

// After the first kReady, where every member offered (PartHandOff::everyone_reads): reduces this
// member's part of the whole message, chunk by chunk, from its own input and its peers' (read
// with process_vm_readv) into its recv and hands each chunk into every peer's recv
// (process_vm_writev). Returns false where the kernel refused a copy (the caller says the part
// is missing and throws after the closing round).
bool reduce_part_by_reading(CollContext& c, const AllreduceArgs& a, const PartHandOff& peers);

}  // namespace rankflow::coll
