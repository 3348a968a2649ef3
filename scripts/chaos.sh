#!/usr/bin/env bash
# The chaos test of the mutex, as long as asked: a three-member ensemble whose leader is killed and
# restarted, frozen and thawed, under sessions x coroutines incrementing a counter under the lock.
# Prints one summary line (sections, violations, token regressions, late loss warnings, orphans, longest
# stall, ...); exits non-zero if mutual exclusion, fencing, the loss signal or the clean-up failed.
#
# usage: scripts/chaos.sh [SECONDS]   (default 60; for --sessions, --coroutines, --seed run build/tools/zklock_chaos)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j2 --target zklock_chaos > /dev/null
exec ./build/tools/zklock_chaos --seconds "${1:-60}"
