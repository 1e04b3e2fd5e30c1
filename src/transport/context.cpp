// Context (see context.h): MPI bootstrap, binding, UCX context/worker and endpoint wiring, which
// run on the main thread at start-up and teardown; and the MPI and UCX waits with their limits
// and diagnostics (CallScope, thread-local), which run on whichever thread uses the Context.
#include "transport/context.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <mutex>

#include "common/env.h"
#include "common/log.h"
#include "rankflow/error.h"
#include "transport/binding.h"
#include "transport/progress.h"

namespace rankflow::transport {

void check_ucs(ucs_status_t status, const std::string& what) {
  if (status == UCS_OK) return;
  throw TransportError(what + " failed: " + ucs_status_string(status));
}

std::shared_ptr<Context> Context::acquire(int* argc, char*** argv) {
  static std::mutex mutex;
  static std::weak_ptr<Context> live;
  std::lock_guard lock(mutex);
  if (auto context = live.lock()) return context;
  auto mpi = MpiSession::acquire(argc, argv);
  std::shared_ptr<Context> context(new Context(std::move(mpi), argc, argv));
  live = context;
  return context;
}

Context::Context(std::shared_ptr<MpiSession> mpi, int*, char***) : mpi_(std::move(mpi)) {
  timeout_ = env::timeout();
  startup_timeout_ = env::startup_timeout();
  (void)env::cross_memory();  // a bad value is an error here, not inside a collective
  (void)env::cross_memory_direction();
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  log::set_rank(world_rank_);
  bind(MPI_COMM_WORLD);
  create_ucx();
  try {
    StartUp startup(*this);
    wire_endpoints(MPI_COMM_WORLD);
    if (env::progress_mode() == env::ProgressMode::kThread) {
      progress_thread_ = std::make_unique<ProgressThread>([this] { progress(); });
      log::info("progress: background thread (RANKFLOW_PROGRESS=thread)");
    }
  } catch (...) {
    close_endpoints();
    ucp_worker_destroy(worker_);
    ucp_cleanup(ucp_context_);
    throw;
  }
}

void Context::bind(MPI_Comm world) {
  wait_for_every_rank(world);
  // Blocking MPI is fine from here: every rank has arrived, and UCX does not exist yet, so no
  // peer can need our progress.
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  int node_leader = world_rank_;  // the host's identity: its first rank's world rank
  check_mpi(MPI_Bcast(&node_leader, 1, MPI_INT, 0, node), "MPI_Bcast(node leader)");
  MPI_Comm_free(&node);
  const BindingResult result = bind_process(node_rank, env::bind_policy());
  binding_ = result.description;
  log::info("binding: ", binding_);
  // Who shares this rank's core: (host, core) of every rank.
  const int mine[2] = {node_leader, bound_core()};
  std::vector<int> all(2 * static_cast<size_t>(world_size_));
  check_mpi(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, world),
            "MPI_Allgather(core placement)");
  core_mates_.assign(world_size_, false);
  std::string mates;
  for (int r = 0; r < world_size_; ++r) {
    core_mates_[r] =
        r != world_rank_ && mine[1] >= 0 && all[2 * r] == mine[0] && all[2 * r + 1] == mine[1];
    if (core_mates_[r]) mates += (mates.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!mates.empty()) log::info("shares its core with rank(s) ", mates, ": waits for them yield");
}

namespace {

// Set once a start-up barrier on MPI_COMM_WORLD timed out. An MPI barrier cannot be cancelled,
// so it stays pending, and a second start-up's barrier would wait behind it while an absent rank
// that arrives late matches the first one and blocks in the start-up exchange.
std::atomic<bool> g_startup_abandoned{false};

}  // namespace

void Context::wait_for_every_rank(MPI_Comm world) {
  if (g_startup_abandoned.load()) {
    throw InvalidState("rank " + std::to_string(world_rank_) +
                       ": start-up: an earlier start-up of rankflow in this process timed out "
                       "waiting for every rank of MPI_COMM_WORLD and left its barrier pending; "
                       "rankflow cannot start again in this job (end it with MPI_Abort)");
  }
  MPI_Request request;
  check_mpi(MPI_Ibarrier(world, &request), "MPI_Ibarrier(start-up)");
  try {
    const StartUp startup(*this);
    mpi_wait(request,
             "start-up: the barrier of every rank of MPI_COMM_WORLD starting rankflow (its "
             "first Worker or Communicator)");
  } catch (const Timeout& e) {
    g_startup_abandoned.store(true);
    if (mpi_->initialised_by_rankflow()) {  // MPI_Finalize, as this unwinds, would wait forever
      log::error(e.what(),
                 "; rankflow initialised MPI and its MPI_Finalize would wait for the absent "
                 "rank, ending the job (MPI_Abort)");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    throw;
  }
}

void Context::create_ucx() {
  ucp_config_t* config = nullptr;
  check_ucs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;
  params.estimated_num_eps = static_cast<size_t>(world_size_);
  params.mt_workers_shared = 0;
  const ucs_status_t status = ucp_init(&params, config, &ucp_context_);
  ucp_config_release(config);
  check_ucs(status, "ucp_init");

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // A progress thread calls into UCX beside the program's threads: UCX then locks itself.
  worker_params.thread_mode = env::progress_mode() == env::ProgressMode::kThread
                                  ? UCS_THREAD_MODE_MULTI
                                  : UCS_THREAD_MODE_SERIALIZED;
  const ucs_status_t worker_status = ucp_worker_create(ucp_context_, &worker_params, &worker_);
  if (worker_status != UCS_OK) {
    ucp_cleanup(ucp_context_);
    check_ucs(worker_status, "ucp_worker_create");
  }
  if (worker_params.thread_mode == UCS_THREAD_MODE_MULTI) {
    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    if (ucp_worker_query(worker_, &attr) != UCS_OK || attr.thread_mode != UCS_THREAD_MODE_MULTI) {
      ucp_worker_destroy(worker_);
      ucp_cleanup(ucp_context_);
      throw TransportError(
          "RANKFLOW_PROGRESS=thread needs a UCX worker in UCS_THREAD_MODE_MULTI, which this UCX "
          "build does not provide; unset RANKFLOW_PROGRESS");
    }
  }
  if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
}

void Context::idle(std::chrono::microseconds duration) {
  if (event_fd_ < 0) return Backoff::sleep_for(duration);
  const ucs_status_t armed = ucp_worker_arm(worker_);
  if (armed == UCS_ERR_BUSY) return;  // events are pending: progress right away
  if (armed != UCS_OK) return Backoff::sleep_for(duration);
  pollfd descriptor{event_fd_, POLLIN, 0};
  const auto micros = duration.count();
  const timespec limit{static_cast<time_t>(micros / 1000000),
                       static_cast<long>(micros % 1000000) * 1000};
  ppoll(&descriptor, 1, &limit, nullptr);
}

// Exchanges worker addresses over MPI (progressing UCX meanwhile), creates an endpoint to every
// rank and flushes each one, which completes the lazy wire-up before anyone issues a put.
void Context::wire_endpoints(MPI_Comm world) {
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  check_ucs(ucp_worker_get_address(worker_, &address, &address_length), "ucp_worker_get_address");
  std::vector<int> lengths(world_size_);
  int my_length = static_cast<int>(address_length);
  MPI_Request request;
  check_mpi(MPI_Iallgather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, world, &request),
            "MPI_Iallgather(address lengths)");
  mpi_wait(request, "exchange of UCX worker address lengths");
  std::vector<int> displacements(world_size_, 0);
  for (int r = 1; r < world_size_; ++r)
    displacements[r] = displacements[r - 1] + lengths[r - 1];
  std::vector<char> all(static_cast<size_t>(displacements.back() + lengths.back()));
  check_mpi(MPI_Iallgatherv(address, my_length, MPI_BYTE, all.data(), lengths.data(),
                            displacements.data(), MPI_BYTE, world, &request),
            "MPI_Iallgatherv(addresses)");
  mpi_wait(request, "exchange of UCX worker addresses");
  ucp_worker_release_address(worker_, address);

  endpoints_.assign(world_size_, nullptr);
  for (int r = 0; r < world_size_; ++r) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t*>(all.data() + displacements[r]);
    check_ucs(ucp_ep_create(worker_, &params, &endpoints_[r]),
              "ucp_ep_create to rank " + std::to_string(r));
  }
  for (int r = 0; r < world_size_; ++r) {
    ucp_request_param_t param{};
    ucx_wait(ucp_ep_flush_nbx(endpoints_[r], &param),
             "endpoint wire-up with rank " + std::to_string(r));
  }
  world_barrier("barrier after endpoint wire-up");
  log::debug("wired ", world_size_, " UCX endpoints");
}

