#!/usr/bin/env python3
"""Writes a large, realistic `perf script` trace of `perf record -e 'kvm:*'` on a KVM host.

Several VMs (QEMU processes) with vCPU threads (`CPU n/KVM`) on their host CPUs; each vCPU
runs the guest for a while, exits, and the events of that exit follow in the order KVM emits
them: kvm_exit, then kvm_msr / kvm_pio / kvm_mmio / kvm_page_fault / kvm_cpuid / kvm_apic,
for userspace exits kvm_userspace_exit and (MMIO reads) the completing kvm_mmio, then
kvm_entry. Exit mix and handling times are those of a busy Windows/Linux host (TSC-deadline
and x2APIC ICR MSR writes, RTC and ACPI PM timer ports, virtio/HPET MMIO, HLT idle).
Lines from all threads are merged in time order, as perf script prints them. The 2020+ text
formats are used, except for one VM whose host thread prints the 2015-2020 `kvm_exit` text
(`reason X rip 0x… info A B`) and the old `kvm_entry: vcpu N`.

Used by bench/trace_text_throughput.py. Usage: gen_trace_text.py OUT SIZE_MB
"""
import random
import sys

# (reason, weight, handling µs (lo, hi), follow-up kind)
EXITS = [
    ("MSR_WRITE", 26, (0.6, 2.5), "msr_w"),
    ("EXTERNAL_INTERRUPT", 18, (0.8, 4.0), None),
    ("HLT", 14, (40.0, 3000.0), None),
    ("IO_INSTRUCTION", 10, (4.0, 40.0), "pio"),
    ("EPT_MISCONFIG", 9, (3.0, 30.0), "mmio"),
    ("EPT_VIOLATION", 6, (1.5, 20.0), "pf"),
    ("APIC_WRITE", 5, (0.8, 3.0), "apic"),
    ("MSR_READ", 4, (0.5, 2.0), "msr_r"),
    ("PAUSE_INSTRUCTION", 3, (0.3, 2.0), None),
    ("EOI_INDUCED", 3, (0.4, 1.5), None),
    ("CPUID", 1, (0.9, 3.0), "cpuid"),
    ("PREEMPTION_TIMER", 1, (0.5, 2.0), None),
]
WEIGHTS = [e[1] for e in EXITS]
CODES = {"MSR_WRITE": 32, "EXTERNAL_INTERRUPT": 1, "HLT": 12, "IO_INSTRUCTION": 30,
         "EPT_MISCONFIG": 49, "EPT_VIOLATION": 48, "APIC_WRITE": 56, "MSR_READ": 31,
         "PAUSE_INSTRUCTION": 40, "EOI_INDUCED": 45, "CPUID": 10, "PREEMPTION_TIMER": 52}
MSRS_W = [(0x6e0, 6), (0x830, 3), (0x838, 1), (0x80b, 1)]
MSRS_R = [(0x3b, 1), (0x1b, 1), (0x10, 1), (0x40000020, 2)]
# (port, write, to userspace)
PORTS = [(0x70, True, True), (0x71, False, True), (0x608, False, True), (0xb008, False, True),
         (0x3f8, True, True), (0x3fd, False, True), (0xcfc, False, True), (0x40, True, False)]
# (gpa, write, to userspace)
MMIOS = [(0xfed000f0, False, True), (0xfebf1000, True, False), (0xfee000b0, True, False),
         (0xfebd5000, True, True), (0xfed00100, False, True)]


def pick(rng, choices):
    return rng.choices([c[0] for c in choices], [c[1] for c in choices])[0]


