# RANKFLOW_FUZZ=ON: every target of this build is compiled with AddressSanitizer, UndefinedBehavior-
# Sanitizer (every report fatal) and libFuzzer's coverage instrumentation, so the fuzz targets in
# fuzz/ see into the libraries they call. Only clang has libFuzzer (Debian: clang and
# libclang-rt-dev). Included from the top-level CMakeLists.txt before any target.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "RANKFLOW_FUZZ=ON needs clang (libFuzzer), but CMAKE_CXX_COMPILER is "
    "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}. Configure a separate build with "
    "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ (scripts/fuzz.sh does).")
endif()
# -fsanitize=function is left out: with coverage instrumentation clang 14 cannot emit it for
# coroutines (the collectives' CollTask): "Cannot represent a difference across sections".
set(RANKFLOW_SANITIZERS -fsanitize=address,undefined -fno-sanitize=function
    -fno-sanitize-recover=all)
add_compile_options(${RANKFLOW_SANITIZERS} -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -g)
add_link_options(${RANKFLOW_SANITIZERS})
