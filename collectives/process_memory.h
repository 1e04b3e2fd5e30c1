// process_memory: one kernel copy between this process and another process's memory on the same
// host (Linux cross-memory attach: process_vm_writev, process_vm_readv), for collectives that
// hand data straight to or take it straight from a peer's plain buffer instead of staging it. The
// kernel allows it where it allows /proc/<pid>/fd, which mapping a peer's window already needs;
// where it refuses once, this process stops trying; RANKFLOW_CROSS_MEMORY=off stops it from the
// start (common/env.h). Any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rankflow::coll {

// Writes `bytes` from `src` to `address` in process `pid`. False, with nothing promised about
// the destination, when the kernel refuses (no permission, no such process, a bad range) or an
// earlier write of this process was refused: the caller then delivers another way.
bool write_process_memory(int64_t pid, uint64_t address, const std::byte* src, size_t bytes);
// The same for a write a peer was promised (the reading allreduce's sum, where no peer staged
// another way to deliver it): an earlier refusal does not stop it, as for reads.
bool write_promised_process_memory(int64_t pid, uint64_t address, const std::byte* src,
                                   size_t bytes);

// Reads `bytes` at `address` in process `pid` into `dst`; false as for write_process_memory,
// except that an earlier refusal does not stop it: reads are made where a peer was promised
// them (its block left to this process to read), so each is tried.
bool read_process_memory(int64_t pid, uint64_t address, std::byte* dst, size_t bytes);

// Whether writes from this process reach process `pid`: the first time for a pid, writes the
// first byte of `src` to `address` there (a byte the caller is about to write anyway) and
// remembers the answer. For a protocol that must know before it tells the peer what to expect;
// the kernel checks the same permission whichever side reads or writes.
bool writes_reach(int64_t pid, uint64_t address, const std::byte* src);

// Whether a copy to or from process `pid` has gone through before (write_process_memory,
// read_process_memory, writes_reach): a protocol that offers to read its peers asks this first,
// since once it has offered, a refusal cannot be delivered another way.
bool copies_reached(int64_t pid);

// False where this process will not try (switched off, or refused before): a peer that asks
// before it relies on this process reading or writing it.
bool process_memory_usable();

// This process's id, as peers pass it to write_process_memory.
int64_t this_process();
// What a collective publishes for its peers to write into: this_process(), or 0 (no process:
// peers put into its window instead) where this process does not use the kernel's copies.
int64_t published_process();

// Tests only: after `writes` more writes into another process, the next is refused as the kernel
// refuses one (this process then stops using the kernel's copies, as after a real refusal).
void refuse_writes_after_for_tests(uint64_t writes);

// How many writes into another process this process has made so far (write_process_memory and
// writes_reach calls that went through): for tests and diagnostics.
uint64_t process_memory_writes();
// The same for reads from another process (read_process_memory calls that went through).
uint64_t process_memory_reads();

// The process id a collective published in its window for its peers to write into (an
// int64_t at `at`), withdrawn (zeroed) when the call ends: by withdraw() once every peer is
// done with it, or, where the call ends early (a Timeout destroys its frame), on destruction,
// so that a member arriving late finds no process to write into. Peers check the id against
// Team::process_of before they write.
class PublishedProcess {
 public:
  explicit PublishedProcess(std::byte* at) : at_(at) {}
  ~PublishedProcess() { withdraw(); }
  PublishedProcess(const PublishedProcess&) = delete;
  PublishedProcess& operator=(const PublishedProcess&) = delete;
  void withdraw() {
    if (at_ == nullptr) return;
    const int64_t none = 0;
    std::memcpy(at_, &none, sizeof none);
    at_ = nullptr;
  }

 private:
  std::byte* at_;
};

}  // namespace rankflow::coll
