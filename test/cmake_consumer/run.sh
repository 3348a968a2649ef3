#!/usr/bin/env bash
# Builds and runs a consumer of zklock, one of the two ways README shows:
#   run.sh install BUILD [FLAGS]   installs the build tree BUILD into a temporary prefix; find_package(zklock)
#   run.sh fetch SOURCE [FLAGS]    FetchContent from the checkout SOURCE (the library is built there)
# FLAGS: compile and link flags the build used (e.g. the sanitizers').
set -euo pipefail
mode=$1
from=$2
flags=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $mode in
install)
  cmake --install "$from" --prefix "$work/prefix" > /dev/null
  cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" > /dev/null
  ;;
fetch)
  # -O0: this checks how the library is consumed, not how fast it runs. In unity batches, as a parent
  # project's CMAKE_UNITY_BUILD asks (a subproject zklock leaves that to its parent): 92 s of compile CPU
  # instead of about 260 file by file (issue 49). scripts/coverage.sh is the build
  # that compiles each of the library's files on its own, so that a missing #include shows.
  cmake -S "$here/fetch" -B "$work/build" -DZKLOCK_SOURCE_DIR="$from" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" > /dev/null
  ;;
*)
  echo "usage: run.sh install BUILD [FLAGS] | run.sh fetch SOURCE [FLAGS]" >&2
  exit 2
  ;;
esac
cmake --build "$work/build" -j2 > /dev/null
"$work/build/consumer"
