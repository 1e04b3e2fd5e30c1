// What the soak jobs watch for leaks, read from /proc: this process's resident set, its open
// file descriptors and the shared-memory segments it maps. Header-only; any thread.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace rankflow::soak {

struct Figures {
  long rss_kb = 0;
  long fds = 0;
  long shm_segments = 0;
};

inline long count_entries(const char* dir) {
  long n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(d);
  }
  return n;
}

inline Figures measure() {
  Figures f;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) f.rss_kb = std::stol(line.substr(6));
  }
  f.fds = count_entries("/proc/self/fd") - 1;  // opendir's own descriptor
  // Shared-memory segments this process maps (POSIX under /dev/shm, System V): counted per
  // process, since other jobs on the machine create and remove their own.
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> segments;
  for (std::string line; std::getline(maps, line);) {
    const size_t path = line.find('/');
    if (line.find("/dev/shm/") != std::string::npos || line.find("SYSV") != std::string::npos)
      segments.insert(path == std::string::npos ? line.substr(line.find("SYSV"))
                                                : line.substr(path));
  }
  f.shm_segments = static_cast<long>(segments.size());
  return f;
}

// Prints the figures before and after `what` and returns whether they stayed within bounds:
// resident memory grew by less than 5%, and no descriptor or segment was left behind.
inline bool report(int rank, const char* what, double seconds, const Figures& before,
                   const Figures& after) {
  const double growth = before.rss_kb > 0
                            ? 100.0 * static_cast<double>(after.rss_kb - before.rss_kb) /
                                  static_cast<double>(before.rss_kb)
                            : 0.0;
  const bool ok =
      growth < 5.0 && after.fds <= before.fds && after.shm_segments <= before.shm_segments;
  std::printf(
      "[rank %d] %-40s %6.1f s  RSS %ld -> %ld KiB (%+.2f%%), fds %ld -> %ld, "
      "mapped shm %ld -> %ld  %s\n",
      rank, what, seconds, before.rss_kb, after.rss_kb, growth, before.fds, after.fds,
      before.shm_segments, after.shm_segments, ok ? "ok" : "LEAK");
  std::fflush(stdout);
  return ok;
}

}  // namespace rankflow::soak
