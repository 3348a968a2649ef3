#!/usr/bin/env bash
# Seeded schedules of the real recipes on the model ZooKeeper (issue 50; test/simulation/
# test_simulation_seeds.cpp), as many as asked (the test command runs 10,000): a progress line per batch,
# then a last line that says how many seeds ran and how many failed. A failing seed is printed with its
# violation, the length of its schedule and the command that replays it.
# usage: scripts/simulate.sh [N]                 run seeds 1 to N (default 10000)
#        scripts/simulate.sh --from F N          run seeds F to F+N-1
#        scripts/simulate.sh --seed S [--trace]  replay seed S (and print its schedule, one event a line)
# Builds the tests in build-simulate/ (Release) first. Exit status: 0 if no seed failed.
set -euo pipefail
cd "$(dirname "$0")/.."
first=1 count=10000 seed="" trace=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed="$2"; shift 2 ;;
    --trace) trace=1; shift ;;
    --from) first="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) count="$1"; shift ;;
  esac
done
dir=${ZKLOCK_SIMULATE_DIR:-build-simulate}  # another build directory of the tests, if set
if [ ! -x "$dir/test/tests_simulation" ]; then bash scripts/install-deps.sh; fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=ON -DZKLOCK_BUILD_INTEGRATION_TESTS=OFF \
  -DZKLOCK_BUILD_EXAMPLES=OFF -DZKLOCK_BUILD_COMMAND=OFF > /dev/null
cmake --build "$dir" --target tests_simulation -j2 > /dev/null
test_bin="$dir/test/tests_simulation"
case_name=simulation_seed_tests/the_mutex_keeps_its_promises_on_every_seed
if [ -n "$seed" ]; then
  ZKLOCK_SIM_SEED="$seed" ZKLOCK_SIM_TRACE="$trace" "$test_bin" --run_test="$case_name" --log_level=message \
    --color_output=no
  exit $?
fi
batch=500 ran=0 failed=0 start=$SECONDS
while [ "$ran" -lt "$count" ]; do
  n=$(( count - ran < batch ? count - ran : batch ))
  from=$(( first + ran ))
  out=$(ZKLOCK_SIM_FIRST="$from" ZKLOCK_SIM_SEEDS="$n" "$test_bin" --run_test="$case_name" --log_level=error \
    --color_output=no 2>&1) || true
  bad=$(printf '%s\n' "$out" | grep -c 'error: in' || true)
  printf '%s\n' "$out" | grep 'error: in' | sed 's/.*error: in "[^"]*": //' || true
  ran=$(( ran + n )) failed=$(( failed + bad ))
  echo "seeds $from to $(( from + n - 1 )): $bad failed; $ran of $count ran, $failed failed, $(( SECONDS - start )) s"
done
echo "$ran seeds ran, $failed failed"
[ "$failed" -eq 0 ]
