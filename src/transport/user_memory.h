// UserMemory: the caller's own memory made reachable by the peers of a window, for a window
// segment (Window::attach, used by Communicator::register_buffer).
//
// Shared (peers on this host map it): the pages the range spans are shared through the
// process's SharedPageTable (transport/shared_pages.h: moved, with their contents, onto a memory
// file mapped at the same addresses, so the caller's pointer stays what it was), and peers map
// them with PeerPages. Releasing ends this range's use of its pages; each becomes private
// anonymous memory again once no registration uses it. Shared memory is not registered with UCX:
// every peer maps it, so no transfer needs a key, and UCX's registration cache would see its
// pages change under a registration.
//
// Not shared (UCX_TLS=tcp,self, peers on other hosts): the range is registered with UCX in place
// and nothing about its pages changes; they are pinned in the SharedPageTable meanwhile, so no
// other registration moves them under UCX.
//
// Owns: the UCX memory handle and this range's use of its shared pages. Threads: as Context.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/shared_pages.h"

namespace rankflow::transport {

class UserMemory {
 public:
  // Throws TransportError naming the range and why when it cannot be made reachable (the range
  // is then as it was).
  UserMemory(ucp_context_h ucp, std::byte* base, size_t bytes, bool shared);
  ~UserMemory();
  UserMemory(const UserMemory&) = delete;
  UserMemory& operator=(const UserMemory&) = delete;

  std::byte* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  ucp_mem_h memh() const { return memh_; }  // null when shared
  // Where its pages lie in the process's memory file (empty when not shared).
  const std::vector<PageRun>& runs() const { return runs_; }

 private:
  ucp_context_h ucp_;
  std::byte* base_;
  size_t bytes_;
  uintptr_t pages_begin_ = 0;  // the whole pages the range spans
  uintptr_t pages_end_ = 0;
  std::vector<PageRun> runs_;
  ucp_mem_h memh_ = nullptr;
};

}  // namespace rankflow::transport
