// SignalKind: a kind of signal an algorithm or protocol sends, with its own counter per sender
// on every member (in the manner of gloo's per-algorithm slots). Each algorithm file defines the
// kinds it uses at namespace scope, so a new algorithm or protocol takes its own slots without
// editing CollContext:
//
//   const SignalKind kForward("ring.forward");   // in allreduce_ring.cpp
//   c.notify(right, kForward);  co_await c.await(left, kForward);
//
// Indices are assigned once, at the first CollContext, in the order of the kinds' names, so
// every process that links the same algorithms numbers them alike. Threads: kinds are made
// during static initialisation; index() and count() may then be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace rankflow::coll {

class SignalKind {
 public:
  explicit SignalKind(const char* name);  // `name` must outlive the kind (a string literal)
  SignalKind(const SignalKind&) = delete;
  SignalKind& operator=(const SignalKind&) = delete;

  const char* name() const { return name_; }
  uint32_t index() const;
  // The number of kinds every collective team must hold slots for (per member).
  static uint32_t count();

 private:
  friend struct SignalKindRegistry;
  const char* name_;
  std::atomic<uint32_t> index_{UINT32_MAX};  // set once, when the kinds are numbered
};

// The kinds shared by many algorithms of the mesh family.
extern const SignalKind kReady;   // my input is in place / my stage is complete
extern const SignalKind kReady2;  // second phase of a two-phase algorithm
extern const SignalKind kDone;    // I have finished reading your buffers

}  // namespace rankflow::coll
