#!/usr/bin/env bash
# A campaign: scripts/chaos.sh once per nemesis, SECONDS each (default 75: ten minutes of faults in all),
# then the table of results written into docs/testing.md between its "campaign" markers. Exits non-zero
# if any run failed (the table says which). Needs root.
#
# usage: scripts/chaos-campaign.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-75}
nemeses=(leader-iso minority bridge client-iso delay kill stop mixed)
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j2 --target zklock_chaos > /dev/null
table=$(mktemp)
failed=0
{
  echo "Campaign of $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD), ${seconds} s per nemesis, on $(nproc) cores:"
  echo
  echo "| nemesis | faults | sections | warnings | overlaps | late warnings | token regressions | lost updates | orphans | fenced writes | max inside (mutex/readers/semaphore of 2) | longest stall | worst recovery | mean recovery | verdict |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$table"
for n in "${nemeses[@]}"; do
  line=$(./build/tools/zklock_chaos --seconds "$seconds" --nemesis "$n" 2> "/tmp/zklock-chaos-$n.err" | grep '^chaos ') || failed=1
  echo "$line"
  get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$line"; }
  echo "| $n | $(get faults) | $(get sections) | $(get warnings) | $(get overlaps) | $(get late_warnings) | $(get token_regressions) | $(get lost_updates) | $(get orphans) | $(get fenced) | $(get max_inside) | $(get longest_stall_ms) ms | $(get worst_recovery_ms) ms | $(get mean_recovery_ms) ms | $(get verdict) |" >> "$table"
done
python3 - "$table" <<'PY'
import sys
table = open(sys.argv[1]).read()
path = "docs/testing.md"
text = open(path).read()
start, end = "<!-- campaign: start -->\n", "<!-- campaign: end -->"
i, j = text.index(start) + len(start), text.index(end)
open(path, "w").write(text[:i] + table + text[j:])
PY
rm -f "$table"
exit $failed
