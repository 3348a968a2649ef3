#!/usr/bin/env bash
# The partition test, as long as asked: a three-member cluster and three client machines, each in a
# network namespace of its own, where the library and the `zklock` command contend on a mutex, a
# read/write lock and a semaphore while a nemesis cuts links, delays them, kills or freezes the leader.
# The checker then judges the run's log (tools/chaos/checker.hpp). Prints one summary line; exits non-zero
# if mutual exclusion, the loss warning, the fencing tokens, an update or the clean-up failed. Needs root
# (network namespaces and packet filters); as another user it says so and exits 77.
#
# usage: scripts/chaos.sh [SECONDS] [--nemesis leader-iso|minority|bridge|client-iso|delay|kill|stop|mixed|A,B,...]
#                         [--seed N] [--dir DIR] [--no-cut-short]       (default: 60 s, mixed)
# A run's log stays in DIR (or, if it failed, in the directory it names); `zklock_chaos check LOG` judges it again.
# --no-cut-short makes the library's holders ignore their warning: the run must then fail (the checker's self-check).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j2 --target zklock_chaos > /dev/null
exec ./build/tools/zklock_chaos --seconds "$seconds" "$@"
