#!/usr/bin/env bash
# The pure core (src/recipes/core, src/session/core) includes no Asio and no C client, and neither reads a
# clock nor calls the OS: time comes in as an argument, so that its table tests decide every ordering.
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
dirs=("$root/src/recipes/core" "$root/src/session/core")
pattern='#include <boost/asio|#include <zookeeper|#include "\.\./|#include <unistd|#include <sys/|#include <random>|#include <thread>|#include <fstream>|steady_clock::now|system_clock::now|getenv|gethostname'
if grep -rnE "$pattern" "${dirs[@]}"; then
    echo "core_is_pure: the lines above do not belong in the pure core" >&2
    exit 1
fi
echo "core_is_pure: $(find "${dirs[@]}" -type f | wc -l) files, none includes Asio, the C client or the OS, or reads a clock"
