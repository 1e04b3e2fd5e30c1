// Context: the process-wide transport state. It owns the MPI session, the hwloc binding, the UCX
// context and worker, and one wired endpoint per peer (indexed by MPI_COMM_WORLD rank).
//
// Threads: the thread that created the Context, or one thread at a time
// (UCS_THREAD_MODE_SERIALIZED); with RANKFLOW_PROGRESS=thread the worker is
// UCS_THREAD_MODE_MULTI and a ProgressThread progresses it too. After bootstrap, MPI calls go
// through mpi_wait(), which keeps progressing UCX while MPI works, so a peer's put or atomic is
// never stuck behind this rank blocking inside MPI.
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transport/mpi_session.h"
#include "transport/progress_thread.h"

namespace rankflow::transport {

class Context {
 public:
  // The live Context, or a new one: initialises MPI if the program has not, binds this process,
  // creates UCX and wires endpoints to every rank of MPI_COMM_WORLD. Collective over
  // MPI_COMM_WORLD the first time it is called.
  static std::shared_ptr<Context> acquire(int* argc = nullptr, char*** argv = nullptr);
  ~Context();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  ucp_context_h ucp() const { return ucp_context_; }
  ucp_worker_h worker() const { return worker_; }
  ucp_ep_h endpoint(int world_rank) const;
  const std::string& binding() const { return binding_; }
  // True when world rank `rank` is bound to the same core of the same host as this rank (more
  // ranks than cores): a wait for it should yield the core soon rather than spin.
  bool shares_core_with(int rank) const {
    return rank >= 0 && rank < static_cast<int>(core_mates_.size()) && core_mates_[rank];
  }
  // True when rankflow called MPI_Init_thread (and will finalise MPI when released).
  bool mpi_owned_by_rankflow() const { return mpi_->initialised_by_rankflow(); }
  std::chrono::nanoseconds timeout() const { return timeout_; }

  // While one lives, MPI waits are start-up waits: they allow the longer of RANKFLOW_TIMEOUT_S
  // and RANKFLOW_STARTUP_TIMEOUT_S, so a short limit set to catch a stalled kernel does not fail
  // a job whose ranks reach Worker::init a few seconds apart. The Context's own wiring is one.
  class StartUp {
   public:
    explicit StartUp(Context& context) : context_(context) { ++context_.startup_depth_; }
    ~StartUp() { --context_.startup_depth_; }
    StartUp(const StartUp&) = delete;
    StartUp& operator=(const StartUp&) = delete;

   private:
    Context& context_;
  };

  // The background progress thread (RANKFLOW_PROGRESS=thread), or null: progress by the caller.
  ProgressThread* progress_thread() const { return progress_thread_.get(); }

  // While one lives on its thread, that thread's MPI and UCX waits serve one call of a
  // communicator (window growth and release, arrival, registration): their diagnostics begin with
  // `call` ("allreduce(twophase)"; it must outlive the scope), and where `limit` is positive (the
  // communicator's set_timeout) they take it instead of RANKFLOW_TIMEOUT_S. Scopes nest: an inner
  // one appends its words to the outer one's (an empty `call` appends none) and keeps the outer
  // limit where its own is 0. Nothing is allocated until a diagnostic asks for call(), but the
  // scope touches a thread-local: keep it off the per-call path of small collectives. A scope
  // belongs to its thread: never hold one across a co_await (a CollTask may resume on the
  // progress thread).
  class CallScope {
   public:
    // `setter` names what set `limit`, for the diagnostic.
    CallScope(std::string_view call, std::chrono::nanoseconds limit,
              const char* setter = "Communicator::set_timeout");
    ~CallScope();
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

    // The outer scopes' words and this one's, joined by ": ".
    std::string call() const;
    std::chrono::nanoseconds limit() const { return limit_; }
    const char* setter() const { return setter_; }
    // This thread's innermost scope, or null.
    static const CallScope* current();

   private:
    const CallScope* outer_;
    std::string_view call_;
    std::chrono::nanoseconds limit_;
    const char* setter_;
  };

  // One pass of UCX progress. Cheap when nothing is pending.
  void progress() { ucp_worker_progress(worker_); }
  // Sleeps up to `duration`, waking early when UCX has work (a peer's data over TCP), so a rank
  // that idles in a long wait still serves peers that need its progress.
  void idle(std::chrono::microseconds duration);

  // Completes an MPI request while progressing UCX (once the worker exists); Timeout names `what`
  // and this rank.
  void mpi_wait(MPI_Request& request, const std::string& what);
  // Completes a UCX request (null or error pointers allowed) while progressing; frees it.
  void ucx_wait(ucs_status_ptr_t request, const std::string& what);

  // MPI_COMM_WORLD ranks of the members of `comm`, in comm rank order. Local; no communication.
  std::vector<int> world_ranks_of(MPI_Comm comm) const;

 private:
  Context(std::shared_ptr<MpiSession> mpi, int* argc, char*** argv);
  void bind(MPI_Comm world);
  // Returns once every rank of `world` has started rankflow; Timeout after the start-up limit.
  void wait_for_every_rank(MPI_Comm world);
  void create_ucx();
  void wire_endpoints(MPI_Comm world);
  void close_endpoints();
  void world_barrier(const std::string& what);
  // The limit of a wait now, and what sets it (for the diagnostic): this thread's CallScope's
  // limit where it has one, else RANKFLOW_TIMEOUT_S; for an MPI wait, the start-up limit while
  // rankflow starts, where it is the longer one.
  struct WaitLimit {
    std::chrono::nanoseconds limit;
    const char* variable;
  };
  WaitLimit wait_limit() const;
  WaitLimit mpi_wait_limit() const;
  // "rank R: <scope's call>: <what>", the start of a wait's diagnostic.
  std::string waiting(const std::string& what) const;

  std::shared_ptr<MpiSession> mpi_;
  int world_rank_ = -1;
  int world_size_ = 0;
  std::chrono::nanoseconds timeout_{};
  std::chrono::nanoseconds startup_timeout_{};
  int startup_depth_ = 0;  // live StartUp guards
  std::string binding_;
  std::vector<bool> core_mates_;  // by world rank: bound to this rank's core (never itself)
  ucp_context_h ucp_context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;                // the worker's wake-up descriptor, or -1 (plain sleeps)
  std::vector<ucp_ep_h> endpoints_;  // by world rank, including this rank (UCX "self")
  std::unique_ptr<ProgressThread> progress_thread_;
};

// Throws TransportError naming `what` when a UCX call fails.
void check_ucs(ucs_status_t status, const std::string& what);

}  // namespace rankflow::transport
