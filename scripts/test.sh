#!/usr/bin/env bash
# Installs what is needed, builds with warnings as errors, and runs the whole suite (unit tests, and
# integration tests on real ZooKeeper servers the tests start themselves); then builds and runs it all
# again under AddressSanitizer and UndefinedBehaviorSanitizer, and the tests that use several threads
# under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=2

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build -j"$jobs" --output-on-failure

echo "== build and test under AddressSanitizer and UndefinedBehaviorSanitizer"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DZKLOCK_SANITIZE=ON > /dev/null
cmake --build build-sanitize -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize -j"$jobs" --output-on-failure

echo "== build and test the multi-threaded tests under ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DZKLOCK_SANITIZE_THREAD=ON -DZKLOCK_BUILD_EXAMPLES=OFF > /dev/null
cmake --build build-tsan -j"$jobs" --target thread_tests thread_recipe_tests thread_caller_tests cancellation_thread_tests
# Any report fails the run (exitcode), and the test binary's own checks must pass.
TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1 \
  ctest --test-dir build-tsan -L threads --output-on-failure

echo "== build the demo and the benchmark as README's first command and scripts/bench.sh do (Release)"
# -O3 brings warnings of its own (GCC 12): the main job must build as well as the tests do.
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=OFF > /dev/null
cmake --build build-release -j"$jobs" --target ticket_office zklock_bench zklock_cli
