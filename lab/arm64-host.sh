#!/usr/bin/env bash
# The arm64 lab host: a real KVM host with arm64 exits, on any x86-64 Linux machine with QEMU.
#
# QEMU's TCG emulates an arm64 CPU with EL2 (`-M virt,virtualization=on -cpu max`). Debian's
# arm64 kernel booted under it starts at EL2 and initialises KVM, and a VM run inside traps to
# it as on an arm64 server: `kvm_exit` carries the exception class (`esr_ec`), `kvm_entry` the
# PC, and tracefs and BPF work on them. Times are TCG's (an emulated exception costs far more
# than a hardware one); counts and classes are real.
#
# The userland is small and arm64: Debian's busybox, the cross-built virtlens
# (target/aarch64-unknown-linux-gnu/release/virtlens) with the cross toolchain's glibc, and the
# lab guest (lab/arm64-guest: a VM that makes a known number of MMIO and HVC exits).
#
#   lab/arm64-host.sh build           fetch the kernel and busybox (target/lab-arm64) and
#                                     cross-build virtlens and the guest
#   lab/arm64-host.sh run OUT CMD…    boot the host and run CMD (a busybox shell command line)
#                                     as root; OUT (created) is shared read-write at the same
#                                     path, the checkout read-only at its own; the console goes
#                                     to OUT/console.log; the exit status is CMD's (124 on
#                                     timeout, 125 when the host failed before CMD ran)
#
# Environment: TIMEOUT (seconds, 900), SMP (4), MEM (MiB, 2048), TCG_THREAD (multi; `single`
# runs every emulated CPU on one host thread: slower, and free of the missed-tracepoint artefact
# lab/README.md describes).
#
# Inside, CMD finds virtlens and arm64-guest on PATH, /dev/kvm, tracefs at /sys/kernel/tracing,
# debugfs, bpffs and a tmpfs /tmp.
#
# Needs: qemu-system-arm, gcc-aarch64-linux-gnu, cpio, binutils, xz-utils, the rustup target
# aarch64-unknown-linux-gnu, and apt knowing arm64 packages (dpkg --add-architecture arm64;
# apt-get update) for `apt-get download` of linux-image-arm64 and busybox-static.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${LAB_CACHE:-$root/target/lab-arm64}
target=aarch64-unknown-linux-gnu
sysroot=/usr/aarch64-linux-gnu

me=lab/arm64-host.sh
die() { echo "$me: $*" >&2; exit 2; }
# shellcheck source=lab/lib.sh
. "$root/lab/lib.sh"

need_tools() {
  local t
  for t in qemu-system-aarch64 aarch64-linux-gnu-gcc cpio gzip dpkg-deb apt-get strings xz; do
    command -v "$t" >/dev/null ||
      die "missing $t (apt-get install qemu-system-arm gcc-aarch64-linux-gnu cpio binutils xz-utils)"
  done
  [ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] || die "no $sysroot/lib/ld-linux-aarch64.so.1 (gcc-aarch64-linux-gnu)"
  rustup target list --installed 2>/dev/null | grep -qx "$target" ||
    die "missing the Rust target $target (rustup target add $target)"
  apt-cache show busybox-static:arm64 >/dev/null 2>&1 ||
    die "apt knows no arm64 packages (dpkg --add-architecture arm64 && apt-get update)"
}

fetch_busybox() {
  [ -x "$cache/busybox" ] && return
  (cd "$cache" && rm -f busybox-static_*.deb && apt-get download busybox-static:arm64 >/dev/null 2>&1) ||
    die "apt-get download busybox-static:arm64 failed"
  dpkg-deb --fsys-tarfile "$cache"/busybox-static_*.deb | tar -xO ./bin/busybox > "$cache/busybox.part"
  rm -f "$cache"/busybox-static_*.deb
  chmod +x "$cache/busybox.part" && mv "$cache/busybox.part" "$cache/busybox"
}

# The cross builds: linked by the cross gcc, C dependencies compiled by it.
cross_build() {
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
  export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
  (cd "$root" && cargo build --release --target "$target" -p virtlens) || die "cross-building virtlens failed"
  (cd "$root/lab/arm64-guest" && CARGO_TARGET_DIR="$root/target/arm64-guest" cargo build --release --target "$target") ||
    die "cross-building the lab guest failed"
}

