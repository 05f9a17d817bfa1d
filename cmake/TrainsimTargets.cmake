# Common settings for every trainsim target. SimGrid 3.32's find module forces C++14 globally, so
# each target declares C++20 itself instead of relying on CMAKE_CXX_STANDARD.
function(trainsim_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                           # clang (fuzz builds): NCCL's profiler ABI, mirrored in
                                           # tracer/record/nccl_profiler_abi.hpp, nests anonymous structs in unions
                                           $<$<CXX_COMPILER_ID:Clang>:-Wno-nested-anon-types>)
  if(TRAINSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# trainsim_library(NAME module SOURCES ... DEPS ...): one library target per directory, with a
# trainsim::<module> alias and includes from the repository root.
function(trainsim_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(trainsim_${name} ${ARG_SOURCES})
  add_library(trainsim::${name} ALIAS trainsim_${name})
  target_include_directories(trainsim_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                     $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
  target_link_libraries(trainsim_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  trainsim_target_defaults(trainsim_${name})
endfunction()
