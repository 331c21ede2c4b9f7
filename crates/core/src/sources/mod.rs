//! File sources: each input format is one module that reads a file (streaming) into a
//! [`Profile`]. This module picks the format (auto-detected from the first bytes, or forced
//! with `--format`); `input` opens files, standard input and pipes.

pub(crate) mod bcc_kvmexit;
pub(crate) mod bhyve_dtrace;
pub(crate) mod blanks;
pub(crate) mod capped_notes;
pub(crate) mod capture;
mod checks;
pub(crate) mod counter_table;
pub(crate) mod fio_json;
pub(crate) mod input;
pub(crate) mod kernel_log;
pub(crate) mod kvm_stat;
mod line_reader;
mod line_repairs;
pub use line_reader::REPAIR_NOTE;
pub(crate) mod lines;
#[allow(unsafe_code)]
pub(crate) mod mapped;
pub(crate) mod numbers;
pub(crate) mod perf_data;
pub(crate) mod perf_kvm_stat;
pub(crate) mod perf_prof;
pub(crate) mod perf_stat;
pub(crate) mod perfmon_csv;
pub(crate) mod qmp_stats;
mod refusal;
pub(crate) mod repeated_line;
pub(crate) mod symbols;
pub(crate) mod touch_ahead;
pub(crate) mod trace_text;
pub(crate) mod unread;
pub(crate) mod virsh_domstats;
mod wrapped;
pub(crate) mod xenalyze;

use std::io::{BufRead, Seek};
use std::path::Path;

use crate::error::{Error, Result};
use crate::profile::Profile;

pub use input::{CONFIG_CAP, display_name, read_capped};

// What other crates use of this area (docs/development.md, "Public API").
pub use fio_json::read as read_fio_json;
pub use perf_data::userspace_exit::name as userspace_exit_name;
pub use symbols::SymbolMap;
pub use trace_text::looks_like as looks_like_trace_text;

/// The input formats virtlens reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `perf kvm stat report` / `live` text.
    PerfKvmStat,
    /// perf.data from `perf record -e 'kvm:*'` or `perf kvm stat record`.
    PerfData,
    /// kvm_stat screens and logs.
    KvmStat,
    /// bcc's kvmexit.
    BccKvmexit,
    /// perf-prof kvm-exit tables.
    PerfProf,
    /// Event lines from perf script, trace-cmd report, ftrace, perf top.
    TraceText,
    /// A `virtlens record` capture (Parquet with the profile in its metadata).
    Capture,
    /// PDH-CSV from perfmon / typeperf / relog, or `esxtop -b`.
    PerfmonCsv,
    /// A pasted table of counter values (perfmon report view, `Get-Counter`).
    CounterTable,
    /// A KVM host's kernel log (`dmesg`, `journalctl -k`): evidence joined with the others.
    KernelLog,
    /// `perf stat -e 'kvm:*'` tracepoint counts.
    PerfStat,
    /// QEMU's QMP `query-stats` reply (KVM binary statistics).
    QmpStats,
    /// bhyve's VM-exit summary from DTrace (propolis' `vm-exit-codes.d`, illumos, SVM).
    BhyveDtrace,
    /// `virsh domstats` with KVM's binary statistics (libvirt ≥ 9.3, QEMU ≥ 7.1).
    VirshDomstats,
    /// Xen's `xenalyze` summary: HVM exit reasons per domain and vCPU.
    Xenalyze,
}

impl Format {
    /// Every format, in detection order: the most specific signatures first.
    pub const ALL: [Format; 15] = [
        Format::Capture,
        Format::PerfmonCsv,
        Format::QmpStats,
        Format::VirshDomstats,
        Format::PerfData,
        Format::PerfKvmStat,
        Format::KvmStat,
        Format::PerfStat,
        Format::BccKvmexit,
        Format::BhyveDtrace,
        Format::Xenalyze,
        Format::PerfProf,
        Format::TraceText,
        Format::KernelLog,
        Format::CounterTable,
    ];

