#!/bin/sh
# Runs inside the arm64 lab host (lab/arm64-host.sh run OUT sh lab/arm64-inside.sh WRITES HVCS):
# the lab guest under each live path of virtlens, one run of the guest per path, so that each
# capture holds exactly one guest's exits. Into OUT:
#   formats/EVENT            the kernel's format of each kvm event virtlens reads
#   record.parquet           `virtlens record -o` (tracefs) around one guest run
#   summary.json             `virtlens record --summary --json` (in-kernel counting, BPF)
#   serve.txt                `virtlens serve`'s /metrics once it has the guest's last exit
#   top-bpf.json, top-tracefs.json
#                            `virtlens top --once --json` (BPF, then --no-bpf) around one guest
#                            run, its one interval ended by SIGINT
#   running-bpf.json, running-tracefs.json, running.pid
#                            the same, 0.5 s of a guest that stores without end
#   guest-*.txt              what the guest saw in each run
set -eu
out=$LAB_OUT writes=$1 hvcs=$2
ev=/sys/kernel/tracing/events/kvm
mkdir -p "$out/formats"
for e in kvm_exit kvm_entry kvm_mmio kvm_userspace_exit kvm_fpu kvm_vcpu_wakeup kvm_halt_poll_ns \
  kvm_hvc_arm64 kvm_wfx_arm64 kvm_sys_access kvm_handle_sys_reg kvm_guest_fault; do
  [ -f "$ev/$e/format" ] && cp "$ev/$e/format" "$out/formats/$e"
done

# One recorder around one guest run: the recorder is started with --ready-fd and the guest only
# once it says tracing is on; then it is stopped with SIGINT, as at Ctrl-C.
around() {
  name=$1; shift
  rm -f /tmp/ready; mkfifo /tmp/ready
  "$@" --ready-fd 3 3>/tmp/ready &
  pid=$!
  read -r line < /tmp/ready
  [ "$line" = ready ] || { echo "arm64-inside: $name said '$line', not ready" >&2; exit 1; }
  arm64-guest "$writes" "$hvcs" > "$out/guest-$name.txt"
  kill -INT "$pid"
  wait "$pid"
}

around record virtlens record -o "$out/record.parquet" --force
around summary sh -c 'exec virtlens record --summary --json "$@" > "$0"' "$out/summary.json"
around top-bpf sh -c 'exec virtlens top --once --json --interval 3600 "$@" > "$0"' "$out/top-bpf.json"
around top-tracefs sh -c 'exec virtlens top --once --json --interval 3600 --no-bpf "$@" > "$0"' \
  "$out/top-tracefs.json"
# The exporter: scraped until it has counted the guest's last exit (the power-off HVC64 makes
# the count HVCS + 1), at most 1,200 tries (two minutes: a loaded machine slows the emulated
# host); the test then checks every count of that scrape.
virtlens serve --listen 127.0.0.1:9815 --interval 0.2 --ready-fd 3 3>/tmp/ready > /tmp/serve.json &
pid=$!
read -r line < /tmp/ready
arm64-guest "$writes" "$hvcs" > "$out/guest-serve.txt"
want="virtlens_exits_total{.*reason=\"HVC64\".* $((hvcs + 1))\$"
i=0
while [ $i -lt 1200 ]; do
  wget -qO /tmp/metrics http://127.0.0.1:9815/metrics && grep -q "$want" /tmp/metrics && break
  i=$((i + 1)); sleep 0.1
done
cp /tmp/metrics "$out/serve.txt"
kill -INT "$pid"; wait "$pid"
# top over a guest that was already running (2^32 - 1 stores: hours here), as users run it.
arm64-guest 4294967295 1 > /dev/null &
guest=$!
echo "$guest" > "$out/running.pid"
virtlens top --once --json --interval 0.5 > "$out/running-bpf.json"
virtlens top --once --json --interval 0.5 --no-bpf > "$out/running-tracefs.json"
kill -0 "$guest" || { echo "arm64-inside: the guest ended before both tops did" >&2; exit 1; }
kill "$guest"; wait "$guest" || true
echo "arm64-inside: done"
