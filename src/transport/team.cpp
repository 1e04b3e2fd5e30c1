// Team (see rankflow/team.h): the primitive interface over a Window. Chooses, per peer, direct
// loads and stores into mapped memory or UCX operations. Runs on the thread using the team.
#include <atomic>
#include <bit>
#include <cstring>

#include "rankflow/error.h"
#include "transport/progress.h"
#include "transport/team_state.h"

namespace rankflow {

using transport::TeamLayout;

Team::Team(std::shared_ptr<transport::TeamState> state) : state_(std::move(state)) {
  if (!state_) throw InvalidArgument("Team needs a state; build teams with create_team()");
}

int Team::rank() const {
  return state_->window->rank();
}
int Team::size() const {
  return state_->window->size();
}
size_t Team::offset(std::string_view buffer) const {
  return state_->layout.find(buffer).offset;
}
size_t Team::bytes(std::string_view buffer) const {
  return state_->layout.find(buffer).bytes;
}
std::span<std::byte> Team::local(std::string_view buffer) const {
  const auto& placed = state_->layout.find(buffer);
  return {state_->window->local_base() + placed.offset, placed.bytes};
}
std::byte* Team::local_ptr(size_t offset) const {
  return state_->window->local_ptr(offset);
}
size_t Team::window_bytes() const {
  return state_->window->local_size();
}
void* Team::remote_ptr(int peer, size_t offset) const {
  return state_->window->remote_ptr(peer, offset);
}
int64_t Team::process_of(int peer) const {
  return state_->window->process_of(peer);
}
bool Team::all_mapped() const {
  return state_->window->all_mapped();
}
bool Team::mapped_everywhere() const {
  return state_->window->mapped_everywhere();
}
bool Team::try_flush() {
  return state_->window->try_flush();
}

void Team::put(int peer, size_t dst_offset, const void* src, size_t bytes) {
  transport::Window& window = *state_->window;
  window.check_range(peer, dst_offset, bytes, "put");
  if (void* dst = window.remote_ptr(peer, dst_offset)) {
    std::memcpy(dst, src, bytes);
  } else {
    window.put(peer, dst_offset, src, bytes);
  }
}

void Team::get(int peer, size_t src_offset, void* dst, size_t bytes) {
  transport::Window& window = *state_->window;
  window.check_range(peer, src_offset, bytes, "get");
  if (const void* src = window.remote_ptr(peer, src_offset)) {
    std::memcpy(dst, src, bytes);
  } else {
    window.get(peer, src_offset, dst, bytes);
  }
}

void Team::flush() {
  if (state_->window->try_flush()) return;
  const transport::Context::CallScope limit = state_->ucx_limit();
  state_->window->flush();
}
void Team::flush(int peer) {
  const transport::Context::CallScope limit = state_->ucx_limit();
  state_->window->flush(peer);
}
void Team::fence() {
  state_->window->fence();
}

namespace {

// A word in mapped memory: check bounds and alignment through the window, then use CPU atomics
// (coherent with the peer's own loads and with UCX's shared-memory atomics).
template <typename Word>
std::atomic_ref<Word> mapped_word(void* address) {
  return std::atomic_ref<Word>(*static_cast<Word*>(address));
}

template <typename Word>
void* mapped_atomic_target(transport::Window& window, int peer, size_t offset,
                           const char* operation) {
  window.check_range(peer, offset, sizeof(Word), operation);
  if (offset % sizeof(Word) != 0) {
    throw InvalidArgument(std::string(operation) + ": offset " + std::to_string(offset) +
                          " is not aligned to the " + std::to_string(sizeof(Word) * 8) +
                          "-bit word size");
  }
  return window.remote_ptr(peer, offset);
}

template <typename Word>
Word add(const transport::TeamState& team, int peer, size_t offset, Word value, bool fetch) {
  transport::Window& window = *team.window;
  if (void* target = mapped_atomic_target<Word>(window, peer, offset, "atomic add")) {
    return mapped_word<Word>(target).fetch_add(value, std::memory_order_acq_rel);
  }
  const transport::Context::CallScope limit = team.ucx_limit();
  if (fetch) return window.fetch_add<Word>(peer, offset, value);
  window.atomic_add<Word>(peer, offset, value);
  return 0;
}

template <typename Word>
Word cas(const transport::TeamState& team, int peer, size_t offset, Word expected, Word desired) {
  transport::Window& window = *team.window;
  if (void* target = mapped_atomic_target<Word>(window, peer, offset, "compare_swap")) {
    mapped_word<Word>(target).compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
    return expected;  // holds the previous value either way
  }
  const transport::Context::CallScope limit = team.ucx_limit();
  return window.compare_swap<Word>(peer, offset, expected, desired);
}

}  // namespace

const char* to_string(Compare cmp) {
  switch (cmp) {
    case Compare::kEqual: return "==";
    case Compare::kNotEqual: return "!=";
    case Compare::kLess: return "<";
    case Compare::kLessEqual: return "<=";
    case Compare::kGreater: return ">";
    case Compare::kGreaterEqual: return ">=";
  }
  throw InvalidArgument("Compare " + std::to_string(static_cast<int>(cmp)) +
                        " is not a comparison (==, !=, <, <=, >, >=)");
}

bool holds(Compare cmp, uint64_t word, uint64_t value) {
  switch (cmp) {
    case Compare::kEqual: return word == value;
    case Compare::kNotEqual: return word != value;
    case Compare::kLess: return word < value;
    case Compare::kLessEqual: return word <= value;
    case Compare::kGreater: return word > value;
    case Compare::kGreaterEqual: return word >= value;
  }
  throw InvalidArgument("Compare " + std::to_string(static_cast<int>(cmp)) +
                        " is not a comparison (==, !=, <, <=, >, >=)");
}

void Team::atomic_add(int peer, size_t offset, uint64_t value) {
  add<uint64_t>(*state_, peer, offset, value, false);
}
uint64_t Team::fetch_add(int peer, size_t offset, uint64_t value) {
  return add<uint64_t>(*state_, peer, offset, value, true);
}
uint64_t Team::compare_swap(int peer, size_t offset, uint64_t expected, uint64_t desired) {
  return cas<uint64_t>(*state_, peer, offset, expected, desired);
}
void Team::atomic_add32(int peer, size_t offset, uint32_t value) {
  add<uint32_t>(*state_, peer, offset, value, false);
}
uint32_t Team::fetch_add32(int peer, size_t offset, uint32_t value) {
  return add<uint32_t>(*state_, peer, offset, value, true);
}
uint32_t Team::compare_swap32(int peer, size_t offset, uint32_t expected, uint32_t desired) {
  return cas<uint32_t>(*state_, peer, offset, expected, desired);
}

uint32_t Team::signal_slots() const {
  return state_->layout.signal_slots();
}

namespace {
void check_slot(uint32_t slot, uint32_t slots, const char* operation) {
  if (slot >= slots) {
    throw InvalidArgument(std::string(operation) + ": signal slot " + std::to_string(slot) +
                          " does not exist; this team has slots 0.." + std::to_string(slots - 1));
  }
}
}  // namespace

void Team::signal(int peer, uint32_t slot, uint64_t value) {
  check_slot(slot, signal_slots(), "signal");
  transport::Window& window = *state_->window;
  const size_t offset = state_->layout.signal_slot(slot);
  if (void* target = window.remote_ptr(peer, offset, "signal")) {
    // Release: the peer that observes the new count also observes our earlier stores.
    mapped_word<uint64_t>(target).fetch_add(value, std::memory_order_release);
    return;
  }
  const transport::Context::CallScope limit = state_->ucx_limit();
  window.fence();  // earlier UCX puts to this peer land before the counter moves
  window.atomic_add<uint64_t>(peer, offset, value);
}

uint64_t Team::wait_signal(uint32_t slot, uint64_t at_least, int from_peer,
                           const char* operation) const {
  check_slot(slot, signal_slots(), operation);
  return state_->window->wait(state_->layout.signal_slot(slot), Compare::kGreaterEqual, at_least,
                              operation, from_peer, state_->timeout);
}

const uint64_t* Team::signal_word(uint32_t slot) const {
  check_slot(slot, signal_slots(), "signal_word");
  return reinterpret_cast<const uint64_t*>(state_->window->local_base() +
                                           state_->layout.signal_slot(slot));
}

uint64_t Team::signal_value(uint32_t slot) const {
  check_slot(slot, signal_slots(), "signal_value");
  void* word = state_->window->local_base() + state_->layout.signal_slot(slot);
  return mapped_word<uint64_t>(word).load(std::memory_order_acquire);
}

uint64_t Team::wait(size_t offset, Compare cmp, uint64_t value, int from_peer) const {
  return state_->window->wait(offset, cmp, value, "wait", from_peer, state_->timeout);
}

uint32_t Team::wait32(size_t offset, Compare cmp, uint32_t value, int from_peer) const {
  return state_->window->wait32(offset, cmp, value, "wait32", from_peer, state_->timeout);
}

void Team::signal32(int peer, size_t offset, uint32_t value) {
  transport::Window& window = *state_->window;
  if (void* target = mapped_atomic_target<uint32_t>(window, peer, offset, "signal32")) {
    // Release: the peer that observes the new value also observes our earlier stores.
    mapped_word<uint32_t>(target).fetch_add(value, std::memory_order_release);
    return;
  }
  const transport::Context::CallScope limit = state_->ucx_limit();
  window.fence();  // earlier UCX puts to this peer land before the word moves
  window.atomic_add<uint32_t>(peer, offset, value);
}

void Team::atomic_add_f32(int peer, size_t offset, float value) {
  uint32_t seen = 0;  // a guess: right for a fresh accumulator, else the CAS returns the word
  for (;;) {
    const uint32_t sum = std::bit_cast<uint32_t>(std::bit_cast<float>(seen) + value);
    const uint32_t before = compare_swap32(peer, offset, seen, sum);
    if (before == seen) return;
    seen = before;  // another add came first: add to what it left
  }
}

void Team::atomic_add_bf16_to_f32(int peer, size_t offset, uint16_t bf16_bits) {
  atomic_add_f32(peer, offset, std::bit_cast<float>(static_cast<uint32_t>(bf16_bits) << 16));
}

void Team::progress() const {
  state_->window->context().progress();
}

void Team::wait_until_calls(CallRef<bool> done, CallRef<std::string> describe,
                            std::chrono::nanoseconds timeout) const {
  transport::Context& context = state_->window->context();
  const auto limit = timeout.count() > 0 ? timeout : state_->timeout;
  // As Window::wait: fully mapped windows need UCX progress only now and then.
  uint32_t polls = 0;
  const uint32_t progress_mask = state_->window->all_mapped() ? 15 : 0;
  transport::wait_until(
      done,
      [&] {
        if ((++polls & progress_mask) == 0) context.progress();
      },
      limit, describe, [&](std::chrono::microseconds d) { context.idle(d); });
}

void Team::barrier() {
  transport::Window& window = *state_->window;
  flush();
  const int n = size();
  const int me = rank();
  const uint64_t epoch = ++state_->barrier_epoch;
  for (uint32_t round = 0; (1 << round) < n; ++round) {
    const int distance = 1 << round;
    const size_t slot = state_->layout.barrier_slot(round);
    const int to = (me + distance) % n;
    if (void* target = window.remote_ptr(to, slot, "barrier")) {
      mapped_word<uint64_t>(target).store(epoch, std::memory_order_release);
    } else {
      const transport::Context::CallScope limit = state_->ucx_limit();
      window.atomic_add<uint64_t>(to, slot, 1);
    }
    window.wait(slot, Compare::kGreaterEqual, epoch, "barrier", (me - distance + n) % n,
                state_->timeout);
  }
}

std::chrono::nanoseconds Team::timeout() const {
  return state_->timeout;
}
void Team::set_timeout(std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) throw InvalidArgument("Team::set_timeout: timeout must be positive");
  state_->timeout = timeout;
}

void Team::close() {
  state_->window->close();
}

namespace transport {

Team create_team(std::shared_ptr<Context> context, MPI_Comm comm, std::vector<BufferSpec> buffers,
                 std::string name, uint32_t signal_slots, bool last_buffer_here) {
  TeamLayout layout(std::move(buffers), signal_slots);
  const size_t bytes = last_buffer_here || layout.buffers().empty()
                           ? layout.total_bytes()
                           : layout.buffers().back().offset;
  auto window = Window::create(std::move(context), comm, bytes, std::move(name));
  return Team(std::make_shared<TeamState>(std::move(window), std::move(layout)));
}

}  // namespace transport
}  // namespace rankflow
