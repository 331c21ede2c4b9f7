//! QEMU `info mtree` maps: a dump of QEMU's memory regions turned into flat, sorted maps from
//! address to region name, one per address space, so ports and MMIO addresses get the names
//! QEMU itself uses (`acpi-tmr`, `virtio-pci-notify-virtio-net`, `kvm-apic-msi`, …).
//!
//! Accepted input (QEMU 1.x to 10.x; see `mtree_print_mr` in QEMU's `system/memory.c`):
//! - the tree view: `address-space: NAME` sections (several headers in a row share one tree),
//!   `memory-region: NAME` sections for alias targets, and QEMU 1.x's bare `memory` / `I/O` /
//!   `aliases` headers;
//! - the flat view of `info mtree -f`: `FlatView #N`, ` AS "NAME", root: …`, ranges; the
//!   dispatch tree of `-d` is skipped;
//! - region lines `START-END (prio N, TYPE): NAME`, optionally `alias NAME @TARGET OFF-OFF`,
//!   ` [disabled]`, owner suffixes (`-o`), the accelerator tag of `-f` (` kvm`) and the
//!   `[DETECTED OVERFLOW!]` prefix. Monitor prompts, `[...]`, e-mail quoting (`> `) and prose
//!   after a blank line are tolerated, and an alias wrapped before its `@TARGET` is joined back.
//!
//! In the tree view QEMU prints **absolute** addresses: a child's start is its parent's start
//! plus its offset (`cur_start = base + mr->addr`, and children get `base = cur_start`).
//! `memory-region:` sections are printed from base 0, i.e. relative to the aliased region, and
//! an alias maps its window onto `@TARGET` from the printed offset on.
//!
//! The name of an address is the region QEMU would dispatch to: among siblings the highest
//! priority wins (then the smaller region, then the later line), children shadow their parent,
//! disabled regions and their children are ignored, and an alias shows its target's subregions.
//! A region with subregions only names what neither its descendants nor a lower-priority
//! sibling's leaf claims, and an address-space root (`io`, `system`) names nothing, so unmapped
//! addresses fall back to the built-in tables.

use thiserror::Error;

use super::mtree_flat::Flat;
use super::mtree_parse::Parser;

/// Why an `info mtree` dump could not be read. Messages name the origin, the 1-based line and
/// what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MtreeError {
    #[error("{origin}:{line}: expected {expected}, found `{found}`")]
    Unexpected {
        origin: String,
        line: usize,
        expected: &'static str,
        found: String,
    },
    #[error("{origin}:{line}: address range {start:#x}-{end:#x} ends before it starts")]
    Inverted {
        origin: String,
        line: usize,
        start: u64,
        end: u64,
    },
    #[error(
        "{origin}: expected QEMU `info mtree` output (`address-space:`, `memory-region:` or \
         `FlatView #` sections), found none"
    )]
    Empty { origin: String },
}

/// Regions of the IO and memory address spaces, named as QEMU names them.
#[derive(Debug, Default, Clone)]
pub struct AddressMap {
    names: Vec<String>,
    flats: Vec<Flat>,
    /// Address-space name → index into `flats` (several spaces may share one).
    spaces: Vec<(String, usize)>,
}

impl AddressMap {
    /// Parses an `info mtree` dump (tree or `-f` flat view). `origin` (a file name) is used in
    /// error messages.
    pub fn parse(text: &str, origin: &str) -> Result<AddressMap, MtreeError> {
        let mut p = Parser::new(origin);
        for (i, raw) in text.lines().enumerate() {
            p.line(i + 1, raw)?;
        }
        if !p.saw_section {
            return Err(MtreeError::Empty {
                origin: origin.to_string(),
            });
        }
        Ok(p.finish())
    }

    pub(super) fn from_parts(
        names: Vec<String>,
        flats: Vec<Flat>,
        spaces: Vec<(String, usize)>,
    ) -> Self {
        AddressMap {
            names,
            flats,
            spaces,
        }
    }

    /// The region at an IO port (address space `I/O`).
    pub fn name_port(&self, port: u64) -> Option<&str> {
        let io = self
            .space(|n| n == "I/O")
            .or_else(|| self.space(|n| n.eq_ignore_ascii_case("i/o") || n == "io"))?;
        self.name_of(io.find(port)?)
    }

    /// The region at a guest-physical address (address space `memory`, else `cpu-memory-0`).
    pub fn name_addr(&self, gpa: u64) -> Option<&str> {
        let mem = self
            .space(|n| n == "memory")
            .or_else(|| self.space(|n| n == "cpu-memory-0"))
            .or_else(|| self.space(|n| n.starts_with("cpu-memory")))?;
        self.name_of(mem.find(gpa)?)
    }

    /// The region at `addr` in the address space called `space` (as QEMU prints it).
    pub fn name_in(&self, space: &str, addr: u64) -> Option<&str> {
        let f = self.space(|n| n == space)?;
        self.name_of(f.find(addr)?)
    }

    /// The address spaces found, in the order of the dump.
    pub fn address_spaces(&self) -> impl Iterator<Item = &str> + '_ {
        self.spaces.iter().map(|(n, _)| n.as_str())
    }

    /// The flattened ranges of one address space: `(start, end inclusive, name)`.
    pub fn ranges<'a>(&'a self, space: &str) -> impl Iterator<Item = (u64, u64, &'a str)> + 'a {
        let flat = self.space(|n| n == space);
        flat.into_iter().flat_map(move |f| {
            let ranges = f.starts.iter().zip(&f.ends).zip(&f.names);
            ranges.filter_map(move |((s, e), n)| Some((*s, *e, self.name_of(*n)?)))
        })
    }

    /// Whether the dump named no region at all.
    pub fn is_empty(&self) -> bool {
        self.flats.iter().all(|f| f.starts.is_empty())
    }

    fn name_of(&self, idx: u32) -> Option<&str> {
        self.names.get(idx as usize).map(String::as_str)
    }

    fn space(&self, pick: impl Fn(&str) -> bool) -> Option<&Flat> {
        self.spaces
            .iter()
            .find(|(n, _)| pick(n))
            .and_then(|(_, f)| self.flats.get(*f))
    }
}

#[cfg(test)]
#[path = "mtree_tests.rs"]
mod tests;
