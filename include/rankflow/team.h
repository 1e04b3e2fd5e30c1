// rankflow/team.h: the primitive interface the collectives and the DAG runtime's chip links are
// written against (and what channels and MoE will be).
//
// A Team is a set of ranks (a communication domain seen from one member, or a library-mode
// communicator) sharing a symmetric window: named buffers at the same offsets on every member,
// one-sided put/get, atomics, signals with monotonic counters, and a barrier over per-round words.
// Every remote access is bounds-checked; every wait has a timeout and names what it waited for.
//
// Team is a cheap handle (copies share one window). One thread at a time may use it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rankflow {

namespace transport {
class TeamState;
}

// One named buffer in a team's symmetric window. Buffers are packed in order, each at the
// next multiple of its alignment (a power of two): 1 by default, as the reference packs its
// domain buffers; ask for 8 for atomics and signal words, 64 to keep a buffer on cache lines
// of its own.
struct BufferSpec {
  std::string name;
  size_t bytes = 0;
  size_t alignment = 1;
};

// How a wait compares the word it watches with the value it was given: word OP value.
enum class Compare { kGreaterEqual, kEqual, kNotEqual, kLess, kLessEqual, kGreater };
// "==", "!=", "<", "<=", ">", ">=" (InvalidArgument for a value outside the enum).
const char* to_string(Compare cmp);
// Whether `word cmp value` holds (InvalidArgument for a value outside the enum).
bool holds(Compare cmp, uint64_t word, uint64_t value);

class Team {
 public:
  // Signal slots are 64-bit counters, each on its own cache line, in the window's control area.
  static constexpr uint32_t kDefaultSignalSlots = 64;

  explicit Team(std::shared_ptr<transport::TeamState> state);

  int rank() const;
  int size() const;

  // Named buffers: offset within the window (the same on every member) and the local bytes.
  size_t offset(std::string_view buffer) const;
  size_t bytes(std::string_view buffer) const;
  std::span<std::byte> local(std::string_view buffer) const;
  template <typename T>
  std::span<T> local_as(std::string_view buffer) const {
    auto raw = local(buffer);
    return {reinterpret_cast<T*>(raw.data()), raw.size() / sizeof(T)};
  }
  std::byte* local_ptr(size_t offset) const;
  size_t window_bytes() const;

  // Direct load/store pointer into `peer`'s window, or null when it is not mappable (another
  // host, or UCX_TLS=tcp,self). Algorithms use it as a fast path and fall back to put/get.
  void* remote_ptr(int peer, size_t offset) const;
  // The process id of `peer` where its window is mapped here (so it runs on this host) and its
  // pid namespace is this process's, else 0.
  int64_t process_of(int peer) const;
  bool all_mapped() const;
  // True when every member maps every other member's window: then no operation needs UCX, and
  // the answer is the same on every member (agreed when the window was made).
  bool mapped_everywhere() const;

  // One-sided transfers. Where the peer is mapped they are plain copies, complete on return;
  // otherwise they go through UCX and `src`/`dst` must stay valid until flush().
  void put(int peer, size_t dst_offset, const void* src, size_t bytes);
  void get(int peer, size_t src_offset, void* dst, size_t bytes);
  void flush();          // remote completion of everything issued so far
  void flush(int peer);  // ... to one peer
  void fence();          // earlier puts/atomics land before later ones

  // Atomics on naturally aligned words of a peer's window.
  void atomic_add(int peer, size_t offset, uint64_t value);
  uint64_t fetch_add(int peer, size_t offset, uint64_t value);
  uint64_t compare_swap(int peer, size_t offset, uint64_t expected, uint64_t desired);
  void atomic_add32(int peer, size_t offset, uint32_t value);
  uint32_t fetch_add32(int peer, size_t offset, uint32_t value);
  uint32_t compare_swap32(int peer, size_t offset, uint32_t expected, uint32_t desired);
  // Float adds into a peer's f32 word (4-byte aligned), atomic against each other and every
  // other atomic on that word: a compare-and-swap loop, one CAS per attempt (a round trip under
  // UCX): one attempt on a word that reads 0, two or more otherwise or under contention. The bf16
  // form widens `bf16_bits` (a bfloat16's bit pattern) to f32 and adds that, as MoE's combine
  // accumulates bf16 expert outputs into f32 sums.
  void atomic_add_f32(int peer, size_t offset, float value);
  void atomic_add_bf16_to_f32(int peer, size_t offset, uint16_t bf16_bits);

