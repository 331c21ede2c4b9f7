#!/usr/bin/env bash
# (A copy of the team tool that fetches libvirt's golden files, kept in the repo so a clean clone can run it.)
# Fetch libvirt's own XML→QEMU-argv golden files (its tests/qemuxml*data) from the Debian source package of the
# release this machine's apt sources carry, without changing the system's apt configuration.
# Usage: libvirt-testdata.sh DEST_DIR   → DEST_DIR/{*.xml,*.args,*.err} and DEST_DIR/VERSION
set -euo pipefail
dest=${1:?usage: libvirt-testdata.sh DEST_DIR}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{lists/partial,cache/archives/partial,src} "$dest"
# the system's deb entries, as deb-src, in a private list
for f in /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f"; echo; done >"$work/src.sources"
o=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work" -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
mv "$work/src.sources" "$work/deb-src.sources"
apt-get "${o[@]}" -qq update 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
(cd "$work/src" && apt-get "${o[@]}" -qq source --download-only libvirt 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
orig=$(ls "$work"/src/libvirt_*.orig.tar.xz "$work"/src/libvirt_*.orig.tar.gz 2>/dev/null | head -1 || true)
[ -n "$orig" ] || { echo "no libvirt source package could be downloaded" >&2; exit 1; }
ver=$(basename "$orig" | sed -E 's/libvirt_([^.]+\.[^.]+\.[^.]+)\.orig.*/\1/')
tar -xf "$orig" -C "$work/src"
data=$( (ls -d "$work"/src/libvirt-*/tests/qemuxmlconfdata "$work"/src/libvirt-*/tests/qemuxml2argvdata 2>/dev/null || true) | head -1)
[ -n "$data" ] || { echo "no tests/qemuxml*data in libvirt $ver" >&2; exit 1; }
cp "$data"/*.xml "$data"/*.args "$dest"/ 2>/dev/null || true
cp "$data"/*.err "$dest"/ 2>/dev/null || true
echo "libvirt $ver ($(basename "$data"))" >"$dest/VERSION"
echo "libvirt $ver: $(ls "$dest"/*.xml | wc -l) xml, $(ls "$dest"/*.args | wc -l) args in $dest"
