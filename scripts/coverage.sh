#!/usr/bin/env bash
# Line and branch coverage of the library (src/ and include/, not the test harness src/testing/) from the
# whole suite: builds it with --coverage at -O0 in build-coverage/, runs every test, and prints one line
# per directory, `DIR LINES% BRANCHES%`, then the totals; the per-file HTML report is
# build-coverage/coverage/index.html. Branches are counted as gcovr does with --exclude-throw-branches and
# --exclude-unreachable-branches: the branches a compiler adds for exceptions are not the code's.
# Each source file compiled on its own (ZKLOCK_UNITY_BUILD=OFF): the one build that shows a missing #include
# that a unity batch hides (the test command's builds all use unity batches; issue 49).
# -fprofile-update=atomic: the tests that use several threads would otherwise race on the counters (gcov
# then reads negative branch counts).
# Exit status: the tests' (the figures are printed whatever it is).
# usage: scripts/coverage.sh [CTEST-ARGS...]   e.g. -L unit, for the table tests' coverage alone
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=build-coverage
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g --coverage -fprofile-update=atomic" \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DZKLOCK_UNITY_BUILD=OFF -DZKLOCK_BUILD_TESTS=ON -DZKLOCK_BUILD_EXAMPLES=ON \
  -DZKLOCK_BUILD_COMMAND=ON > /dev/null
cmake --build "$dir" -j2
find "$dir" -name '*.gcda' -delete  # counts from this run only
status=0
ctest --test-dir "$dir" -j2 --output-on-failure "$@" || status=$?
mkdir -p "$dir/coverage"
gcovr --root . --object-directory "$dir" --filter 'src/' --filter 'include/' --exclude 'src/testing/' \
  --exclude-throw-branches --exclude-unreachable-branches --gcov-ignore-parse-errors -j 2 \
  --json-summary "$dir/coverage/summary.json" --html-details "$dir/coverage/index.html" > /dev/null
python3 - "$dir/coverage/summary.json" <<'PY'
import json, os, sys
files = json.load(open(sys.argv[1]))["files"]
dirs = {}
for f in files:
    d = dirs.setdefault(os.path.dirname(f["filename"]), [0, 0, 0, 0])
    d[0] += f["line_covered"]; d[1] += f["line_total"]; d[2] += f["branch_covered"]; d[3] += f["branch_total"]
pct = lambda a, b: f"{100.0 * a / b:.1f}%" if b else "-"
total = [0, 0, 0, 0]
for name in sorted(dirs):
    c = dirs[name]
    total = [t + x for t, x in zip(total, c)]
    print(f"{name} {pct(c[0], c[1])} {pct(c[2], c[3])}")
print(f"total {pct(total[0], total[1])} {pct(total[2], total[3])} ({total[0]}/{total[1]} lines, {total[2]}/{total[3]} branches)")
PY
echo "per file: $dir/coverage/index.html"
exit "$status"
