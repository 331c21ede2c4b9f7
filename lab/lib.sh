# What lab/host.sh (x86-64, SVM) and lab/arm64-host.sh share: fetching Debian's kernel package
# into $cache/kernel, resolving the modules an initramfs loads, a run's exit status, and the
# command line. Sourced; needs $cache and $me (the script's name) set, a die function, and the
# script's build and run functions.

# Debian's kernel package that the meta package $1 depends on ($LAB_KERNEL overrides), unpacked
# in $cache/kernel with its modules uncompressed.
fetch_kernel() {
  [ -f "$cache/kernel/ok" ] && return
  local meta=$1 pkg deb
  pkg=${LAB_KERNEL:-$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
  [ -n "$pkg" ] || die "apt-cache knows no $meta (run apt-get update)"
  (cd "$cache" && rm -f linux-image-*.deb && apt-get download "$pkg" >/dev/null 2>&1) ||
    die "apt-get download $pkg failed"
  deb=$(ls "$cache"/linux-image-*.deb | head -1)
  rm -rf "$cache/kernel" && dpkg-deb -x "$deb" "$cache/kernel"
  rm -f "$deb"
  find "$cache/kernel/lib/modules" -name '*.ko.xz' -exec xz -d {} +
  touch "$cache/kernel/ok"
}

kver() { ls "$cache/kernel/lib/modules/" | head -1; }
modules_dir() { echo "$cache/kernel/lib/modules/$(kver)/kernel"; }

# Prints the paths of the named modules and of everything they depend on, dependencies first
# (from each module's own `depends=` field; Debian ships no modules.dep before depmod runs).
modules_closure() {
  local dir all name path
  dir=$(modules_dir)
  declare -A done_
  all=$(find "$dir" -name '*.ko')
  builtin=$(cat "$dir/../modules.builtin" 2>/dev/null || true)
  visit() {
    local n=$1 p d
    [ -n "${done_[$n]:-}" ] && return
    done_[$n]=1
    grep -qE "/${n//_/[-_]}\.ko$" <<<"$builtin" && return
    p=$(grep -E "/${n//_/[-_]}\.ko$" <<<"$all" | head -1)
    [ -n "$p" ] || die "no module $n in the kernel package"
    for d in $(strings "$p" | sed -n 's/^depends=//p' | tr ',' ' '); do visit "$d"; done
    echo "$p"
  }
  for name in "$@"; do visit "$name"; done
}

# Copies the modules $@ (with what they depend on) into $1, numbered in load order.
stage_modules() {
  local to=$1 n=0 m mods
  shift
  mods=$(modules_closure "$@") || die "resolving the modules $*"
  for m in $mods; do
    n=$((n + 1)); cp "$m" "$to/$(printf %02d "$n")-$(basename "$m")"
  done
}

# What the host's console says when its kernel has stalled for good: a CPU stuck in the kernel
# for 100 s or more. Under TCG a host now and then stops this way (a soft lockup of a vCPU thread
# of the guest's QEMU, or of a tool stopping); its watchdog reports every 26 s or so, and every
# stall seen here that reached 100 s lasted until the run ran out of time.
STALL_RE='soft lockup - CPU#[0-9]+ stuck for [0-9]{3,}s'

# The wall-clock seconds a host has to print `lab-host: up` (its init running). A whole run of
# a 3 s command took 16 s here (2026-11-30); a boot can also stall before any lockup is
# reported (once a vCPU was left at an int3 of the kernel's own text patching 1.4 s into the
# boot, and RCU said so only after 589 s).
BOOT_LIMIT=${BOOT_LIMIT:-240}

# Runs CMD… ($3…, the host's QEMU) for at most $1 s, following the console it writes ($2): when
# the console shows the kernel stalled (STALL_RE), or no `lab-host: up` line came within
# BOOT_LIMIT s, QEMU is stopped there rather than at the timeout, and the reason is kept in
# $2.stall. Ctrl-C (or TERM) stops QEMU too. Returns CMD's status (124 when it ran out of time).
run_watched() {
  local limit=$1 console=$2 vm watcher booted up status=0 stopped=
  shift 2
  rm -f "$console" "$console.stall"
  timeout "$limit" "$@" &
  vm=$!
  trap 'stopped=1; kill "$vm" 2>/dev/null' INT TERM HUP
  # (The kill is on grep's side of the pipe: tail only ends once QEMU has.)
  tail -n +1 -F --pid="$vm" "$console" 2>/dev/null |
    { grep -m1 -E "$STALL_RE" > "$console.stall" && kill "$vm" 2>/dev/null; } &
  watcher=$!
  # The boot's deadline: grep counts 0 when tail is timed out (or QEMU ended) before the line.
  # (Its count, not the pipe's status: under pipefail tail's SIGPIPE after the match fails it.)
  {
    up=$(timeout "$BOOT_LIMIT" tail -n +1 -F --pid="$vm" "$console" 2>/dev/null |
      grep -c -m1 "lab-host: up after" || true)
    if [ "$up" != 1 ] && kill -0 "$vm" 2>/dev/null; then
      echo "no \`lab-host: up\` line within $BOOT_LIMIT s: the boot stalled" > "$console.stall"
      kill "$vm" 2>/dev/null || true
    fi
  } &
  booted=$!
  wait "$vm" || status=$?
  # A trapped signal ends `wait` early, QEMU still running: wait again for its own end.
  while kill -0 "$vm" 2>/dev/null; do
    status=0
    wait "$vm" || status=$?
  done
  wait "$watcher" 2>/dev/null || true
  wait "$booted" 2>/dev/null || true
  trap - INT TERM HUP
  [ -s "$console.stall" ] || rm -f "$console.stall"
  [ -z "$stopped" ] || { echo "$me: stopped" >&2; exit 130; }
  return "$status"
}

# The status of a run whose QEMU ended with $1 (OUT $2, timeout $3 s): 124 when the host ran
# out of time, 125 when it stopped (or its kernel stalled) before the command ended, else the
# command's own.
run_result() {
  local status=$1 out=$2 timeout=$3
  if [ -f "$out/console.log.stall" ]; then
    echo "$me: the host's kernel stalled and was stopped: $(cat "$out/console.log.stall"); console: $out/console.log" >&2
    return 125
  fi
  if [ "$status" = 124 ]; then
    echo "$me: the host ran out of time (TIMEOUT=$timeout s); console: $out/console.log" >&2
    return 124
  fi
  if [ ! -f "$out/.lab-status" ]; then
    echo "$me: the host stopped before the command ended; console:" >&2
    tail -20 "$out/console.log" >&2
    return 125
  fi
  return "$(cat "$out/.lab-status")"
}

lab_main() {
  case "${1:-}" in
    build) build ;;
    run) shift; run "$@" ;;
    *) die "usage: $me build | run OUT CMD…" ;;
  esac
}
