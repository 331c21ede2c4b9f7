//! The long help of every command (`virtlens COMMAND --help`): what it is for in a newcomer's
//! words, real examples, and the exit status. Kept apart from `args.rs` so the options stay
//! readable there; `-h` shows the one-line summaries only.

pub const VIRTLENS: &str = "\
Getting started:
  virtlens lab                              what exits cost on this host (needs /dev/kvm)
  virtlens report exits.txt                 read a `perf kvm stat report` table (or perf.data, …)
  virtlens diagnose exits.txt               why the guest is slow, and the fix
  virtlens lint vm.xml                      check a libvirt/QEMU/Proxmox configuration
  virtlens mcp                              the same answers as tools for AI agents (MCP)

`virtlens COMMAND --help` has examples for each command. Every command takes --json.
Exit status: 0 ok; 1 findings at or above --fail-on (lint, diagnose); 2 bad input or usage.
Colour only on a terminal; NO_COLOR turns it off.";

pub const REPORT: &str = "\
Reads what perf kvm stat, perf record -e 'kvm:*', perf script, trace-cmd, kvm_stat, bcc kvmexit,
perf-prof or `virtlens record` wrote (the format is detected), and prints each table with the
exit reasons, ports, MMIO addresses and MSRs named. Halts (the guest idling) are counted apart,
so the \"without idle\" total is the real overhead.

Examples:
  perf kvm stat record -a sleep 10 && virtlens report perf.data.guest
  perf kvm stat report --event=ioport | virtlens report -
  virtlens report --by port --vm win10 trace.txt        one VM's IO ports, from `perf script`
  virtlens report --top 5 --json cap.parquet            the 5 largest rows per table, as JSON
  virtlens report --by rip --guest-symbols System.map perf.data.guest
                                                        each exit reason's guest functions";

pub const COMPARE: &str = "\
Puts two or more inputs side by side (input 1 is the baseline): counts and times per key, the
change against input 1, and which input costs least, idle left out.

Examples:
  virtlens compare before.txt after.txt
  virtlens compare slides.txt              one file with several labelled tables (before/after)
  virtlens compare --json a.perf.data b.perf.data";

pub const DIAGNOSE: &str = "\
Explains what the exits cost and why: the main problem first, then each finding with its
evidence, its cost from the input's own numbers, the competing causes and the check that tells
them apart, the fix as QEMU flags and libvirt XML, the expected effect, and public sources.
Every finding id is described in docs/findings.md.

Examples:
  virtlens diagnose exits.txt --guest windows --window 10     a 10 s `perf kvm stat` capture
  virtlens diagnose exits.txt --config /etc/libvirt/qemu/win10.xml
  virtlens diagnose before.txt after.txt                      did the change help, and why?
  virtlens diagnose exits.txt dmesg.txt                       the host's kernel log joined in
  virtlens diagnose exits.txt --window 10 --fio fio.json     exits per IO at fio's IO rate
  sudo virtlens diagnose --live --vm win10 --duration 10

Exit status: 0 ok; 1 a finding at or above --fail-on (default: high); 2 bad input or usage.";

pub const COUNTERS: &str = "\
Reads performance-counter logs as Windows and ESXi write them — typeperf / relog CSV, perfmon
data collector sets, esxtop -b, or a counter table pasted as text — and says what they show:
every counter's statistics, PAL's Hyper-V thresholds per time slice, the per-VM hypervisor
numbers, and the hv.* findings (interrupt delivery, hypervisor time, over-commit, CPU limits).
The counters to collect are in contrib/hyperv-counters.txt; see docs/counters.md.

Examples:
  virtlens counters hyperv.csv                   findings, PAL alerts, per-VM VP numbers
  virtlens counters hyperv.csv --iops 450000     also intercepts and VP time per IO
  virtlens counters esxtop.csv --json
  virtlens counters hyperv.csv --html counters.html   the same as a page, charts per VM

Exit status: 0 ok; 1 a finding at or above --fail-on (default: high); 2 bad input or usage.";

