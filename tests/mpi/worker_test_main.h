// Runs the registered Google Tests on every rank of a DAG-runtime program (mpirun -n 1+N): the
// host prints the results, chip workers run the same tests (their run() calls serve the host's
// tasks) and print only their failures. Returns the number of failures on this rank.
#pragma once

#include <gtest/gtest.h>

#include "failure_printer.h"
#include "rankflow/runtime.h"

namespace rankflow::test {

inline int run_all_tests_on(Worker& worker) {
  worker.init();
  print_only_failures_on(worker.rank());
  const int failed = RUN_ALL_TESTS();
  worker.close();
  return failed;
}

}  // namespace rankflow::test