void Context::world_barrier(const std::string& what) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  mpi_wait(request, what);
}

ucp_ep_h Context::endpoint(int world_rank) const {
  if (world_rank < 0 || world_rank >= world_size_) {
    throw InvalidArgument("rank " + std::to_string(world_rank) +
                          " is not in MPI_COMM_WORLD (size " + std::to_string(world_size_) + ")");
  }
  return endpoints_[world_rank];
}

namespace {
thread_local const Context::CallScope* t_call_scope = nullptr;
}  // namespace

Context::CallScope::CallScope(std::string_view call, std::chrono::nanoseconds limit,
                              const char* setter)
    : outer_(t_call_scope), call_(call), limit_(limit), setter_(setter) {
  if (limit_.count() <= 0 && outer_ != nullptr) {
    limit_ = outer_->limit_;
    setter_ = outer_->setter_;
  }
  t_call_scope = this;
}

std::string Context::CallScope::call() const {
  std::string outer = outer_ != nullptr ? outer_->call() : std::string();
  if (outer.empty() || call_.empty()) return outer + std::string(call_);
  return outer + ": " + std::string(call_);
}

Context::CallScope::~CallScope() {
  assert(t_call_scope == this);  // scopes end in the reverse order of their beginnings
  t_call_scope = outer_;
}