pub const EXITCOST: &str = "\
Runs tiny guests on /dev/kvm in four CPU modes and measures each kind of exit: port and MMIO
accesses answered by this process (the VMM), HLT, CPUID, MSRs, VMCALL, ioeventfd, the in-kernel
PIC, PIT and LAPIC. Runs are interleaved, the loop's own cost is subtracted, and every figure
carries the backend it was measured on (on KVM's PVM backend they are not hardware exit costs).

Examples:
  virtlens exitcost
  virtlens exitcost --mode user64 --runs 5
  virtlens exitcost --json > exitcost.json

Exit status: 0 measured here (the JSON says \"measured\": true); 2 on bad usage or without a
usable /dev/kvm. A figure the clock cannot resolve (below its resolution per operation, or
negative once the nop loop is subtracted) has the status \"unresolved\".";

pub const LAB: &str = "\
The exit costs of `exitcost`, plus five classic traps each replayed against its fix: the ACPI PM
timer vs a TSC-page read, an HPET vs the in-kernel LAPIC timer, APIC EOI in the VMM vs in the
kernel, a polled serial console vs a buffered one, virtio notifications by port vs ioeventfd;
and the IO path: completions by an interrupt from the VMM, an irqfd, or polling, per queue depth.
Without /dev/kvm it shows a run recorded on a development machine, labelled as a recording.

Examples:
  virtlens lab                 under a minute
  virtlens lab --quick         a few seconds
  virtlens lab --offline       the bundled recording, without measuring
  virtlens lab --io-path       only the IO path: exits per IO by delivery mode and queue depth
  virtlens lab --json > lab.json
  virtlens lab --replay clock_read/trap --duration 30    keep one trap running for other tools

Exit status: 0 measured here; 3 with --json when nothing was measured (--offline, or no usable
/dev/kvm) and the output is the bundled recording, whose JSON says \"measured\": false; 2 on bad
usage.";

pub const LINT: &str = "\
Reads a libvirt domain XML, a QEMU command line or launch script, or a Proxmox VM config, works
out the Hyper-V enlightenments QEMU will really run with, and reports the traps: missing
dependencies, settings that cost idle CPU or slow clocks, migration hazards. Each finding names
the element or flag at fault and gives the fix as libvirt XML and QEMU flags.

Examples:
  virtlens lint /etc/libvirt/qemu/win10.xml
  virsh dumpxml win10 | virtlens lint --host-facts auto -
  virtlens lint --qemu-args start-vm.sh --migratable
  virtlens lint --recommend windows-general          the recommended set for a Windows guest

Exit status: 0 ok; 1 a finding at or above --fail-on (default: high; `error` is `critical`); 2 bad input or usage.";

pub const RECORD: &str = "\
Captures the kvm tracepoints of this host (root, tracefs) in a tracefs instance of its own,
names the VMs and vCPUs, and writes one Parquet file that report, compare and diagnose read (and
DuckDB or pandas too). Ctrl-C stops it; whatever it set up in the kernel is removed on every exit.

Examples:
  sudo virtlens record --vm win10 --duration 10 -o win10.parquet
  sudo virtlens record --summary --duration 5             no file: the profile, counted in the kernel
  duckdb -c \"SELECT event, count(*) FROM 'win10.parquet' GROUP BY event\"";

pub const TOP: &str = "\
A live view of the VMs on this host (root, tracefs): exits per second by reason for each VM,
and how long each vCPU waits for a host CPU (ready %). `q` quits.

Examples:
  sudo virtlens top
  sudo virtlens top --vm win10 --interval 1
  sudo virtlens top --once --json          one interval, as JSON";

#[cfg(target_arch = "x86_64")]
pub const LOAD: &str = "\
A load generator for any guest or host: worker threads take fixed tasks (fill a collection with
random data and search it); the elapsed time is the measure, with task latencies, CPU time,
context switches, steal and the workers' ready %. Run the same command on each layer.

Examples:
  virtlens load --workers 4 --tasks 64
  virtlens load --contention 0.5 --json > host.json     half the work under one shared lock";

#[cfg(target_arch = "x86_64")]
pub const BENCH: &str = "\
The guest-side benchmark suite: compute, clock reads, system calls, cross-CPU wake-ups, TLB-heavy
access on small and huge pages, memory copies (and fio, iperf3 when asked), each repeated, with
the layer's fingerprint. Run it natively and in each VM, then compare with `virtlens stretch`.

Examples:
  virtlens bench --json > native.json                   on the host
  virtlens-guest bench --json > vm.json                 in the guest (the small static binary)
  virtlens stretch native.json vm.json
  virtlens bench --quick                                for slow (emulated) layers";

#[cfg(target_arch = "x86_64")]
pub const WORKLOAD: &str = "\
Runs inside a guest and switches on one known cause of VM exits, so the host sees what that cause
looks like: clock reads (exits when the clocksource is the ACPI PM timer or the HPET), a cross-CPU
ping-pong (halt and wake-up per hand-over), periodic RTC interrupts, a serial console flood
(write to /dev/ttyS0), O_DIRECT disk reads, UDP sends through the NIC, a contended spin lock
(PAUSE exits when vCPUs outnumber host CPUs), and plain compute (nothing to see). It prints one
line when it starts and one with its rate when it ends. The causal lab runs these in its guests;
virtlens-guest, the small binary for guests, has the same command.

Examples:
  virtlens workload clock-read --duration 30       in the guest
  sudo virtlens record --vm NAME --duration 10 -o x.parquet   then, on the host
  virtlens diagnose x.parquet
  virtlens workload write --path /dev/ttyS0 --block 64
  virtlens workload udp-send --to 10.0.2.2:9 --block 1400";

pub const STRETCH: &str = "\
How many times longer the same work takes from layer to layer (host, VM, nested VM), with noise
bounds from the repetitions and the likely cause per measure from the layers' fingerprints. It
also reads published figures and says when a study's stated summary disagrees with its numbers.

Examples:
  virtlens stretch native.json vm.json nested.json      the first file is the baseline
  virtlens stretch --lab                                the same kernels natively and in micro-VMs
  virtlens stretch study-figures.json                   a virtlens.figures/1 document";

pub const MODEL: &str = "\
Capacity models. `model overcommit` predicts how much vCPUs that share too few host CPUs wait
(ready %) and how much longer their work takes; `--measure` checks it with busy micro-VM vCPUs on
this host.

Examples:
  virtlens model overcommit --pcpus 8 --vcpus 12 --util 0.6
  virtlens model overcommit --measure --max-vcpus 4";

pub const OVERCOMMIT: &str = "\
Every assumption of the model is printed with the prediction (the joint-probability argument and
M/M/c queueing, Erlang C).