  // Signals: adds `value` to counter `slot` on `peer`, after every earlier put to that peer has
  // landed. Counters only grow, so a receiver waits for a sequence number, never resets.
  void signal(int peer, uint32_t slot, uint64_t value = 1);
  // Waits until local counter `slot` reaches `at_least`; returns its value. `from_peer` (or -1)
  // and `operation` are named in the Timeout diagnostic.
  uint64_t wait_signal(uint32_t slot, uint64_t at_least, int from_peer = -1,
                       const char* operation = "wait_signal") const;
  uint64_t signal_value(uint32_t slot) const;
  // The local counter itself, for loops that poll it directly (read with acquire semantics).
  const uint64_t* signal_word(uint32_t slot) const;
  uint32_t signal_slots() const;

  // 32-bit signal words anywhere in a buffer (4-byte aligned): adds `value` to the word at
  // `offset` on `peer` after every earlier put to that peer has landed, as signal() does.
  void signal32(int peer, size_t offset, uint32_t value = 1);

  // Waits until the local 64-bit (wait) or 32-bit (wait32) word at `offset` satisfies
  // `word cmp value` (any of the six comparisons); returns what it read. Timeout after the
  // team's limit, naming this rank, the peer (`from_peer`, -1: any), the word and both values.
  uint64_t wait(size_t offset, Compare cmp, uint64_t value, int from_peer = -1) const;
  uint32_t wait32(size_t offset, Compare cmp, uint32_t value, int from_peer = -1) const;

  // Waits until `done()` holds, progressing the transport and backing off like every other
  // wait; after `timeout` (zero: timeout()) throws Timeout with the text `describe()` returns.
  // Any callables (lambdas, std::function): they are only referred to, never copied, so a
  // wait allocates nothing whatever its lambdas capture.
  template <typename Done, typename Describe>
  void wait_until(Done&& done, Describe&& describe,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero()) const {
    wait_until_calls(CallRef<bool>(done), CallRef<std::string>(describe), timeout);
  }

  // Advances the transport once. Loops that poll several conditions themselves call it, so that
  // transfers from peers reached through UCX (not mapped) keep landing.
  void progress() const;

  // Completes outstanding transfers, then synchronises every member (dissemination: each round's
  // word holds the barrier's epoch, stored by its one writer where mapped, added over UCX).
  void barrier();
  // Non-blocking flush(): true once every transfer issued so far has completed remotely.
  bool try_flush();

  // The limit of every wait on this team (default RANKFLOW_TIMEOUT_S).
  std::chrono::nanoseconds timeout() const;
  void set_timeout(std::chrono::nanoseconds timeout);

  // Collective: releases the window after every member is done with it.
  void close();

 private:
  // A reference to a callable taking no arguments and returning R: two words, no allocation
  // (std::function copies a lambda that captures more than two pointers to the heap).
  template <typename R>
  class CallRef {
   public:
    template <typename F>
    explicit CallRef(F& callable)
        : object_(const_cast<void*>(static_cast<const void*>(&callable))),
          call_([](void* object) -> R { return (*static_cast<F*>(object))(); }) {}
    R operator()() const { return call_(object_); }

   private:
    void* object_;
    R (*call_)(void*);
  };
  void wait_until_calls(CallRef<bool> done, CallRef<std::string> describe,
                        std::chrono::nanoseconds timeout) const;

  friend class transport::TeamState;
  std::shared_ptr<transport::TeamState> state_;
};

}  // namespace rankflow
