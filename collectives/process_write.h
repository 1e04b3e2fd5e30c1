// process_write: one kernel copy from this process into another process's memory on the same
// host (Linux cross-memory attach, process_vm_writev), for collectives that hand a result
// straight to a peer's plain buffer instead of staging it for the peer to fetch. The kernel
// allows it where it allows /proc/<pid>/fd, which mapping a peer's window already needs; where
// it refuses once, this process stops trying; RANKFLOW_PROCESS_WRITE=off stops it from the
// start (common/env.h). Any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rankflow::coll {

// Writes `bytes` from `src` to `address` in process `pid`. False, with nothing promised about
// the destination, when the kernel refuses (no permission, no such process, a bad range) or an
// earlier write of this process was refused: the caller then delivers another way.
bool write_process_memory(int64_t pid, uint64_t address, const std::byte* src, size_t bytes);

// This process's id, as peers pass it to write_process_memory.
int64_t this_process();

}  // namespace rankflow::coll
