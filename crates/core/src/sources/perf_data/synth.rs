//! Tests on synthetic perf.data files: a minimal writer (header, tracepoint attributes with
//! ids, samples, round markers, the feature table with tracing data and CPUID) and what the
//! development machines cannot record: `kvm_exit`/`kvm_entry` pairs, decoded under the ISA of
//! the file's CPU vendor, paired per thread after records written out of time order.

use super::tracing_data::tests::section;
use crate::profile::{Profile, TableKind};
use crate::sources::{Format, read_bytes};

const EXIT: &str = "name: kvm_exit\nID: 103\nformat:\n\
    \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
    \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
    \tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n\
    \tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n\
    \tfield:unsigned int vcpu_id;\toffset:24;\tsize:4;\tsigned:0;\n";
const ENTRY: &str = "name: kvm_entry\nID: 115\nformat:\n\
    \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
    \tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n";

/// IP | TID | TIME | ID | CPU | PERIOD | RAW
const SAMPLE_TYPE: u64 = 1 | 2 | 4 | 64 | 128 | 256 | 1024;

fn u16s(v: u16) -> [u8; 2] {
    v.to_le_bytes()
}
fn u32s(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}
fn u64s(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

/// One sample of attribute id `id` (1 = kvm_exit, 2 = kvm_entry).
fn sample(id: u64, tid: u32, cpu: u32, ts: u64, raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u64s(0xffff_ffff_8100_0000)); // ip
    body.extend(u32s(4000)); // pid
    body.extend(u32s(tid));
    body.extend(u64s(ts));
    body.extend(u64s(id));
    body.extend(u32s(cpu));
    body.extend(u32s(0));
    body.extend(u64s(1)); // period
    let padded = (4 + raw.len()).next_multiple_of(8);
    body.extend(u32s((padded - 4) as u32));
    body.extend(raw);
    body.resize(body.len() + padded - 4 - raw.len(), 0);
    let mut r = u32s(9).to_vec();
    r.extend(u16s(0));
    r.extend(u16s((body.len() + 8) as u16));
    r.extend(body);
    r
}

fn exit_raw(reason: u32, vcpu: u32) -> Vec<u8> {
    let mut p = vec![0u8; 32];
    p[..2].copy_from_slice(&u16s(103));
    p[8..12].copy_from_slice(&u32s(reason));
    p[16..24].copy_from_slice(&u64s(0xfff0));
    p[24..28].copy_from_slice(&u32s(vcpu));
    p
}

fn entry_raw(vcpu: u32) -> Vec<u8> {
    let mut p = vec![0u8; 12];
    p[..2].copy_from_slice(&u16s(115));
    p[8..12].copy_from_slice(&u32s(vcpu));
    p
}

fn round() -> Vec<u8> {
    let mut r = u32s(68).to_vec();
    r.extend(u16s(0));
    r.extend(u16s(8));
    r
}

/// A perf.data with the kvm_exit and kvm_entry attributes, `records`, and CPUID `cpuid`.
fn file(records: &[Vec<u8>], cpuid: &str) -> Vec<u8> {
    let attr_size = 128u64 + 16;
    let ids_at = 104u64;
    let attrs_at = ids_at + 16;
    let data_at = attrs_at + 2 * attr_size;
    let data: Vec<u8> = records.concat();
    let mut f = b"PERFILE2".to_vec();
    let features = (1u64 << 1) | (1u64 << 9); // TRACING_DATA, CPUID
    for v in [
        104,
        attr_size,
        attrs_at,
        2 * attr_size,
        data_at,
        data.len() as u64,
        0,
        0,
    ] {
        f.extend(u64s(v));
    }
    f.extend(u64s(features));
    f.extend([0u8; 24]);
    f.extend(u64s(1));
    f.extend(u64s(2));
    for (i, tp) in [(0u64, 103u64), (1, 115)] {
        let mut a = vec![0u8; 128];
        a[..4].copy_from_slice(&u32s(2)); // PERF_TYPE_TRACEPOINT
        a[4..8].copy_from_slice(&u32s(128));
        a[8..16].copy_from_slice(&u64s(tp));
        a[16..24].copy_from_slice(&u64s(1));
        a[24..32].copy_from_slice(&u64s(SAMPLE_TYPE));
        f.extend(a);
        f.extend(u64s(ids_at + 8 * i));
        f.extend(u64s(8));
    }
    assert_eq!(f.len() as u64, data_at);
    f.extend(&data);
    let tracing = section(&[EXIT, ENTRY], "");
    let mut cpu = u32s(64).to_vec();
    cpu.extend(cpuid.as_bytes());
    cpu.resize(4 + 64, 0);
    let table_at = f.len() as u64;
    let tracing_at = table_at + 32;
    f.extend(u64s(tracing_at));
    f.extend(u64s(tracing.len() as u64));
    f.extend(u64s(tracing_at + tracing.len() as u64));
    f.extend(u64s(cpu.len() as u64));
    f.extend(tracing);
    f.extend(cpu);
    f
}

