// process_memory (see process_memory.h). Owns the process-wide state of the kernel's copies:
// whether one was refused, the counters, and the processes copies have reached. Any thread (the
// state is atomic or under its mutex).
#include "collectives/process_memory.h"

#include <pthread.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "common/env.h"

namespace rankflow::coll {
namespace {

// Refused once: not tried again.
std::atomic<bool> g_refused{false};
std::atomic<uint64_t> g_writes{0};
std::atomic<uint64_t> g_reads{0};
// Writes left before the next is refused as the kernel would refuse it (tests only: UINT64_MAX,
// never).
std::atomic<uint64_t> g_writes_before_refusal{UINT64_MAX};

// The processes a copy has reached (true) or was refused by in writes_reach (false): a few
// peers each, read per call by the protocols that offer to read.
std::mutex g_reached_mutex;
std::unordered_map<int64_t, bool>& reached_processes() {
  static std::unordered_map<int64_t, bool> reached;
  return reached;
}

void remember_reached(int64_t pid) {
  std::lock_guard<std::mutex> lock(g_reached_mutex);
  reached_processes()[pid] = true;
}

bool usable() {
  static const bool switched_on = env::cross_memory();  // checked when the Context started
  return switched_on && !g_refused.load(std::memory_order_relaxed);
}

// One direction of cross-memory attach, repeated until every byte moved (the kernel may move
// fewer than asked). `promised`: the copy was promised to a peer, so a refusal of another copy
// before does not stop it from being tried (it is still not tried where switched off).
template <typename Move>
bool move_all(int64_t pid, size_t bytes, bool promised, Move&& move) {
  static const bool switched_on = env::cross_memory();
  if (!(promised ? switched_on : usable()) || pid <= 0) return false;
  size_t done = 0;
  while (done < bytes) {
    const ssize_t moved = move(static_cast<pid_t>(pid), done, bytes - done);
    if (moved <= 0) {
      g_refused.store(true, std::memory_order_relaxed);
      return false;
    }
    done += static_cast<size_t>(moved);
  }
  return true;
}

}  // namespace

namespace {

// Whether refuse_writes_after_for_tests says this write is the one to refuse.
bool refused_for_tests() {
  uint64_t left = g_writes_before_refusal.load(std::memory_order_relaxed);
  if (left == UINT64_MAX) return false;
  if (left == 0) {
    g_refused.store(true, std::memory_order_relaxed);
    return true;
  }
  g_writes_before_refusal.store(left - 1, std::memory_order_relaxed);
  return false;
}

bool write_memory(int64_t pid, uint64_t address, const std::byte* src, size_t bytes,
                  bool promised) {
  if (refused_for_tests()) return false;
  const bool written = move_all(pid, bytes, promised, [&](pid_t to, size_t at, size_t left) {
    iovec local{const_cast<std::byte*>(src + at), left};
    iovec remote{reinterpret_cast<void*>(address + at), left};
    return process_vm_writev(to, &local, 1, &remote, 1, 0);
  });
  if (written) {
    g_writes.fetch_add(1, std::memory_order_relaxed);
    remember_reached(pid);
  }
  return written;
}

}  // namespace

bool write_process_memory(int64_t pid, uint64_t address, const std::byte* src, size_t bytes) {
  return write_memory(pid, address, src, bytes, false);
}

bool write_promised_process_memory(int64_t pid, uint64_t address, const std::byte* src,
                                   size_t bytes) {
  return write_memory(pid, address, src, bytes, true);
}

bool read_process_memory(int64_t pid, uint64_t address, std::byte* dst, size_t bytes) {
  const bool read = move_all(pid, bytes, true, [&](pid_t from, size_t at, size_t left) {
    iovec local{dst + at, left};
    iovec remote{reinterpret_cast<void*>(address + at), left};
    return process_vm_readv(from, &local, 1, &remote, 1, 0);
  });
  if (read) {
    g_reads.fetch_add(1, std::memory_order_relaxed);
    remember_reached(pid);
  }
  return read;
}

bool copies_reached(int64_t pid) {
  if (!usable() || pid <= 0) return false;
  std::lock_guard<std::mutex> lock(g_reached_mutex);
  const auto known = reached_processes().find(pid);
  return known != reached_processes().end() && known->second;
}

bool writes_reach(int64_t pid, uint64_t address, const std::byte* src) {
  if (!usable() || pid <= 0) return false;
  {
    std::lock_guard<std::mutex> lock(g_reached_mutex);
    const auto known = reached_processes().find(pid);
    if (known != reached_processes().end()) return known->second;
  }
  const bool reaches = write_process_memory(pid, address, src, 1);
  std::lock_guard<std::mutex> lock(g_reached_mutex);
  reached_processes()[pid] = reaches;
  return reaches;
}

bool process_memory_usable() {
  return usable();
}

// getpid() is a system call (glibc keeps no copy), and the cross-memory protocols publish the
// process in every call: perf on a 16 KiB plain broadcast's peer put 1.4 % of its samples in it.
// Kept here, forgotten in a forked child.
std::atomic<int64_t> g_this_process{0};

void forget_this_process() {
  g_this_process.store(0, std::memory_order_relaxed);
}

int64_t this_process() {
  int64_t pid = g_this_process.load(std::memory_order_relaxed);
  if (pid != 0) [[likely]]
    return pid;
  static const bool forgets_in_children =
      pthread_atfork(nullptr, nullptr, &forget_this_process) == 0;
  (void)forgets_in_children;
  pid = static_cast<int64_t>(getpid());
  g_this_process.store(pid, std::memory_order_relaxed);
  return pid;
}

int64_t published_process() {
  return usable() ? this_process() : 0;
}

uint64_t process_memory_writes() {
  return g_writes.load(std::memory_order_relaxed);
}

uint64_t process_memory_reads() {
  return g_reads.load(std::memory_order_relaxed);
}

void refuse_writes_after_for_tests(uint64_t writes) {
  g_writes_before_refusal.store(writes, std::memory_order_relaxed);
}

}  // namespace rankflow::coll
