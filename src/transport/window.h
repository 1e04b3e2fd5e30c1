// Window: symmetric, UCX-registered memory shared by the members of one MPI communicator (any
// subset of ranks). Each member allocates its part with UCP_MEM_MAP_ALLOCATE, zeroes it, and only
// then exchanges its rkey, so no peer can ever see stale contents.
//
// Owns: the local allocation, the members' rkeys and, where UCX can map a peer's memory into this
// process (same host), a direct pointer to it. Every remote access is bounds-checked against the
// target's window size before anything is sent. Segments (window_segments.cpp): the caller's own
// memory attached after creation, addressed from offset kSegmentStride up. Threads: as Context
// (one thread at a time).
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rankflow/team.h"
#include "transport/context.h"
#include "transport/peer_pages.h"
#include "transport/user_memory.h"

namespace rankflow::transport {

class Window {
 public:
  // Collective over `comm`. `bytes` is this member's window size (members may differ; 0 allowed).
  // `name` appears in diagnostics.
  static std::shared_ptr<Window> create(std::shared_ptr<Context> context, MPI_Comm comm,
                                        size_t bytes, std::string name);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Collective: completes outstanding operations, waits for every member, then releases memory.
  // The destructor calls it if the program did not.
  void close();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  const std::string& name() const { return name_; }
  Context& context() const { return *context_; }
  MPI_Comm comm() const { return comm_; }
  int world_rank_of(int peer) const { return peer_at(peer, "world_rank_of").world_rank; }

  std::byte* local_base() const { return local_base_; }
  // This member's memory at window `offset` (its window, or an attached segment), bounds-checked.
  std::byte* local_ptr(size_t offset, const char* operation = "local_ptr") const;
  size_t local_size() const { return local_size_; }
  size_t peer_size(int peer) const { return peer_at(peer, "peer_size").bytes; }

  // Direct load/store pointer to `peer`'s window at `offset` (offset <= size), or null when the
  // peer's memory cannot be mapped into this process (another host, or UCX_TLS=tcp,self).
  // `operation` is what an error names (the caller's operation, when it is not remote_ptr).
  void* remote_ptr(int peer, size_t offset, const char* operation = "remote_ptr") const;
  // True when every member's window is directly mapped.
  bool all_mapped() const { return all_mapped_; }
  // `peer`'s process where its pages are mapped here (Team::process_of), else 0.
  int64_t process_of(int peer) const;
  // True when every member maps every other member's window: the same answer on all members
  // (agreed at creation), so protocols may choose by it and stay in step.
  bool mapped_everywhere() const { return mapped_everywhere_; }

  // Non-blocking one-sided transfers through UCX. `src`/`dst` must stay valid until flush().
  void put(int peer, size_t offset, const void* src, size_t bytes);
  void get(int peer, size_t offset, void* dst, size_t bytes);
  // Remote completion of every earlier put/get/atomic (to all peers, or to one). When one
  // endpoint fails (TransportError naming its peer), the other peers' flushes stay pending:
  // calling again completes them.
  void flush();
  void flush(int peer);
  // Earlier puts and atomics are performed before later ones (to every peer).
  void fence();
  // Non-blocking flush(): starts a flush of every endpoint this window issued UCX operations to
  // since the last one, progresses, and returns true once they completed (at once when none).
  bool try_flush();

  // Atomics on naturally aligned 32- or 64-bit words in a peer's window, through UCX.
  template <typename Word>
  void atomic_add(int peer, size_t offset, Word value);
  template <typename Word>
  Word fetch_add(int peer, size_t offset, Word value);
  // Returns the previous value; the swap happened iff it equals `expected`.
  template <typename Word>
  Word compare_swap(int peer, size_t offset, Word expected, Word desired);

  // Waits until the local 64-bit word at `offset` satisfies `cmp value`; returns what it read.
  // On timeout, throws Timeout naming this rank, `operation`, `peer` (-1: any) and both values.
  uint64_t wait(size_t offset, Compare cmp, uint64_t value, const char* operation, int peer,
                std::chrono::nanoseconds timeout) const;
  // The same on the local 32-bit word at `offset`.
  uint32_t wait32(size_t offset, Compare cmp, uint32_t value, const char* operation, int peer,
                  std::chrono::nanoseconds timeout) const;

