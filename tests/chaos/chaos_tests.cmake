# The chaos cases (issue 12), included by tests/CMakeLists.txt: the DAG runtime's
# (chaos_runtime.cpp) and library mode's (chaos_library.cpp). Paths are relative to tests/.

# Chaos (issue 12): a kernel past the timeout, a kernel that never returns, a domain member that
# stops taking part, a chip killed with SIGKILL, a host that exits mid-run, a chip that dies
# under mpirun --enable-recovery (issue 14). Each must end with a clear Error or a clean end of
# the job (tests/chaos/chaos_runtime.cpp).
add_executable(chaos_runtime chaos/chaos_runtime.cpp)
target_link_libraries(chaos_runtime PRIVATE rankflow)
rankflow_warnings(chaos_runtime)
rankflow_mpi_run(chaos.slow_kernel RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS slow-kernel
                 ENV RANKFLOW_TIMEOUT_S=2 PASS "chaos slow-kernel: passed")
rankflow_mpi_run(chaos.stuck_kernel RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS stuck-kernel
                 ENV RANKFLOW_TIMEOUT_S=2
                 PASS "still running: .* ending the job \\(MPI_Abort\\)")
rankflow_mpi_run(chaos.domain_stall RANKS 3 TARGET chaos_runtime TIMEOUT 60 ARGS domain-stall
                 ENV RANKFLOW_TIMEOUT_S=2 PASS "chaos domain-stall: passed")
rankflow_mpi_run(chaos.sigkill RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS sigkill
                 ENV RANKFLOW_TIMEOUT_S=2 PASS "exited on signal 9")
rankflow_mpi_run(chaos.host_exit RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS host-exit
                 ENV RANKFLOW_TIMEOUT_S=2 PASS "Exit code: +3")
rankflow_mpi_run(chaos.slow_close RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS slow-close
                 ENV RANKFLOW_TIMEOUT_S=2 PASS "chaos slow-close: rank 1 closed")
rankflow_mpi_run(chaos.late_init RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS late-init
                 ENV RANKFLOW_TIMEOUT_S=2 PASS "chaos late-init: passed")
rankflow_mpi_run(chaos.absent_init RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS absent-init
                 ENV RANKFLOW_TIMEOUT_S=1 RANKFLOW_STARTUP_TIMEOUT_S=2
                 PASS "rank 0: init \\(registration check\\).* did not complete within 2 s.*\\(RANKFLOW_STARTUP_TIMEOUT_S sets the limit\\)")
rankflow_mpi_run(chaos.start_absent_worker RANKS 2 TARGET chaos_runtime TIMEOUT 60
                 ARGS start-absent ENV RANKFLOW_TIMEOUT_S=1 RANKFLOW_STARTUP_TIMEOUT_S=2
                 PASS "rank 0: start-up: .*every rank of MPI_COMM_WORLD.* did not complete within 2 s; a peer has not reached the matching call \\(RANKFLOW_STARTUP_TIMEOUT_S sets the limit\\); rankflow initialised MPI.*ending the job \\(MPI_Abort\\)")
rankflow_mpi_run(chaos.arena_oom RANKS 2 TARGET chaos_runtime TIMEOUT 60 ARGS arena-oom
                 ENV RANKFLOW_TIMEOUT_S=5 UCX_ALLOC_PRIO=heap PASS "chaos arena-oom: passed")
# A chip that dies mid-run where the launcher lets the job outlive it: the host's run throws
# Timeout naming the chip, its task and the run, the other chips' tasks finish, close() ends the
# job. mpirun --enable-recovery exits 0 whatever happens, so only the pass line counts.
rankflow_mpi_run(chaos.chip_death_recovery RANKS 4 TARGET chaos_runtime TIMEOUT 60 ARGS chip-death
                 MPIRUN_ARGS --enable-recovery ENV RANKFLOW_TIMEOUT_S=3
                 PASS "chaos chip-death: passed")
foreach(case slow_kernel stuck_kernel domain_stall sigkill host_exit slow_close late_init
        absent_init start_absent_worker arena_oom chip_death_recovery)
  foreach(tls shm tcp)
    set_property(TEST chaos.${case}.${tls} PROPERTY FAIL_REGULAR_EXPRESSION "chaos: FAILED")
  endforeach()
