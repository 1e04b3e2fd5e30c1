// Window (see window.h): allocation, key exchange, bounds-checked UCX put/get/atomics, waits.
// Runs on the thread that uses the Context.
#include "transport/window.h"

#include <atomic>
#include <cstring>
#include <utility>

#include "common/log.h"
#include "rankflow/error.h"
#include "transport/progress.h"

namespace rankflow::transport {
namespace {

constexpr size_t kMinAllocation = 64;

}  // namespace

std::shared_ptr<Window> Window::create(std::shared_ptr<Context> context, MPI_Comm comm,
                                       size_t bytes, std::string name) {
  if (comm == MPI_COMM_NULL) {
    throw InvalidArgument("window '" + name + "': communicator is MPI_COMM_NULL");
  }
  std::shared_ptr<Window> window(new Window(std::move(context), comm, std::move(name)));
  std::string failure;
  try {
    window->allocate(bytes);
  } catch (const TransportError& e) {
    failure = e.what();
  }
  try {
    window->agree_allocated(failure);
    window->exchange_keys();
  } catch (...) {
    // A creation that failed part-way (a member timed out) is not closed collectively: the
    // members stand at different steps, and a close would progress the step still in flight
    // into buffers this unwinding frees.
    window->closed_ = true;
    throw;
  }
  return window;
}

// Every member learns whether every member has its memory before any key exchange, so a member
// that could not allocate (out of memory, or a size others could afford) fails the creation on
// all of them alike, each with a TransportError naming who, instead of leaving the others in an
// exchange it will never join.
void Window::agree_allocated(const std::string& failure) {
  const int members = size();
  std::vector<int> allocated(members, 0);
  int mine = failure.empty() ? 1 : 0;
  MPI_Request request;
  check_mpi(MPI_Iallgather(&mine, 1, MPI_INT, allocated.data(), 1, MPI_INT, comm_, &request),
            "MPI_Iallgather(allocation)");
  context_->mpi_wait(request, "allocation agreement for window '" + name_ + "'");
  for (int r = 0; r < members; ++r) {
    if (allocated[r] != 0) continue;
    closed_ = true;  // nothing collective happens on this window any more
    if (!failure.empty()) throw TransportError(failure.substr(failure.find(':') + 2));
    throw TransportError("window '" + name_ + "': member " + std::to_string(r) + " (rank " +
                         std::to_string(peers_[r].world_rank) + ") could not allocate its " +
                         "memory; the window is not created on any member");
  }
}

Window::Window(std::shared_ptr<Context> context, MPI_Comm comm, std::string name)
    : context_(std::move(context)), name_(std::move(name)) {
  MPI_Request request;
  check_mpi(MPI_Comm_idup(comm, &comm_, &request), "MPI_Comm_idup");
  context_->mpi_wait(request, "communicator duplication for window '" + name_ + "'");
  MPI_Comm_rank(comm_, &rank_);
  const std::vector<int> world = context_->world_ranks_of(comm_);
  peers_.resize(world.size());
  for (size_t i = 0; i < world.size(); ++i) {
    peers_[i].world_rank = world[i];
    peers_[i].ep = context_->endpoint(world[i]);
  }
}

void Window::allocate(size_t bytes) {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.address = nullptr;
  params.length = std::max(bytes, kMinAllocation);
  params.flags = UCP_MEM_MAP_ALLOCATE;
  check_ucs(ucp_mem_map(context_->ucp(), &params, &memh_),
            "ucp_mem_map of " + std::to_string(bytes) + " bytes for window '" + name_ + "'");
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  check_ucs(ucp_mem_query(memh_, &attr), "ucp_mem_query");
  local_base_ = static_cast<std::byte*>(attr.address);
  local_size_ = bytes;
  std::memset(local_base_, 0, attr.length);  // zeroed before any peer can see the rkey
}

void Window::exchange_keys() {
  const auto records =
      allgather_records(pack_record(memh_, local_base_, local_size_, {}), "rkey exchange");
  const int members = size();
  MPI_Request request;
  all_mapped_ = true;
  for (int r = 0; r < members; ++r) {
    Peer& peer = peers_[r];
    const Extent extent = unpack_record(r, records[r], local_base_);
    peer.base = extent.base;
    peer.bytes = extent.bytes;
    peer.rkey = extent.rkey;
    peer.mapped = extent.mapped;
    peer.pid = extent.pid;
    all_mapped_ = all_mapped_ && peer.mapped != nullptr;
  }
  int everywhere = all_mapped_ ? 1 : 0;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_LAND, comm_, &request),
            "MPI_Iallreduce(mapping)");
  context_->mpi_wait(request, "mapping agreement for window '" + name_ + "'");
  mapped_everywhere_ = everywhere != 0;
  log::debug("window '", name_, "': ", members, " members, ", local_size_, " bytes, ",
             all_mapped_ ? "all peers directly mapped" : "some peers reached through UCX only");
}