    /// The format's name (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::FORMAT,
            Format::PerfData => perf_data::FORMAT,
            Format::KvmStat => kvm_stat::FORMAT,
            Format::BccKvmexit => bcc_kvmexit::FORMAT,
            Format::PerfProf => perf_prof::FORMAT,
            Format::TraceText => trace_text::FORMAT,
            Format::Capture => capture::FORMAT,
            Format::PerfmonCsv => perfmon_csv::FORMAT,
            Format::CounterTable => counter_table::FORMAT,
            Format::KernelLog => kernel_log::FORMAT,
            Format::PerfStat => perf_stat::FORMAT,
            Format::QmpStats => qmp_stats::FORMAT,
            Format::BhyveDtrace => bhyve_dtrace::FORMAT,
            Format::VirshDomstats => virsh_domstats::FORMAT,
            Format::Xenalyze => xenalyze::FORMAT,
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    fn looks_like(self, head: &[u8]) -> bool {
        match self {
            Format::PerfKvmStat => perf_kvm_stat::looks_like(head),
            Format::PerfData => perf_data::looks_like(head),
            Format::KvmStat => kvm_stat::looks_like(head),
            Format::BccKvmexit => bcc_kvmexit::looks_like(head),
            Format::PerfProf => perf_prof::looks_like(head),
            Format::TraceText => trace_text::looks_like(head),
            Format::Capture => capture::looks_like(head),
            Format::PerfmonCsv => perfmon_csv::looks_like(head),
            Format::CounterTable => counter_table::looks_like(head),
            Format::KernelLog => kernel_log::looks_like(head),
            Format::PerfStat => perf_stat::looks_like(head),
            Format::QmpStats => qmp_stats::looks_like(head),
            Format::BhyveDtrace => bhyve_dtrace::looks_like(head),
            Format::VirshDomstats => virsh_domstats::looks_like(head),
            Format::Xenalyze => xenalyze::looks_like(head),
        }
    }

    /// Whether reading needs to seek (binary formats whose headers point further on, and
    /// PDH-CSV, read in two passes); the other text formats read straight through.
    fn needs_seek(self) -> bool {
        matches!(
            self,
            Format::PerfData | Format::Capture | Format::PerfmonCsv
        )
    }

    fn read<R: BufRead + Seek>(self, reader: R, path: &str) -> Result<Profile> {
        match self {
            Format::PerfData => perf_data::read(reader, path).map(checks::settle),
            Format::Capture => capture::read(reader, path).map(checks::settle),
            Format::PerfmonCsv => perfmon_csv::read(reader, path).map(checks::settle),
            text => text.read_text(reader, path),
        }
    }

    /// Reads a text format from a stream; the binary formats are refused (they need
    /// [`Format::read`]).
    fn read_text<R: BufRead>(self, reader: R, path: &str) -> Result<Profile> {
        let profile = match self {
            Format::PerfKvmStat => perf_kvm_stat::read(reader, path),
            Format::KvmStat => kvm_stat::read(reader, path),
            Format::BccKvmexit => bcc_kvmexit::read(reader, path),
            Format::PerfProf => perf_prof::read(reader, path),
            Format::TraceText => trace_text::read(reader, path),
            Format::CounterTable => counter_table::read(reader, path),
            Format::KernelLog => kernel_log::read(reader, path),
            Format::PerfStat => perf_stat::read(reader, path),
            Format::QmpStats => qmp_stats::read(reader, path),
            Format::BhyveDtrace => bhyve_dtrace::read(reader, path),
            Format::VirshDomstats => virsh_domstats::read(reader, path),
            Format::Xenalyze => xenalyze::read(reader, path),
            Format::PerfData | Format::Capture | Format::PerfmonCsv => Err(Error::Input {
                path: path.to_string(),
                message: format!("a {} cannot be read from a stream", self.name()),
            }),
        };
        profile.map(checks::settle)
    }
}

/// How many bytes of an input are looked at to detect its format.
pub const DETECT_BYTES: usize = 64 * 1024;

/// The format of an input that starts with `head`.
pub fn detect(head: &[u8]) -> Option<Format> {
    Format::ALL.into_iter().find(|f| f.looks_like(head))
}

/// Reads `path` (`-` for standard input) as `format`, or as the detected format.
pub fn read_path(path: &Path, format: Option<Format>) -> Result<Profile> {
    input::read_path(path, format)
}

/// Reads an in-memory input (pasted text, tests, fuzzing) exactly as the same bytes in a file
/// would be read: empty, compressed and quoting inputs included.
pub fn read_bytes(bytes: &[u8], name: &str, format: Option<Format>) -> Result<Profile> {
    input::read_bytes(bytes, name, format)
}
