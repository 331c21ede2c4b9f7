#!/usr/bin/env bash
# The lab host: a real KVM host with AMD SVM exits, on any x86-64 Linux machine with QEMU.
#
# QEMU's TCG emulates an AMD CPU with SVM and nested paging (`-cpu max`). Debian's kernel booted
# under it loads kvm_amd, and guests run inside it make real SVM exits: kvm_exit/kvm_entry,
# the debugfs KVM statistics, perf kvm stat and BPF on the exit tracepoints all work as on an
# AMD server. What it cannot give is hardware's timing: every exit costs what TCG takes to
# emulate it (about 100 times a hardware exit). Counts, reasons, ports, MMIO addresses and MSRs
# are real.
#
# The host's root file system is this machine's own `/`, shared read-only over 9p, so the
# programs under test (virtlens, perf, kvm_stat, QEMU and its firmware) run inside from their
# usual paths with no copying. What the host needs of its own (the kernel, its modules, the
# mounts) is in a small initramfs.
#
#   lab/host.sh build             fetch and build what is missing (cached in target/lab-host);
#                                 the guests' initramfs is built by `run`, from $GUEST_BIN
#   lab/host.sh run OUT CMD…      boot the host and run CMD in it as root; OUT (created) is shared
#                                 read-write at the same path; the host's console goes to
#                                 OUT/console.log; the exit status is CMD's (or 124 on timeout,
#                                 125 when the host failed, or its kernel stalled, before CMD
#                                 ended: a stall stops the run there, see run_watched in lib.sh)
#   SMP=6 MEM=3072 TIMEOUT=1200 lab/host.sh run …
#                                 six CPUs by default, whatever the machine has: the recording
#                                 tools, emulated too, would otherwise take the CPUs the guest's
#                                 vCPUs wait for (ready time that is the lab's, not the case's)
#   QEMU_LOG=1 lab/host.sh run …  also log the host's CPU resets and guest errors to OUT/qemu.log
#                                 and serve QEMU's monitor on OUT/monitor.sock
#
# Inside, CMD runs with /dev/kvm (kvm_amd), tracefs at /sys/kernel/tracing, debugfs at
# /sys/kernel/debug, a tmpfs /tmp, HOME=/tmp, $LAB_CACHE (the cache folder: the guest kernel and
# kvm_stat), and nothing writable but /tmp and OUT.
#
# Needs: qemu-system-x86 (with 9p), busybox-static, cpio, and `apt-get download` of Debian's
# linux-image-amd64 and linux-source (for kvm_stat, which Debian does not package).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${LAB_CACHE:-$root/target/lab-host}

me=lab/host.sh
die() { echo "$me: $*" >&2; exit 2; }
# shellcheck source=lab/lib.sh
. "$root/lab/lib.sh"

need_tools() {
  local t
  for t in qemu-system-x86_64 busybox cpio gzip dpkg-deb apt-get strings strip xz; do
    command -v "$t" >/dev/null ||
      die "missing $t (apt-get install qemu-system-x86 busybox-static cpio binutils xz-utils)"
  done
}

# kvm_stat, from the Debian source package of the same kernel series.
fetch_kvm_stat() {
  [ -x "$cache/kvm_stat" ] && return
  local series
  series=$(ls "$cache"/kernel/lib/modules/ | head -1 | cut -d. -f1,2 | cut -d+ -f1)
  (cd "$cache" && rm -f linux-source-*.deb && apt-get download "linux-source-$series" >/dev/null 2>&1) ||
    die "apt-get download linux-source-$series failed"
  dpkg-deb --fsys-tarfile "$cache"/linux-source-*.deb |
    tar -xO --wildcards '*/linux-source-*.tar.xz' | xz -dc |
    tar -xO --wildcards '*/tools/kvm/kvm_stat/kvm_stat' > "$cache/kvm_stat.part"
  rm -f "$cache"/linux-source-*.deb
  chmod +x "$cache/kvm_stat.part" && mv "$cache/kvm_stat.part" "$cache/kvm_stat"
}

