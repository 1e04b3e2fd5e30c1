// cap_address_space(): caps this process's address space 2 GiB above what it uses now, so that
// a larger allocation fails at once (and a chaos test can exhaust "memory" without exhausting
// the machine). Header-only; call it from the main thread before the allocation.
#pragma once

#include <sys/resource.h>

#include <cstdio>

namespace rankflow::chaos {

inline void cap_address_space() {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlim_t cap = static_cast<rlim_t>(pages) * 4096 + (rlim_t{2} << 30);
  rlimit limit{cap, cap};
  setrlimit(RLIMIT_AS, &limit);
}

}  // namespace rankflow::chaos
