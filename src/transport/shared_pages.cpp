// SharedPageTable (see shared_pages.h): moving pages onto the process's memory file and back,
// with their use counts and pins. Runs on any thread, under the table's lock.
#include "transport/shared_pages.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucm/api/ucm.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/log.h"
#include "rankflow/error.h"

namespace rankflow::transport {
namespace {

const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
constexpr const char* kFileName = "rankflow-shared-pages";

std::string describe(uintptr_t begin, uintptr_t end) {
  char text[64];
  std::snprintf(text, sizeof text, "pages [%#lx, %#lx)", static_cast<unsigned long>(begin),
                static_cast<unsigned long>(end));
  return text;
}

std::byte* pointer_to(uintptr_t address) {
  return reinterpret_cast<std::byte*>(address);
}

// Calls `check(perms, inode, path)` for each mapping of /proc/self/maps that covers part of
// [begin, end), in order; returns its first non-empty answer, or why the range is not all
// mapped.
std::string check_mappings(uintptr_t begin, uintptr_t end,
                           const std::function<std::string(const std::string&, unsigned long,
                                                           const std::string&)>& check) {
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
    if (std::string why = check(perms, inode, path); !why.empty()) return why;
    covered = to;
  }
  return covered >= end ? "" : "part of it is not mapped";
}

// Empty when every byte of [begin, end) lies in private anonymous read-write mappings (what a
// heap or an mmap'd array is) off the calling thread's stack, else why not.
std::string why_not_shareable(uintptr_t begin, uintptr_t end) {
  pthread_attr_t attr;
  void* stack = nullptr;
  size_t stack_bytes = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &stack, &stack_bytes);
    pthread_attr_destroy(&attr);
  }
  const auto stack_begin = reinterpret_cast<uintptr_t>(stack);
  if (begin < stack_begin + stack_bytes && stack_begin < end) return "it is on this thread's stack";
  return check_mappings(
      begin, end,
      [](const std::string& perms, unsigned long inode, const std::string& path) -> std::string {
        if (perms == "rw-p" && inode == 0 && (path.empty() || path == "[heap]")) return "";
        return "it lies in a mapping that is not private anonymous read-write memory (" + perms +
               (path.empty() ? "" : " " + path) + ")";
      });
}

// Whether [begin, end) is still mapped from the shared-page file (not freed and remapped).
bool mapped_from_file(uintptr_t begin, uintptr_t end) {
  return check_mappings(begin, end,
                        [](const std::string&, unsigned long, const std::string& path) {
                          return path.find(kFileName) != std::string::npos ? "" : "another mapping";
                        })
      .empty();
}

// Copies whole pages word by word. Whole pages hold the program's other data too, which
// AddressSanitizer would take for an overflow of the registered buffer: the copy is not
// instrumented (and not turned into a memcpy call, which ASan intercepts).
__attribute__((no_sanitize("address"), optimize("no-tree-loop-distribute-patterns"))) void
copy_words(std::byte* to, const std::byte* from, size_t bytes) {
  auto* dst = reinterpret_cast<uint64_t*>(to);
  const auto* src = reinterpret_cast<const uint64_t*>(from);
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i)
    dst[i] = src[i];
}

// Copies whole pages, the first and last page last, so that other data on those two pages is
// copied as close as possible to the moment the mapping changes.
void copy_pages(std::byte* to, const std::byte* from, size_t bytes) {
  if (bytes > 2 * kPage) copy_words(to + kPage, from + kPage, bytes - 2 * kPage);
  copy_words(to, from, kPage);
  if (bytes > kPage) copy_words(to + bytes - kPage, from + bytes - kPage, kPage);
}

}  // namespace

SharedPageTable& SharedPageTable::instance() {
  static auto* table = new SharedPageTable;  // never destroyed: statics may outlive it
  return *table;
}

void SharedPageTable::open_file() {
  if (file_.fd >= 0) return;
  const int fd = memfd_create(kFileName, MFD_CLOEXEC);
  struct stat status {};
  if (fd < 0 || fstat(fd, &status) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) close(fd);
    throw TransportError("the shared-page file (memfd_create): " + why);
  }
  file_ = {static_cast<int32_t>(getpid()), fd, status.st_ino, status.st_dev};
}

// The runs of [begin, end) not shared yet.
std::vector<std::pair<uintptr_t, uintptr_t>> SharedPageTable::fresh_runs(uintptr_t begin,
                                                                         uintptr_t end) const {
  std::vector<std::pair<uintptr_t, uintptr_t>> fresh;
  for (uintptr_t page = begin; page < end; page += kPage) {
    if (pages_.count(page) != 0) continue;
    if (!fresh.empty() && fresh.back().second == page) {
      fresh.back().second += kPage;
    } else {
      fresh.emplace_back(page, page + kPage);
    }
  }
  return fresh;
}

