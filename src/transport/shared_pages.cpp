// SharedPageTable and PeerPages (see shared_pages.h): moving pages onto the process's memory
// file and back, and mapping a peer's. Runs on any thread, under the table's lock.
#include "transport/shared_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rankflow/error.h"

namespace rankflow::transport {
namespace {

const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));

std::string describe(uintptr_t begin, uintptr_t end) {
  char text[64];
  std::snprintf(text, sizeof text, "pages [%#lx, %#lx)", static_cast<unsigned long>(begin),
                static_cast<unsigned long>(end));
  return text;
}

// Empty when every byte of [begin, end) lies in private anonymous read-write mappings (what a
// heap or an mmap'd array is), else why not, from /proc/self/maps.
std::string why_not_private_anonymous(uintptr_t begin, uintptr_t end) {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return "/proc/self/maps cannot be read";
  uintptr_t covered = begin;  // every byte below this is in a good mapping
  std::string line;
  while (covered < end && std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, path;
    unsigned long inode = 0;
    fields >> range >> perms >> offset >> device >> inode;
    std::getline(fields >> std::ws, path);
    const uintptr_t from = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const uintptr_t to = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    if (to <= covered) continue;
    if (from > covered) break;  // a hole
    const bool anonymous = inode == 0 && (path.empty() || path == "[heap]");
    if (perms != "rw-p" || !anonymous) {
      return "it lies in a mapping that is not private anonymous read-write memory (" + perms +
             (path.empty() ? "" : " " + path) + ")";
    }
    covered = to;
  }
  return covered >= end ? "" : "part of it is not mapped";
}

// Copies whole pages, the first and last page last, so that other data on those two pages is
// copied as close as possible to the moment the mapping changes.
void copy_pages(std::byte* to, const std::byte* from, size_t bytes) {
  if (bytes > 2 * kPage) std::memcpy(to + kPage, from + kPage, bytes - 2 * kPage);
  std::memcpy(to, from, kPage);
  if (bytes > kPage) std::memcpy(to + bytes - kPage, from + bytes - kPage, kPage);
}

std::byte* at(uintptr_t address) {
  return reinterpret_cast<std::byte*>(address);
}

}  // namespace

SharedPageTable& SharedPageTable::instance() {
  static SharedPageTable table;
  return table;
}

void SharedPageTable::open_file() {
  if (fd_ >= 0) return;
  fd_ = memfd_create("rankflow-shared-pages", MFD_CLOEXEC);
  if (fd_ < 0) throw TransportError(std::string("memfd_create: ") + std::strerror(errno));
}

std::vector<PageRun> SharedPageTable::share(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(mutex_);
  open_file();
  // The runs of pages not shared yet, each checked before anything moves.
  std::vector<std::pair<uintptr_t, uintptr_t>> fresh;
  for (uintptr_t page = begin; page < end; page += kPage) {
    if (pages_.count(page) != 0) continue;
    if (!fresh.empty() && fresh.back().second == page) {
      fresh.back().second += kPage;
    } else {
      fresh.emplace_back(page, page + kPage);
    }
  }
  for (const auto& [from, to] : fresh) {
    if (const std::string why = why_not_private_anonymous(from, to); !why.empty())
      throw TransportError(describe(begin, end) + " cannot be shared with the peers: " + why);
  }
  size_t moved = 0;
  try {
    for (const auto& [from, to] : fresh) {
      move_onto_file(from, to, file_bytes_);
      for (uintptr_t page = from; page < to; page += kPage)
        pages_[page] = {file_bytes_ + (page - from), 0};
      file_bytes_ += to - from;
      ++moved;
    }
  } catch (...) {
    for (size_t i = 0; i < moved; ++i) {
      make_private(fresh[i].first, fresh[i].second);
      for (uintptr_t page = fresh[i].first; page < fresh[i].second; page += kPage)
        pages_.erase(page);
    }
    throw;
  }
  std::vector<PageRun> runs;
  for (uintptr_t page = begin; page < end; page += kPage) {
    Page& entry = pages_.at(page);
    ++entry.users;
    PageRun* last = runs.empty() ? nullptr : &runs.back();
    if (last != nullptr && last->file_offset + last->bytes == entry.file_offset) {
      last->bytes += kPage;
    } else {
      runs.push_back({page, kPage, entry.file_offset});
    }
  }
  return runs;
}

