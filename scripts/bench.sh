#!/usr/bin/env bash
# zklock against its peers (Curator, kazoo), side by side on the same ZooKeeper in one job: one standalone
# server, then (--ensemble) three servers on loopback. Figures move from run to run and from box to box, so
# only ratios taken within one job mean anything.
#
# usage: scripts/bench.sh [--quick] [--smoke] [--ensemble] [--out DIR] [PEERS_DIR]
#   --quick     skip the peers' waiters runs (Curator's takes ~1 GB and 1000 threads)
#   --smoke     tiny counts everywhere, to check the plumbing in a minute or two; its DIR defaults to
#               build-bench/bench-smoke, so that it never overwrites the figures in docs/bench
#   --ensemble  after the standalone pass, a second pass on a three-server ensemble (zklock_bench serve 3)
#   --out DIR   where the results go (default: docs/bench), replaced at the end of the job:
#               results.txt  the benchmarks' key=value lines, as printed
#               results.csv  one row per figure: setup,implementation,scenario,params,key,value
#               meta.txt     date, commit, machine, versions, counts
#               summary.txt  the summary printed at the end
#               chart.dat    the chart's figures; bench.svg: the chart (scripts/bench-chart.gp)
#   PEERS_DIR   the peer benchmarks (default: ${ZKLOCK_PEERS:-../shared/peers})
# Relative DIR and PEERS_DIR are taken from the repo root.
# Environment: ZKLOCK_BENCH=path/to/zklock_bench skips the build into build-bench/; ZKLOCK_BENCH_TIMEOUT=S
# bounds each benchmark's run (default 900 s, 180 s with --smoke).
# A failed benchmark is reported and the job goes on; the exit status is 1 if anything failed.
# Needs Debian's zookeeper, libcurator-recipes-java, libcurator-framework-java, python3-kazoo,
# libzookeeper-st-dev and gnuplot-nox (scripts/install-deps.sh installs them all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

