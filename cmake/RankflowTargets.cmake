# Shared settings for rankflow's targets: warnings, include roots, and how mpirun is launched.

# rankflow_warnings(<target>): -Wall -Wextra everywhere; errors when RANKFLOW_WERROR is on (CI).
function(rankflow_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor)
  if(RANKFLOW_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# rankflow_layer(<target> SOURCES...): one static library per layer. Private headers are found
# as "<layer>/<file>.h" from src/, public ones as "rankflow/<file>.h" from include/.
function(rankflow_layer target)
  add_library(${target} STATIC ${ARGN})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
           $<INSTALL_INTERFACE:include>)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O3>)
  rankflow_warnings(${target})
endfunction()

# mpirun as rankflow's tests and scripts call it: root and oversubscription are allowed here so
# users never type those flags.
set(RANKFLOW_MPIEXEC ${MPIEXEC_EXECUTABLE} --oversubscribe)
set(RANKFLOW_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1)

# Open MPI 4 lets each mpirun create the session directory /tmp/ompi.<host>.<uid> and remove it
# when empty at exit; two mpiruns starting together race on that mkdir and one fails in
# orte_init ("A call to mkdir was unable to create the desired directory ... File exists",
# open-mpi/ompi#8510). ctest runs the "waits" tests four at a time, so each test gets its own
# session root under the build directory. Called once per directory, deferred to its end so it
# sees every test there and comes after every set_tests_properties(ENVIRONMENT) that would
# replace the variable.
function(rankflow_isolate_mpi_sessions)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                 OMPI_MCA_orte_tmpdir_base=${CMAKE_BINARY_DIR}/mpi-sessions/${test})
  endforeach()
endfunction()

# Schedules rankflow_isolate_mpi_sessions() for the end of the calling directory, once.
function(rankflow_defer_mpi_session_isolation)
  cmake_language(DEFER GET_CALL_IDS scheduled)
  if(NOT "rankflow_isolate_mpi_sessions" IN_LIST scheduled)
    cmake_language(DEFER ID rankflow_isolate_mpi_sessions CALL rankflow_isolate_mpi_sessions)
  endif()
endfunction()

# rankflow_mpi_run(<name> RANKS <n> TARGET <target> [ARGS ...] [PASS <regex>] [TIMEOUT <s>]
#                  [ENV ...] [TCP_ENV ...] [MPIRUN_ARGS ...])
# Registers <name>.shm and <name>.tcp: `mpirun -n <n> <target> <args>` under UCX's default
# transports (shared memory, direct mapping) and under UCX_TLS=tcp,self (as between hosts).
function(rankflow_mpi_run name)
  cmake_parse_arguments(ARG "" "RANKS;TARGET;PASS;TIMEOUT" "ARGS;ENV;TCP_ENV;MPIRUN_ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  rankflow_defer_mpi_session_isolation()
  foreach(tls shm tcp)
    set(env ${RANKFLOW_MPI_ENV} RANKFLOW_TIMEOUT_S=60 ${ARG_ENV})
    if(tls STREQUAL "tcp")
      list(APPEND env UCX_TLS=tcp,self ${ARG_TCP_ENV})
    endif()
    add_test(NAME ${name}.${tls}
             COMMAND ${RANKFLOW_MPIEXEC} ${ARG_MPIRUN_ARGS} -n ${ARG_RANKS}
                     $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS})
    set_tests_properties(${name}.${tls} PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${env}"
                         LABELS "mpi;${tls}")
    if(ARG_PASS)
      set_tests_properties(${name}.${tls} PROPERTIES PASS_REGULAR_EXPRESSION "${ARG_PASS}")
    endif()
  endforeach()
endfunction()
