#!/usr/bin/env bash
# Installs the build tree BUILD into a temporary prefix and builds and runs a consumer of it.
# usage: run.sh BUILD [FLAGS]  (FLAGS: compile and link flags the build used, e.g. the sanitizers')
set -euo pipefail
build=$1
flags=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" > /dev/null
cmake --build "$work/build" > /dev/null
"$work/build/consumer"