quick=0 smoke=0 ensemble=0 out=""
peers=${ZKLOCK_PEERS:-../shared/peers}
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --smoke) smoke=1 ;;
    --ensemble) ensemble=1 ;;
    --out) [ $# -ge 2 ] || { echo "bench.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift ;;
    --out=*) out=${1#--out=} ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    *) peers=$1 ;;
  esac
  shift
done
if [ -z "$out" ]; then
  if [ "$smoke" = 1 ]; then out=build-bench/bench-smoke; else out=docs/bench; fi
fi
case $peers in /*) ;; *) peers=$root/$peers ;; esac
case $out in /*) ;; *) out=$root/$out ;; esac
[ -x "$peers/run" ] || { echo "bench.sh: no peer benchmarks at $peers (run not found)" >&2; exit 2; }
command -v gnuplot >/dev/null || echo "bench.sh: gnuplot not found, there will be no chart (scripts/install-deps.sh)" >&2

# The counts. The peers cycle a few hundred times a second (~800/s with 32 threads on independent locks):
# their runs stay under a minute each.
if [ "$smoke" = 1 ]; then
  cycles=50 sections=200 ours_independent=500 peers_independent=200 many=1000 paths=100 peer_waiters=100
  limit=${ZKLOCK_BENCH_TIMEOUT:-180} passes=1
else
  cycles=500 sections=2000 ours_independent=20000 peers_independent=10000 many=100000 paths=10000 peer_waiters=1000
  limit=${ZKLOCK_BENCH_TIMEOUT:-900} passes=2
fi
# Every row compared with the peers runs `passes` times, each library in turn, and each library's figure is
# its best pass (the whole run: its requests and latencies with it); so do the bare client's floors. On this
# 2-core machine a disk write took 0.4 to 0.6 ms from one minute to the next, and one run of a side could
# fall a third below its neighbours; the best of two alternating runs is what each library can do on the
# machine that day.

bench=${ZKLOCK_BENCH:-}
if [ -z "$bench" ]; then
  cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=OFF >/dev/null
  make -C "$root/build-bench" -j2 zklock_bench >/dev/null
  bench=$root/build-bench/tools/zklock_bench
fi

# Everything goes to a scratch directory first, and into $out once the job is done.
work=$(mktemp -d "${TMPDIR:-/tmp}/zklock-bench.XXXXXX")
server_pid=""
# Stops the running server (or ensemble): on SIGTERM it stops its ZooKeeper servers and removes their files.
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
# Starts `zklock_bench serve ARGS...` and sets hosts to its connect string; fails if none comes.
# Its stdin is our pipe: closing it (or our death) stops the server.
start_server() {
  hosts=""
  coproc server { exec "$bench" serve "$@"; }
  # shellcheck disable=SC2154  # server_PID and server are set by coproc
  server_pid=$server_PID
  local fd=${server[0]:-}
  [ -n "$fd" ] && read -r -t 180 -u "$fd" hosts && [ -n "$hosts" ]
}

date_utc=$(date -u +%FT%TZ)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
# Read-only (no index refresh); the results themselves do not make the tree dirty.
if [ -n "$(git --no-optional-locks -C "$root" status --porcelain -- . ':(exclude)docs/bench' 2>/dev/null)" ]; then
  commit+=-dirty
fi
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
cpu=${cpu:-$(uname -m)}
version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }
{
  echo "date_utc=$date_utc"
  echo "commit=$commit"
  echo "nproc=$(nproc)"
  echo "cpu=$cpu"
  echo "kernel=$(uname -srm)"
  echo "zookeeper=$(version zookeeper)"
  echo "curator=$(version libcurator-recipes-java)"
  echo "kazoo=$(version python3-kazoo)"
  echo "zookeeper_c_client=$(version libzookeeper-st-dev)"
  echo "options=$([ "$smoke" = 1 ] && echo "smoke ")$([ "$quick" = 1 ] && echo "quick ")$([ "$ensemble" = 1 ] && echo ensemble)"
  echo "counts=cycles=$cycles sections=$sections independent=${ours_independent}/${peers_independent}(peers) waiters=$many paths=$paths peer_waiters=$peer_waiters"
} >"$work/meta.txt"
echo "setup,implementation,scenario,params,key,value" >"$work/results.csv"
: >"$work/results.txt"

# The scenario and its params (the CSV's columns) of a command line: zklock_bench's options, then the scenario
# and its counts. K= and N= are the amount of work; the rest (the shape) names the figure across implementations.
describe() {
  local extra=""
  while [ $# -gt 0 ]; do
    case $1 in
      --sessions) extra+=" sessions=$2"; shift 2 ;;
      --local-handoff-limit) extra+=" local_handoff_limit=$2"; shift 2 ;;
      --hold-us) extra+=" hold_us=$2"; shift 2 ;;
      --linger) extra+=" linger=1"; shift ;;
      --no-stats) extra+=" stats=off"; shift ;;
      --stats) extra+=" stats=on"; shift ;;
      *) break ;;
    esac
  done
  scenario=$1
  case $1 in
    uncontended|dropped|raw|floor) params="N=$2" ;;
    contended) params="${2}x$3 K=$4" ;;
    independent) params="T=$2 K=$3" ;;
    rw) params="readers=$2 writers=$3 K=$4" ;;
    semaphore) params="leases=$2 workers=$3 K=$4" ;;
    waiters) params="W=$2${3:+ paths=$3}" ;;
    cancel) params="W=$2" ;;
    *) params="${*:2}" ;;
  esac
  params+=$extra
}

# One CSV row per key=value of the implementation's line (and one for a failure's exit status).
record() {  # IMPLEMENTATION OUTPUT EXIT_STATUS
  printf '%s\n' "$2" | awk -v s="$setup" -v i="$1" -v c="$scenario" -v p="$params" -v rc="$3" '
    index($0, i " ") == 1 {
      for (f = 2; f <= NF; f++)
        if (split($f, kv, "=") == 2) { gsub(/,/, ";", kv[2]); print s "," i "," c "," p "," kv[1] "," kv[2] }
    }
    END { if (rc != 0) print s "," i "," c "," p ",failed_exit_status," rc }' >>"$work/results.csv"
}

# The newest zxid among the servers and the packets they have received in all ("ZXID PACKETS"; nothing if a
# server does not answer `srvr`). Their difference over a run is ZooKeeper's work for it, whoever the client:
# transactions (writes, and each session's creation and close) and requests (pings included).
zk_counts() {
  local h out z r zxid=0 packets=0
  for h in ${hosts//,/ }; do
    out=$(exec 3<>"/dev/tcp/${h%:*}/${h##*:}" && printf srvr >&3 && cat <&3) 2>/dev/null || return 0
    z=$(sed -n 's/^Zxid: //p' <<<"$out"); r=$(sed -n 's/^Received: //p' <<<"$out")
    [ -n "$z" ] && [ -n "$r" ] || return 0
    if (( z > zxid )); then zxid=$((z)); fi
    packets=$((packets + r))
  done
  echo "$zxid $packets"
}

failed=0
# Runs one benchmark (IMPLEMENTATION COMMAND...) and prints its line as soon as it is done; a failure is
# reported and the job goes on.
measure() {
  local impl=$1 output status=0 before after
  shift
  before=$(zk_counts)
  # --foreground: the benchmark stays in our process group, so that ^C reaches it too; the timeout kills the
  # command itself (zklock_bench, or the java, python or C program the peers' run execs), not its children.
  output=$(timeout --foreground -k 10 "$limit" "$@") || status=$?
  after=$(zk_counts)
  if [ -n "$before" ] && [ -n "$after" ] && [ -n "$output" ]; then
    read -r b_zxid b_packets <<<"$before"; read -r a_zxid a_packets <<<"$after"
    output=$(printf '%s\n' "$output" | awk -v i="$impl" -v t=$((a_zxid - b_zxid)) -v p=$((a_packets - b_packets)) \
      'index($0, i " ") == 1 { $0 = $0 " zk_txns=" t " zk_packets=" p } { print }')
  fi
  [ -z "$output" ] || printf '%s\n' "$output" | tee -a "$work/results.txt"
  record "$impl" "$output" "$status"
  if [ "$status" != 0 ]; then
    case $status in 124|137) status+=", timed out after $limit s" ;; esac
    echo "FAILED (exit $status): $*" | tee -a "$work/results.txt" >&2
    echo "$setup: exit $status: $*" >>"$work/failures"
    failed=1
  fi
}
ours() { describe "$@"; measure zklock "$bench" --hosts "$hosts" "$@"; }
peer() { describe "${@:2}"; measure "$1" "$peers/run" "$1" "$hosts" "${@:2}"; }
raw() { describe raw "$@"; measure raw-c "$peers/run" raw "$hosts" "$@"; }
floor() { describe floor "$@"; measure raw-c "$bench" --hosts "$hosts" floor "$@"; }
# A new server's first few hundred requests run in the JVM's interpreter: the floor measured then (the first
# run of a pass) was half what the server does a minute later. A warm-up, not recorded, goes first.
warm_up() {
  "$peers/run" raw "$hosts" "$cycles" >/dev/null 2>&1 || true
  "$bench" --hosts "$hosts" uncontended "$cycles" >/dev/null 2>&1 || true
}
begin() {  # SETUP: the heading of a pass
  setup=$1
  echo "# $setup: ZooKeeper $hosts, $(date -u +%FT%TZ), $(nproc) cores, zklock $commit" | tee -a "$work/results.txt"
  echo "${setup}_hosts=$hosts" >>"$work/meta.txt"
}

# --- standalone: one server for everybody ---------------------------------------------------------------
start_server || { echo "bench.sh: the ZooKeeper server did not start" >&2; exit 1; }
begin standalone
setups=standalone
warm_up
for _ in $(seq "$passes"); do
  raw "$cycles"
  floor "$cycles"
  ours uncontended "$cycles"; peer curator uncontended "$cycles"; peer kazoo uncontended "$cycles"
  ours dropped "$cycles"  # the peers have no dropped guard: compare with their uncontended
  for shape in "4 8" "1 32"; do
    # shellcheck disable=SC2086  # the shape splits into sessions and threads
    { ours contended $shape "$sections"; peer curator contended $shape "$sections"; peer kazoo contended $shape "$sections"; }
  done
  ours --local-handoff-limit 0 contended 4 8 "$sections"  # ablation: every hand-off through ZooKeeper
  ours independent 32 "$ours_independent"
  peer curator independent 32 "$peers_independent"; peer kazoo independent 32 "$peers_independent"
  ours rw 4 1 "$sections"; peer curator rw 4 1 "$sections"  # kazoo's bench has no rw or semaphore
  ours rw 16 1 "$sections"; peer curator rw 16 1 "$sections"
  ours semaphore 3 8 "$sections"; peer curator semaphore 3 8 "$sections"
done
# What the library's own statistics cost: local hand-offs (nothing else in a section: the largest share counting
# can take) with session_config::lock_statistics on and off, in alternate pairs; the summary compares the best
# of each. (--stats is the default, named so that these runs are told from the 1x32 row above.)
for _ in 1 2 3; do
  ours --stats contended 1 32 "$((sections * 100))"
  ours --no-stats contended 1 32 "$((sections * 100))"
done
# Holders overlap: a hold longer than a hand-off through the internal lock, so that max_inside reaches 3 (the
# peers' benchmark has no hold). Its ceiling is 3 leases / 20 ms = 150 sections/s.
ours --hold-us 20000 semaphore 3 8 "$((sections / 4))"
ours --sessions 1 rw 4 1 "$sections"         # local sharing: one session's readers share one read node
ours --sessions 1 semaphore 3 8 "$sections"  # local sharing: leases pass between one session's workers
ours waiters "$peer_waiters"                 # beside the peers' below
ours waiters "$many"
ours waiters "$many" "$paths"
ours cancel "$many"
if [ "$quick" = 0 ]; then peer curator waiters "$peer_waiters"; peer kazoo waiters "$peer_waiters"; fi
stop_server

# --- ensemble: three servers on loopback ----------------------------------------------------------------
if [ "$ensemble" = 1 ]; then
  if start_server 3; then
    begin ensemble
    setups+=" ensemble"
    warm_up
    for _ in $(seq "$passes"); do
      raw "$cycles"
      floor "$cycles"
      ours uncontended "$cycles"; peer curator uncontended "$cycles"; peer kazoo uncontended "$cycles"
      ours dropped "$cycles"
      for shape in "4 8" "1 32"; do
        # shellcheck disable=SC2086  # as above
        { ours contended $shape "$sections"; peer curator contended $shape "$sections"; peer kazoo contended $shape "$sections"; }
      done
      ours independent 32 "$ours_independent"
      peer curator independent 32 "$peers_independent"; peer kazoo independent 32 "$peers_independent"
    done
  else
    echo "FAILED: the three-server ensemble did not start (zklock_bench serve 3)" | tee -a "$work/results.txt" >&2
    echo "ensemble: the three-server ensemble did not start (zklock_bench serve 3)" >>"$work/failures"
    failed=1
  fi
  stop_server
fi
echo "finished_utc=$(date -u +%FT%TZ)" >>"$work/meta.txt"

# --- summary and chart -----------------------------------------------------------------------------------
# The figures of results.csv by setup, implementation, scenario, shape (params without the amount of work:
# K=, N=) and key; the runs of each setup in the order they ran. Shared by the summary and the chart.
csv_lib=$(cat <<'AWK'
  BEGIN { FS = "," }
  function shape(p,   w, i, n, s) {
    n = split(p, w, " "); s = ""
    for (i = 1; i <= n; i++) if (w[i] !~ /^[KN]=/) s = s (s == "" ? "" : " ") w[i]
    return s
  }
  function get(setup, impl, scen, shp, key,   k) {
    k = setup SUBSEP impl SUBSEP scen SUBSEP shp SUBSEP key
    return (k in fig) ? fig[k] : ""
  }
  # A run is a stretch of rows of one command line; a figure (setup, implementation, scenario, shape) run
  # more than once keeps its best run whole: the one whose first operations/s key (cycles_per_s,
  # sections_per_s, ...) is highest.
  FNR > 1 {
    run = $2 SUBSEP $3 SUBSEP shape($4)
    if (!(($1, run) in seen)) { seen[$1, run]; runs[$1, ++nruns[$1]] = run }
    line = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    if (line != last_line || $5 == first_key[nrun]) {  # (a run's lines may repeat a key, never its first)
      ++nrun; last_line = line; run_of[nrun] = $1 SUBSEP run; first_key[nrun] = $5
    }
    if (!((nrun, $5) in val)) keys[nrun] = keys[nrun] " " $5
    val[nrun, $5] = $6
    if ($5 ~ /_per_s$/ && !(nrun in score)) score[nrun] = $6
  }
  END {
    for (r = 1; r <= nrun; r++)
      if (!(run_of[r] in best) || score[r] + 0 > score[best[run_of[r]]] + 0) best[run_of[r]] = r
    for (r = 1; r <= nrun; r++) {
      if (best[run_of[r]] != r) continue
      n = split(keys[r], ks, " ")
      for (i = 1; i <= n; i++) fig[run_of[r] SUBSEP ks[i]] = val[r, ks[i]]
    }
  }
  # Sets, for `setup`, the bare C client's figures: w (serial write, us), p (pipelined writes/s), serial_floor
  # (its serial create+delete cycles/s), paths_floor (its cycles/s on 32 paths at once), multi_floor (its
  # serial cycles of one multi, a delete and the next create), ring_floor (its hand-offs/s between 4
  # sessions, each a multi and the watch event that wakes the next), semaphore_floor (the same between 8
  # sessions, each holder creating its permit and counting before it lets go) and rw4_floor, rw16_floor
  # (its sections/s of the read/write lock's protocol, 4 or 16 readers and a writer), or "".
  function floors(setup) {
    w = get(setup, "raw-c", "raw", "", "serial_write_us"); p = get(setup, "raw-c", "raw", "", "pipelined_writes_per_s")
    serial_floor = get(setup, "raw-c", "floor", "", "serial_cycles_per_s")
    paths_floor = get(setup, "raw-c", "floor", "", "pipelined_cycles_per_s")
    multi_floor = get(setup, "raw-c", "floor", "", "multi_cycles_per_s")
    ring_floor = get(setup, "raw-c", "floor", "", "handoffs_per_s")
    semaphore_floor = get(setup, "raw-c", "floor", "", "semaphore_sections_per_s")
    rw4_floor = get(setup, "raw-c", "floor", "", "rw_4r1w_sections_per_s")
    rw16_floor = get(setup, "raw-c", "floor", "", "rw_16r1w_sections_per_s")
    # One write, for the rows' floors: the faster of the serial create and half the serial create+delete
    # cycle (measured a minute apart, they have differed by half; the faster makes the floor the higher).
    wf = get(setup, "raw-c", "floor", "", "serial_cycle_us") / 2
    if (w + 0 > 0 && (wf <= 0 || w + 0 < wf)) wf = w + 0
  }
AWK
)

summary_awk=$(cat <<'AWK'
  # The statistics pairs: the best of each side, per setup (every run, not only the first as `fig` keeps).
  FNR > 1 && $2 == "zklock" && $5 == "sections_per_s" && $4 ~ / stats=(on|off)$/ {
    side = $4 ~ /stats=on$/ ? "on" : "off"
    if ($6 + 0 > best_stats[$1, side] + 0) best_stats[$1, side] = $6
    ++stats_runs[$1, side]; stats_shape[$1] = $4; sub(/ stats=(on|off)$/, "", stats_shape[$1])
  }
  function ratio(a, b) { return (a == "" || b + 0 == 0) ? "n/a" : sprintf("%.2f", a / b) }
  function pct(a, b) { return (a == "" || b + 0 == 0) ? "n/a" : sprintf("%.0f%%", 100 * a / b) }
  function dash(v) { return v == "" ? "-" : v }
  function trim(v) { sub(/^ +/, "", v); return v }
  function word1(v,   w) { split(v, w, " "); return w[1] }
  # A throughput row: LABEL, then where the figures are: zklock (scenario, shape), the peers (scenario, shape), key.
  function row(label, zs, zsh, ps, psh, key,   z, c, k) {
    z = get(S, "zklock", zs, zsh, key); c = get(S, "curator", ps, psh, key); k = get(S, "kazoo", ps, psh, key)
    if (z == "" && (c == "" && k == "" || zs != ps || zsh != psh)) return  # a variant of zklock alone
    printf "%-42s %9s %9s %9s %15s %13s\n", label, dash(z), dash(c), dash(k), ratio(z, c), ratio(z, k)
    shown[++nshown] = label SUBSEP zs SUBSEP zsh SUBSEP ps SUBSEP psh
    if (label !~ /^ /) parent = label
    if (z != "" && c + 0 > 0 && z / c < goal)  # a variant row is named with its parent's
      behind[++nbehind] = sprintf("%-42s %sx Curator%s", label ~ /^ / ? word1(parent) ", " trim(label) : label,
        ratio(z, c), floor_note(protocol_floor(zs, zsh), z, c))
  }
  # The floor of a row, in operations/s: the writes on its critical path, each waiting for the one before it
  # to commit, so that no client overlaps them. Measured where the bare client runs the row's own
  # requests with no recipe around them: an awaited cycle is a create and a delete (its serial cycle); a
  # dropped guard's delete rides with the next create, one multi a cycle (its multi loop); a hand-off
  # through ZooKeeper is the holder's multi and the watch event that wakes the next (its ring of 4
  # sessions); a semaphore section is its permit's create and then, once the permits are counted, the
  # multi that hands its internal lock on (the same ring of 8 sessions, with permits); a read/write section
  # is a create, listed behind it, and the awaited delete (its rw workers, a session each). Else estimated at
  # the bare client's serial write (wf) of the same setup: a read/write round (each reader once, then the
  # writer) is the writer's delete, then the readers'; a semaphore section two writes. "" where none is
  # known; sets floor_writes to what those writes are.
  function protocol_floor(zs, zsh,   r) {
    if (zs == "uncontended" && zsh == "") { floor_writes = "2 a cycle (bare cycle)"; return serial_floor }
    if (zs == "dropped" && zsh == "" && multi_floor != "") {
      floor_writes = "1 a cycle (bare multis)"; return multi_floor
    }
    if (zs == "contended" && zsh == "4x8 local_handoff_limit=0" && ring_floor != "") {
      floor_writes = "1 a hand-off (bare ring)"; return ring_floor
    }
    if (zs == "semaphore" && zsh == "leases=3 workers=8" && semaphore_floor != "") {
      floor_writes = "2 a section (bare ring)"; return semaphore_floor
    }
    if (zs == "rw" && zsh == "readers=4 writers=1" && rw4_floor != "") {
      floor_writes = "2 a section (bare rw)"; return rw4_floor
    }
    if (zs == "rw" && zsh == "readers=16 writers=1" && rw16_floor != "") {
      floor_writes = "2 a section (bare rw)"; return rw16_floor
    }
    if (wf + 0 <= 0) return ""
    if (zs == "dropped" && zsh == "") { floor_writes = "1 a cycle"; return 1e6 / wf }
    if (zs == "contended" && zsh == "4x8 local_handoff_limit=0") { floor_writes = "1 a hand-off"; return 1e6 / wf }
    if (zs == "semaphore" && zsh == "leases=3 workers=8") { floor_writes = "2 a section"; return 1e6 / (2 * wf) }
    if (zs == "rw" && zsh ~ /^readers=[0-9]+ writers=1$/) {
      r = zsh; sub(/^readers=/, "", r); sub(/ .*/, "", r)
      floor_writes = "2 a round of " (r + 1) " sections"
      return (r + 1) * 1e6 / (2 * wf)
    }
    return ""
  }
  function floor_note(f, z, c) {
    if (f == "" || c + 0 == 0) return ""
    if (f / c < goal) return sprintf("; its floor is %sx: %sx is out of reach in this job", ratio(f, c), goal)
    return sprintf("; its floor is %sx, zklock at %s of it", ratio(f, c), pct(z, f))
  }
  function floor_line(label, zs, zsh, ps, psh, key,   z, c, f) {
    f = protocol_floor(zs, zsh); z = get(S, "zklock", zs, zsh, key); c = get(S, "curator", ps, psh, key)
    if (f == "" || z == "") return
    if (!floors_shown++) {
      printf "the floor of each row: the writes on its critical path, each waiting for the one before it to commit;\n"
      printf "measured by the bare client where named (bare), else at %.0f us a write (the faster of the serial write\n", wf
      printf "and half the cycle above)\n"
      printf "%-42s %-24s %8s %8s %8s %8s\n", "", "writes", "floor/s", "/Curator", "zklock", "of floor"
    }
    printf "%-42s %-24s %8.0f %8s %8s %8s\n", label, floor_writes, f, c == "" ? "-" : ratio(f, c) "x", z, pct(z, f)
  }
  # ZooKeeper's work for one operation of a run: "transactions / requests", from the servers' own counts.
  function work(impl, scen, shp,   ops, t, q) {
    ops = get(S, impl, scen, shp, "sections"); if (ops == "") ops = get(S, impl, scen, shp, "cycles")
    t = get(S, impl, scen, shp, "zk_txns"); q = get(S, impl, scen, shp, "zk_packets")
    return (ops + 0 == 0 || t == "") ? "-" : sprintf("%.2f / %.2f", t / ops, q / ops)
  }
  function work_table(   r, f) {
    printf "\nZooKeeper's work per section or cycle: transactions / requests received (the servers' counts over the\n"
    printf "run; a session's opening and closing are a transaction each, pings are requests)\n"
    printf "%-42s %15s %15s %15s\n", "", "zklock", "Curator", "kazoo"
    for (r = 1; r <= nshown; r++) {
      split(shown[r], f, SUBSEP)
      printf "%-42s %15s %15s %15s\n", f[1], work("zklock", f[2], f[3]),
        f[2] == f[4] && f[3] == f[5] || f[1] ~ /peers/ ? work("curator", f[4], f[5]) : "-",
        f[2] == f[4] && f[3] == f[5] || f[1] ~ /peers/ ? work("kazoo", f[4], f[5]) : "-"
    }
    nshown = 0
  }
  function floor_row(label, impl, scen, shp, floor,   v) {
    v = get(S, impl, scen, shp, "cycles_per_s")
    if (v != "") printf "  %-30s %9s cycles/s = %5s\n", label, v, pct(v, floor)
  }
  function queue_row(impl, scen, shp,   g, paths) {
    if (get(S, impl, scen, shp, "waiters") == "") return
    if (!queues++) {
      print "\nwaiters queued behind held locks, then drained (cancel: cancelled instead, in cancel_s, at cancels/s)"
      printf "%-8s %-7s %8s %6s %10s %10s %10s %8s %8s\n", "", "", "waiters", "paths", "enqueue_s", "drain_s",
        "drained/s", "rss_mib", "threads"
    }
    g = scen == "cancel"
    paths = get(S, impl, scen, shp, "paths")
    printf "%-8s %-7s %8s %6s %10s %10s %10s %8s %8s\n", impl, scen, get(S, impl, scen, shp, "waiters"),
      paths == "" ? 1 : paths, dash(get(S, impl, scen, shp, "enqueue_s")),
      dash(get(S, impl, scen, shp, g ? "cancel_s" : "drain_s")),
      dash(get(S, impl, scen, shp, g ? "cancels_per_s" : "drain_per_s")),
      dash(get(S, impl, scen, shp, "rss_mib")), dash(get(S, impl, scen, shp, "threads"))
  }
  END {
    goal = 3
    print title
    n = split(setups, order, " ")
    for (i = 1; i <= n; i++) {
      S = order[i]
      floors(S)  # (the rows' floors need the bare client's figures)
      printf "\n== %s: %s\n", S, S == "ensemble" ? "three ZooKeeper servers on loopback" : "one ZooKeeper server"
      printf "%-42s %9s %9s %9s %15s %13s\n", "operations/s", "zklock", "Curator", "kazoo", "zklock/curator", "zklock/kazoo"
      row("uncontended cycles_per_s", "uncontended", "", "uncontended", "", "cycles_per_s")
      row("dropped cycles_per_s (peers: uncontended)", "dropped", "", "uncontended", "", "cycles_per_s")
      row("contended 4x8 sections_per_s", "contended", "4x8", "contended", "4x8", "sections_per_s")
      row("  local_handoff_limit=0 (peers: 4x8)", "contended", "4x8 local_handoff_limit=0", "contended", "4x8",
          "sections_per_s")
      row("contended 1x32 sections_per_s", "contended", "1x32", "contended", "1x32", "sections_per_s")
      row("independent T=32 cycles_per_s", "independent", "T=32", "independent", "T=32", "cycles_per_s")
      row("rw 4r+1w sections_per_s", "rw", "readers=4 writers=1", "rw", "readers=4 writers=1", "sections_per_s")
      row("  --sessions 1 (peers: a session each)", "rw", "readers=4 writers=1 sessions=1", "rw",
          "readers=4 writers=1", "sections_per_s")
      row("rw 16r+1w sections_per_s", "rw", "readers=16 writers=1", "rw", "readers=16 writers=1", "sections_per_s")
      row("semaphore 3 of 8 sections_per_s", "semaphore", "leases=3 workers=8", "semaphore", "leases=3 workers=8",
          "sections_per_s")
      row("  holding 20 ms (ceiling 150; zklock alone)", "semaphore", "leases=3 workers=8 hold_us=20000", "-", "-",
          "sections_per_s")
      row("  --sessions 1 (peers: a session each)", "semaphore", "leases=3 workers=8 sessions=1", "semaphore",
          "leases=3 workers=8", "sections_per_s")

      # and waiters over many paths draining at 150,000/s, as one path already does
      for (r = 1; r <= nruns[S]; r++) {
        split(runs[S, r], f, SUBSEP)
        if (f[1] != "zklock" || f[2] != "waiters" || get(S, "zklock", "waiters", f[3], "paths") + 0 <= 1) continue
        v = get(S, "zklock", "waiters", f[3], "drain_per_s")
        if (v != "" && v + 0 < 150000)
          behind[++nbehind] = sprintf("%-42s %s/s (goal: 150000/s)", "waiters over " get(S, "zklock", "waiters", f[3],
            "paths") " paths drained", v)
      }
      # Issue 22's goal: every scenario at 3x Curator or more.
      if (nbehind) {
        printf "\nbehind the goal (%sx Curator in every row; waiters over many paths at 150000/s):\n", goal
        for (b = 1; b <= nbehind; b++) print "  " behind[b]
      } else {
        printf "\nbehind the goal (%sx Curator in every row; waiters over many paths at 150000/s): none\n", goal
      }
      nbehind = 0

      work_table()

      if (best_stats[S, "on"] != "" && best_stats[S, "off"] != "") {
        on = best_stats[S, "on"]; off = best_stats[S, "off"]
        printf "\nthe library's statistics (session_config::lock_statistics), contended %s, best of %d pairs:\n",
          stats_shape[S], stats_runs[S, "on"]
        printf "  on %s sections/s, off %s sections/s: %+.3f us per acquire (%+.1f%%)\n", on, off,
          1e6 / on - 1e6 / off, 100 * (off / on - 1)
      }

      if (w != "" || p != "")
        printf "\nthe bare C client: serial write %s us, serial read %s us, pipelined writes %s/s\n", dash(w),
          dash(get(S, "raw-c", "raw", "", "serial_read_us")), dash(p)
      if (serial_floor != "") {
        printf "of its serial lock-free cycle, create(ephemeral, sequential) then delete: %s cycles/s (%s us a cycle):\n",
          serial_floor, get(S, "raw-c", "floor", "", "serial_cycle_us")
        floor_row("zklock uncontended (awaited)", "zklock", "uncontended", "", serial_floor)
        floor_row("zklock dropped", "zklock", "dropped", "", serial_floor)
        floor_row("Curator uncontended", "curator", "uncontended", "", serial_floor)
        floor_row("kazoo uncontended", "kazoo", "uncontended", "", serial_floor)
      }
      floors_shown = 0
      floor_line("uncontended cycles_per_s", "uncontended", "", "uncontended", "", "cycles_per_s")
      floor_line("dropped cycles_per_s", "dropped", "", "uncontended", "", "cycles_per_s")
      floor_line("contended 4x8, local_handoff_limit=0", "contended", "4x8 local_handoff_limit=0", "contended", "4x8",
                 "sections_per_s")
      floor_line("rw 4r+1w sections_per_s", "rw", "readers=4 writers=1", "rw", "readers=4 writers=1", "sections_per_s")
      floor_line("rw 16r+1w sections_per_s", "rw", "readers=16 writers=1", "rw", "readers=16 writers=1",
                 "sections_per_s")
      floor_line("semaphore 3 of 8 sections_per_s", "semaphore", "leases=3 workers=8", "semaphore",
                 "leases=3 workers=8", "sections_per_s")
      if (paths_floor != "") {
        printf "of such cycles on 32 paths at once, on one session: %s cycles/s:\n", paths_floor
        floor_row("zklock independent T=32", "zklock", "independent", "T=32", paths_floor)
        floor_row("Curator independent T=32", "curator", "independent", "T=32", paths_floor)
        floor_row("kazoo independent T=32", "kazoo", "independent", "T=32", paths_floor)
      }

      queues = 0  # waiters and cancel runs, in the order they ran (cancel: cancel_s and cancels/s)
      for (r = 1; r <= nruns[S]; r++) {
        split(runs[S, r], f, SUBSEP)
        if (f[2] == "waiters" || f[2] == "cancel") queue_row(f[1], f[2], f[3])
      }
    }
  }
