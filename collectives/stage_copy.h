// stage_copy: the copy of a caller's plain buffer into staging memory that peers read next (the
// staging window's "in" buffer, a broadcast root's chunks). Ordinary stores into those lines
// wait for each to come back from the peer's cache, which still holds it from reading the last
// call's data (BM_StagingHandoff in bench/micro: 6-12 GB/s, against 35-50 into private memory).
// Non-temporal stores do not fetch the lines, and the peer then reads from memory instead of
// from this core's cache. Which wins depends on the collective (does this member read its staged
// input too?) and on the memory bandwidth left to the machine, so each algorithm table entry
// says (Algorithm::streams_staged_src), and a benchmark can force either way for an A/B in one
// process. Any thread.
#pragma once

#include <cstddef>

namespace rankflow::coll {

enum class StageCopy {
  kTable,   // as the algorithm's table entry says (the default)
  kMemcpy,  // every staged source with memcpy
  kStream,  // every staged source with non-temporal stores (from 16 KiB up)
};
// Process-wide; for benchmarks that compare the two ways in one run.
void set_stage_copy(StageCopy how);

// Copies `bytes` with non-temporal stores from 16 KiB up (memcpy below, and off x86): the lines
// of `dst` are neither fetched nor kept in this core's cache. For copies whose destination the
// cache cannot hold anyway (a large own block of an exchange, exchange_cross_memory.cpp), where
// the fetch of each line before its store is a third of the memory traffic. `dst` and `src` must
// not overlap.
void stream_copy(std::byte* dst, const std::byte* src, size_t bytes);

// Copies `bytes` of a caller's source into staging memory; `entry_streams`: the algorithm's
// Algorithm::streams_staged_src.
void stage_copy(std::byte* dst, const std::byte* src, size_t bytes, bool entry_streams);

}  // namespace rankflow::coll
