// CollTask: a collective algorithm as a C++20 coroutine, so the same code runs blocking
// (Communicator::allreduce) and non-blocking (Communicator::iallreduce + Request::test/wait).
//
// An algorithm suspends only at `co_await ctx.await(peer, purpose)` when that signal has not
// arrived yet; everything else (copies, reductions, signals out) runs eagerly. advance() resumes
// it until the next unsatisfied wait or the end. Threads: the thread driving the collective.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace rankflow::coll {

// What a suspended algorithm waits for: the local 64-bit word `word` (a signal counter or a
// flag in the team's window) reaching `target`, written by `peer`. CollContext and the protocols
// it owns (collectives/inbox.h, collectives/stream.h) make them (`word` is never null).
// `fetch_lines` lines from `fetch` on are prefetched with every check of the word: the payload
// a push carries in lines of its own, so that its transfer overlaps the flag's instead of
// following it (PushInbox::fetches_ahead).
struct SignalAwait {
  const uint64_t* word;
  uint64_t target;
  int peer;
  const std::byte* fetch = nullptr;
  uint32_t fetch_lines = 0;

  bool satisfied() const;
  bool await_ready() const { return satisfied(); }
  // The promise keeps a pointer to this awaiter, which lives in the coroutine's frame until it
  // resumes. (A copy measured slower: it reads back the fields the algorithm has just stored,
  // in other widths, so the load cannot take them from the store buffer and waits for every
  // earlier store to drain, the push into a peer's memory among them: a cross-core transfer.)
  template <typename Promise>
  void await_suspend(std::coroutine_handle<Promise> handle) const {
    handle.promise().waiting = this;
  }
  void await_resume() const {}
};

class CollTask {
 public:
  struct promise_type {
    const SignalAwait* waiting = nullptr;  // what it is suspended on (null: nothing)
    std::exception_ptr error;
    CollTask get_return_object() {
      return CollTask(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
    // Frames are recycled per thread: a collective call allocates nothing in the steady state.
    static void* operator new(std::size_t bytes);
    static void operator delete(void* frame, std::size_t bytes);
  };

  CollTask() = default;
  // A task with nothing to do (for algorithms that finish without communicating).
  static CollTask finished() { return CollTask(); }
  explicit CollTask(std::coroutine_handle<promise_type> handle) : handle_(handle) {}
  CollTask(CollTask&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  CollTask& operator=(CollTask&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  ~CollTask() { reset(); }

  // Runs until the next unsatisfied wait (false) or completion (true); rethrows the
  // algorithm's error.
  bool advance();
  bool done() const { return !handle_ || handle_.done(); }
  // The wait the task is suspended on (valid while !done()).
  const SignalAwait& waiting() const {
    static constexpr SignalAwait kNothing{nullptr, 0, -1};
    return handle_.promise().waiting != nullptr ? *handle_.promise().waiting : kNothing;
  }

 private:
  void reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  std::coroutine_handle<promise_type> handle_;
};

}  // namespace rankflow::coll
