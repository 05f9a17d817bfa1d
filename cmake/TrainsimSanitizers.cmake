# Sanitizer and fuzzing builds (docs/hardening.md). Both are options of a separate build folder;
# the default build is unchanged.
#
# TRAINSIM_SANITIZE: a list for -fsanitize (e.g. "address,undefined"): every trainsim target and
#   test is compiled and linked with it, with frame pointers kept and UBSan made fatal, so a finding
#   fails the test that made it (scripts/sanitize.sh).
# TRAINSIM_FUZZ: builds the libFuzzer targets of tests/fuzz (clang only: GCC has no libFuzzer);
#   every target is instrumented with fuzzer-no-link plus address,undefined unless TRAINSIM_SANITIZE
#   says otherwise (scripts/fuzz.sh).
set(TRAINSIM_SANITIZE "" CACHE STRING "Sanitizers for -fsanitize (e.g. address,undefined); empty for none")
option(TRAINSIM_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)

if(TRAINSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRAINSIM_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-16 "
                        "(Debian package clang-16), or use scripts/fuzz.sh, which does")
  endif()
  if(TRAINSIM_SANITIZE STREQUAL "")
    set(TRAINSIM_SANITIZE "address,undefined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(NOT TRAINSIM_SANITIZE STREQUAL "")
  add_compile_options(-fsanitize=${TRAINSIM_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TRAINSIM_SANITIZE})
  if(TRAINSIM_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "trainsim sanitizers: ${TRAINSIM_SANITIZE}")
endif()
