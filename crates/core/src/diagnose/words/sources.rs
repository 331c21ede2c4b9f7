//! The public material findings cite: mailing-list messages by Message-ID (open them at
//! `https://lore.kernel.org/r/<id>`), kernel and QEMU commits, documentation pages, bug and issue
//! ids, talks and posts — each with a few words on what it says. Nothing here names virtlens's
//! own notes or test data: a user must be able to open every source.

use crate::diagnose::model::Source;

const fn lore(id: &'static str, title: &'static str, url: &'static str) -> Source {
    Source {
        kind: "lore",
        reference: id,
        title,
        url: Some(url),
    }
}

const fn src(
    kind: &'static str,
    reference: &'static str,
    title: &'static str,
    url: Option<&'static str>,
) -> Source {
    Source {
        kind,
        reference,
        title,
        url,
    }
}

pub(crate) const LIANG_LI_2021: Source = lore(
    "CA+2MQi-_06J1cmLhKAmV1vkPEnvDx6+bOnK06OciYmdymaNruw@mail.gmail.com",
    "Liang Li, kvm@ 2021-05-19: Windows guest IPIs and EOIs exit through MSR writes once SynIC is on",
    "https://lore.kernel.org/r/CA+2MQi-_06J1cmLhKAmV1vkPEnvDx6+bOnK06OciYmdymaNruw@mail.gmail.com",
);
pub(crate) const VITALY_AEOI: Source = lore(
    "87y2c8iia0.fsf@vitty.brq.redhat.com",
    "Vitaly Kuznetsov's answer: SynIC AutoEOI inhibits APICv/AVIC; the AutoEOI deprecation recommendation",
    "https://lore.kernel.org/r/87y2c8iia0.fsf@vitty.brq.redhat.com",
);
pub(crate) const KVM_AEOI: Source = src(
    "commit",
    "Linux 0f250a646382",
    "KVM: x86: hyper-v: Deactivate APICv only when AutoEOI feature is in use",
    Some("https://git.kernel.org/torvalds/c/0f250a646382"),
);
pub(crate) const QEMU_HV_AVIC: Source = src(
    "commit",
    "QEMU e1f9a8e8c90a",
    "i386: Implement pseudo 'hv-avic' ('hv-apicv') enlightenment",
    Some("https://gitlab.com/qemu-project/qemu/-/commit/e1f9a8e8c90a"),
);
pub(crate) const QEMU_HYPERV: Source = src(
    "doc",
    "QEMU: Hyper-V Enlightenments",
    "what each hv-* flag does, its dependencies, and the recommended set",
    Some("https://www.qemu.org/docs/master/system/i386/hyperv.html"),
);
pub(crate) const LIBVIRT_HYPERV: Source = src(
    "doc",
    "libvirt: domain XML, hypervisor features",
    "the <hyperv> elements and their QEMU flags",
    Some("https://libvirt.org/formatdomain.html#hypervisor-features"),
);
pub(crate) const LIBVIRT_TIME: Source = src(
    "doc",
    "libvirt: domain XML, time keeping",
    "<clock>/<timer> elements: hpet, rtc, pit tick policies, hypervclock",
    Some("https://libvirt.org/formatdomain.html#time-keeping"),
);
pub(crate) const KVM_FORUM_2021: Source = src(
    "talk",
    "KVM Forum 2021, Liang Li: The traps of using Hyper-V features in KVM environment",
    "Windows timer choice (stimer > HPET > RTC); HPET MMIO 88% of exit time without enlightenments; \
     the SynIC AutoEOI trap and its fix measured on a cloud-gaming guest",
    None,
);
pub(crate) const MSDOCS_1885: Source = src(
    "bug",
    "MicrosoftDocs/Virtualization-Documentation#1885",
    "idle Windows on KVM: many RTC interrupts, fewer with hv-stimer and hv-synic; PM-timer reads",
    Some("https://github.com/MicrosoftDocs/Virtualization-Documentation/issues/1885"),
);
pub(crate) const OPENNEBULA_79: Source = src(
    "bug",
    "OpenNebula/addon-storpool#79",
    "adding synic and stimer: idle Windows host CPU 30–40% → 1–3%",
    Some("https://github.com/OpenNebula/addon-storpool/issues/79"),
);
pub(crate) const VIRT_MANAGER_205: Source = src(
    "bug",
    "virt-manager/virt-manager#205",
    "HPET off without stimer: host load of an idle Windows guest 'off the roof'",
    Some("https://github.com/virt-manager/virt-manager/issues/205"),
);
pub(crate) const TRUENAS_9247: Source = src(
    "bug",
    "truenas/middleware#9247",
    "adding hv-stimer: an idle Windows VM at 50% of each vCPU falls to normal",
    Some("https://github.com/truenas/middleware/pull/9247"),
);
pub(crate) const VFIO_USERS_2016: Source = src(
    "post",
    "vfio-users, 2016-10-13, Thomas Lindroth: How to improve performance in Windows 7",
    "QPC on the emulated ACPI PM timer: 3,605 ns per read against 12.52 ns on the TSC",
    Some("https://listman.redhat.com/archives/vfio-users/2016-October/003187.html"),
);
pub(crate) const KVM_TIMEKEEPING: Source = src(
    "doc",
    "Linux: Timekeeping Virtualization for X86-Based Architectures",
    "PIT, RTC, HPET, ACPI PM timer and TSC under KVM, and which guests use which",
    Some("https://docs.kernel.org/virt/kvm/x86/timekeeping.html"),
);
pub(crate) const KVM_HYPERV_TSC_PAGE: Source = src(
    "code",
    "Linux arch/x86/kvm/hyperv.c: compute_tsc_page_parameters()",
    "KVM publishes a valid reference TSC page only while the kvmclock master clock is stable",
    Some(
        "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/arch/x86/kvm/hyperv.c",
    ),
);
pub(crate) const MARTINS3_NOHZ: Source = src(
    "post",
    "martins3/martins3.github.io: 记录调试 kvm 的一个有趣问题",
    "an idle Linux guest booted with nohz=off: ~66,000 TSC-deadline MSR-write exits per second",
    Some("https://github.com/martins3/martins3.github.io"),
);
pub(crate) const PV_IPI: Source = src(
    "commit",
    "Linux aaffcfd1e82d",
    "KVM: X86: Implement PV IPIs in linux guest (one hypercall for up to 128 destinations)",
    Some("https://git.kernel.org/torvalds/c/aaffcfd1e82d"),
);
pub(crate) const HALT_POLL_DOC: Source = src(
    "doc",
    "Linux: The KVM halt polling system",
    "halt_poll_ns: polling saves a trip through the scheduler for short halts, at the price of host CPU",
    Some("https://docs.kernel.org/virt/kvm/halt-polling.html"),
);
pub(crate) const GUEST_HALT_POLL_DOC: Source = src(
    "doc",
    "Linux: Guest halt polling",
    "cpuidle-haltpoll: the guest polls before HLT, avoiding the exit and the wake-up IPI",
    Some("https://docs.kernel.org/virt/guest-halt-polling.html"),
);
pub(crate) const HALTPOLL_GOVERNOR: Source = src(
    "commit",
    "Linux 2cffe9f6b96f",
    "cpuidle: add haltpoll governor (measured against host halt_poll_ns)",
    Some("https://git.kernel.org/torvalds/c/2cffe9f6b96f"),
);
pub(crate) const TGLX_SERIAL: Source = lore(
    "87ed2pvgqw.ffs@tglx",
    "Thomas Gleixner: an emulated 8250 costs an exit per byte; fix the guest's serial loop, not the IRQ-storm detector",
    "https://lore.kernel.org/r/87ed2pvgqw.ffs@tglx",
);
pub(crate) const MFLEMING_2017: Source = src(
    "post",
    "Matt Fleming, 2017-02-26: Using perf probe to analyse VM exits",
    "io_exits traced to iowrite16 in vp_notify: legacy virtio-pci queue notifications (virtio-blk, virtio-rng)",
    Some(
        "https://github.com/mfleming/mfleming.github.io/blob/master/_posts/2017-02-26-using-perf-probe-to-analyse-vmexits.md",
    ),
);
pub(crate) const VIRTIO_SPEC: Source = src(
    "doc",
    "OASIS VIRTIO 1.2",
    "legacy (port IO) and modern (MMIO) PCI transports; notification and event-idx",
    Some("https://docs.oasis-open.org/virtio/virtio/v1.2/virtio-v1.2.html"),
);
pub(crate) const LIBVIRT_VIRTIO_MODELS: Source = src(
    "doc",
    "libvirt: domain XML, virtio device models",
    "virtio-transitional vs virtio-non-transitional; <driver ioeventfd='on'/>",
    Some("https://libvirt.org/formatdomain.html#virtio-device-models"),
);
pub(crate) const ACPI_IDLE_CODE: Source = src(
    "code",
    "Linux drivers/acpi/processor_idle.c: io_idle()",
    "C-state entry through P_LVLx is followed by a dummy PM-timer read (the chipset wait)",
    Some(
        "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/drivers/acpi/processor_idle.c",
    ),
);
pub(crate) const SENOZHATSKY_2021: Source = lore(
    "20211012091430.1754492-1-senozhatsky@chromium.org",
    "Sergey Senozhatsky, kvm@ 2021-10-12: PTE prefetch 8 → 16 cut EPT-violation exits by ~14%",
    "https://lore.kernel.org/r/20211012091430.1754492-1-senozhatsky@chromium.org",
);
pub(crate) const AKPM_2012: Source = lore(
    "20120918124646.02aaee4f.akpm@linux-foundation.org",
    "a guest that cannot fault in its first page: EXCEPTION_NMI at 330k/s; fixed by reverting cf9b81d47a89",
    "https://lore.kernel.org/r/20120918124646.02aaee4f.akpm@linux-foundation.org",
);
pub(crate) const VITALY_RSM: Source = lore(
    "20210628104425.391276-5-vkuznets@redhat.com",
    "KVM: nSVM: keep L1 state across SMM (RSM then #GP booting Hyper-V / WS2016 nested)",
    "https://lore.kernel.org/r/20210628104425.391276-5-vkuznets@redhat.com",
);
pub(crate) const BAUER_2022: Source = lore(
    "95c1dc01-4aa0-46a6-95b1-bbc62588ac6e@www.fastmail.com",
    "Lorenz Bauer, kvm@ 2022-03-16: nested KVM exits L2 with TRIPLE_FAULT (KVM_EXIT_SHUTDOWN)",
    "https://lore.kernel.org/r/95c1dc01-4aa0-46a6-95b1-bbc62588ac6e@www.fastmail.com",
);
pub(crate) const RISCV_PERF: Source = src(
    "commit",
    "Linux 3b7270c76622",
    "RISC-V: perf/kvm: Add reporting of interrupt events (UNKNOWN rows were interrupts)",
    Some("https://git.kernel.org/torvalds/c/3b7270c76622"),
);
pub(crate) const KVM_NESTED_DOC: Source = src(
    "doc",
    "Linux: Running nested guests with KVM",
    "nested=1, what L1 needs, and nested state migration",
    Some("https://docs.kernel.org/virt/kvm/x86/running-nested-guests.html"),
);
pub(crate) const NESTED_VMX_DOC: Source = src(
    "doc",
    "Linux: Nested VMX",
    "how L0 emulates VMX for L1; shadow VMCS avoids VMREAD/VMWRITE exits",
    Some("https://docs.kernel.org/virt/kvm/x86/nested-vmx.html"),
);
pub(crate) const EVMCS: Source = src(
    "commit",
    "Linux b8bbab928fb1",
    "KVM: nVMX: implement enlightened VMPTRLD and VMCLEAR (eVMCS for Hyper-V as L1)",
    Some("https://git.kernel.org/torvalds/c/b8bbab928fb1"),
);
pub(crate) const NESTED_SVM_STATE: Source = src(
    "commit",
    "Linux cc440cdad5b7",
    "KVM: nSVM: implement KVM_GET_NESTED_STATE and KVM_SET_NESTED_STATE (5.8 nested SVM rework)",
    Some("https://git.kernel.org/torvalds/c/cc440cdad5b7"),
);
pub(crate) const KVM_CPUID_DOC: Source = src(
    "doc",
    "Linux: KVM CPUID bits",
    "KVM paravirtual features: PV EOI, PV unhalt (spinlocks), PV TLB flush, PV send IPI, poll control",
    Some("https://docs.kernel.org/virt/kvm/x86/cpuid.html"),
);
pub(crate) const KVM_MSR_DOC: Source = src(
    "doc",
    "Linux: KVM-specific MSRs",
    "kvmclock, steal time, PV EOI and async PF MSRs (0x4b564dxx) a Linux guest writes",
    Some("https://docs.kernel.org/virt/kvm/x86/msr.html"),
);
pub(crate) const KVM_TRACE_H: Source = src(
    "code",
    "Linux arch/x86/kvm/trace.h",
    "the kvm tracepoints, kvm_apicv_inhibit_changed among them, and what each field means",
    Some(
        "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/arch/x86/kvm/trace.h",
    ),
);
pub(crate) const KVM_I8254: Source = src(
    "code",
    "Linux arch/x86/kvm/i8254.c: kvm_pit_set_reinject()",
    "PIT reinjection inhibits AMD AVIC (APICV_INHIBIT_REASON_PIT_REINJ)",
    Some(
        "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/arch/x86/kvm/i8254.c",
    ),
);
pub(crate) const PERF_KVM: Source = src(
    "doc",
    "perf-kvm(1)",
    "perf kvm stat record/report --event=vmexit|ioport|mmio|msr",
    Some("https://man7.org/linux/man-pages/man1/perf-kvm.1.html"),
);
pub(crate) const KVM_API_DOC: Source = src(
    "doc",
    "Linux: The Definitive KVM API Documentation",
    "KVM_EXIT_SHUTDOWN (triple fault) and the exit reasons userspace sees",
    Some("https://docs.kernel.org/virt/kvm/api.html"),
);
pub(crate) const SCHEDSTAT_DOC: Source = src(
    "doc",
    "Linux: Documentation/scheduler/sched-stats.rst",
    "/proc/<pid>/schedstat: time spent on the CPU, time spent waiting on a run queue, timeslices run",
    Some("https://docs.kernel.org/scheduler/sched-stats.html"),
);
pub(crate) const PROC_STAT_DOC: Source = src(
    "doc",
    "Linux: Documentation/filesystems/proc.rst, /proc/stat",
    "the steal column: involuntary wait, time the hypervisor ran something else while this virtual CPU \
     wanted to run",
    Some("https://docs.kernel.org/filesystems/proc.html"),
);
pub(crate) const VMWARE_READY_KB: Source = src(
    "doc",
    "VMware KB 2002181",
    "Converting between CPU summation and CPU % ready values: %RDY is the time a vCPU was ready to run \
     but waited for a physical CPU",
    Some("https://kb.vmware.com/s/article/2002181"),
);
pub(crate) const IBM_CPU_READY: Source = src(
    "doc",
    "IBM Support: Virtual machine CPU ready",
    "RDY% should stay under 5% in normal operation; high ready time with no CPU limit means an \
     over-subscribed host",
    Some("https://www.ibm.com/support/pages/virtual-machine-cpu-ready"),
);
pub(crate) const HYPERV_DISPATCH_WAIT: Source = src(
    "doc",
    "Spotlight: Hyper-V CPU Wait Time Per Dispatch alarm",
    "the average wait of a virtual processor for a logical processor should stay under 60 µs; above \
     100 µs is high",
    Some("https://help.spotlightessentials.com/hyperv_alarm_cpuwaittimedispatch"),
);
pub(crate) const USE_METHOD: Source = src(
    "post",
    "Brendan Gregg: USE Method, Linux Performance Checklist",
    "CPU saturation: runnable threads above the CPU count (vmstat r); per process, schedstat's run_delay",
    Some("https://www.brendangregg.com/USEmethod/use-linux.html"),
);
pub(crate) const LIBVIRT_CPUTUNE: Source = src(
    "doc",
    "libvirt: domain XML, CPU tuning",
    "<cputune>: vcpupin, emulatorpin, shares (the cgroup CPU weight), period/quota",
    Some("https://libvirt.org/formatdomain.html#cpu-tuning"),
);
pub(crate) const CGROUP_CPU_WEIGHT: Source = src(
    "doc",
    "Linux: Control Group v2, CPU controller",
    "cpu.weight: a cgroup's proportional share of CPU time when the CPUs are contended (default 100)",
    Some("https://docs.kernel.org/admin-guide/cgroup-v2.html#cpu"),
);
pub(crate) const FRIEDMAN_OVERPROVISIONED: Source = src(
    "post",
    "Mark Friedman: Understanding guest machine performance under Hyper-V, over-provisioned hosts",
    "a virtual processor's dispatch waits only when every CPU is busy: the joint probability argument, \
     and the stretch measured on over-committed hosts",
    Some("https://performancebydesign.blogspot.com/"),
);

