//! `virtlens stretch --lab`: the CPU and TLB stretch of this host's VMs without a guest image.
//! The same kernels ([`super::kernels`], the same bytes) run natively in this process and in
//! micro-VMs on /dev/kvm — in ring 3, where hardware virtualization (and PVM) runs guest code
//! natively, and, for the CPU kernel, in ring 0, labelled as emulated where the backend
//! emulates it. The TLB kernel runs on 4 KiB and on 2 MiB guest pages (the 4 KiB page tables
//! for its buffer are built here; the host is asked for transparent huge pages behind the
//! 2 MiB guest). Rounds interleave every kernel in every layer; each layer comes out as a
//! `virtlens bench` document, so `virtlens stretch` compares them like any other layers.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use virtlens_core::Backend;
use virtlens_guest::anon_huge_kb;
use virtlens_guest::probe_fingerprint;
use virtlens_guest::schema::{
    BENCH_SCHEMA, BenchReport, Better, Check, Measure, Recorded, Skipped,
};
use virtlens_guest::stats::Spread;
use virtlens_guest::{Mapping, Pages};

use super::Tick;
use super::jit::{NativeChase, NativeQueens};
use super::kernels::{Ending, Kernel, assemble, chase_answer, page_cycle};
use crate::microvm::layout::{CODE_ADDR, PML4_ADDR};
use crate::microvm::{Error, MicroVm, Mode};

/// Board size of the CPU kernel (92 solutions): small enough for an emulated ring 0.
const QUEENS: u64 = 8;
const QUEENS_SOLUTIONS: u64 = 92;
/// The TLB buffer: 64 MiB at guest-physical 4 MiB; its 4 KiB page tables at 2 MiB.
const BUF_MB: usize = 64;
const BUF_GPA: u64 = 0x40_0000;
const PT_GPA: u64 = 0x20_0000;
const HOPS: u64 = 1_000_000;

/// One thing measured in one layer.
struct Item {
    layer: usize,
    measure: &'static str,
    place: Place,
    /// Operations per run (solves or loads).
    ops: u64,
    /// The answer a run of `ops` must give.
    expect: u64,
    samples: Vec<f64>,
    exits: f64,
    emulated: f64,
    answer: Option<(u64, u64)>,
}

enum Place {
    Queens(NativeQueens),
    Chase(NativeChase, u64),
    Vm {
        vm: Box<MicroVm>,
        arg: u64,
        start: u64,
    },
}

fn exits_of(vm: &MicroVm) -> Option<(u64, u64)> {
    let fd = vm.vcpu_stats().ok()?;
    let snap = fd.snapshot().ok()?;
    let get = |n: &str| snap.get(fd.layout(), n).unwrap_or(0);
    Some((get("exits"), get("insn_emulation")))
}

impl Item {
    /// One run; returns ns per operation.
    fn run(&mut self) -> Result<f64, Error> {
        let ops = self.ops;
        let t = Instant::now();
        let (ns, rax) = match &mut self.place {
            Place::Queens(q) => {
                let rax = q.run(ops, QUEENS);
                (t.elapsed().as_nanos() as f64, rax)
            }
            Place::Chase(c, start) => {
                let rax = c.run(ops, *start).unwrap_or(u64::MAX);
                (t.elapsed().as_nanos() as f64, rax)
            }
            Place::Vm { vm, arg, start } => {
                let (arg, start) = (*arg, *start);
                vm.restart_with(|r| {
                    r.rdi = ops;
                    r.rsi = arg;
                    r.rdx = start;
                })?;
                let before = exits_of(vm);
                let stats = vm.run(Duration::from_secs(30))?;
                if let (Some(a), Some(b)) = (before, exits_of(vm)) {
                    self.exits += b.0.saturating_sub(a.0) as f64;
                    self.emulated += b.1.saturating_sub(a.1) as f64;
                }
                let rax = vm
                    .vcpu_fd()
                    .get_regs()
                    .map_err(Error::kvm("KVM_GET_REGS"))?
                    .rax;
                (stats.elapsed.as_nanos() as f64, rax)
            }
        };
        self.answer = Some((self.expect, rax));
        if rax != self.expect {
            return Err(Error::UnexpectedExit {
                exit: format!("{} gave {rax}, expected {}", self.measure, self.expect),
                rip: 0,
            });
        }
        Ok(ns / ops.max(1) as f64)
    }
}

