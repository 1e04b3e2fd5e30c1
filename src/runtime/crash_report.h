// Crash reports of chip workers: handlers for fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT) that print which rank, chip worker, task and kernel died, then let the signal kill the
// process as it would have. mpirun then ends the job, so the host never waits on a dead chip.
// The chip's main thread records the running task; the handler only reads it.
#pragma once

#include <cstdint>

namespace rankflow::runtime {

void install_crash_report(int rank, int chip);
// The task the chip is about to run (`kernel` must outlive the task), or 0 / nullptr when idle.
void crash_report_task(uint64_t task_id, const char* kernel);

}  // namespace rankflow::runtime
