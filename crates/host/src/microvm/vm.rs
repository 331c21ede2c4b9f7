//! [`MicroVm`]: one VM with one vCPU and a block of RAM at guest-physical 0, a real-mode
//! program loader, and a run loop that handles port and MMIO exits in userspace until the
//! guest halts, with the watchdog on every `KVM_RUN`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kvm_bindings::KVM_MAX_CPUID_ENTRIES;
use kvm_ioctls::{Kvm, VcpuExit, VcpuFd, VmFd};

use super::error::Error;
use super::guest::{self, CODE_ADDR, EXCEPTION_PORT, MIN_MEMORY, STACK_TOP};
use super::sys::{self, GuestMemory};
use super::watchdog::{StopOnDrop, Watchdog};

/// What one [`MicroVm::run`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// KVM_EXIT_IO exits (port reads and writes handled here).
    pub pio_exits: u64,
    /// KVM_EXIT_MMIO exits.
    pub mmio_exits: u64,
    /// Whether the run ended with the guest's HLT (KVM_EXIT_HLT).
    pub hlt: bool,
    /// `KVM_RUN` calls made (exits plus interrupted runs that were resumed).
    pub kvm_runs: u64,
    /// Port accesses by port number.
    pub ports: BTreeMap<u16, u64>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

/// A minimal VM: guest RAM at GPA 0, one vCPU. See the module doc of `microvm`.
///
/// Field order matters: the vCPU and VM are dropped (closed) before the memory they use is
/// unmapped.
#[derive(Debug)]
pub struct MicroVm {
    vcpu: VcpuFd,
    vm: VmFd,
    mem: GuestMemory,
}

/// What an exit asks of the run loop, taken out of the exit so the vCPU can be used again.
enum Step {
    Continue,
    Halt,
    Exception(u8),
    Interrupted,
    Fail(Error),
    Unexpected(String),
    Internal,
}

impl MicroVm {
    /// A VM with `mem_bytes` of RAM (rounded up to whole pages, at least 64 KiB) and one vCPU
    /// whose CPUID is what KVM supports.
    pub fn new(mem_bytes: usize) -> Result<MicroVm, Error> {
        let len = mem_bytes.max(MIN_MEMORY).next_multiple_of(4096);
        let kvm = Kvm::new().map_err(Error::kvm("opening /dev/kvm"))?;
        let vm = kvm.create_vm().map_err(Error::kvm("KVM_CREATE_VM"))?;
        let mem = GuestMemory::new(len)
            .map_err(|e| Error::Memory(format!("mmap of {len} bytes: {e}")))?;
        mem.register(&vm, 0, 0)
            .map_err(Error::kvm("KVM_SET_USER_MEMORY_REGION"))?;
        let vcpu = vm.create_vcpu(0).map_err(Error::kvm("KVM_CREATE_VCPU"))?;
        let cpuid = kvm
            .get_supported_cpuid(KVM_MAX_CPUID_ENTRIES)
            .map_err(Error::kvm("KVM_GET_SUPPORTED_CPUID"))?;
        vcpu.set_cpuid2(&cpuid)
            .map_err(Error::kvm("KVM_SET_CPUID2"))?;
        Ok(MicroVm { vcpu, vm, mem })
    }

    /// The VM fd, for set-ups this type does not wrap (ioeventfd, irqchip, coalesced MMIO).
    pub fn vm_fd(&self) -> &VmFd {
        &self.vm
    }

    /// The guest's RAM size in bytes.
    pub fn mem_bytes(&self) -> usize {
        self.mem.len()
    }

    /// Copies `bytes` into guest RAM at `gpa`.
    pub fn write_mem(&mut self, gpa: u64, bytes: &[u8]) -> Result<(), Error> {
        let len = self.mem.len();
        let dest = usize::try_from(gpa)
            .ok()
            .and_then(|start| Some(start..start.checked_add(bytes.len())?))
            .and_then(|range| self.mem.as_mut_slice().get_mut(range))
            .ok_or_else(|| {
                Error::Memory(format!(
                    "{} bytes at {gpa:#x} do not fit in {len:#x} bytes of guest RAM",
                    bytes.len()
                ))
            })?;
        dest.copy_from_slice(bytes);
        Ok(())
    }

    /// Guest RAM at `gpa`, `len` bytes (None when out of range).
    pub fn read_mem(&self, gpa: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(gpa).ok()?;
        self.mem.as_slice().get(start..start.checked_add(len)?)
    }

