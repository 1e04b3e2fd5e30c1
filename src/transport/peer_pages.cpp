// PeerPages (see peer_pages.h): opening a peer's shared-page file and mapping its runs. Runs on
// the thread that uses the Context.
#include "transport/peer_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rankflow::transport {
namespace {

// Why `runs` do not describe one contiguous, page-aligned range in address order (empty if they
// do).
std::string why_not_contiguous(const std::vector<PageRun>& runs) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (runs.empty()) return "no pages";
  for (size_t i = 0; i < runs.size(); ++i) {
    const PageRun& run = runs[i];
    if (run.bytes == 0 || run.address % page != 0 || run.bytes % page != 0 ||
        run.file_offset % page != 0)
      return "a run that is not whole pages";
    if (i > 0 && runs[i - 1].address + runs[i - 1].bytes != run.address)
      return "runs that are not contiguous";
  }
  return "";
}

}  // namespace

PeerPages::PeerPages(const SharedFile& file, const std::vector<PageRun>& runs) {
  why_ = why_not_contiguous(runs);
  if (!why_.empty()) return;
  owner_begin_ = runs.front().address;
  bytes_ = runs.back().address + runs.back().bytes - owner_begin_;
  const std::string path = "/proc/" + std::to_string(file.pid) + "/fd/" + std::to_string(file.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    why_ = "open(" + path + "): " + std::strerror(errno);
    return;
  }
  struct stat status {};
  if (fstat(fd, &status) != 0 || status.st_ino != file.inode || status.st_dev != file.device) {
    why_ = path + " is not the peer's shared-page file (another pid namespace?)";
  } else {
    map_runs(fd, runs, path);
  }
  close(fd);
}

// Reserves the whole range, then maps each run of the file into its place.
bool PeerPages::map_runs(int file, const std::vector<PageRun>& runs, const std::string& path) {
  void* reserved =
      mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) {
    why_ = std::string("no address space for the peer's pages: ") + std::strerror(errno);
    return false;
  }
  mapped_ = static_cast<std::byte*>(reserved);
  for (const PageRun& run : runs) {
    void* placed = mmap(mapped_ + (run.address - owner_begin_), run.bytes, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_FIXED, file, static_cast<off_t>(run.file_offset));
    if (placed == MAP_FAILED) {
      why_ = "mmap of " + path + ": " + std::strerror(errno);
      munmap(mapped_, bytes_);
      mapped_ = nullptr;
      return false;
    }
  }
  return true;
}

PeerPages::~PeerPages() {
  if (mapped_ != nullptr) munmap(mapped_, bytes_);
}

std::byte* PeerPages::at(uint64_t address, uint64_t bytes) const {
  if (mapped_ == nullptr || address < owner_begin_ || address - owner_begin_ > bytes_ ||
      bytes > bytes_ - (address - owner_begin_))
    return nullptr;
  return mapped_ + (address - owner_begin_);
}

}  // namespace rankflow::transport