Window::~Window() {
  try {
    close();
  } catch (const std::exception& e) {
    log::warn("closing window '", name_, "': ", e.what());
  }
  release();
}

// Every put this member issued lands before any member lets go of its memory: the flush
// completes only once each target has taken this member's puts in (on TCP, while the target
// progresses in its own close), and the barrier after it keeps a target from leaving before
// every member's flush is done. The window counts as closed even when the flush times out.
void Window::close() {
  if (closed_) return;
  struct MarkClosed {
    bool& closed;
    ~MarkClosed() { closed = true; }
  } mark_closed{closed_};
  flush();
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
  context_->mpi_wait(request, "close of window '" + name_ + "' (a member has not closed it)");
}

void Window::release() {
  release_segments();
  for (Peer& peer : peers_) {
    if (peer.rkey != nullptr) ucp_rkey_destroy(peer.rkey);
    peer.rkey = nullptr;
    peer.mapped = nullptr;
  }
  if (memh_ != nullptr) ucp_mem_unmap(context_->ucp(), memh_);
  memh_ = nullptr;
  local_base_ = nullptr;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::string Window::where(int peer) const {
  return "rank " + std::to_string(context_->world_rank()) + " (member " + std::to_string(rank_) +
         " of window '" + name_ + "'), peer " + std::to_string(peer);
}

void Window::check_peer(int peer, const char* operation) const {
  if (closed_) throw InvalidState(std::string(operation) + " on closed window '" + name_ + "'");
  if (peer < 0 || peer >= size()) {
    throw InvalidArgument(std::string(operation) + ": " + where(peer) +
                          " is not a member; valid peers are 0.." + std::to_string(size() - 1));
  }
}

const Window::Peer& Window::peer_at(int peer, const char* operation) const {
  check_peer(peer, operation);
  return peers_[peer];
}

void Window::check_range(int peer, size_t offset, size_t bytes, const char* operation) const {
  (void)target(peer, offset, bytes, operation);
}

void* Window::remote_ptr(int peer, size_t offset, const char* operation) const {
  return target(peer, offset, 0, operation).mapped;
}

std::byte* Window::local_ptr(size_t offset, const char* operation) const {
  return target(rank_, offset, 0, operation).mapped;
}

void Window::put(int peer, size_t offset, const void* src, size_t bytes) {
  const Target at = target(peer, offset, bytes, "put");
  if (bytes == 0) return;
  if (at.rkey == nullptr) {  // shared memory every peer maps, with no UCX key
    std::memcpy(at.mapped, src, bytes);
    return;
  }
  Peer& to = peers_[peer];
  ucp_request_param_t param{};
  ucs_status_ptr_t request = ucp_put_nbx(to.ep, src, bytes, at.address, at.rkey, &param);
  if (UCS_PTR_IS_ERR(request)) check_ucs(UCS_PTR_STATUS(request), "put: " + where(peer));
  if (request != nullptr) ucp_request_free(request);  // completion is observed through flush()
  to.dirty = true;
}

void Window::get(int peer, size_t offset, void* dst, size_t bytes) {
  const Target at = target(peer, offset, bytes, "get");
  if (bytes == 0) return;
  if (at.rkey == nullptr) {
    std::memcpy(dst, at.mapped, bytes);
    return;
  }
  Peer& from = peers_[peer];
  ucp_request_param_t param{};
  ucs_status_ptr_t request = ucp_get_nbx(from.ep, dst, bytes, at.address, at.rkey, &param);
  if (UCS_PTR_IS_ERR(request)) check_ucs(UCS_PTR_STATUS(request), "get: " + where(peer));
  if (request != nullptr) ucp_request_free(request);
  from.dirty = true;
}

// Flushes go endpoint by endpoint, to the peers this window issued operations to since the
// last flush: a worker flush would also wait for replies owed by unrelated ranks (another
// window's peers), which may be sitting in MPI with a reply still queued (docs/collectives.md).
void Window::flush() {
  if (closed_) return;
  while (!try_flush()) {
    // Blocking form: every started endpoint flush is awaited in turn, with the timeout.
    while (!flushing_.empty()) {
      const PendingFlush pending = flushing_.back();
      flushing_.pop_back();
      // Over a transport without mapping the peer must progress UCX for the flush to end.
      context_->ucx_wait(static_cast<ucs_status_ptr_t>(pending.request),
                         "flush: " + where(pending.peer) +
                             " (the peer acknowledges a flush only "
                             "while it progresses UCX)");
    }
  }
}

void Window::flush(int peer) {
  check_peer(peer, "flush");
  Peer& to = peers_[peer];
  if (std::exchange(to.dirty, false)) {
    ucp_request_param_t param{};
    context_->ucx_wait(ucp_ep_flush_nbx(to.ep, &param), "flush: " + where(peer));
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool Window::try_flush() {
  if (closed_) return true;
  if (flushing_.empty()) {
    // An endpoint that cannot flush (its peer is gone) fails the call only once the others
    // were started: calling again completes them, so one dead peer loses no other's flush.
    int failed = -1;
    ucs_status_t failure = UCS_OK;
    for (int p = 0; p < size(); ++p) {
      if (!std::exchange(peers_[p].dirty, false)) continue;
      ucp_request_param_t param{};
      ucs_status_ptr_t request = ucp_ep_flush_nbx(peers_[p].ep, &param);
      if (UCS_PTR_IS_ERR(request)) {
        if (failed < 0) {
          failed = p;
          failure = UCS_PTR_STATUS(request);
        }
        continue;
      }
      if (request != nullptr) flushing_.push_back({request, p});
    }
    if (failed >= 0) check_ucs(failure, "flush: " + where(failed));
    if (flushing_.empty()) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      return true;
    }
  }
  context_->progress();
  while (!flushing_.empty()) {
    const PendingFlush pending = flushing_.back();
    auto* request = static_cast<ucs_status_ptr_t>(pending.request);
    const ucs_status_t status = ucp_request_check_status(request);
    if (status == UCS_INPROGRESS) return false;
    ucp_request_free(request);
    flushing_.pop_back();
    check_ucs(status, "flush: " + where(pending.peer));
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return true;
}

void Window::fence() {
  if (closed_) throw InvalidState("fence on closed window '" + name_ + "'");
  check_ucs(ucp_worker_fence(context_->worker()), "ucp_worker_fence");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

template <typename Word>
Window::Target Window::check_atomic(int peer, size_t offset, const char* operation) const {
  static_assert(sizeof(Word) == 4 || sizeof(Word) == 8, "atomics are 32- or 64-bit");
  const Target at = target(peer, offset, sizeof(Word), operation);
  // The address too: a segment starts wherever the caller's memory does.
  if (offset % sizeof(Word) != 0 || at.address % sizeof(Word) != 0) {
    throw InvalidArgument(std::string(operation) + ": " + where(peer) + ", offset " +
                          std::to_string(offset) + " is not aligned to the " +
                          std::to_string(sizeof(Word) * 8) + "-bit word size");
  }
  return at;
}

template <typename Word>
void Window::atomic_add(int peer, size_t offset, Word value) {
  const Target at = check_atomic<Word>(peer, offset, "atomic_add");
  if (at.rkey == nullptr) {
    std::atomic_ref<Word>(*reinterpret_cast<Word*>(at.mapped))
        .fetch_add(value, std::memory_order_acq_rel);
    return;
  }
  Peer& to = peers_[peer];
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  param.datatype = ucp_dt_make_contig(sizeof(Word));
  // `value` lives on this stack frame, so a request that did not complete at once is awaited.
  context_->ucx_wait(
      ucp_atomic_op_nbx(to.ep, UCP_ATOMIC_OP_ADD, &value, 1, at.address, at.rkey, &param),
      "atomic_add: " + where(peer));
  to.dirty = true;
}

template <typename Word>
Word Window::fetching_atomic(ucp_atomic_op_t op, int peer, size_t offset, Word operand, Word reply,
                             const char* operation) {
  const Target at = check_atomic<Word>(peer, offset, operation);
  if (at.rkey == nullptr) {
    std::atomic_ref<Word> word(*reinterpret_cast<Word*>(at.mapped));
    if (op == UCP_ATOMIC_OP_ADD) return word.fetch_add(operand, std::memory_order_acq_rel);
    word.compare_exchange_strong(operand, reply, std::memory_order_acq_rel);
    return operand;  // the previous value, swapped or not
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  param.datatype = ucp_dt_make_contig(sizeof(Word));
  param.reply_buffer = &reply;
  context_->ucx_wait(
      ucp_atomic_op_nbx(peers_[peer].ep, op, &operand, 1, at.address, at.rkey, &param),
      std::string(operation) + ": " + where(peer));
  return reply;
}

template <typename Word>
Word Window::fetch_add(int peer, size_t offset, Word value) {
  return fetching_atomic<Word>(UCP_ATOMIC_OP_ADD, peer, offset, value, 0, "fetch_add");
}

template <typename Word>
Word Window::compare_swap(int peer, size_t offset, Word expected, Word desired) {
  // UCX: buffer holds the value compared, reply_buffer the value swapped in (then the old value).
  return fetching_atomic<Word>(UCP_ATOMIC_OP_CSWAP, peer, offset, expected, desired,
                               "compare_swap");
}

template void Window::atomic_add<uint32_t>(int, size_t, uint32_t);
template void Window::atomic_add<uint64_t>(int, size_t, uint64_t);
template uint32_t Window::fetch_add<uint32_t>(int, size_t, uint32_t);
template uint64_t Window::fetch_add<uint64_t>(int, size_t, uint64_t);
template uint32_t Window::compare_swap<uint32_t>(int, size_t, uint32_t, uint32_t);
template uint64_t Window::compare_swap<uint64_t>(int, size_t, uint64_t, uint64_t);

template <typename Word>
Word Window::wait_word(size_t offset, Compare cmp, Word value, const char* operation, int peer,
                       std::chrono::nanoseconds timeout) const {
  (void)check_atomic<Word>(rank_, offset, operation);
  (void)to_string(cmp);  // InvalidArgument for a comparison that does not exist
  std::atomic_ref<Word> word(*reinterpret_cast<Word*>(local_ptr(offset, operation)));
  Word seen = 0;
  auto satisfied = [&] {
    seen = word.load(std::memory_order_acquire);
    return holds(cmp, seen, value);
  };
  // Fully mapped windows need UCX progress only now and then (peers store directly); otherwise
  // every poll progresses, since a peer's put over TCP lands only when this rank progresses.
  uint32_t polls = 0;
  const uint32_t progress_mask = all_mapped_ ? 15 : 0;
  wait_until(
      satisfied,
      [&] {
        if ((++polls & progress_mask) == 0) context_->progress();
      },
      timeout,
      [&] {
        return std::string(operation) + ": rank " + std::to_string(context_->world_rank()) +
               " (member " + std::to_string(rank_) + " of window '" + name_ + "') waited " +
               format_seconds(timeout) + " for " +
               (peer < 0 ? std::string("its peers") : "peer " + std::to_string(peer)) + ": " +
               std::to_string(sizeof(Word) * 8) + "-bit word at offset " + std::to_string(offset) +
               " expected " + to_string(cmp) + " " + std::to_string(value) + ", observed " +
               std::to_string(seen);
      },
      [&](std::chrono::microseconds d) { context_->idle(d); });
  return seen;
}

uint64_t Window::wait(size_t offset, Compare cmp, uint64_t value, const char* operation, int peer,
                      std::chrono::nanoseconds timeout) const {
  return wait_word<uint64_t>(offset, cmp, value, operation, peer, timeout);
}

uint32_t Window::wait32(size_t offset, Compare cmp, uint32_t value, const char* operation, int peer,
                        std::chrono::nanoseconds timeout) const {
  return wait_word<uint32_t>(offset, cmp, value, operation, peer, timeout);
}

int64_t Window::process_of(int peer) const {
  return peer >= 0 && peer < size() ? peers_[static_cast<size_t>(peer)].pid : 0;
}

}  // namespace rankflow::transport
