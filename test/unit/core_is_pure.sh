#!/usr/bin/env bash
# The pure core (src/recipes/core, src/session/core) includes no Asio and no C client, and neither reads a
# clock nor calls the OS: time comes in as an argument, so that its table tests decide every ordering.
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
dirs=("$root/src/recipes/core" "$root/src/session/core")
pattern='#include <boost/asio|#include <zookeeper|#include "\.\./|#include <unistd|#include <sys/|#include <random>|#include <thread>|#include <fstream>|steady_clock::now|system_clock::now|getenv|gethostname'
# grep says 0 (a line matched), 1 (none did) or 2 (it could not read a directory): only 1 is clean.
rc=0
grep -rnE "$pattern" "${dirs[@]}" || rc=$?
if [[ $rc -eq 0 ]]; then
    echo "core_is_pure: the lines above do not belong in the pure core" >&2
    exit 1
elif [[ $rc -ne 1 ]]; then
    echo "core_is_pure: could not read ${dirs[*]} (grep exit $rc)" >&2
    exit 1
fi
files=$(find "${dirs[@]}" -type f -name '*.[hc]pp' | wc -l)
if [[ $files -lt 10 ]]; then
    echo "core_is_pure: only $files source files under ${dirs[*]}: is this the source tree?" >&2
    exit 1
fi
echo "core_is_pure: $files files, none includes Asio, the C client or the OS, or reads a clock"
