#!/usr/bin/env bash
# Builds trainsim and its tests with AddressSanitizer + UndefinedBehaviorSanitizer and runs the whole
# suite (docs/hardening.md). A sanitizer report fails the test that made it (UBSan is fatal,
# ASan aborts), so "100% tests passed" means the suite is clean under both.
# Usage: scripts/sanitize.sh [ctest arguments...]   (e.g. -R Scenario to run a part)
# Environment: BUILD (default REPO/build-asan), SANITIZE (default address,undefined).
# Warnings are not errors here even under CI=true: GCC 12 with -fsanitize=address reports
# -Wmaybe-uninitialized inside libstdc++'s std::function (false positives); the normal build polices
# warnings.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-"$repo/build-asan"}
"$repo/scripts/setup.sh" "$build" -DTRAINSIM_BUILD_TESTS=ON -DTRAINSIM_SANITIZE="${SANITIZE:-address,undefined}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSIM_WERROR=OFF
# detect_leaks: SimGrid keeps its platform until exit by design; a leak is not a memory error.
# detect_stack_use_after_return=0: SimGrid switches its actors' stacks itself, which ASan's fake
# stacks do not follow.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:detect_stack_use_after_return=0:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
# The python.* tests load the sanitized module into the system's python3, which is not instrumented:
# without ASan's runtime loaded first they die at import (docs/hardening.md, "Sanitizers").
ctest --output-on-failure -j"$(nproc)" --timeout 1500 -E '^python\.' "$@"