AWK
)

# One block per setup (two blank lines between), one row per group of bars: label, zklock, Curator, kazoo and
# the floor (operations/s; NaN where there is no figure: a gap in the chart).
chart_awk=$(cat <<'AWK'
  function bars(label, zs, zsh, ps, psh, key, floor,   i, v) {
    v[1] = get(S, "zklock", zs, zsh, key); v[2] = get(S, "curator", ps, psh, key)
    v[3] = get(S, "kazoo", ps, psh, key); v[4] = floor
    if (v[1] == "" && v[2] == "" && v[3] == "") v[4] = ""  # a floor with nothing run beside it is not drawn
    printf "\"%s\"", label
    for (i = 1; i <= 4; i++) printf " %s", v[i] == "" ? "NaN" : v[i]
    printf "\n"
  }
  END {
    n = split(setups, order, " ")
    for (i = 1; i <= n; i++) {
      S = order[i]
      floors(S)
      if (i > 1) printf "\n\n"
      printf "# %s: scenario zklock curator kazoo floor (operations/s)\n", S
      bars("uncontended", "uncontended", "", "uncontended", "", "cycles_per_s", serial_floor)
      bars("dropped", "dropped", "", "-", "", "cycles_per_s", multi_floor != "" ? multi_floor : serial_floor)
      bars("contended 4x8", "contended", "4x8", "contended", "4x8", "sections_per_s", "")
      bars("contended 1x32", "contended", "1x32", "contended", "1x32", "sections_per_s", "")
      bars("independent T=32", "independent", "T=32", "independent", "T=32", "cycles_per_s", paths_floor)
      bars("rw 4r+1w", "rw", "readers=4 writers=1", "rw", "readers=4 writers=1", "sections_per_s", rw4_floor)
      bars("rw 16r+1w", "rw", "readers=16 writers=1", "rw", "readers=16 writers=1", "sections_per_s", rw16_floor)
      bars("semaphore 3/8", "semaphore", "leases=3 workers=8", "semaphore", "leases=3 workers=8", "sections_per_s",
           semaphore_floor)
    }
  }
AWK
)

