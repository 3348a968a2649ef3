#!/usr/bin/env bash
# The main job: install what is needed, build, and run the ticket-office demo on a ZooKeeper it starts
# itself. Extra arguments go to the demo (e.g. --tickets 2000 --sessions 8 --clients 25).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DZKLOCK_BUILD_TESTS=OFF > /dev/null
cmake --build build -j2 --target ticket_office
exec ./build/examples/ticket_office "$@"