# The host's initramfs: busybox, the modules it loads, and an init that mounts the shares and
# runs the command.
build_host_initramfs() {
  local ird
  [ -f "$cache/host.gz" ] && [ "$cache/host.gz" -nt "$0" ] && return
  # Staged in a folder of its own and renamed into place: two builds at once do not collide.
  ird=$(mktemp -d "$cache/host-initramfs.XXXXXX")
  mkdir -p "$ird"/{bin,proc,sys,dev,mods,newroot}
  cp "$(command -v busybox)" "$ird/bin/busybox"
  for m in sh mount umount insmod mkdir chroot poweroff sync cat echo; do ln -s busybox "$ird/bin/$m"; done
  stage_modules "$ird/mods" kvm_amd 9p 9pnet_virtio virtio_pci
  cat > "$ird/init" <<'INIT'
#!/bin/sh
# The lab host's init: modules, the machine's root over 9p, the kernel file systems, the command.
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
args=$(cat /proc/cmdline)
amd=${args##*lab_kvm_amd=}; amd=${amd%% *}
[ "$amd" = "$args" ] && amd=
for m in /mods/*.ko; do
  case "$m" in *kvm-amd.ko) p=$(echo "$amd" | tr ',' ' ') ;; *) p= ;; esac
  # shellcheck disable=SC2086
  insmod "$m" $p || echo "lab-host: insmod $m failed"
done
out=${args##*lab_out=}; out=${out%% *}
cmd=${args##*lab_cmd=}; cmd=${cmd%% *}
guest=${args##*lab_guest=}; guest=${guest%% *}
r=/newroot
o=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$o,ro,cache=loose" hostroot $r || { echo "lab-host: 9p root failed"; poweroff -f; }
mount -t proc proc $r/proc; mount -t sysfs sys $r/sys; mount -t devtmpfs dev $r/dev
mount -t tmpfs tmp $r/tmp; mount -t tmpfs run $r/run
mount -t tracefs nodev $r/sys/kernel/tracing; mount -t debugfs nodev $r/sys/kernel/debug
mount -t bpf bpf $r/sys/fs/bpf 2>/dev/null
mkdir -p $r/dev/pts $r/dev/shm; mount -t devpts devpts $r/dev/pts; mount -t tmpfs shm $r/dev/shm
# The checkout (its scripts, its target/), at its own path: under /tmp it would be hidden by the
# tmpfs above.
repo=${args##*lab_repo=}; repo=${repo%% *}
mkdir -p "$r$repo" 2>/dev/null
mount -t 9p -o "$o,ro,cache=loose" repo "$r$repo" || echo "lab-host: 9p repo failed"
mkdir -p "$r$out" 2>/dev/null
mount -t 9p -o "$o,cache=none" out "$r$out" || { echo "lab-host: 9p out failed"; poweroff -f; }
mkdir -p $r/tmp/lab-cache && mount -t 9p -o "$o,ro,cache=loose" cache $r/tmp/lab-cache
# Loopback, for what is served and scraped inside (virtlens serve).
/bin/busybox ip link set lo up || echo "lab-host: no loopback"
if [ -c /dev/kvm ]; then echo "lab-host: /dev/kvm ready (kvm_amd)"; else echo "lab-host: no /dev/kvm"; fi
echo "lab-host: up after $(cut -d' ' -f1 /proc/uptime) s"
chroot $r /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/tmp LAB_CACHE=/tmp/lab-cache LAB_GUEST="/tmp/lab-cache/$guest" LAB_OUT="$out" TERM=dumb \
  /bin/sh "$out/.lab-cmd"
echo $? > "$r$out/.lab-status"
echo "lab-host: command exited $(cat "$r$out/.lab-status") after $(cut -d' ' -f1 /proc/uptime) s"
sync; umount "$r$out"; poweroff -f
INIT
  chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$ird.gz"
  mv "$ird.gz" "$cache/host.gz"
  rm -rf "$ird"
}

# The Linux guests' initramfs: busybox, the workload binary ($GUEST_BIN, default
# target/release/virtlens-guest; the main virtlens binary works too) with its libraries, the
# device modules a scenario may load, and lab/guest-init. One per binary (guest-HASH.gz, named
# by the binary's path), so that runs with different binaries do not rebuild each other's.
guest_bin() { realpath -m "${GUEST_BIN:-$root/target/release/virtlens-guest}"; }
guest_gz() { echo "guest-$(guest_bin | md5sum | cut -c1-8).gz"; }

build_guest_initramfs() {
  local bin gz ird m l a
  bin=$(guest_bin) gz=$cache/$(guest_gz)
  [ -x "$bin" ] || die "no guest binary at $bin (cargo build --release -p virtlens-guest, or set GUEST_BIN)"
  if [ -f "$gz" ] && [ "$gz" -nt "$bin" ] && [ "$gz" -nt "$root/lab/guest-init" ] && [ "$gz" -nt "$0" ]; then
    return
  fi
  ird=$(mktemp -d "$cache/guest-initramfs.XXXXXX")
  mkdir -p "$ird"/{bin,proc,sys,dev,tmp,mods}
  cp "$(command -v busybox)" "$ird/bin/busybox"
  for a in $(busybox --list); do [ -e "$ird/bin/$a" ] || ln -s busybox "$ird/bin/$a"; done
  strip -o "$ird/bin/virtlens-guest" "$bin"
  if [ "$(basename "$bin")" != virtlens-guest ]; then
    # The main binary offers `workload` as `virtlens workload`; the guest calls it by the guest name.
    mv "$ird/bin/virtlens-guest" "$ird/bin/virtlens" && printf '#!/bin/sh\nexec virtlens "$@"\n' > "$ird/bin/virtlens-guest"
    chmod +x "$ird/bin/virtlens-guest"
  fi
  for l in $(ldd "$bin" | grep -o '/[^ ]*'); do mkdir -p "$ird$(dirname "$l")"; cp -L "$l" "$ird$l"; done
  for m in virtio_pci virtio_blk virtio_net e1000; do
    mkdir -p "$ird/mods/$m"
    stage_modules "$ird/mods/$m" "$m"
  done
  cp "$root/lab/guest-init" "$ird/init" && chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$ird.gz"
  mv "$ird.gz" "$gz"
  rm -rf "$ird"
}

build() {
  need_tools
  mkdir -p "$cache"
  fetch_kernel linux-image-amd64
  fetch_kvm_stat
  build_host_initramfs
  cp "$(ls "$cache"/kernel/boot/vmlinuz-* | head -1)" "$cache/vmlinuz"
}

run() {
  [ $# -ge 2 ] || die "usage: lab/host.sh run OUT CMD…"
  local out=$1; shift
  build
  # The guests' initramfs needs the guest binary, which a fresh checkout has only once built.
  build_guest_initramfs
  mkdir -p "$out"; out=$(realpath "$out")
  case "$out$root" in *' '*) die "OUT and the checkout may not contain spaces: $out, $root" ;; esac
  rm -f "$out/.lab-status" "$out/console.log"
  { printf 'cd %q || exit 125\n' "$out"; printf '%q ' "$@"; echo; } > "$out/.lab-cmd"
  local status=0 log=()
  # loglevel=5 after quiet: the console shows warnings, so a soft lockup's report comes with
  # the registers and call trace of the stuck CPU (printed at the default level, which quiet
  # alone holds back), and a stall says where it was.
  [ -n "${QEMU_LOG:-}" ] &&
    log=(-d cpu_reset,guest_errors -D "$out/qemu.log" -monitor "unix:$out/monitor.sock,server=on,wait=off")
  run_watched "${TIMEOUT:-1200}" "$out/console.log" qemu-system-x86_64 -accel "tcg,thread=${TCG_THREAD:-multi}" -cpu "${LAB_CPU:-max}" -smp "${SMP:-6}" -m "${MEM:-3072}" \
    -kernel "$cache/vmlinuz" -initrd "$cache/host.gz" \
    -append "console=ttyS0 quiet loglevel=5 panic=-1 transparent_hugepage=never lab_out=$out lab_repo=$root lab_cmd=.lab-cmd lab_guest=$(guest_gz) lab_kvm_amd=${KVM_AMD:-}" \
    -display none -no-reboot -nodefaults -serial "file:$out/console.log" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap" \
    -virtfs "local,path=$cache,mount_tag=cache,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$root,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
    "${log[@]}" ||
    status=$?
  run_result "$status" "$out" "${TIMEOUT:-1200}"
}


# On one line, so that bash has read it all before it runs: an edit of this file while a run
# is under way cannot change what the run does once it returns.
lab_main "$@"; exit