  // Segments: memory the members already have, attached to the window, each member its own
  // range (sizes may differ). The k-th segment attached is addressed at window offsets
  // [k * kSegmentStride, k * kSegmentStride + bytes) on every member, above any window's size,
  // so a segment offset works wherever a window offset does (put, get, remote_ptr, atomics, waits).
  static constexpr size_t kSegmentStride = size_t{1} << 49;
  static constexpr size_t kMaxSegments = size_t{1} << 15;  // offsets stay below 2^64
  // Collective: attaches [base, base + bytes) of this member's memory and returns its window
  // offset (the same on every member; at most kMaxSegments - 1 attaches in a window's life,
  // detached ones included). Where every member maps every other member's window
  // (mapped_everywhere()), the memory is shared with them (transport/user_memory.h: its pages are
  // remapped, with their contents) and mapped by every peer; otherwise it is registered in place
  // for UCX. Throws TransportError on every member, naming the lowest member that could not (and
  // why, on those that could not), when any could not; the memory is then as it was on every
  // member.
  size_t attach(void* base, size_t bytes);
  // Local: detaches the segment at `offset`: its memory is plain private memory again, with its
  // contents, and this member's keys for the peers' segments at `offset` are released. Every
  // member detaches its own; no collective may use the segment any more.
  void detach(size_t offset);

  // Throws OutOfBounds (naming window, peer, offset, length, size) unless the range fits.
  void check_range(int peer, size_t offset, size_t bytes, const char* operation) const;
  // Throws InvalidArgument unless `peer` is a member.
  void check_peer(int peer, const char* operation) const;

 private:
  struct Extent {
    uint64_t base = 0;  // remote virtual address
    size_t bytes = 0;
    ucp_rkey_h rkey = nullptr;
    std::byte* mapped = nullptr;       // direct pointer, or null
    std::shared_ptr<PeerPages> pages;  // the peer's shared pages mapped here, if it shares them
    int64_t pid = 0;                   // the peer's process, where mapped and in this pid namespace
  };
  struct Peer {
    int world_rank = -1;
    ucp_ep_h ep = nullptr;
    uint64_t base = 0;  // remote virtual address of the window
    size_t bytes = 0;   // remote window size
    ucp_rkey_h rkey = nullptr;
    std::byte* mapped = nullptr;   // direct pointer, or null
    bool dirty = false;            // UCX operations issued since the last flush
    std::vector<Extent> segments;  // the peer's attached segments (bytes 0 once detached)
    int64_t pid = 0;               // the peer's process, where mapped and in this pid namespace
  };
  // Where one access lands: the remote address and key, and the direct pointer where mapped.
  struct Target {
    uint64_t address;
    ucp_rkey_h rkey;
    std::byte* mapped;  // (rkey is null only for a shared segment, which every peer maps)
  };
  Target target(int peer, size_t offset, size_t bytes, const char* operation) const;
  void release_segments();
  int first_failure(bool succeeded, const char* what) const;
  void refuse_unless_all(bool succeeded, const std::string& segment, const std::string& failure,
                         const char* what) const;

  Window(std::shared_ptr<Context> context, MPI_Comm comm, std::string name);
  void allocate(size_t bytes);
  void agree_allocated(const std::string& failure);
  void exchange_keys();
  std::vector<std::byte> pack_record(ucp_mem_h memh, const void* base, size_t bytes,
                                     const std::vector<PageRun>& runs) const;
  std::vector<std::vector<std::byte>> allgather_records(const std::vector<std::byte>& mine,
                                                        const std::string& what) const;
  Extent unpack_record(int peer, const std::vector<std::byte>& record, std::byte* own,
                       std::string* why = nullptr) const;
  static void release_extent(Extent& extent);
  void release();
  const Peer& peer_at(int peer, const char* operation) const;
  template <typename Word>
  Target check_atomic(int peer, size_t offset, const char* operation) const;
  template <typename Word>
  Word wait_word(size_t offset, Compare cmp, Word value, const char* operation, int peer,
                 std::chrono::nanoseconds timeout) const;
  template <typename Word>
  Word fetching_atomic(ucp_atomic_op_t op, int peer, size_t offset, Word operand, Word reply,
                       const char* operation);
  std::string where(int peer) const;

  std::shared_ptr<Context> context_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string name_;
  int rank_ = -1;
  ucp_mem_h memh_ = nullptr;
  std::byte* local_base_ = nullptr;
  size_t local_size_ = 0;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<UserMemory>> segments_;  // this member's (null once detached)
  bool all_mapped_ = false;
  bool mapped_everywhere_ = false;
  struct PendingFlush {
    void* request;
    int peer;
  };
  std::vector<PendingFlush> flushing_;  // the endpoint flushes try_flush() started
  bool closed_ = false;
};

}  // namespace rankflow::transport