/// The profile of a synthetic file of `records` under CPUID `cpuid`.
fn read_synth(records: &[Vec<u8>], cpuid: &str) -> Profile {
    read_bytes(&file(records, cpuid), "s.data", Some(Format::PerfData))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn vmexit_rows(p: &Profile) -> Vec<(String, u64, Option<u64>, Option<u32>)> {
    p.tables
        .iter()
        .filter(|t| t.kind == TableKind::Vmexit)
        .flat_map(|t| &t.rows)
        .map(|r| (r.key.key_text(), r.count, r.time.total_ns, r.vcpu))
        .collect()
}

#[test]
fn exits_pair_with_entries_in_time_order_under_the_vendor_isa() {
    // Thread 7 ran on CPU 0 (exit at 1000), then on CPU 1 (entry at 5000, exit at 6000,
    // entry at 6500). perf wrote CPU 1's stretch first.
    let records = [
        sample(2, 7, 1, 5000, &entry_raw(0)),
        sample(1, 7, 1, 6000, &exit_raw(30, 0)),
        sample(2, 7, 1, 6500, &entry_raw(0)),
        sample(1, 7, 0, 1000, &exit_raw(12, 0)),
        round(),
        round(),
    ];
    let p = read_synth(&records, "GenuineIntel,6,85,4");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p.origin.vendor.as_deref(), Some("GenuineIntel"));
    let mut rows = vmexit_rows(&p);
    rows.sort();
    assert_eq!(
        rows,
        [
            ("HLT".to_string(), 1, Some(4000), Some(0)),
            ("IO_INSTRUCTION".to_string(), 1, Some(500), Some(0)),
        ]
    );
}

#[test]
fn amd_files_decode_svm_codes_and_unknown_vendors_stay_numeric() {
    let records = [
        sample(1, 7, 0, 10, &exit_raw(0x78, 1)),
        sample(2, 7, 0, 20, &entry_raw(1)),
    ];
    let p = read_synth(&records, "AuthenticAMD,25,1,1");
    assert_eq!(vmexit_rows(&p)[0].0.to_lowercase(), "hlt");
    let p = read_synth(&records, "CentaurHauls,6,15,1");
    assert!(vmexit_rows(&p)[0].0.contains("120") || vmexit_rows(&p)[0].0.contains("0x78"));
}

/// A COMM record: thread `tid` of process 4000 is now called `name`.
fn comm(tid: u32, name: &str) -> Vec<u8> {
    let mut body = u32s(4000).to_vec();
    body.extend(u32s(tid));
    let mut n = name.as_bytes().to_vec();
    n.resize(16, 0);
    body.extend(n);
    let mut r = u32s(3).to_vec();
    r.extend(u16s(0));
    r.extend(u16s((body.len() + 8) as u16));
    r.extend(body);
    r
}

#[test]
fn batches_to_the_builder_thread_keep_every_pair() {
    // Enough exits for several batches to the builder's thread, with round markers and thread
    // names arriving between them: every exit pairs with its entry, to the nanosecond (the
    // names themselves are compared with the one-thread reader on real files by the suite).
    let pairs = 3 * 16384 / 2 + 7;
    let mut records = Vec::new();
    for i in 0..pairs as u32 {
        let (tid, ts) = (100 + i % 4, 10 * u64::from(i));
        if i % 5000 == 0 {
            records.push(comm(tid, &format!("CPU {}/KVM", i % 4)));
        }
        records.push(sample(1, tid, i % 2, ts, &exit_raw(30, i % 4)));
        records.push(sample(2, tid, i % 2, ts + 3, &entry_raw(i % 4)));
        if i % 1000 == 999 {
            records.push(round());
        }
    }
    records.push(round());
    let p = read_synth(&records, "GenuineIntel,6,85,4");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let rows = vmexit_rows(&p);
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), pairs as u64);
    assert_eq!(
        rows.iter().map(|r| r.2.unwrap_or(0)).sum::<u64>(),
        3 * pairs as u64
    );
    assert_eq!(
        p.origin.vm_names.len(),
        0,
        "no thread is the process itself"
    );
}