fn guest_4k_tables(vm: &mut MicroVm) -> Result<(), Error> {
    // PD 0 (the first GiB) is the third page of the identity map; entries 2.. cover the buffer.
    let pd0 = PML4_ADDR + 2 * 0x1000;
    for k in 0..(BUF_MB as u64 / 2) {
        let pt = PT_GPA + k * 0x1000;
        let mut table = Vec::with_capacity(4096);
        for i in 0..512u64 {
            let page = BUF_GPA + k * (2 << 20) + i * 0x1000;
            table.extend_from_slice(&(page | 0x7).to_le_bytes());
        }
        vm.write_mem(pt, &table)?;
        vm.write_mem(pd0 + (BUF_GPA >> 21) * 8 + k * 8, &(pt | 0x7).to_le_bytes())?;
    }
    Ok(())
}

fn vm_for(kernel: Kernel, mode: Mode, buffer: Option<(&[u8], Pages)>) -> Result<MicroVm, Error> {
    let mem = if buffer.is_some() {
        BUF_GPA as usize + (BUF_MB << 20)
    } else {
        1 << 20
    };
    let mut vm = MicroVm::new(mem)?;
    if let Some((_, Pages::Huge)) = buffer {
        vm.advise_huge_pages()
            .map_err(|e| Error::Memory(format!("madvise: {e}")))?;
    }
    vm.load(mode, &assemble(kernel, Ending::DonePort, CODE_ADDR)?)?;
    if let Some((bytes, pages)) = buffer {
        vm.write_mem(BUF_GPA, bytes)?;
        if pages == Pages::Small {
            guest_4k_tables(&mut vm)?;
        }
    }
    Ok(vm)
}

/// The CPU kernel in a micro-VM of `mode`, as layer `layer`.
fn queens_vm(layer: usize, mode: Mode) -> Result<Item, Error> {
    let vm = Box::new(vm_for(Kernel::Queens, mode, None)?);
    let place = Place::Vm {
        vm,
        arg: 0,
        start: QUEENS,
    };
    Ok(Item::new(layer, "lab.cpu.queens8", place))
}

fn pages_text(obtained: &str, host_thp_kb: Option<u64>) -> String {
    match host_thp_kb {
        Some(kb) => format!("{obtained}; host THP behind guest RAM: {} MiB", kb >> 10),
        None => obtained.to_string(),
    }
}

