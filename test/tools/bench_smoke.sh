#!/usr/bin/env bash
# Every zklock_bench scenario with small counts on one server it starts. Each scenario checks itself and
# exits non-zero on a failure (a mutual exclusion violation, a fencing token going back, a cancelled
# waiter granted, a drain that does not finish); this also checks that each prints its figures.
# usage: bench_smoke.sh PATH/TO/zklock_bench
set -euo pipefail
bench=$1
coproc server { exec "$bench" serve; }
# shellcheck disable=SC2154  # server_PID is set by coproc
server_pid=$server_PID
trap 'kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
read -r -t 120 -u "${server[0]}" hosts || { echo "bench_smoke: the server did not start" >&2; exit 1; }

failed=0
# WHAT-THE-OUTPUT-MUST-CONTAIN [--not WHAT-IT-MUST-NOT] SCENARIO ARGS...
expect() {
  local want=$1 unwanted="" out
  shift
  if [[ $1 == --not ]]; then
    unwanted=$2
    shift 2
  fi
  if ! out=$("$bench" --hosts "$hosts" "$@"); then
    echo "FAILED: zklock_bench $* exited non-zero" >&2
    failed=1
  elif ! grep -q -- "$want" <<<"$out"; then
    echo "FAILED: zklock_bench $*: '$want' not in: $out" >&2
    failed=1
  elif [[ -n $unwanted ]] && grep -q -- "$unwanted" <<<"$out"; then
    echo "FAILED: zklock_bench $*: '$unwanted' in: $out" >&2
    failed=1
  else
    echo "$out"
  fi
}
expect "cycles_per_s=" uncontended 20
expect "cycles_per_s=" dropped 20
expect "violations=0 local_handoff_limit=10" contended 2 4 200
expect "violations=0 local_handoff_limit=0" --local-handoff-limit 0 contended 2 2 40
expect "threads=4 cycles=40 " independent 4 40
expect "waiters=200 paths=20 " waiters 200 20
expect "cancel waiters=200 " cancel 200
expect "violations=0" rw 2 1 60
expect "violations=0" --sessions 1 semaphore 2 4 60
expect "violations=0" --hold-us 1000 semaphore 2 4 40
expect "ring_sessions=4 handoffs_per_s=[0-9]* semaphore_sessions=8 semaphore_sections_per_s=[0-9]* rw_4r1w_sections_per_s=[0-9]* rw_16r1w_sections_per_s=[0-9]" floor 20
# The library's own counts of the scenario's acquires (after its warm-ups), and none with --no-stats.
expect "lib_granted=20 " uncontended 20
expect "lib_granted=40 " independent 4 40
expect "lib_granted=60 " rw 2 1 60
expect "lib_granted=40 " semaphore 2 4 40
expect "violations=0" --not "zklock library" --no-stats contended 2 4 200
exit "$failed"
