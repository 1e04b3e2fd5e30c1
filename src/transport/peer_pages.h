// PeerPages: a peer's shared pages (transport/shared_pages.h) mapped into this process, at one
// contiguous address range, for a window segment (Window::attach). The peer's file is opened
// through /proc/<pid>/fd/<fd> and checked to be the file the peer named (its inode and device).
//
// Owns: the mapping. Threads: as Context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/shared_pages.h"

namespace rankflow::transport {

class PeerPages {
 public:
  // Maps `runs` of `file` (in address order, page-aligned and contiguous in the owner). Null
  // at() with the reason in why() when it cannot.
  PeerPages(const SharedFile& file, const std::vector<PageRun>& runs);
  ~PeerPages();
  PeerPages(const PeerPages&) = delete;
  PeerPages& operator=(const PeerPages&) = delete;

  // The local address of the owner's [address, address + bytes), or null if it is not mapped.
  std::byte* at(uint64_t address, uint64_t bytes) const;
  const std::string& why() const { return why_; }

 private:
  bool map_runs(int file, const std::vector<PageRun>& runs, const std::string& path);

  std::byte* mapped_ = nullptr;
  uint64_t owner_begin_ = 0;
  size_t bytes_ = 0;
  std::string why_;
};

}  // namespace rankflow::transport