// The IO path: interrupt delivery, notification suppression, polling; Hyper-V and esxtop
// counters.
pub(crate) const SNIA_10M_IOPS: Source = src(
    "talk",
    "SNIA SDC 2018: Achieving 10 million IOPS from a single VM on Windows Hyper-V",
    "where the CPU goes per IO at 4.5 M IOPS: the VP's intercepts, external and virtual interrupts, \
     EOIs and IPIs; interrupt delivery without hardware help caps IOPS, NVMe polling removes it",
    Some(
        "https://www.snia.org/educational-library/achieving-10-million-iops-single-vm-windows-hyper-v-2018",
    ),
);
pub(crate) const ELI_2012: Source = src(
    "post",
    "ELI: Bare-Metal Performance for I/O Virtualization (ASPLOS 2012)",
    "interrupt delivery and EOIs are the exits left on the IO path once devices are assigned; \
     delivering them without exits gets within a few percent of bare metal",
    Some("https://research.ibm.com/publications/eli-bare-metal-performance-for-io-virtualization"),
);
pub(crate) const KVM_APICV_PARAMS: Source = src(
    "doc",
    "Linux: kernel parameters, kvm-intel.enable_apicv / kvm-amd.avic",
    "APIC virtualization and posted interrupts (Intel, on by default where the CPU has them), \
     AVIC (AMD: kvm_amd avic=1)",
    Some("https://docs.kernel.org/admin-guide/kernel-parameters.html"),
);
pub(crate) const QEMU_IOTHREAD: Source = src(
    "doc",
    "QEMU: -object iothread,poll-max-ns=…",
    "an iothread polls its queues for up to poll-max-ns before it blocks; while it polls, the \
     guest's notifications are suppressed",
    Some("https://www.qemu.org/docs/master/system/invocation.html"),
);
pub(crate) const LIBVIRT_IOTHREADS: Source = src(
    "doc",
    "libvirt: domain XML, IOThreads allocation",
    "<iothreads>, <iothreadids><iothread id='1'><poll max='…'/></iothread>, <driver iothread='1'/>",
    Some("https://libvirt.org/formatdomain.html#iothreads-allocation"),
);
pub(crate) const QEMU_VHOST_USER_BLK: Source = src(
    "doc",
    "QEMU: qemu-storage-daemon and vhost-user-blk exports",
    "a block device served by another process over vhost-user: notifications and completions \
     through eventfds, never through QEMU",
    Some("https://www.qemu.org/docs/master/tools/qemu-storage-daemon.html"),
);
pub(crate) const IO_URING_IOPOLL: Source = src(
    "doc",
    "io_uring_setup(2): IORING_SETUP_IOPOLL",
    "busy-poll for IO completions instead of taking interrupts (O_DIRECT, a driver with poll queues)",
    Some("https://man7.org/linux/man-pages/man2/io_uring_setup.2.html"),
);
pub(crate) const NVME_POLL_QUEUES: Source = src(
    "code",
    "Linux drivers/nvme/host/pci.c: poll_queues",
    "nvme.poll_queues=N: queues without interrupts, for polled IO",
    Some(
        "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/drivers/nvme/host/pci.c",
    ),
);
pub(crate) const VIRTIO_BLK_POLL: Source = src(
    "code",
    "Linux drivers/block/virtio_blk.c: poll_queues",
    "virtio_blk.poll_queues=N: virtqueues without interrupts, for polled IO (Linux 5.19 and later)",
    Some(
        "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/drivers/block/virtio_blk.c",
    ),
);
pub(crate) const MS_HYPERV_BOTTLENECKS: Source = src(
    "doc",
    "Microsoft: Detecting bottlenecks in a virtualized environment",
    "the Hyper-V Hypervisor Logical / Virtual Processor counters and what high values mean",
    Some(
        "https://learn.microsoft.com/windows-server/administration/performance-tuning/role/hyper-v-server/detecting-virtualized-environment-bottlenecks",
    ),
);
pub(crate) const PAL_HYPERV: Source = src(
    "code",
    "PAL (clinthuffman/PAL) 75ecd07c: PAL2/PALWizard/HyperV30.xml",
    "PAL's thresholds for the Hyper-V hypervisor counter objects",
    Some("https://github.com/clinthuffman/PAL"),
);