class Vcpu:
    def __init__(self, rng, pid, index, tid, cpu, legacy):
        self.rng, self.pid, self.index, self.tid, self.cpu = rng, pid, index, tid, cpu
        self.legacy = legacy
        self.t = rng.uniform(0, 0.001)
        self.prefix = f"{'CPU %d/KVM' % index:>16} {tid:>6} [{cpu:03d}] "
        self.rip = 0xffffffff81000000 + rng.randrange(0, 1 << 20) * 16

    def exit_text(self, reason):
        rip = self.rip + self.rng.randrange(0, 64) * 4
        if self.legacy:
            return f"reason {reason} rip 0x{rip:x} info {self.rng.randrange(0, 1 << 12):x} 0"
        intr = 0x800000ec if reason == "EXTERNAL_INTERRUPT" else 0
        return (f"vcpu {self.index} reason {reason} rip 0x{rip:x} info1 0x{0:016x} "
                f"info2 0x{0:016x} intr_info 0x{intr:08x} error_code 0x{0:08x}")

    def entry_text(self):
        if self.legacy:
            return f"vcpu {self.index}"
        return f"vcpu {self.index}, rip 0x{self.rip:x}"

    def run(self, until, out):
        """Simulates exits until the guest time passes `until`, appending (t, line) to out."""
        rng = self.rng
        while self.t < until:
            t = self.t + rng.expovariate(1 / 40e-6)  # guest runs ~40 µs between exits
            reason, _, (lo, hi), follow = rng.choices(EXITS, WEIGHTS)[0]
            handle = rng.uniform(lo, hi) * 1e-6
            p = self.prefix
            out.append((t, p, "kvm:kvm_exit", self.exit_text(reason)))
            step = t + 0.2e-6
            if follow == "msr_w":
                idx = pick(rng, MSRS_W)
                out.append((step, p, "kvm:kvm_msr",
                            f"msr_write {idx:x} = 0x{rng.randrange(1 << 40):x}"))
            elif follow == "msr_r":
                idx = pick(rng, MSRS_R)
                gp = " (#GP)" if idx == 0x40000020 and rng.random() < 0.1 else ""
                out.append((step, p, "kvm:kvm_msr", f"msr_read {idx:x} = 0x0{gp}"))
            elif follow == "pio":
                port, write, user = rng.choice(PORTS)
                rw = "write" if write else "read"
                val = f"val 0x{rng.randrange(256):x} " if not self.legacy else ""
                out.append((step, p, "kvm:kvm_pio",
                            f"pio_{rw} at 0x{port:x} size 1 count 1 {val}".rstrip(" ")
                            + (" " if val else "")))
                if user:
                    out.append((step + 0.3e-6, p, "kvm:kvm_userspace_exit",
                                "reason KVM_EXIT_IO (2)"))
            elif follow == "mmio":
                gpa, write, user = rng.choice(MMIOS)
                v = rng.randrange(1 << 32)
                if write:
                    out.append((step, p, "kvm:kvm_mmio", f"mmio write len 4 gpa 0x{gpa:x} val 0x{v:x}"))
                    if user:
                        out.append((step + 0.3e-6, p, "kvm:kvm_userspace_exit",
                                    "reason KVM_EXIT_MMIO (6)"))
                else:
                    out.append((step, p, "kvm:kvm_mmio",
                                f"mmio unsatisfied-read len 4 gpa 0x{gpa:x} val 0x0"))
                    out.append((step + 0.3e-6, p, "kvm:kvm_userspace_exit",
                                "reason KVM_EXIT_MMIO (6)"))
                    out.append((t + handle - 0.3e-6, p, "kvm:kvm_mmio",
                                f"mmio read len 4 gpa 0x{gpa:x} val 0x{v:x}"))
            elif follow == "pf":
                out.append((step, p, "kvm:kvm_page_fault",
                            f"vcpu {self.index} rip 0x{self.rip:x} address 0x{rng.randrange(1 << 30):x} "
                            f"error_code 0x181"))
            elif follow == "apic":
                out.append((step, p, "kvm:kvm_apic", "apic_write APIC_EOI = 0x0"))
            elif follow == "cpuid":
                out.append((step, p, "kvm:kvm_cpuid",
                            "func 40000001 idx 0 rax 1 rbx 0 rcx 0 rdx 0, cpuid entry found"))
            end = t + handle
            out.append((end, p, "kvm:kvm_entry", self.entry_text()))
            self.t = end


def main():
    path, size_mb = sys.argv[1], float(sys.argv[2])
    vcpus = []
    cpu = 0
    for vm, (pid, n) in enumerate([(4101, 4), (5202, 2), (6303, 4), (7404, 2)]):
        for i in range(n):
            vcpus.append(Vcpu(random.Random(pid * 100 + i), pid, i, pid + 20 + i, cpu,
                              legacy=(vm == 3)))
            cpu += 1
    limit = int(size_mb * 1e6)
    written = 0
    base = 7000.0
    block = 0.002
    until = block
    pending = []
    with open(path, "w") as f:
        while written < limit:
            events = pending
            for v in vcpus:
                v.run(until, events)
            events.sort(key=lambda e: e[0])
            cut = len(events)
            for i, e in enumerate(events):
                if e[0] > until:
                    cut = i
                    break
            pending = events[cut:]
            lines = []
            for t, p, ev, text in events[:cut]:
                lines.append(f"{p}{base + t:.6f}: {ev:>22}: {text}\n")
            s = "".join(lines)
            if written + len(s) > limit:
                # Stop at a line boundary near the requested size.
                s = s[: max(0, s.rfind("\n", 0, limit - written) + 1)]
            f.write(s)
            written += len(s)
            until += block
            if not s:
                break


if __name__ == "__main__":
    main()
