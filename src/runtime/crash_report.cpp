// Crash reports (see crash_report.h). The handler uses only async-signal-safe calls: write(2),
// sigaction and raise.
#include "runtime/crash_report.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace rankflow::runtime {
namespace {

std::atomic<int> g_rank{-1};
std::atomic<int> g_chip{-1};
std::atomic<uint64_t> g_task{0};
std::atomic<const char*> g_kernel{nullptr};

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

const char* signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a fatal signal";
  }
}

// Appends to a fixed buffer without allocating.
struct Line {
  char text[512];
  size_t used = 0;
  void add(const char* s) {
    while (*s != '\0' && used + 1 < sizeof(text))
      text[used++] = *s++;
  }
  void add(uint64_t v) {
    char digits[24];
    size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0 && used + 1 < sizeof(text))
      text[used++] = digits[--n];
  }
};

void on_fatal_signal(int signal) {
  Line line;
  line.add("rankflow: chip worker ");
  line.add(static_cast<uint64_t>(g_chip.load()));
  line.add(" (rank ");
  line.add(static_cast<uint64_t>(g_rank.load()));
  line.add(") died: signal ");
  line.add(static_cast<uint64_t>(signal));
  line.add(" (");
  line.add(signal_name(signal));
  line.add(")");
  if (const char* kernel = g_kernel.load(); kernel != nullptr) {
    line.add(" while running task ");
    line.add(g_task.load());
    line.add(" ('");
    line.add(kernel);
    line.add("')");
  } else {
    line.add(" between tasks");
  }
  line.add("\n");
  ssize_t ignored = write(STDERR_FILENO, line.text, line.used);
  (void)ignored;
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigaction(signal, &fallback, nullptr);
  raise(signal);
}

}  // namespace

void install_crash_report(int rank, int chip) {
  g_rank = rank;
  g_chip = chip;
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  for (int signal : kFatalSignals)
    sigaction(signal, &action, nullptr);
}

void crash_report_task(uint64_t task_id, const char* kernel) {
  g_task.store(task_id, std::memory_order_relaxed);
  g_kernel.store(kernel, std::memory_order_release);
}

}  // namespace rankflow::runtime
