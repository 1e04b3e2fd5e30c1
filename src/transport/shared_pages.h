// SharedPageTable: the pages of this process that registrations share with peers on the same
// host (transport/user_memory.h). All of them live in one memory file (memfd) of the process,
// which peers map through /proc/<pid>/fd (transport/peer_pages.h; the access CMA needs too). Each
// shared page counts the registrations that use it, so buffers that share a page (adjacent heap
// arrays), and a buffer registered with two communicators, work: a page becomes private
// anonymous memory again, with its contents, when its last registration ends.
//
// Sharing copies a page's contents onto the file and maps the file over it with one mmap, so the
// range is never unmapped; releasing moves a private copy over it the same way (one mremap).
// Only private anonymous memory is shared (heap, mmap'd arrays); anything else (a file mapping,
// the main stack or the calling thread's, read-only pages) is refused with the reason. Other data
// on a shared page keeps its value, but another thread must not write it while sharing or
// releasing runs, and a child forked meanwhile shares the page with its parent.
//
// Pins: a range registered with UCX in place (a communicator whose peers do not map each other's
// memory) is pinned here. UCX may hold its physical pages (RDMA), so a pinned page that is not
// shared yet is refused for sharing, and a shared page that is pinned stays shared until its pins
// end too.
//
// Threads: any; the table is process-wide, under its own lock, and never destroyed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rankflow::transport {

// A run of pages at `address` (in the owner's process) kept at `file_offset` of its file.
struct PageRun {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t file_offset = 0;
};

// Which file a peer must find behind /proc/<pid>/fd/<fd>: its inode and device (a pid from
// another pid namespace names another process).
struct SharedFile {
  int32_t pid = 0;
  int32_t fd = -1;
  uint64_t inode = 0;
  uint64_t device = 0;
};

class SharedPageTable {
 public:
  static SharedPageTable& instance();

  // Shares the whole pages [begin, end) (page-aligned) and returns where they lie in the file,
  // in address order. Throws TransportError naming the range and why (nothing changes then).
  std::vector<PageRun> share(uintptr_t begin, uintptr_t end);
  // Ends one use of each page of [begin, end) (shared by share()).
  void release(uintptr_t begin, uintptr_t end);
  // A range registered with UCX in place begins / ends (page-aligned).
  void pin(uintptr_t begin, uintptr_t end);
  void unpin(uintptr_t begin, uintptr_t end);
  // The file, for peers (valid once share() succeeded).
  SharedFile file() const { return file_; }

 private:
  struct Page {
    uint64_t file_offset;
    uint32_t users;
  };
  SharedPageTable() = default;
  void open_file();
  std::vector<std::pair<uintptr_t, uintptr_t>> fresh_runs(uintptr_t begin, uintptr_t end) const;
  void move_onto_file(uintptr_t begin, uintptr_t end, uint64_t file_offset);
  bool make_private(uintptr_t begin, uintptr_t end);
  void release_unused(uintptr_t begin, uintptr_t end);

  std::mutex mutex_;
  SharedFile file_;
  uint64_t file_bytes_ = 0;  // grows; released pages are punched out, never reused
  std::map<uintptr_t, Page> pages_;
  std::map<uintptr_t, uint32_t> pins_;
};

}  // namespace rankflow::transport
