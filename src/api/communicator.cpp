// Communicator (library mode, see rankflow/communicator.h): its public methods, requests, and
// registered and symmetric buffer handles. The state is CommunicatorImpl's
// (communicator_impl.h); each collective's dispatch through its table is in
// collective_calls.cpp. Runs on the calling thread.
#include "rankflow/communicator.h"

#include <string>
#include <thread>

#include "api/communicator_impl.h"
#include "api/communicator_internal.h"
#include "rankflow/error.h"

namespace rankflow {

void* SymmetricBuffer::data() const {
  return allocation_ ? allocation_->base : nullptr;
}
size_t SymmetricBuffer::bytes() const {
  return allocation_ ? allocation_->bytes : 0;
}

Communicator Communicator::from_mpi(MPI_Comm comm) {
  return CommunicatorImpl::make(comm);
}

namespace api {

Communicator communicator_over(MPI_Comm comm, const Team& team, size_t begin, size_t end) {
  Communicator communicator = CommunicatorImpl::make(comm);
  CommunicatorImpl::of(communicator).adopt(team, begin, end);
  return communicator;
}

size_t staged_collectives(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).staged_count();
}

const coll::MachineRules& machine_rules(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).machine();
}

const char* last_chosen_algorithm(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).last_chosen_algorithm();
}

size_t staging_bytes(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).staging_bytes();
}

size_t next_staging_offset(const Communicator& communicator, size_t bytes) {
  return CommunicatorImpl::of(communicator).next_staging_offset(bytes);
}

bool runs_in_place(const Communicator& communicator, const void* send, size_t send_bytes,
                   const void* recv, size_t recv_bytes) {
  return CommunicatorImpl::of(communicator).buffers_of(send, send_bytes, recv, recv_bytes) ==
         coll::Buffers::kSymmetric;
}

bool shares_a_core(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).shares_a_core();
}

bool maps_peers(const Communicator& communicator) {
  return CommunicatorImpl::of(communicator).staging().team().mapped_everywhere();
}

}  // namespace api

int Communicator::rank() const {
  return impl_->rank();
}
int Communicator::size() const {
  return impl_->size();
}
std::string_view Communicator::machine_profile() const {
  return coll::profile_name(impl_->machine().profile);
}
MPI_Comm Communicator::mpi_comm() const {
  return impl_->comm();
}
SymmetricBuffer Communicator::alloc(size_t bytes) const {
  return impl_->alloc(bytes);
}
RegisteredBuffer Communicator::register_buffer(void* ptr, size_t bytes) const {
  return impl_->register_buffer(ptr, bytes);
}
void Communicator::deregister(RegisteredBuffer& buffer) const {
  impl_->deregister(buffer);
}

namespace {

const Registration& live_registration(const std::shared_ptr<Registration>& r, const char* what) {
  if (!r) throw InvalidArgument(std::string("RegisteredBuffer::") + what + " on an empty handle");
  if (!r->live) {
    throw InvalidArgument(std::string("RegisteredBuffer::") + what +
                          " after deregister: the buffer is no longer registered");
  }
  return *r;
}
}  // namespace

void* RegisteredBuffer::data() const {
  return live_registration(registration_, "data").base;
}
size_t RegisteredBuffer::bytes() const {
  return live_registration(registration_, "bytes").bytes;
}
RegisteredBuffer::operator bool() const {
  return registration_ != nullptr && registration_->live;
}
void Communicator::barrier() const {
  if (impl_->checks_arguments()) [[unlikely]]
    impl_->compare_arguments({.collective = api::CollectiveKind::kBarrier}, nullptr, 0, nullptr, 0);
  impl_->barrier();
}
void Communicator::set_timeout(std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) throw InvalidArgument("Communicator::set_timeout: must be positive");
  impl_->set_timeout(timeout);
}
void Communicator::close() {
  if (impl_) impl_->close();
}

Communicator Communicator::split(int color, int key) const {
  impl_->wait_for_every_member("Communicator::split");  // MPI_Comm_split itself cannot time out
  MPI_Comm sub = MPI_COMM_NULL;
  transport::check_mpi(MPI_Comm_split(impl_->comm(), color, key, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) {
    throw InvalidArgument("Communicator::split: color MPI_UNDEFINED leaves this rank out");
  }
  Communicator result = from_mpi(sub);
  MPI_Comm_free(&sub);
  return result;
}

bool Request::test() {
  if (!state_) throw InvalidState("Request::test on an empty request");
  if (state_->finished.load(std::memory_order_acquire)) return true;
  transport::ProgressThread::Guard guard(state_->owner->progress_thread());
  const bool complete = state_->step();
  state_->rethrow_error();
  // A caller's poll loop that never gives up the core can keep a member bound to the same core
  // (more ranks than cores) from running, and every step then waits for the scheduler's time
  // slice (a 3-rank test on 2 cores once took 76 s so, 0.7 s in other runs): as Open MPI does
  // when oversubscribed, every 64th unfinished test yields.
  if (!complete && ++state_->unfinished_tests % api::kTestsBetweenYields == 0 &&
      state_->owner->shares_a_core()) {
    std::this_thread::yield();
  }
  return complete;
}

void Request::wait() {
  wait(std::chrono::nanoseconds::zero());
}

void Request::wait(std::chrono::nanoseconds timeout) {
  if (!state_) throw InvalidState("Request::wait on an empty request");
  if (state_->finished.load(std::memory_order_acquire)) return;
  transport::ProgressThread::Guard guard(state_->owner->progress_thread());
  state_->owner->complete(*state_, timeout);
}

bool Request::done() const {
  return state_ && state_->finished.load(std::memory_order_acquire);
}

}  // namespace rankflow
