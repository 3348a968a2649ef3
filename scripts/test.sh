#!/usr/bin/env bash
# Installs what is needed and builds with warnings as errors: everything at -O3 as users run it, with the
# tests that need no harness (table tests, documentation, packaging, benchmark, chaos); then everything
# under AddressSanitizer and UndefinedBehaviorSanitizer with the whole suite (unit tests, and integration
# tests on real ZooKeeper servers the tests start themselves); then the tests that use several threads
# under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=2
# Minutes and seconds since the command started, for the log's tier lines.
elapsed() { printf '%d min %02d s' $((SECONDS / 60)) $((SECONDS % 60)); }
# A CI machine can be short of disk: one run stopped with "No space left on device" in the sanitizer
# build, the first stage's build (about 1-4 GB) still there. With ZKLOCK_FREE_DISK=1 (.ci/run sets it),
# each stage's build directory goes once its tests have passed.
done_with() {
  if [[ ${ZKLOCK_FREE_DISK:-0} == 1 ]]; then rm -rf "$1"; fi
}
# A build in the background at nice 19, in a process group of its own (job control on while it starts:
# set -m) so that stop_build ends its compilers too; its output goes to a log that finish_build prints.
# Not setsid: a new session is a new scheduler autogroup, where nice means nothing against the tests (the
# Release tests took 4.5 min instead of 2.4 beside an ASan build so). Usage: start_build NAME DIR [ARGS...]
declare -A build_pid build_log
start_build() {
  local name=$1 dir=$2
  shift 2
  build_log[$name]=$(mktemp)
  set -m
  nice -n 19 cmake --build "$dir" -j"$jobs" "$@" > "${build_log[$name]}" 2>&1 &
  build_pid[$name]=$!
  set +m
}
# Waits for the build NAME, prints its log, and fails the command if it failed.
finish_build() {
  local rc=0
  wait "${build_pid[$1]}" || rc=$?
  cat "${build_log[$1]}"
  rm -f "${build_log[$1]}"
  if [[ $rc -ne 0 ]]; then echo "== the $1 build failed (exit $rc)"; exit "$rc"; fi
}
stop_build() {
  kill -- -"${build_pid[$1]}" 2> /dev/null || true
  wait "${build_pid[$1]}" 2> /dev/null || true
  rm -f "${build_log[$1]}"
}

# Runs ctest for one tier and fails unless it ran at least `min` tests, all passed (a tier that ran no
# test, or fewer than the suite has, cannot pass silently: issue 48.14, where a cache left by the demo's
# ZKLOCK_BUILD_TESTS=OFF made the first tier run nothing and pass). Usage: run_tier NAME MIN CTEST-ARGS...
run_tier() {
  local name=$1 min=$2
  shift 2
  local log
  log=$(mktemp)
  local rc=0
  ctest --no-tests=error "$@" 2>&1 | tee "$log" || rc=$?
  local ran
  ran=$(sed -n 's/.*tests passed, [0-9]* tests* failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  rm -f "$log"
  if [[ $rc -ne 0 ]]; then echo "== $name: ctest failed (exit $rc)"; return "$rc"; fi
  if [[ -z $ran || $ran -lt $min ]]; then
    echo "== $name: ran ${ran:-no} tests, expected at least $min"
    return 1
  fi
  echo "== $name: $ran tests passed (at least $min expected)"
}

# Release (-O3), as README's demo and scripts/bench.sh build: the library, the command, the examples, the
# benchmark and the chaos tool are built as users run them, so -O3's warnings of its own (GCC 12) fail this
# step, and the tests that need no test harness run here: the table tests, the documentation's checks (every
# README and docs/ code block compiles), both consumers of the package, the benchmark's scenarios and a short
# chaos campaign. The tests on the harness (integration, the command's, the examples') run once, in the
# ASan+UBSan tier below, where a defect shows more: compiling and running them here as well took 13 of
# the command's 49 minutes (issue 49). ZKLOCK_RELEASE_ALL=1 runs them in this tier too.
# (No debug information: a quarter less compile time than RelWithDebInfo; the sanitizer builds have it.)
echo "== build and test (Release) ($(elapsed))"
# Every option this tier needs is set here: a cache left by the demo (ZKLOCK_BUILD_TESTS=OFF) must not
# turn tests off.
release_all=${ZKLOCK_RELEASE_ALL:-0}
release_integration=OFF release_count=18
if [[ $release_all == 1 ]]; then release_integration=ON release_count=74; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=ON -DZKLOCK_BUILD_INTEGRATION_TESTS=$release_integration \
  -DZKLOCK_BUILD_EXAMPLES=ON -DZKLOCK_BUILD_COMMAND=ON > /dev/null
cmake --build build -j"$jobs"
run_tier Release "$release_count" --test-dir build -j"$jobs" --output-on-failure
done_with build

echo "== build and test under AddressSanitizer and UndefinedBehaviorSanitizer ($(elapsed))"
# The sanitizer tiers' debug information is line tables (-g1): a report names every frame's function, file
# and line, as with -g, and the compile takes 7-11% less (issue 49; the session area's unity file under
# ASan+UBSan: 82.9 s of CPU with -g, 76.7 with -g1). A developer's Debug build keeps -g for the debugger.
debug_info=-DCMAKE_CXX_FLAGS_DEBUG=-g1
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug "$debug_info" -DZKLOCK_SANITIZE=ON -DZKLOCK_BUILD_TESTS=ON \
  -DZKLOCK_BUILD_INTEGRATION_TESTS=ON -DZKLOCK_BUILD_EXAMPLES=ON -DZKLOCK_BUILD_COMMAND=ON > /dev/null
cmake --build build-sanitize -j"$jobs"
# The ThreadSanitizer tier's build runs meanwhile the ASan+UBSan tests do, at the lowest priority: those
# tests leave part of the CPU idle (their ZooKeeper servers wait on the disk and on timers), which the
# build takes, and yield it back at once to a test that needs it (issue 49: the TSan tier after the ASan
# tests took 3.3 min at e0c159b, 20 s at 9dac851). The ASan+UBSan build beside the Release tests gained
# nothing measurable (the FetchContent consumer's compile keeps both cores busy there): not done.
echo "== the ThreadSanitizer build starts beside the tests, at nice 19 ($(elapsed))"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug "$debug_info" -DZKLOCK_SANITIZE_THREAD=ON -DZKLOCK_BUILD_TESTS=ON \
  -DZKLOCK_BUILD_INTEGRATION_TESTS=ON -DZKLOCK_BUILD_EXAMPLES=OFF > /dev/null
start_build tsan build-tsan --target tests_threads
status=0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_tier "AddressSanitizer+UBSan" 71 --test-dir build-sanitize -j"$jobs" --output-on-failure || status=$?
if [[ $status -ne 0 ]]; then stop_build tsan; exit "$status"; fi
done_with build-sanitize

echo "== build and test the multi-threaded tests under ThreadSanitizer ($(elapsed))"
finish_build tsan
# Any report fails the run (exitcode), and the test binary's own checks must pass.
TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1 \
  run_tier ThreadSanitizer 4 --test-dir build-tsan -L threads --output-on-failure
done_with build-tsan
echo "== done ($(elapsed))"