std::vector<PageRun> SharedPageTable::share(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(mutex_);
  open_file();
  const auto fresh = fresh_runs(begin, end);
  for (const auto& [from, to] : fresh) {
    std::string why = why_not_shareable(from, to);
    for (uintptr_t page = from; page < to && why.empty(); page += kPage) {
      if (pins_.count(page) != 0) why = "another communicator registered it with UCX in place";
    }
    if (!why.empty()) throw TransportError(describe(begin, end) + " cannot be shared: " + why);
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
    for (size_t i = 0; i < moved; ++i)
      release_unused(fresh[i].first, fresh[i].second);
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
  for (uintptr_t page = begin; page < end; page += kPage) {
    auto it = pages_.find(page);
    if (it != pages_.end() && it->second.users > 0) --it->second.users;
  }
  release_unused(begin, end);
}

void SharedPageTable::pin(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(mutex_);
  for (uintptr_t page = begin; page < end; page += kPage)
    ++pins_[page];
}

void SharedPageTable::unpin(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(mutex_);
  for (uintptr_t page = begin; page < end; page += kPage) {
    auto it = pins_.find(page);
    if (it != pins_.end() && --it->second == 0) pins_.erase(it);
  }
  release_unused(begin, end);
}

// Pages of [begin, end) that no registration uses and nothing pins become private again, run by
// run; their part of the file is punched out. A run that cannot be made private stays shared.
void SharedPageTable::release_unused(uintptr_t begin, uintptr_t end) {
  auto unused = [&](uintptr_t page) {
    auto it = pages_.find(page);
    return it != pages_.end() && it->second.users == 0 && pins_.count(page) == 0;
  };
  for (uintptr_t page = begin; page < end;) {
    if (!unused(page)) {
      page += kPage;
      continue;
    }
    uintptr_t run_end = page + kPage;
    while (run_end < end && unused(run_end))
      run_end += kPage;
    if (make_private(page, run_end)) {
      for (uintptr_t p = page; p < run_end; p += kPage) {
        fallocate(file_.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(pages_.at(p).file_offset), static_cast<off_t>(kPage));
        pages_.erase(p);
      }
    } else {
      log::warn(describe(page, run_end), ": no memory to make them private again; they stay ",
                "shared with the peers");
    }
    page = run_end;
  }
}

// One mmap replaces the private pages with the file's, which already hold their contents. If it
// fails, the contents go back from the file into fresh private pages.
void SharedPageTable::move_onto_file(uintptr_t begin, uintptr_t end, uint64_t file_offset) {
  const size_t bytes = end - begin;
  if (ftruncate(file_.fd, static_cast<off_t>(file_offset + bytes)) != 0) {
    throw TransportError(describe(begin, end) + ": no room in the shared-page file (" +
                         std::strerror(errno) + ")");
  }
  void* file = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file_.fd,
                    static_cast<off_t>(file_offset));
  if (file == MAP_FAILED) {
    throw TransportError(describe(begin, end) + ": no shared memory for them (" +
                         std::strerror(errno) + ")");
  }
  copy_pages(static_cast<std::byte*>(file), pointer_to(begin), bytes);
  void* placed = mmap(pointer_to(begin), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                      file_.fd, static_cast<off_t>(file_offset));
  const int error = errno;
  if (placed != static_cast<void*>(pointer_to(begin))) {
    if (mmap(pointer_to(begin), bytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      copy_words(pointer_to(begin), static_cast<const std::byte*>(file), bytes);
    }
  }
  munmap(file, bytes);
  if (placed != static_cast<void*>(pointer_to(begin))) {
    throw TransportError(describe(begin, end) + ": mapping the shared memory over them failed (" +
                         std::strerror(error) + ")");
  }
}

// A private copy, the first and last page copied last, moves over the range with one mremap
// (the range is never unmapped nor zeroed); UCX's memory hooks are told the old pages are gone.
// (A raw system call: UCX's hook of mremap drops the new address.) If the range no longer is
// the file's (its memory was freed before deregister), it is left alone. False: no memory for
// the copy, nothing changed.
bool SharedPageTable::make_private(uintptr_t begin, uintptr_t end) {
  if (!mapped_from_file(begin, end)) {
    log::warn(describe(begin, end), " were unmapped or remapped while registered (freed before ",
              "deregister?); left as they are");
    return true;
  }
  const size_t bytes = end - begin;
  void* copy = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) return false;
  copy_pages(static_cast<std::byte*>(copy), pointer_to(begin), bytes);
  const long moved =
      syscall(SYS_mremap, copy, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, pointer_to(begin));
  if (moved == static_cast<long>(begin)) {
    ucm_vm_munmap(pointer_to(begin), bytes);
    return true;
  }
  munmap(copy, bytes);
  return false;
}

}  // namespace rankflow::transport