build_initramfs() {
  local ird
  [ -f "$cache/host.gz" ] && [ "$cache/host.gz" -nt "$0" ] && return
  ird=$(mktemp -d "$cache/host-initramfs.XXXXXX")
  mkdir -p "$ird"/{bin,lib,proc,sys,dev,tmp,mods,host}
  cp "$cache/busybox" "$ird/bin/busybox"
  ln -s busybox "$ird/bin/sh"
  stage_modules "$ird/mods" 9p 9pnet_virtio virtio_pci
  # The cross toolchain's glibc, reached through this machine's root (shared read-only).
  ln -s "/host$sysroot/lib/ld-linux-aarch64.so.1" "$ird/lib/ld-linux-aarch64.so.1"
  cat > "$ird/init" <<'INIT'
#!/bin/sh
# The arm64 lab host's init: modules, the shares, the kernel file systems, the command.
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in /mods/*.ko; do insmod "$m" || echo "lab-host: insmod $m failed"; done
args=$(cat /proc/cmdline)
arg() { v=${args##*$1=}; v=${v%% *}; echo "$v"; }
out=$(arg lab_out) repo=$(arg lab_repo)
o=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$o,ro,cache=loose" hostroot /host || { echo "lab-host: 9p root failed"; poweroff -f; }
# /tmp before the shares: OUT or the checkout may be under it.
mount -t tmpfs tmp /tmp; mkdir -p /run && mount -t tmpfs run /run
mkdir -p "$repo" "$out"
mount -t 9p -o "$o,ro,cache=loose" repo "$repo" || echo "lab-host: 9p repo failed"
mount -t 9p -o "$o,cache=none" out "$out" || { echo "lab-host: 9p out failed"; poweroff -f; }
mount -t tracefs nodev /sys/kernel/tracing; mount -t debugfs nodev /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ip link set lo up || echo "lab-host: no loopback"
if [ -c /dev/kvm ]; then echo "lab-host: /dev/kvm ready"; else echo "lab-host: no /dev/kvm"; fi
echo "lab-host: up after $(cut -d' ' -f1 /proc/uptime) s"
cd "$out" && env -i PATH="$repo/target/aarch64-unknown-linux-gnu/release:$repo/target/arm64-guest/aarch64-unknown-linux-gnu/release:/bin" \
  LD_LIBRARY_PATH=/host/usr/aarch64-linux-gnu/lib HOME=/tmp LAB_OUT="$out" TERM=dumb /bin/sh "$out/.lab-cmd"
echo $? > "$out/.lab-status"
echo "lab-host: command exited $(cat "$out/.lab-status") after $(cut -d' ' -f1 /proc/uptime) s"
sync; poweroff -f
INIT
  chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$ird.gz"
  mv "$ird.gz" "$cache/host.gz"
  rm -rf "$ird"
}

build() {
  need_tools
  mkdir -p "$cache"
  fetch_kernel linux-image-arm64:arm64
  fetch_busybox
  build_initramfs
  cp "$(ls "$cache"/kernel/boot/vmlinuz-* | head -1)" "$cache/vmlinuz"
  cross_build
}

run() {
  [ $# -ge 2 ] || die "usage: lab/arm64-host.sh run OUT CMD…"
  local out=$1; shift
  build
  mkdir -p "$out"; out=$(realpath "$out")
  case "$out$root" in *' '*) die "OUT and the checkout may not contain spaces: $out, $root" ;; esac
  rm -f "$out/.lab-status" "$out/console.log"
  { printf '%q ' "$@"; echo; } > "$out/.lab-cmd"
  local status=0
  # pauth-impdef: QEMU's own pointer-authentication hash, much cheaper to emulate than QARMA.
  run_watched "${TIMEOUT:-900}" "$out/console.log" qemu-system-aarch64 -accel "tcg,thread=${TCG_THREAD:-multi}" \
    -M virt,virtualization=on,gic-version=3 -cpu max,pauth-impdef=on -smp "${SMP:-4}" -m "${MEM:-2048}" \
    -kernel "$cache/vmlinuz" -initrd "$cache/host.gz" \
    -append "console=ttyAMA0 quiet loglevel=5 panic=-1 lab_out=$out lab_repo=$root" \
    -display none -no-reboot -nodefaults -serial "file:$out/console.log" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap" \
    -virtfs "local,path=$root,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" ||
    status=$?
  run_result "$status" "$out" "${TIMEOUT:-900}"
}


lab_main "$@"; exit
