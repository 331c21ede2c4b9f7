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

# The status of a run whose QEMU ended with $1 (OUT $2, timeout $3 s): 124 when the host ran
# out of time, 125 when it stopped before the command ended, else the command's own.
run_result() {
  local status=$1 out=$2 timeout=$3
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
