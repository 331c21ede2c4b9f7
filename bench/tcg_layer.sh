#!/usr/bin/env bash
# A real VM layer for `virtlens bench`, buildable on a machine whose KVM cannot boot Linux:
# boots a Debian kernel under QEMU **TCG** (software emulation, not KVM) with a tiny initramfs
# (busybox + the static musl virtlens-guest), runs `bench --json` inside, reads the JSON back
# over a second serial port, runs the same suite natively, and compares the two with
# `virtlens stretch`. TCG's stretch is the cost of emulation, not of KVM: it demonstrates the
# pipeline and gives `stretch` a real second layer, nothing more.
#
#   bench/tcg_layer.sh [OUT_DIR]        (default OUT_DIR: target/tcg-layer)
#   RUNS=5 SMP=2 bench/tcg_layer.sh     (repetitions per measure, guest vCPUs)
#   SAVE=testdata/stretch bench/tcg_layer.sh   (also copy native.json and tcg-vm.json there)
#
# Needs: qemu-system-x86 and busybox-static (Debian packages), the musl target of rustup, and a
# Debian kernel: $KERNEL_DEB, or one fetched with `apt-get download` into OUT_DIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/target/tcg-layer}")
runs=${RUNS:-5}
smp=${SMP:-2}
mkdir -p "$out"
cd "$root"

for tool in qemu-system-x86_64 busybox cpio; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install qemu-system-x86 busybox-static cpio)" >&2; exit 2; }
done

echo "== building the static guest binary" >&2
cargo build --release -q -p virtlens-guest --target x86_64-unknown-linux-musl
cargo build --release -q -p virtlens
guest_bin=target/x86_64-unknown-linux-musl/release/virtlens-guest
strip -o "$out/virtlens-guest" "$guest_bin"
echo "static guest binary: $(stat -c %s "$guest_bin") bytes, $(stat -c %s "$out/virtlens-guest") stripped" >&2

echo "== kernel" >&2
deb=${KERNEL_DEB:-}
if [ -z "$deb" ]; then
    deb=$(ls "$out"/linux-image-*.deb 2>/dev/null | head -1 || true)
fi
if [ -z "$deb" ]; then
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    (cd "$out" && apt-get download "$pkg")
    deb=$(ls "$out"/linux-image-*.deb | head -1)
fi
rm -rf "$out/kernel" && mkdir -p "$out/kernel"
dpkg-deb -x "$deb" "$out/kernel"
vmlinuz=$(ls "$out"/kernel/boot/vmlinuz-* | head -1)

echo "== initramfs" >&2
ird="$out/initramfs"
rm -rf "$ird" && mkdir -p "$ird"/{bin,proc,sys,dev,tmp}
cp "$(command -v busybox)" "$ird/bin/busybox"
for app in sh mount sync poweroff cat; do ln -s busybox "$ird/bin/$app"; done
cp "$out/virtlens-guest" "$ird/virtlens-guest"
cat > "$ird/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "virtlens-guest: bench starting" > /dev/ttyS0
/virtlens-guest bench --quick --runs $runs --layer "QEMU TCG guest" --json > /dev/ttyS1 2> /dev/ttyS0
echo "virtlens-guest: bench done (\$?)" > /dev/ttyS0
sync
poweroff -f
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initramfs.cpio.gz"

echo "== booting under QEMU TCG (software emulation)" >&2
rm -f "$out/tcg-vm.raw" "$out/console.log"
timeout 1800 qemu-system-x86_64 -accel tcg -cpu max -smp "$smp" -m 1024 \
    -kernel "$vmlinuz" -initrd "$out/initramfs.cpio.gz" \
    -append "console=ttyS0 quiet panic=-1 no_timer_check transparent_hugepage=madvise" \
    -display none -monitor none -no-reboot \
    -serial "file:$out/console.log" -serial "file:$out/tcg-vm.raw"
tr -d '\r' < "$out/tcg-vm.raw" > "$out/tcg-vm.json"
grep -q '"schema"' "$out/tcg-vm.json" || { echo "no JSON came back; console:" >&2; tail -20 "$out/console.log" >&2; exit 1; }

echo "== the same suite natively" >&2
"$out/virtlens-guest" bench --quick --runs "$runs" --layer native --json > "$out/native.json"

target/release/virtlens stretch "$out/native.json" "$out/tcg-vm.json" | tee "$out/stretch.txt"
if [ -n "${SAVE:-}" ]; then
    cp "$out/native.json" "$out/tcg-vm.json" "$SAVE/"
    echo "copied native.json and tcg-vm.json to $SAVE" >&2
fi