/// Measures the three layers; `runs` interleaved rounds.
pub fn run(runs: usize, progress: &mut dyn FnMut(Tick<'_>)) -> Result<Vec<BenchReport>, Error> {
    let start_time = Instant::now();
    let host = super::host_label();
    let emulated_ring0 = matches!(host.facts.backend, Some(Backend::Pvm));
    let mut words = vec![0u64; (BUF_MB << 20) / 8];
    let start = page_cycle(&mut words, 42);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut items = Vec::new();
    items.push(Item::new(
        0,
        "lab.cpu.queens8",
        Place::Queens(NativeQueens::new()?),
    ));
    let mut details: Vec<(usize, &str, String)> = Vec::new();
    for (pages, name) in [
        (Pages::Small, "lab.tlb.random_4k"),
        (Pages::Huge, "lab.tlb.random_2m"),
    ] {
        let mut map =
            Mapping::new(BUF_MB << 20, pages).map_err(|e| Error::Memory(e.to_string()))?;
        map.words().copy_from_slice(&words);
        let chase = NativeChase::new(map)?;
        let got = match (pages, anon_huge_kb(chase.addr())) {
            (Pages::Small, _) => "4K".to_string(),
            (Pages::Huge, Some(kb)) if kb >= (BUF_MB as u64) << 10 => {
                "2M (transparent huge pages)".into()
            }
            (Pages::Huge, kb) => format!("2M asked, {} MiB obtained", kb.unwrap_or(0) >> 10),
        };
        details.push((0, name, got));
        items.push(Item::new(0, name, Place::Chase(chase, start)));
    }
    items.push(queens_vm(1, Mode::User64)?);
    for (pages, name, guest) in [
        (Pages::Small, "lab.tlb.random_4k", "4K guest pages"),
        (Pages::Huge, "lab.tlb.random_2m", "2M guest pages"),
    ] {
        let vm = vm_for(Kernel::Chase, Mode::User64, Some((&bytes, pages)))?;
        let thp = anon_huge_kb(vm.host_addr());
        details.push((1, name, pages_text(guest, thp)));
        items.push(Item::new(
            1,
            name,
            Place::Vm {
                vm: Box::new(vm),
                arg: BUF_GPA,
                start,
            },
        ));
    }
    items.push(queens_vm(2, Mode::Long64)?);
    calibrate(&mut items, &words, start)?;
    let total = (runs * items.len()) as u64;
    let n = items.len();
    for round in 0..runs {
        for k in 0..n {
            let item = &mut items[(k + round) % n];
            progress(Tick {
                done: (round * n + k + 1) as u64,
                total,
                label: item.measure,
            });
            let ns = item.run()?;
            item.samples.push(ns);
        }
    }
    let fp = probe_fingerprint();
    let ring0 = if emulated_ring0 {
        "micro-VM ring 0 (emulated)"
    } else {
        "micro-VM ring 0"
    };
    let names = ["native", "micro-VM ring 3", ring0];
    let mut reports: Vec<BenchReport> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut f = fp.clone();
            if i > 0 {
                f.hypervisor_bit = true;
                f.hypervisor_vendor = Some("KVMKVMKVM".into());
            }
            BenchReport {
                schema: BENCH_SCHEMA.to_string(),
                layer: (*name).to_string(),
                recorded: Recorded {
                    unix_s: SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs()),
                    virtlens: virtlens_core::VERSION.to_string(),
                    wall_s: start_time.elapsed().as_secs_f64(),
                    runs,
                    quick: false,
                },
                fingerprint: f,
                measures: Vec::new(),
                skipped: Vec::new(),
                findings: Vec::new(),
            }
        })
        .collect();
    let backend = host.backend.clone();
    for item in items {
        let total_ops = (item.ops * item.samples.len() as u64).max(1) as f64;
        let (what, unit, scale) = if item.measure.starts_with("lab.cpu") {
            (
                "one solve of the 8-queens count (the same machine code in every layer)",
                "us",
                1e-3,
            )
        } else {
            (
                "one dependent load to a random page of a 64 MiB buffer (the same machine code in every layer)",
                "ns",
                1.0,
            )
        };
        let samples: Vec<f64> = item.samples.iter().map(|s| s * scale).collect();
        let mut m = Measure::new(item.measure, what, unit, Better::Lower, samples);
        m.spread = Spread::of(&m.samples);
        m.check = item.answer.map(|(expected, got)| Check {
            expected,
            got,
            ok: expected == got,
        });
        let execution = match item.layer {
            0 => "native, called as a function in this process".to_string(),
            1 => format!("guest ring 3 on KVM ({backend}): runs natively on the CPU"),
            _ if emulated_ring0 => format!(
                "guest ring 0 on KVM ({backend}): every instruction emulated ({:.0} emulated per solve) — this is the emulator's speed, not hardware virtualization",
                item.emulated / total_ops
            ),
            _ => format!("guest ring 0 on KVM ({backend})"),
        };
        m = m.with("execution", execution);
        if item.layer > 0 {
            m = m.with("exits_per_op", format!("{:.4}", item.exits / total_ops));
        }
        for (layer, name, text) in &details {
            if *layer == item.layer && *name == item.measure {
                m = m.with("pages_obtained", text.clone());
            }
        }
        if let Some(r) = reports.get_mut(item.layer) {
            r.measures.push(m);
        }
    }
    if let Some(r) = reports.get_mut(2) {
        for name in ["lab.tlb.random_4k", "lab.tlb.random_2m"] {
            r.skipped.push(Skipped {
                name: name.into(),
                why: if emulated_ring0 {
                    "ring-0 guest code is emulated on this backend: a TLB measure would time the emulator".into()
                } else {
                    "measured in ring 3 only".into()
                },
            });
        }
    }
    Ok(reports)
}

impl Item {
    fn new(layer: usize, measure: &'static str, place: Place) -> Item {
        Item {
            layer,
            measure,
            place,
            ops: 1,
            expect: QUEENS_SOLUTIONS,
            samples: Vec::new(),
            exits: 0.0,
            emulated: 0.0,
            answer: None,
        }
    }
}

/// Operations per run: about 20 ms natively, whatever that takes elsewhere; an emulated run
/// does one solve. The calibration runs also check every item works here.
fn calibrate(items: &mut [Item], words: &[u64], start: u64) -> Result<(), Error> {
    let chase_expect = chase_answer(words, start, HOPS);
    for item in items.iter_mut() {
        if item.measure.starts_with("lab.tlb") {
            (item.ops, item.expect) = (HOPS, chase_expect);
            item.run()?;
        } else {
            (item.ops, item.expect) = (16, 16 * QUEENS_SOLUTIONS);
            let per = item.run()?;
            item.ops = ((20e6 / per.max(1.0)) as u64).clamp(1, 100_000);
            item.expect = item.ops * QUEENS_SOLUTIONS;
        }
        item.exits = 0.0;
        item.emulated = 0.0;
    }
    Ok(())
}