void SharedPageTable::release(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(mutex_);
  uintptr_t run = 0;            // start of the pages to make private, while a run is open
  std::vector<uint64_t> freed;  // their offsets in the file
  auto end_run = [&](uintptr_t to) {
    if (run != 0) make_private(run, to);
    run = 0;
  };
  for (uintptr_t page = begin; page < end; page += kPage) {
    auto it = pages_.find(page);
    if (it == pages_.end() || --it->second.users > 0) {
      end_run(page);
      continue;
    }
    // The file's copy of the page is no longer needed once it is private again.
    const uint64_t offset = it->second.file_offset;
    pages_.erase(it);
    if (run == 0) run = page;
    freed.push_back(offset);
  }
  end_run(end);
  for (const uint64_t offset : freed)
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
              static_cast<off_t>(kPage));
}

// One mmap replaces the private pages with the file's, which already hold their contents.
void SharedPageTable::move_onto_file(uintptr_t begin, uintptr_t end, uint64_t file_offset) {
  const size_t bytes = end - begin;
  if (ftruncate(fd_, static_cast<off_t>(file_offset + bytes)) != 0) {
    throw TransportError(describe(begin, end) + ": no room in the shared memory file (" +
                         std::strerror(errno) + ")");
  }
  void* file = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                    static_cast<off_t>(file_offset));
  if (file == MAP_FAILED) {
    throw TransportError(describe(begin, end) + ": no shared memory for them (" +
                         std::strerror(errno) + ")");
  }
  copy_pages(static_cast<std::byte*>(file), at(begin), bytes);
  void* placed = mmap(at(begin), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_,
                      static_cast<off_t>(file_offset));
  const int error = errno;
  munmap(file, bytes);
  if (placed != static_cast<void*>(at(begin))) {
    throw TransportError(describe(begin, end) + ": mapping the shared memory over them failed (" +
                         std::strerror(error) + ")");
  }
}

// One mmap puts fresh private pages in place of the file's (the range is never unmapped); the
// contents, copied aside first, go back with the first and last page first.
void SharedPageTable::make_private(uintptr_t begin, uintptr_t end) {
  const size_t bytes = end - begin;
  void* copy = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) return;  // no room for a copy: the pages stay shared, losing nothing
  auto* aside = static_cast<std::byte*>(copy);
  std::memcpy(aside, at(begin), bytes);
  void* back = mmap(at(begin), bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (back == static_cast<void*>(at(begin))) {
    std::memcpy(at(begin), aside, kPage);
    if (bytes > kPage) std::memcpy(at(end - kPage), aside + bytes - kPage, kPage);
    if (bytes > 2 * kPage) std::memcpy(at(begin + kPage), aside + kPage, bytes - 2 * kPage);
  }
  munmap(copy, bytes);
}

PeerPages::PeerPages(int32_t pid, int32_t fd, const std::vector<PageRun>& runs) {
  if (runs.empty()) {
    why_ = "no pages";
    return;
  }
  owner_begin_ = runs.front().address;
  bytes_ = runs.back().address + runs.back().bytes - owner_begin_;
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int file = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (file < 0) {
    why_ = "open(" + path + "): " + std::strerror(errno);
    return;
  }
  void* reserved =
      mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) {
    why_ = std::string("no address space for the peer's pages: ") + std::strerror(errno);
    close(file);
    return;
  }
  mapped_ = static_cast<std::byte*>(reserved);
  for (const PageRun& run : runs) {
    void* placed = mmap(mapped_ + (run.address - owner_begin_), run.bytes, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_FIXED, file, static_cast<off_t>(run.file_offset));
    if (placed == MAP_FAILED) {
      why_ = "mmap of " + path + ": " + std::strerror(errno);
      munmap(mapped_, bytes_);
      mapped_ = nullptr;
      break;
    }
  }
  close(file);
}

PeerPages::~PeerPages() {
  if (mapped_ != nullptr) munmap(mapped_, bytes_);
}

std::byte* PeerPages::at(uint64_t address) const {
  if (mapped_ == nullptr || address < owner_begin_ || address > owner_begin_ + bytes_)
    return nullptr;
  return mapped_ + (address - owner_begin_);
}

}  // namespace rankflow::transport
