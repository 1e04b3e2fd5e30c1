// process_write (see process_write.h).
#include "collectives/process_write.h"

#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "common/env.h"

namespace rankflow::coll {
namespace {

// Refused once: not tried again.
std::atomic<bool> g_refused{false};

}  // namespace

bool write_process_memory(int64_t pid, uint64_t address, const std::byte* src, size_t bytes) {
  static const bool switched_on = env::process_write();  // checked when the Context started
  if (!switched_on || g_refused.load(std::memory_order_relaxed) || pid <= 0) return false;
  size_t done = 0;
  while (done < bytes) {  // the kernel may write less than asked (a partial write)
    iovec local{const_cast<std::byte*>(src + done), bytes - done};
    iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
    const ssize_t wrote = process_vm_writev(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (wrote <= 0) {
      g_refused.store(true, std::memory_order_relaxed);
      return false;
    }
    done += static_cast<size_t>(wrote);
  }
  return true;
}

int64_t this_process() {
  return static_cast<int64_t>(getpid());
}

}  // namespace rankflow::coll