    /// Loads a 16-bit real-mode program at [`CODE_ADDR`] with exception stubs for every
    /// vector, and points the vCPU at it (cs = 0, ip = CODE_ADDR, sp = STACK_TOP).
    pub fn load_real_mode(&mut self, code: &[u8]) -> Result<(), Error> {
        for (gpa, bytes) in guest::exception_handlers()? {
            self.write_mem(gpa, &bytes)?;
        }
        self.write_mem(CODE_ADDR, code)?;
        let mut sregs = self.vcpu.get_sregs().map_err(Error::kvm("KVM_GET_SREGS"))?;
        for seg in [
            &mut sregs.cs,
            &mut sregs.ds,
            &mut sregs.es,
            &mut sregs.fs,
            &mut sregs.gs,
            &mut sregs.ss,
        ] {
            seg.base = 0;
            seg.selector = 0;
        }
        self.vcpu
            .set_sregs(&sregs)
            .map_err(Error::kvm("KVM_SET_SREGS"))?;
        let mut regs = self.vcpu.get_regs().map_err(Error::kvm("KVM_GET_REGS"))?;
        regs.rip = CODE_ADDR;
        regs.rsp = STACK_TOP;
        regs.rflags = 2;
        self.vcpu
            .set_regs(&regs)
            .map_err(Error::kvm("KVM_SET_REGS"))?;
        Ok(())
    }

    /// Runs the guest until it halts, answering port and MMIO exits (reads return zeros).
    /// Every `KVM_RUN` must return within `watchdog`, else the run fails with
    /// [`Error::Hung`]. Uses a helper thread, joined before returning.
    pub fn run(&mut self, watchdog: Duration) -> Result<RunStats, Error> {
        let signal = sys::kick_signal().map_err(Error::Watchdog)?;
        let dog = Watchdog::for_current_thread(watchdog, signal);
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name("kvm-watchdog".into())
                .spawn_scoped(scope, || dog.watch())
                .map_err(|e| Error::Watchdog(format!("spawning the watchdog thread: {e}")))?;
            let _stop = StopOnDrop {
                watchdog: &dog,
                thread: thread.thread().clone(),
            };
            self.run_loop(&dog)
        })
    }

    fn run_loop(&mut self, dog: &Watchdog) -> Result<RunStats, Error> {
        let start = Instant::now();
        let mut stats = RunStats::default();
        loop {
            let token = dog.arm();
            let result = self.vcpu.run();
            dog.disarm();
            stats.kvm_runs += 1;
            let step = match result {
                Ok(exit) => handle(exit, &mut stats),
                Err(e) if e.errno() == libc::EINTR => Step::Interrupted,
                Err(e) => Step::Fail(Error::Kvm {
                    op: "KVM_RUN",
                    source: e,
                }),
            };
            match step {
                Step::Continue => {}
                Step::Halt => {
                    stats.hlt = true;
                    stats.elapsed = start.elapsed();
                    return Ok(stats);
                }
                Step::Interrupted if dog.fired_for(token) => {
                    return Err(Error::Hung {
                        limit: dog.limit(),
                        rip: self.rip(),
                    });
                }
                Step::Interrupted => {} // another signal: resume
                Step::Exception(vector) => {
                    if guest::in_stubs(self.rip()) {
                        return Err(self.exception(vector));
                    }
                    // The program itself wrote to the stubs' port: an ordinary port write.
                    stats.pio_exits += 1;
                    *stats.ports.entry(EXCEPTION_PORT).or_default() += 1;
                }
                Step::Fail(Error::Shutdown { .. }) => {
                    return Err(Error::Shutdown { rip: self.rip() });
                }
                Step::Fail(e) => return Err(e),
                Step::Internal => {
                    let (suberror, data) = sys::internal_error(self.vcpu.get_kvm_run());
                    return Err(Error::Internal {
                        suberror,
                        data,
                        rip: self.rip(),
                    });
                }
                Step::Unexpected(exit) => {
                    return Err(Error::UnexpectedExit {
                        exit,
                        rip: self.rip(),
                    });
                }
            }
        }
    }

    fn rip(&self) -> u64 {
        self.vcpu.get_regs().map_or(0, |r| r.rip)
    }

    /// The error for an exception stub's report: the faulting cs:ip is on the guest stack.
    fn exception(&self, vector: u8) -> Error {
        let frame = self
            .vcpu
            .get_regs()
            .ok()
            .zip(self.vcpu.get_sregs().ok())
            .and_then(|(r, s)| {
                let sp = s.ss.base.wrapping_add(r.rsp & 0xffff);
                let b = self.read_mem(sp, 4)?;
                Some((
                    u16::from_le_bytes([b[2], b[3]]),
                    u16::from_le_bytes([b[0], b[1]]),
                ))
            });
        let (cs, ip) = frame.unwrap_or((0, 0));
        Error::GuestException { vector, cs, ip }
    }
}

