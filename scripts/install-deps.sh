#!/usr/bin/env bash
# Installs what zklock needs on Debian 12: the compiler and CMake, Boost 1.81 (Asio, Boost.Test), the
# single-threaded ZooKeeper C client, the ZooKeeper server (the tests and the demo start their own), the
# peers the interop tests and the benchmark run against (Apache Curator, kazoo), gnuplot for the
# benchmark's chart (scripts/bench.sh), stunnel and openssl for the TLS test, and what the partition
# tests build networks with (iproute2, iptables, libnetfilter-queue-dev), man-db for the test that reads
# zklock(1) as `man zklock`, doxygen for the reference (docs/Doxyfile, checked by a test), gcovr for
# scripts/coverage.sh, and Prometheus' promtool.
# Works as root, or as a user with sudo.
set -euo pipefail
packages=(
  build-essential cmake
  libboost1.81-dev libboost-test1.81-dev
  libzookeeper-st-dev zookeeper
  libcurator-recipes-java libcurator-framework-java python3-kazoo
  gnuplot-nox
  stunnel4 openssl
  iproute2 iptables libnetfilter-queue-dev
  man-db
  doxygen
  gcovr
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
updated=false
if [ ${#missing[@]} -ne 0 ]; then
  $sudo apt-get update -qq
  updated=true
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# promtool, which a test runs on zklock's Prometheus output: taken out of Debian's prometheus package
# into .tools/ (ignored by git) rather than installing the package, which would start a Prometheus
# server on the machine.
tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
if [ ! -x "$tools/bin/promtool" ]; then
  tmp=$(mktemp -d)
  chmod 755 "$tmp"  # apt-get download writes as its own user when it can
  if ! (cd "$tmp" && apt-get download -qq prometheus 2>/dev/null); then
    $updated || $sudo apt-get update -qq
    (cd "$tmp" && apt-get download -qq prometheus)
  fi
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
  mkdir -p "$tools/bin"
  cp "$tmp/x/usr/bin/promtool" "$tools/bin/promtool"
  rm -rf "$tmp"
fi
