#!/usr/bin/env bash
# Build time and disk of a fresh clone: bench/build_time.sh REV LABEL [OUT]
#
# Clones this repository at REV into an empty folder, times `cargo build --release`, then
# `cargo test --workspace --no-run`, and measures target/ after both; appends one line to OUT
# (default target/build-time.txt). Compare two revisions by interleaving their runs on an
# otherwise idle machine (A, B, A, B) and comparing medians: these machines are noisy.
set -u
rev=$1; label=$2; out=${3:-$(git rev-parse --show-toplevel)/target/build-time.txt}
repo=$(git rev-parse --show-toplevel)
dir=$(mktemp -d /tmp/virtlens-build-time-XXXXXX)
trap 'rm -rf "$dir"' EXIT
git clone -q "$repo" "$dir/src" && cd "$dir/src" && git checkout -q "$rev"
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; local rc=$?; e=$(date +%s.%N); echo "$(echo "$e - $s" | bc) rc=$rc"; }
release=$(t cargo build --release)
tests=$(t cargo test --workspace --no-run)
mb=$(du -sm target | cut -f1)
execs=$(cargo test --workspace --no-run 2>&1 | grep -c Executable)
mkdir -p "$(dirname "$out")"
echo "$label rev=$rev release_s=$release test_build_s=$tests target_MB=$mb test_executables=$execs" | tee -a "$out"