fn handle(exit: VcpuExit<'_>, stats: &mut RunStats) -> Step {
    match exit {
        VcpuExit::IoOut(port, data) => {
            if port == EXCEPTION_PORT && data.len() == 1 {
                // A stub's report, if rip is in the stubs (checked by the run loop).
                return Step::Exception(data[0]);
            }
            stats.pio_exits += 1;
            *stats.ports.entry(port).or_default() += 1;
            Step::Continue
        }
        VcpuExit::IoIn(port, data) => {
            data.fill(0);
            stats.pio_exits += 1;
            *stats.ports.entry(port).or_default() += 1;
            Step::Continue
        }
        VcpuExit::MmioRead(_, data) => {
            data.fill(0);
            stats.mmio_exits += 1;
            Step::Continue
        }
        VcpuExit::MmioWrite(..) => {
            stats.mmio_exits += 1;
            Step::Continue
        }
        VcpuExit::Hlt => Step::Halt,
        VcpuExit::Intr => Step::Interrupted,
        VcpuExit::Shutdown => Step::Fail(Error::Shutdown { rip: 0 }),
        VcpuExit::FailEntry(reason, cpu) => Step::Fail(Error::FailEntry { reason, cpu }),
        VcpuExit::InternalError => Step::Internal,
        other => Step::Unexpected(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::code_asm::CodeAssembler;

    /// Serialises the tests that make VMs, so the fd and thread checks see only their own.
    static KVM_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn kvm_usable() -> bool {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok()
    }

    /// Open fds that are KVM objects (/dev/kvm, VMs, vCPUs) in this process.
    fn kvm_fds() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .map(|d| {
                d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .filter(|t| t.to_string_lossy().contains("kvm"))
                    .count()
            })
            .unwrap_or(0)
    }

    fn watchdog_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                    .filter(|c| c.trim() == "kvm-watchdog")
                    .count()
            })
            .unwrap_or(0)
    }

    fn program(
        build: impl FnOnce(&mut CodeAssembler) -> Result<(), iced_x86::IcedError>,
    ) -> Vec<u8> {
        let mut a = CodeAssembler::new(16).unwrap();
        build(&mut a).unwrap();
        a.assemble(CODE_ADDR).unwrap()
    }

    #[test]
    fn runs_counts_reports_faults_and_hangs_and_cleans_up() {
        let _serial = KVM_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        if !kvm_usable() {
            eprintln!("SKIP: /dev/kvm is not usable here");
            return;
        }
        let fds_before = kvm_fds();

        let mut vm = MicroVm::new(1 << 16).unwrap();
        vm.load_real_mode(&guest::pio_loop(0x80, 250).unwrap())
            .unwrap();
        let stats = vm.run(Duration::from_secs(10)).unwrap();
        assert_eq!(
            (stats.pio_exits, stats.mmio_exits, stats.hlt),
            (250, 0, true)
        );
        assert_eq!(stats.ports.get(&0x80), Some(&250));
        assert_eq!(stats.kvm_runs, 251);
        drop(vm);

        let mut vm = MicroVm::new(1 << 16).unwrap();
        vm.load_real_mode(&program(|a| a.ud2())).unwrap();
        let err = vm.run(Duration::from_secs(10)).unwrap_err();
        assert!(
            matches!(err, Error::GuestException { vector: 6, cs: 0, ip } if u64::from(ip) == CODE_ADDR),
            "{err}"
        );
        drop(vm);

        // A VMCALL at CPL0 spins in the kernel on PVM; elsewhere it may exit or fault. Either
        // way the run must end, and a hang must be reported within the watchdog time.
        let mut vm = MicroVm::new(1 << 16).unwrap();
        vm.load_real_mode(&program(|a| a.vmcall())).unwrap();
        let t = Instant::now();
        let result = vm.run(Duration::from_millis(300));
        let took = t.elapsed();
        if std::path::Path::new("/sys/module/kvm_pvm").exists() {
            assert!(matches!(result, Err(Error::Hung { .. })), "{result:?}");
        }
        if let Err(Error::Hung { limit, .. }) = &result {
            assert_eq!(*limit, Duration::from_millis(300));
            assert!(
                took >= *limit && took < Duration::from_secs(2),
                "took {took:?}"
            );
        }
        drop(vm);

        assert_eq!(kvm_fds(), fds_before, "KVM fds leaked");
        assert_eq!(watchdog_threads(), 0, "watchdog thread leaked");
    }

    #[test]
    fn loads_that_do_not_fit_are_errors() {
        let _serial = KVM_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        if !kvm_usable() {
            eprintln!("SKIP: /dev/kvm is not usable here");
            return;
        }
        let mut vm = MicroVm::new(0).unwrap();
        assert_eq!(vm.mem_bytes(), MIN_MEMORY);
        let big = vec![0u8; MIN_MEMORY];
        assert!(matches!(vm.load_real_mode(&big), Err(Error::Memory(_))));
        assert!(vm.write_mem(u64::MAX, &[1]).is_err());
    }
}