const Context::CallScope* Context::CallScope::current() {
  return t_call_scope;
}

Context::WaitLimit Context::wait_limit() const {
  const CallScope* scope = CallScope::current();
  if (scope != nullptr && scope->limit().count() > 0) return {scope->limit(), scope->setter()};
  return {timeout_, "RANKFLOW_TIMEOUT_S"};
}

Context::WaitLimit Context::mpi_wait_limit() const {
  const WaitLimit usual = wait_limit();
  if (startup_depth_ > 0 && startup_timeout_ > usual.limit)
    return {startup_timeout_, "RANKFLOW_STARTUP_TIMEOUT_S"};
  return usual;
}

std::string Context::waiting(const std::string& what) const {
  const CallScope* scope = CallScope::current();
  const std::string call = scope != nullptr ? scope->call() : std::string();
  return "rank " + std::to_string(world_rank_) + ": " + (call.empty() ? "" : call + ": ") + what;
}

void Context::mpi_wait(MPI_Request& request, const std::string& what) {
  int done = 0;
  const WaitLimit wait = mpi_wait_limit();
  wait_until(
      [&] {
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        return done != 0;
      },
      [&] {
        if (worker_ != nullptr) progress();  // none yet at start-up's first wait (bind)
      },
      wait.limit,
      [&] {
        return waiting(what) + " did not complete within " + format_seconds(wait.limit) +
               "; a peer has not reached the matching call (" + wait.variable + " sets the limit)";
      },
      [&](std::chrono::microseconds d) { idle(d); });
}

void Context::ucx_wait(ucs_status_ptr_t request, const std::string& what) {
  if (request == nullptr) return;
  if (UCS_PTR_IS_ERR(request)) check_ucs(UCS_PTR_STATUS(request), what);
  ucs_status_t status = UCS_INPROGRESS;
  const WaitLimit wait = wait_limit();
  try {
    wait_until([&] { return (status = ucp_request_check_status(request)) != UCS_INPROGRESS; },
               [&] { progress(); }, wait.limit,
               [&] {
                 return waiting(what) + " did not complete within " + format_seconds(wait.limit) +
                        " (" + wait.variable + " sets the limit)";
               },
               [&](std::chrono::microseconds d) { idle(d); });
  } catch (...) {
    ucp_request_cancel(worker_, request);
    ucp_request_free(request);
    throw;
  }
  ucp_request_free(request);
  check_ucs(status, what);
}

std::vector<int> Context::world_ranks_of(MPI_Comm comm) const {
  int size = 0;
  MPI_Comm_size(comm, &size);
  MPI_Group group, world_group;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> local(size), world(size);
  for (int i = 0; i < size; ++i)
    local[i] = i;
  MPI_Group_translate_ranks(group, size, local.data(), world_group, world.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  for (int i = 0; i < size; ++i) {
    if (world[i] == MPI_UNDEFINED) {
      throw InvalidArgument(
          "communicator rank " + std::to_string(i) +
          " is not a member of MPI_COMM_WORLD; rankflow needs intra-communicators "
          "derived from MPI_COMM_WORLD");
    }
  }
  return world;
}

void Context::close_endpoints() {
  std::vector<ucs_status_ptr_t> closing;
  for (ucp_ep_h& ep : endpoints_) {
    if (ep == nullptr) continue;
    ucp_request_param_t param{};  // flush mode: peers are alive and progressing in the barrier
    closing.push_back(ucp_ep_close_nbx(ep, &param));
    ep = nullptr;
  }
  for (ucs_status_ptr_t request : closing) {
    try {
      ucx_wait(request, "endpoint close");
    } catch (const std::exception& e) {
      log::warn(e.what());
    }
  }
}

Context::~Context() {
  progress_thread_.reset();  // before the worker it progresses goes
  // Every rank must be done with every window before endpoints go; windows hold a reference to
  // the Context, so by now they are closed. The barrier keeps a fast rank from tearing down
  // endpoints a slow rank still flushes through.
  try {
    world_barrier("barrier before transport teardown");
  } catch (const std::exception& e) {
    log::warn(e.what(), "; tearing down anyway");
  }
  close_endpoints();
  try {
    world_barrier("barrier after closing endpoints");
  } catch (const std::exception& e) {
    log::warn(e.what());
  }
  ucp_worker_destroy(worker_);
  ucp_cleanup(ucp_context_);
}

}  // namespace rankflow::transport
