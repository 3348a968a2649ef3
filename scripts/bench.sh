#!/usr/bin/env bash
# zklock against its peers (Curator, kazoo), side by side on ONE ZooKeeper server in one job:
# figures move from run to run and from box to box, so only ratios taken within one job mean anything.
#
# usage: scripts/bench.sh [--quick] [PEERS_DIR]
#   --quick    skip the peers' waiters runs (Curator's takes ~1 GB and 1000 threads)
#   PEERS_DIR  the peer benchmarks (default: ${ZKLOCK_PEERS:-../shared/peers}, relative to the repo root)
# Environment: ZKLOCK_BENCH=path/to/zklock_bench skips the build into build-bench/.
# Needs Debian's zookeeper, libcurator-recipes-java, libcurator-framework-java, python3-kazoo,
# libzookeeper-st-dev.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

quick=0
peers=${ZKLOCK_PEERS:-../shared/peers}
for arg; do
  case $arg in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "bench.sh: unknown option $arg" >&2; exit 2 ;;
    *) peers=$arg ;;
  esac
done
case $peers in /*) ;; *) peers=$root/$peers ;; esac
[ -x "$peers/run" ] || { echo "bench.sh: no peer benchmarks at $peers (run not found)" >&2; exit 2; }

bench=${ZKLOCK_BENCH:-}
if [ -z "$bench" ]; then
  cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=OFF >/dev/null
  make -C "$root/build-bench" -j2 zklock_bench >/dev/null
  bench=$root/build-bench/tools/zklock_bench
fi

# One server for everybody. Its stdin is our pipe: closing it (or our death) stops the server.
coproc server { exec "$bench" serve; }
# shellcheck disable=SC2154  # server_PID is set by coproc
server_pid=$server_PID
trap 'kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
read -r -t 120 -u "${server[0]}" hosts || { echo "bench.sh: the ZooKeeper server did not start" >&2; exit 1; }
echo "# server $hosts, $(date -u +%FT%TZ), $(nproc) cores, zklock $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

results=$(mktemp)
trap 'rm -f "$results"; kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
failed=0
# Runs one benchmark and prints its line as soon as it is done; a failure is reported and the job goes on.
measure() {
  if ! "$@" | tee -a "$results"; then
    echo "FAILED: $*" | tee -a "$results" >&2
    failed=1
  fi
}
ours() { measure "$bench" --hosts "$hosts" "$@"; }
peer() { measure "$peers/run" "$1" "$hosts" "${@:2}"; }

peer raw 500
for scenario in "uncontended 500" "contended 4 8 2000" "contended 1 32 2000"; do
  # shellcheck disable=SC2086  # the scenario splits into its arguments
  { ours $scenario; peer curator $scenario; peer kazoo $scenario; }
done
ours --local-handoff-limit 0 contended 4 8 2000  # ablation: every hand-off through ZooKeeper
for scenario in "rw 4 1 2000" "semaphore 3 8 2000"; do  # kazoo's bench has no rw or semaphore
  # shellcheck disable=SC2086  # as above
  { ours $scenario; peer curator $scenario; }
done
ours --sessions 1 rw 4 1 2000         # local sharing: one session's readers share one read node
ours --sessions 1 semaphore 3 8 2000  # local sharing: leases pass between one session's workers
ours waiters 1000
if [ "$quick" = 0 ]; then peer curator waiters 1000; peer kazoo waiters 1000; fi

# key=value of the first line starting with PREFIX (the defaults come before the ablation and --sessions 1).
value() { awk -v p="$1" -v k="$2" 'index($0, p) == 1 { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' "$results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
echo
printf '%-34s %15s %13s\n' "ratio" "zklock/curator" "zklock/kazoo"
row() {  # label, line prefix after the implementation's name, key
  local z; z=$(value "zklock $2" "$3")
  printf '%-34s %15s %13s\n' "$1" "$(ratio "$z" "$(value "curator $2" "$3")")" "$(ratio "$z" "$(value "kazoo $2" "$3")")"
}
row "uncontended cycles_per_s" "uncontended " cycles_per_s
row "contended 4x8 sections_per_s" "contended sessions=4 threads=8 " sections_per_s
row "contended 1x32 sections_per_s" "contended sessions=1 threads=32 " sections_per_s
row "rw 4r+1w sections_per_s" "rw readers=4 writers=1 " sections_per_s
row "semaphore 3 of 8 sections_per_s" "semaphore leases=3 workers=8 " sections_per_s
exit "$failed"
