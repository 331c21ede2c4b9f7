//! Memory: TLB-heavy random access with 4 KiB pages and with 2 MiB pages, and bandwidth.
//!
//! The TLB kernel chases a random cycle through a large buffer, one hop per 4 KiB page, so
//! nearly every load misses the TLB when pages are small: in a VM each miss walks the guest's
//! page tables *and*, for every level, the host's (the 2-D walk of nested paging; or the
//! shadow tables' faults under shadow paging), so the 4 KiB stretch is the page-walk cost and
//! the 2 MiB one what is left when huge pages take the walks away. Which page size was obtained
//! is reported (hugetlbfs, transparent huge pages, or small pages when refused).

use std::time::Instant;

use super::Probe;
use crate::procfs;
use crate::schema::{Better, Measure};
use crate::sys::{Mapping, Obtained, Pages};

const PAGE_WORDS: usize = 4096 / 8;

/// The random page-chase.
pub(super) struct Tlb {
    map: Mapping,
    pages: Pages,
    hops: u64,
    at: usize,
    obtained: String,
}

impl Tlb {
    /// Builds the cycle in a `mb` MiB buffer of `pages` pages.
    pub(super) fn new(pages: Pages, quick: bool, seed: u64) -> Result<Self, String> {
        let mb = 64;
        let mut map =
            Mapping::new(mb << 20, pages).map_err(|e| format!("mmap of {mb} MiB: {e}"))?;
        let words = map.words();
        let n = words.len() / PAGE_WORDS;
        let mut order: Vec<usize> = (0..n).collect();
        fastrand::Rng::with_seed(seed).shuffle(&mut order);
        // One slot per page, at a varying cache line, so the hops do not share cache sets.
        let slot = |page: usize| page * PAGE_WORDS + (page * 8 + 8 * (page >> 6)) % PAGE_WORDS;
        for (i, &page) in order.iter().enumerate() {
            let next = order[(i + 1) % n];
            words[slot(page)] = slot(next) as u64;
        }
        let at = slot(order[0]);
        let obtained = match map.obtained {
            Obtained::Small => "4K".to_string(),
            Obtained::HugeTlb => "2M (hugetlbfs)".to_string(),
            Obtained::ThpAdvised => match procfs::anon_huge_kb(map.addr()) {
                Some(kb) if kb >= (mb as u64) << 10 => "2M (transparent huge pages)".to_string(),
                Some(0) => "4K (transparent huge pages refused)".to_string(),
                Some(kb) => format!("2M for {} of {mb} MiB (transparent huge pages)", kb >> 10),
                None => "unknown (transparent huge pages asked for)".to_string(),
            },
        };
        Ok(Tlb {
            map,
            pages,
            hops: if quick { 200_000 } else { 2_000_000 },
            at,
            obtained,
        })
    }
}

impl Probe for Tlb {
    fn measures(&self) -> Vec<Measure> {
        let (name, asked) = match self.pages {
            Pages::Small => ("tlb.random_4k", "4K"),
            Pages::Huge => ("tlb.random_2m", "2M"),
        };
        vec![
            Measure::new(
                name,
                "one dependent load to a random page of a 64 MiB buffer",
                "ns",
                Better::Lower,
                Vec::new(),
            )
            .with("pages_asked", asked)
            .with("pages_obtained", self.obtained.clone()),
        ]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let words = self.map.words();
        let mut at = self.at;
        let t = Instant::now();
        for _ in 0..self.hops {
            at = words.get(at).copied().unwrap_or(0) as usize;
        }
        let ns = t.elapsed().as_nanos() as f64 / self.hops as f64;
        self.at = std::hint::black_box(at);
        Ok(vec![ns])
    }
}

/// Copy bandwidth.
pub(super) struct Bandwidth {
    src: Vec<u64>,
    dst: Vec<u64>,
    copies: u32,
}

impl Bandwidth {
    pub(super) fn new(quick: bool) -> Self {
        let words = (if quick { 16 } else { 64 } << 20) / 8;
        Bandwidth {
            src: (0..words as u64).collect(),
            dst: vec![0; words],
            copies: if quick { 2 } else { 4 },
        }
    }
}

impl Probe for Bandwidth {
    fn measures(&self) -> Vec<Measure> {
        vec![
            Measure::new(
                "memory.copy",
                "copy bandwidth, bytes read plus bytes written (as STREAM counts them)",
                "MB/s",
                Better::Higher,
                Vec::new(),
            )
            .with("buffer_mb", ((self.src.len() * 8) >> 20).to_string()),
        ]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let t = Instant::now();
        for _ in 0..self.copies {
            self.dst.copy_from_slice(&self.src);
            std::hint::black_box(&mut self.dst);
        }
        let bytes = 2.0 * (self.src.len() * 8) as f64 * f64::from(self.copies);
        Ok(vec![bytes / t.elapsed().as_secs_f64() / 1e6])
    }
}