title="zklock, Curator and kazoo: $date_utc, commit $commit, $(nproc) cores ($cpu)"
if [ "$smoke" = 1 ]; then title+=", smoke run (tiny counts)"; fi
echo
{
  awk -v setups="$setups" -v title="$title" "$csv_lib"$'\n'"$summary_awk" "$work/results.csv"
  if [ -s "$work/failures" ]; then printf '\nFAILED:\n'; sed 's/^/  /' "$work/failures"; fi
} | tee "$work/summary.txt"
awk -v setups="$setups" "$csv_lib"$'\n'"$chart_awk" "$work/results.csv" >"$work/chart.dat"
# The y range: the decade under the smallest figure to two above the largest (room for the bars' labels).
read -r ymin ymax < <(awk '!/^#/ && NF >= 5 {
    for (i = NF - 3; i <= NF; i++) if ($i != "NaN" && $i > 0) { if (lo == "" || $i < lo) lo = $i; if ($i > hi) hi = $i }
  }
  END { if (lo == "") print 10, 10000; else printf "%.0f %.0f\n", 10 ^ int(log(lo) / log(10) + 1e-9), 10 ^ (int(log(hi) / log(10) + 1e-9) + 2) }' \
  "$work/chart.dat")
if ! command -v gnuplot >/dev/null; then
  echo "FAILED: no chart: gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)" >&2
  failed=1
elif ! gnuplot -c "$root/scripts/bench-chart.gp" "$work/chart.dat" "$work/bench.svg" "$title" "$setups" "$ymin" "$ymax"; then
  echo "FAILED: the chart (scripts/bench-chart.gp)" >&2
  rm -f "$work/bench.svg"
  failed=1
fi

mkdir -p "$out"
for f in results.txt results.csv meta.txt summary.txt chart.dat bench.svg; do
  if [ -f "$work/$f" ]; then cp "$work/$f" "$out/$f"; else rm -f "$out/$f"; fi
done
echo "bench.sh: results in $out$([ "$failed" = 0 ] || echo ', with FAILURES (above)')"
exit "$failed"