Examples:
  virtlens model overcommit --pcpus 8 --vcpus 12 --util 0.6
  virtlens model overcommit --pcpus 4 --vcpus 6 --background 1.5 --json
  virtlens model overcommit --measure --max-vcpus 4 --runs 3";

pub const SERVE: &str = "\
A read-only Prometheus exporter (root): exits per VM by reason, port, MMIO address and MSR,
exit latency histograms, vCPU ready time and the diagnosis's findings, counted in the kernel
(BPF; tracefs otherwise). It listens on loopback unless told otherwise. docs/fleet.md shows the
metrics, the Grafana dashboard and the alert rules.

Examples:
  sudo virtlens serve
  sudo virtlens serve --listen 0.0.0.0:9815 --vm win10
  curl -s localhost:9815/metrics | grep '^virtlens_exits'";

pub const MCP: &str = "\
Runs a Model Context Protocol server on standard input and output, for AI agents (Claude
Desktop, Claude Code, VS Code, …): report, compare, diagnose, counters, lint, lab and exitcost
as tools whose results are the --json outputs, the findings catalogue as resources, and prompts.
Inputs are files under --root (the working directory by default) or text pasted into the call.
The live tools (top_snapshot, diagnose_live, record) are offered only with --allow-live.
See docs/mcp.md for the clients' configuration.

Examples:
  virtlens mcp                                      files under the working directory
  virtlens mcp --root /var/log/virtlens --root .    two roots
  sudo virtlens mcp --allow-live                    with the live tools (root, tracefs)";
