// SharedPageTable: the pages of this process that registrations share with peers on the same
// host (transport/user_memory.h). All of them live in one memory file (memfd) of the process,
// which peers map through /proc/<pid>/fd (the access CMA needs too). Each shared page counts
// the registrations that use it, so buffers that share a page (adjacent heap arrays), and a
// buffer registered with two communicators, work: a page becomes private anonymous memory again,
// with its contents, when its last registration ends.
//
// Sharing moves a page's contents onto the file and maps the file over it with one mmap, so the
// range is never unmapped; releasing puts fresh private pages in place the same way and copies
// the contents back. Only private anonymous memory is shared (heap, mmap'd arrays); anything else
// (a file mapping, the stack, read-only pages) is refused with the reason. Other data on a
// shared page keeps its value, but another thread must not write it while sharing or releasing
// runs, and a child forked meanwhile shares the page with its parent.
//
// PeerPages maps a peer's shared range into this process.
//
// Threads: any; the table is process-wide, under its own lock.
#pragma once

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

class SharedPageTable {
 public:
  static SharedPageTable& instance();

  // Shares the whole pages [begin, end) (page-aligned) and returns where they lie in the file,
  // in address order. Throws TransportError naming the range and why (nothing changes then).
  std::vector<PageRun> share(uintptr_t begin, uintptr_t end);
  // Ends one use of each page of [begin, end) (shared by share()).
  void release(uintptr_t begin, uintptr_t end);
  int fd() const { return fd_; }

 private:
  struct Page {
    uint64_t file_offset;
    uint32_t users;
  };
  void open_file();
  void move_onto_file(uintptr_t begin, uintptr_t end, uint64_t file_offset);
  void make_private(uintptr_t begin, uintptr_t end);

  std::mutex mutex_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;  // grows; released pages are punched out, never reused
  std::map<uintptr_t, Page> pages_;
};

// A peer's shared range, mapped at one contiguous address range here.
class PeerPages {
 public:
  // Maps `runs` (covering [runs.front().address, end of the last) in the owner, contiguously)
  // from process `pid`'s file `fd`. Null data() with the reason in why() if it cannot.
  PeerPages(int32_t pid, int32_t fd, const std::vector<PageRun>& runs);
  ~PeerPages();
  PeerPages(const PeerPages&) = delete;
  PeerPages& operator=(const PeerPages&) = delete;

  // The local address of the owner's `address`, or null.
  std::byte* at(uint64_t address) const;
  const std::string& why() const { return why_; }

 private:
  std::byte* mapped_ = nullptr;
  uint64_t owner_begin_ = 0;
  size_t bytes_ = 0;
  std::string why_;
};

}  // namespace rankflow::transport