// arm64 and RISC-V.
pub(crate) const PERF_KVM_ARM64: Source = src(
    "lore",
    "<20200917100225.208794-1-sergey.senozhatsky@gmail.com>",
    "perf kvm: add kvm-stat for arm64 — traps keyed by exception class (DABT_LOW, WFx, SYS64, HVC64), other exits by type (IRQ)",
    Some("https://lore.kernel.org/r/20200917100225.208794-1-sergey.senozhatsky@gmail.com"),
);
pub(crate) const QEMU_ARM_VIRT: Source = src(
    "doc",
    "QEMU: 'virt' generic virtual platform",
    "the arm64 machine for KVM guests: virtio-mmio/PCIe devices, in-kernel GIC",
    Some("https://www.qemu.org/docs/master/system/arm/virt.html"),
);
pub(crate) const QEMU_ARM_CPU_FEATURES: Source = src(
    "doc",
    "QEMU: Arm CPU features",
    "pmu=on|off and the other CPU properties of KVM arm64 guests",
    Some("https://www.qemu.org/docs/master/system/arm/cpu-features.html"),
);
pub(crate) const KVM_ARM_HYPERCALLS: Source = src(
    "doc",
    "Linux: ARM Hypercall Interface",
    "the firmware calls (PSCI, SMCCC, vendor services) KVM answers for arm64 guests",
    Some("https://docs.kernel.org/virt/kvm/arm/hypercalls.html"),
);
pub(crate) const HUGETLB_DOC: Source = src(
    "doc",
    "Linux: HugeTLB Pages",
    "huge pages: fewer, larger stage-2 mappings for guest memory",
    Some("https://docs.kernel.org/admin-guide/mm/hugetlbpage.html"),
);
pub(crate) const RISCV_SBI_SPEC: Source = src(
    "doc",
    "RISC-V Supervisor Binary Interface specification",
    "the SBI calls a guest kernel makes (TIME, IPI, RFENCE, console)",
    Some("https://github.com/riscv-non-isa/riscv-sbi-doc"),
);

