#!/usr/bin/env bash
# Seeded schedules of the real recipes on the model ZooKeeper (issue 50; test/simulation/
# test_simulation_seeds.cpp and its neighbours), as many as asked (the test command runs 3,000 a workload):
# a progress line per batch, then a last line that says how many seeds ran and how many failed. A failing
# seed is printed with its workload, its violation, the length of its schedule, that schedule shrunk to the
# faults it needs (each drawn fault skipped in turn, kept skipped while the promise still breaks), and the
# command that replays the shrunk one.
# usage: scripts/simulate.sh [--workload W] [N]                 seeds 1 to N (default 10000) of every workload, or W's
#        scripts/simulate.sh [--workload W] --from F N          seeds F to F+N-1
#        scripts/simulate.sh --workload W --seed S [--skip-faults a,b] [--trace]
#                                   replay seed S of W (without the drawn faults a, b: a shrunk schedule),
#                                   and print its schedule
# Workloads: mutex, composed (while_held, multi_lock, a third party deleting nodes), drain, election.
# Builds the tests in build-simulate/ (Release) first. Exit status: 0 if no seed failed.
set -euo pipefail
cd "$(dirname "$0")/.."
first=1 count=10000 seed="" trace="" workload="" skip=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed="$2"; shift 2 ;;
    --trace) trace=1; shift ;;
    --from) first="$2"; shift 2 ;;
    --workload) workload="$2"; shift 2 ;;
    --skip-faults) skip="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) count="$1"; shift ;;
  esac
done
dir=${ZKLOCK_SIMULATE_DIR:-build-simulate}  # another build directory of the tests, if set
if [ ! -x "$dir/test/tests_simulation" ]; then bash scripts/install-deps.sh; fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=ON -DZKLOCK_BUILD_INTEGRATION_TESTS=OFF \
  -DZKLOCK_BUILD_EXAMPLES=OFF -DZKLOCK_BUILD_COMMAND=OFF > /dev/null
cmake --build "$dir" --target tests_simulation -j2 > /dev/null
test_bin="$dir/test/tests_simulation"
case "$workload" in
  "") case_name='simulation_seed_tests/*_on_every_seed' ;;
  mutex) case_name=simulation_seed_tests/the_mutex_keeps_its_promises_on_every_seed ;;
  composed) case_name=simulation_seed_tests/while_held_and_multi_lock_keep_their_promises_on_every_seed ;;
  drain) case_name=simulation_seed_tests/a_drain_says_success_only_when_nothing_is_left_on_every_seed ;;
  election) case_name=simulation_seed_tests/the_election_keeps_its_promises_on_every_seed ;;
  *) echo "simulate.sh: no workload named '$workload' (mutex, composed, drain, election)" >&2; exit 2 ;;
esac
if [ -n "$seed" ] && [ -z "$workload" ]; then
  echo "simulate.sh: --seed needs --workload (the failure's line names it)" >&2; exit 2
fi
if [ -n "$seed" ]; then
  ZKLOCK_SIM_SEED="$seed" ZKLOCK_SIM_SKIP="$skip" ZKLOCK_SIM_TRACE="$trace" "$test_bin" --run_test="$case_name" --log_level=message \
    --color_output=no
  exit $?
fi
batch=500 ran=0 failed=0 start=$SECONDS
while [ "$ran" -lt "$count" ]; do
  n=$(( count - ran < batch ? count - ran : batch ))
  from=$(( first + ran ))
  rc=0
  out=$(ZKLOCK_SIM_FIRST="$from" ZKLOCK_SIM_SEEDS="$n" "$test_bin" --run_test="$case_name" --log_level=error \
    --color_output=no 2>&1) || rc=$?
  bad=$(printf '%s\n' "$out" | grep -c 'error: in' || true)
  printf '%s\n' "$out" | grep 'error: in' | sed 's/.*error: in "[^"]*": //' || true
  if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then  # a crash or an abort: no seed named, the batch failed
    printf '%s\n' "$out" | tail -5
    echo "the batch of seeds $from to $(( from + n - 1 )) ended with status $rc; run them a seed at a time to find which"
    bad=1
  fi
  ran=$(( ran + n )) failed=$(( failed + bad ))
  echo "seeds $from to $(( from + n - 1 )): $bad failed; $ran of $count ran, $failed failed, $(( SECONDS - start )) s"
done
echo "$ran seeds ran (${workload:-each workload}), $failed failed"
[ "$failed" -eq 0 ]
