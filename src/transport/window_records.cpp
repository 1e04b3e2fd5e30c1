// Window key records (see window.h): what each member tells the others about a window's memory
// or a segment's (where it is, its size, its shared pages and its packed UCX key), the exchange,
// and what a member makes of a peer's record. Runs on the thread that uses the Context.
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "rankflow/error.h"
#include "transport/mpi_session.h"
#include "transport/window.h"

namespace rankflow::transport {
namespace {

// The record's header; then `runs` PageRuns (a segment's shared pages, where it shares them),
// then the packed rkey (none for memory every peer maps).
struct KeyHeader {
  uint64_t base;
  uint64_t bytes;
  SharedFile file;  // of the shared pages, when there are runs
  uint64_t runs;
  int64_t pid;             // the owner's process
  uint64_t pid_namespace;  // and the inode of its pid namespace (0 where unknown)
};
static_assert(sizeof(KeyHeader) == 64 && sizeof(PageRun) == 24 && sizeof(SharedFile) == 24,
              "key records are exchanged as bytes between processes of one build");

// The inode of this process's pid namespace: two processes whose pids mean the same process
// have the same one. 0 where /proc does not say.
uint64_t pid_namespace() {
  struct stat status {};
  return stat("/proc/self/ns/pid", &status) == 0 ? static_cast<uint64_t>(status.st_ino) : 0;
}

}  // namespace

std::vector<std::byte> Window::pack_record(ucp_mem_h memh, const void* base, size_t bytes,
                                           const std::vector<PageRun>& runs) const {
  void* packed = nullptr;
  size_t packed_size = 0;
  if (memh != nullptr)
    check_ucs(ucp_rkey_pack(context_->ucp(), memh, &packed, &packed_size), "ucp_rkey_pack");
  const size_t runs_bytes = runs.size() * sizeof(PageRun);
  std::vector<std::byte> record(sizeof(KeyHeader) + runs_bytes + packed_size);
  static const uint64_t my_namespace = pid_namespace();
  const KeyHeader header{reinterpret_cast<uint64_t>(base),
                         bytes,
                         runs.empty() ? SharedFile{} : SharedPageTable::instance().file(),
                         runs.size(),
                         static_cast<int64_t>(getpid()),
                         my_namespace};
  std::memcpy(record.data(), &header, sizeof(header));
  if (runs_bytes > 0) std::memcpy(record.data() + sizeof(header), runs.data(), runs_bytes);
  if (packed != nullptr) {
    std::memcpy(record.data() + sizeof(header) + runs_bytes, packed, packed_size);
    ucp_rkey_buffer_release(packed);
  }
  return record;
}

std::vector<std::vector<std::byte>> Window::allgather_records(const std::vector<std::byte>& mine,
                                                              const std::string& what) const {
  const int members = size();
  std::vector<int> lengths(members), displacements(members, 0);
  int my_length = static_cast<int>(mine.size());
  MPI_Request request;
  check_mpi(MPI_Iallgather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_, &request),
            "MPI_Iallgather(rkey lengths)");
  context_->mpi_wait(request, what + " (key lengths) for window '" + name_ + "'");
  for (int r = 1; r < members; ++r)
    displacements[r] = displacements[r - 1] + lengths[r - 1];
  std::vector<std::byte> all(static_cast<size_t>(displacements.back() + lengths.back()));
  check_mpi(MPI_Iallgatherv(mine.data(), my_length, MPI_BYTE, all.data(), lengths.data(),
                            displacements.data(), MPI_BYTE, comm_, &request),
            "MPI_Iallgatherv(rkeys)");
  context_->mpi_wait(request, what + " for window '" + name_ + "'");
  std::vector<std::vector<std::byte>> records(members);
  for (int r = 0; r < members; ++r)
    records[r].assign(all.begin() + displacements[r], all.begin() + displacements[r] + lengths[r]);
  return records;
}

// A peer's memory from its record: its address, size and key, and a direct pointer where it
// maps into this process: its shared pages, or what UCX maps (`own` is this member's own
// memory, mapped by definition). `why` says why shared pages could not be mapped. A record too
// short for what it says it holds is a TransportError naming the member.
Window::Extent Window::unpack_record(int peer, const std::vector<std::byte>& record, std::byte* own,
                                     std::string* why) const {
  KeyHeader header{};
  const auto malformed = [&] {
    return TransportError("window '" + name_ + "': member " + std::to_string(peer) +
                          " sent a malformed key record (" + std::to_string(record.size()) +
                          " bytes)");
  };
  if (record.size() < sizeof(header)) throw malformed();
  std::memcpy(&header, record.data(), sizeof(header));
  if (header.runs > (record.size() - sizeof(header)) / sizeof(PageRun)) throw malformed();
  std::vector<PageRun> runs(header.runs);
  const size_t runs_bytes = runs.size() * sizeof(PageRun);
  if (runs_bytes > 0) std::memcpy(runs.data(), record.data() + sizeof(header), runs_bytes);
  Extent extent{header.base, header.bytes, nullptr, nullptr, nullptr};
  if (record.size() > sizeof(header) + runs_bytes) {
    check_ucs(ucp_ep_rkey_unpack(peers_[peer].ep, record.data() + sizeof(header) + runs_bytes,
                                 &extent.rkey),
              "ucp_ep_rkey_unpack for window '" + name_ + "' member " + std::to_string(peer));
  }
  void* mapped = nullptr;
  if (peer == rank_) {
    extent.mapped = own;
  } else if (!runs.empty()) {
    extent.pages = std::make_shared<PeerPages>(header.file, runs);
    extent.mapped = extent.pages->at(header.base, header.bytes);
    if (why != nullptr && extent.mapped == nullptr) *why = extent.pages->why();
  } else if (extent.rkey != nullptr && ucp_rkey_ptr(extent.rkey, extent.base, &mapped) == UCS_OK) {
    extent.mapped = static_cast<std::byte*>(mapped);
  }
  // A mapped peer shares this host; its pid names it here where the pid namespaces are one.
  static const uint64_t my_namespace = pid_namespace();
  if (extent.mapped != nullptr && peer != rank_ && my_namespace != 0 &&
      header.pid_namespace == my_namespace) {
    extent.pid = header.pid;
  }
  return extent;
}

}  // namespace rankflow::transport