pub(crate) const BUSLOCK_DOC: Source = src(
    "doc",
    "Linux: Documentation/arch/x86/buslock.rst",
    "split-lock and bus-lock detection: #AC / #DB traps, split_lock_detect=off|warn|fatal|ratelimit:N",
    Some("https://docs.kernel.org/arch/x86/buslock.html"),
);
pub(crate) const SPLIT_LOCK_MITIGATE: Source = src(
    "doc",
    "Linux: sysctl kernel.split_lock_mitigate",
    "1 (default): a split-locking thread sleeps 10 ms and split lockers run one at a time; \
     0: only a warning (added in Linux 6.2)",
    Some("https://docs.kernel.org/admin-guide/sysctl/kernel.html#split-lock-mitigate-x86-only"),
);
pub(crate) const SPLIT_LOCK_PARAM: Source = src(
    "doc",
    "Linux: kernel parameters, split_lock_detect=",
    "off / warn (default) / fatal / ratelimit:N for split and bus locks",
    Some("https://docs.kernel.org/admin-guide/kernel-parameters.html"),
);
pub(crate) const IGNORE_MSRS: Source = src(
    "doc",
    "Linux: kernel parameters, kvm.ignore_msrs / kvm.report_ignored_msrs",
    "ignore guest accesses to MSRs KVM does not emulate (no #GP), and whether to log them",
    Some("https://docs.kernel.org/admin-guide/kernel-parameters.html"),
);
pub(crate) const IGNORE_MSRS_QUIET: Source = src(
    "commit",
    "Linux fab0aa3b776f",
    "KVM: x86: Allow suppressing prints on RDMSR/WRMSR of unhandled MSRs (report_ignored_msrs)",
    Some("https://git.kernel.org/torvalds/c/fab0aa3b776f"),
);
pub(crate) const LOCKUP_WATCHDOGS: Source = src(
    "doc",
    "Linux: Documentation/admin-guide/lockup-watchdogs.rst",
    "soft lockup: a CPU in kernel mode without scheduling for more than 2 × watchdog_thresh (20 s)",
    Some("https://docs.kernel.org/admin-guide/lockup-watchdogs.html"),
);
pub(crate) const RCU_STALLS: Source = src(
    "doc",
    "Linux: Documentation/RCU/stallwarn.rst",
    "what RCU CPU stall warnings mean: a CPU looping in the kernel, a vCPU not scheduled, \
     interrupts off",
    Some("https://docs.kernel.org/RCU/stallwarn.html"),
);
pub(crate) const LWN_SPLIT_LOCK_MISERY: Source = src(
    "post",
    "LWN: The search for the correct amount of split-lock misery (2022)",
    "why split lockers are slowed down by default (a denial-of-service vector for other VMs), and \
     the kernel.split_lock_mitigate knob (Linux 6.2) that keeps the warning without the slowdown",
    Some("https://lwn.net/Articles/911219/"),
);

