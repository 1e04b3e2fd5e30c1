// Cache hints for handing small messages from one core to another through shared memory (the
// push inbox, collectives/inbox.h). Any thread.
//
// demote_lines asks the core to move lines from its private caches (L1/L2) to the shared
// last-level cache with CLDEMOTE. The core that touches them next then finds them there instead
// of snooping them out of this core: a reader of lines this core wrote, or a writer about to
// take back lines this core read. It is a hint, and the costs are real (each line is a write
// back), so callers use it only where measured to win (docs/performance.md). Processors without
// CLDEMOTE would execute it as a NOP (its encoding lies in the reserved hint-NOP space); the
// loop is skipped there (cpu_demotes_lines: CPUID, read once at load), so that it costs those
// processors nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace rankflow::coll {

// Whether this processor has CLDEMOTE (CPUID leaf 7, ECX bit 25).
inline bool cpu_has_cldemote() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 25)) != 0;
#else
  return false;
#endif
}
inline const bool cpu_demotes_lines = cpu_has_cldemote();

// Calls hint(line) for the start of every 64-byte line that [first, first + bytes) touches (none
// for an empty range).
template <typename Hint>
inline void for_each_line(const void* first, size_t bytes, Hint&& hint) {
  if (bytes == 0) return;
  constexpr uintptr_t kLine = 64;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(first) & ~(kLine - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(first) + bytes;
  for (uintptr_t line = begin; line < end; line += kLine)
    hint(reinterpret_cast<const char*>(line));
}

inline void demote_lines(const void* first, size_t bytes) {
#if defined(__x86_64__)
  if (!cpu_demotes_lines) return;
  for_each_line(first, bytes, [](const char* line) { asm volatile("cldemote %0" ::"m"(*line)); });
#else
  (void)first;
  (void)bytes;
#endif
}

// claim_lines asks the core to take the lines in anticipation of writing them (PREFETCHW: the
// line comes here exclusive, other cores' copies are invalidated), so that a later store finds
// it owned instead of waiting for the other core then. Where PREFETCHW is not advertised it
// executes as a NOP on x86-64 (AMD has had it since the K6-2, Intel executes the encoding as a
// NOP before Broadwell), so it needs no CPU check either.
inline void claim_lines(void* first, size_t bytes) {
#if defined(__x86_64__)
  for_each_line(first, bytes, [](const char* line) { asm volatile("prefetchw %0" ::"m"(*line)); });
#else
  (void)first;
  (void)bytes;
#endif
}

}  // namespace rankflow::coll