endforeach()
# Library mode: memory exhaustion in a collective's staging and in alloc, a member that never
# calls split, a member that never enters a collective (a small one; a 4 MiB plain allreduce,
# whose owners hand their parts to the peers' recv), a member that never registers its buffer,
# a member that never enters a collective on registered buffers (tests/chaos/chaos_library.cpp).
add_executable(chaos_library chaos/chaos_library.cpp)
target_link_libraries(chaos_library PRIVATE rankflow)
rankflow_warnings(chaos_library)
foreach(case staging-oom alloc-oom split-absent peer-absent hand-off-absent register-absent
        registered-absent)
  string(REPLACE "-" "_" name ${case})
  rankflow_mpi_run(chaos.${name} RANKS 2 TARGET chaos_library TIMEOUT 60 ARGS ${case}
                   ENV RANKFLOW_TIMEOUT_S=2 UCX_ALLOC_PRIO=heap PASS "chaos ${case}: passed")
  foreach(tls shm tcp)
    set_property(TEST chaos.${name}.${tls} PROPERTY FAIL_REGULAR_EXPRESSION "chaos: FAILED")
  endforeach()
endforeach()
# A rank that never starts rankflow: the other's first Communicator ends at start-up with a
# Timeout naming the wait and its limit, not a hang in a blocking MPI call.
rankflow_mpi_run(chaos.start_absent RANKS 2 TARGET chaos_library TIMEOUT 60 ARGS start-absent
                 ENV RANKFLOW_TIMEOUT_S=1 RANKFLOW_STARTUP_TIMEOUT_S=2
                 PASS "chaos start-absent: passed")
foreach(tls shm tcp)
  set_property(TEST chaos.start_absent.${tls} PROPERTY FAIL_REGULAR_EXPRESSION "chaos: FAILED")
endforeach()
# The plain twophase allreduce's reading protocol (collectives/allreduce_twophase_read.h), every
# member reading: a member that never enters the call.
rankflow_mpi_run(chaos.reading_peer_absent RANKS 2 TARGET chaos_library TIMEOUT 60
                 ARGS reading-peer-absent
                 ENV RANKFLOW_TIMEOUT_S=2 RANKFLOW_CROSS_MEMORY_DIRECTION=read
                 PASS "chaos reading-peer-absent: passed")
foreach(tls shm tcp)
  set_property(TEST chaos.reading_peer_absent.${tls} PROPERTY FAIL_REGULAR_EXPRESSION
               "chaos: FAILED")
endforeach()
# A member that never enters a call that would stream its parts (the intel-emr profile forced:
# from 16 MiB, out of place, two members on shared memory; under TCP nobody maps, so the call
# hands off), after one such call together: the waiting member stops at the call's first round,
# which every twophase path shares, so this is hand_off_absent at the streaming size and profile.
# A timeout of 5 s: the first call grows the staging window to 32 MiB (one run with 2 s, beside
# other tests, failed; its output was not kept, and 20 more runs, loaded or not, passed).
rankflow_mpi_run(chaos.streaming_peer_absent RANKS 2 TARGET chaos_library TIMEOUT 60
                 ARGS streaming-peer-absent
                 ENV RANKFLOW_TIMEOUT_S=5 RANKFLOW_MACHINE=intel-emr
                 PASS "chaos streaming-peer-absent: passed")
foreach(tls shm tcp)
  set_property(TEST chaos.streaming_peer_absent.${tls} PROPERTY FAIL_REGULAR_EXPRESSION
               "chaos: FAILED")
endforeach()
# A member that never enters a plain allreduce whose staging window must grow, on a communicator
# with set_timeout(300 ms): the window's MPI waits take that limit, not RANKFLOW_TIMEOUT_S's 30 s,
# and the Timeout names the call and the growth.
rankflow_mpi_run(chaos.growth_absent RANKS 2 TARGET chaos_library TIMEOUT 60 ARGS growth-absent
                 ENV RANKFLOW_TIMEOUT_S=30 PASS "chaos growth-absent: passed")
foreach(tls shm tcp)
  set_property(TEST chaos.growth_absent.${tls} PROPERTY FAIL_REGULAR_EXPRESSION "chaos: FAILED")
endforeach()
# split and register_buffer without one member, on a communicator with set_timeout(300 ms): their
# MPI waits take that limit too (RANKFLOW_TIMEOUT_S=30 would fail the expected message).
foreach(case split-absent-limited register-absent-limited)
  string(REPLACE "-" "_" name ${case})
  rankflow_mpi_run(chaos.${name} RANKS 2 TARGET chaos_library TIMEOUT 60 ARGS ${case}
                   ENV RANKFLOW_TIMEOUT_S=30 PASS "chaos ${case}: passed")
  foreach(tls shm tcp)
    set_property(TEST chaos.${name}.${tls} PROPERTY FAIL_REGULAR_EXPRESSION "chaos: FAILED")
  endforeach()
endforeach()