// APICv/AVIC inhibit reasons, one source per reason's fix.
pub(crate) const KVM_REINJECT_CONTROL: Source = src(
    "doc",
    "Linux KVM API: KVM_REINJECT_CONTROL",
    "PIT reinjection off (pit_reinject = 0) is recommended unless the guest keeps time with the PIT",
    Some("https://docs.kernel.org/virt/kvm/api.html#kvm-reinject-control"),
);
pub(crate) const LIBKRUN_PIT_REINJ: Source = src(
    "bug",
    "libkrun issue #498",
    "AVIC inhibited (PIT_REINJ) by a PIT left in reinject mode; fixed by KVM_REINJECT_CONTROL",
    Some("https://github.com/libkrun/libkrun/issues/498"),
);
pub(crate) const KVM_APIC_ID_CLEAR: Source = src(
    "commit",
    "Linux d471bd853d38",
    "KVM: x86: Allow APICv APIC ID inhibit to be cleared (before it, APIC_ID_MODIFIED stuck until the VM was destroyed)",
    Some("https://lore.kernel.org/r/20221117183247.94314-1-gedwards@ddn.com"),
);
pub(crate) const KVM_AVIC_NESTED: Source = src(
    "commit",
    "Linux f44509f849fe",
    "KVM: x86: SVM: allow AVIC to co-exist with a nested guest running (5.19: only vCPUs in L2 lose AVIC)",
    Some("https://github.com/torvalds/linux/commit/f44509f849fe55bbd81bd3f099b9aecd19002243"),
);
pub(crate) const LWN_X2AVIC: Source = src(
    "post",
    "LWN: Introducing x2AVIC and hybrid-AVIC modes",
    "AVIC with an x2APIC guest: x2AVIC (Zen 4) and hybrid AVIC, Linux 6.0; before, x2APIC inhibited AVIC",
    Some("https://lwn.net/Articles/887196/"),
);
pub(crate) const KVM_INHIBIT_DOC: Source = lore(
    "20220606180829.102503-2-mlevitsk@redhat.com",
    "Maxim Levitsky: KVM: x86: document AVIC/APICv inhibit reasons (what sets each one)",
    "https://lore.kernel.org/r/20220606180829.102503-2-mlevitsk@redhat.com",
);
pub(crate) const QEMU_IRQCHIP: Source = src(
    "doc",
    "QEMU: invocation, -machine kernel-irqchip",
    "kernel-irqchip=on|split|off: where the local APIC is emulated",
    Some("https://www.qemu.org/docs/master/system/invocation.html"),
);
