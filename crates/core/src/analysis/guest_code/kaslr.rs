//! The load offset of a guest kernel whose RIPs are shifted from its symbol map (KASLR, or a
//! relocated Windows image): given, or inferred by alignment. The candidates are the offsets
//! in the map's load alignment (2 MiB for Linux) that put one of the most frequent RIPs inside
//! the map's code; the one that puts the most exits inside known functions wins. Two offsets
//! that fit equally well are not guessed between: the result says so.

use std::collections::BTreeSet;

use crate::sources::symbols::{MapKind, SymbolMap};

/// The distinct RIPs candidates are taken from (the most frequent first).
const SEED_RIPS: usize = 16;
/// The distinct RIPs an offset is scored on (they hold nearly every exit of a real trace).
const SCORED_RIPS: usize = 512;
/// The most candidate offsets tried.
const MAX_CANDIDATES: usize = 4096;
/// Linux x86-64 randomizes its base upwards, within the 1 GiB kernel image area.
const LINUX_MAX_OFFSET: i128 = 1 << 30;
/// Linux x86-64's kernel image area (`__START_KERNEL_map` and 1 GiB on): modules load above
/// it, user space far below, and KASLR never moves the kernel out of it.
const LINUX_IMAGE: std::ops::Range<u64> = 0xffff_ffff_8000_0000..0xffff_ffff_c000_0000;

/// How the offset between the RIPs and the map was settled.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "basis", rename_all = "kebab-case")]
pub enum Offset {
    /// `--guest-kaslr-offset`.
    Given { offset: u64 },
    /// Inferred: this offset put `exits_in_code` of `exits` (over `rips_in_code` of `rips`
    /// distinct RIPs) inside known functions, more than any other.
    Inferred {
        offset: u64,
        exits_in_code: u64,
        exits: u64,
        rips_in_code: usize,
        rips: usize,
    },
    /// Several offsets fit equally well: none is used.
    Ambiguous {
        candidates: usize,
        exits_in_code: u64,
    },
    /// No offset puts any RIP inside the map's code.
    NoFit { exits: u64 },
}

impl Offset {
    /// The offset to subtract from a RIP, when one was settled.
    pub fn value(&self) -> Option<u64> {
        match self {
            Offset::Given { offset } | Offset::Inferred { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

/// Infers the offset of `rips` (distinct RIPs with their exit counts, most frequent first)
/// against `map`; see the module doc.
pub(crate) fn infer(rips: &[(u64, u64)], map: &SymbolMap) -> Offset {
    let exits: u64 = rips.iter().map(|(_, c)| c).sum();
    let Some((lo, hi)) = map.text else {
        return Offset::NoFit { exits };
    };
    // A kernel map's offset is told by the RIPs in the kernel's image area alone: module and
    // user-space RIPs fit any offset that happens to put them in text.
    let kernel = map.kind == MapKind::Linux && LINUX_IMAGE.contains(&lo);
    let image: Vec<(u64, u64)>;
    let rips = if kernel {
        image = rips
            .iter()
            .copied()
            .filter(|(r, _)| LINUX_IMAGE.contains(r))
            .collect();
        &image[..]
    } else {
        rips
    };
    let align = i128::from(map.kind.load_alignment());
    let mut candidates: BTreeSet<i128> = BTreeSet::new();
    candidates.insert(0);
    for &(rip, _) in rips.iter().take(SEED_RIPS) {
        // The last function may run up to MAX_FUNCTION past its start.
        let hi = i128::from(hi) + i128::from(crate::sources::symbols::MAX_FUNCTION);
        let (rip, lo) = (i128::from(rip), i128::from(lo));
        // offset ∈ [rip − hi, rip − lo], in steps of the alignment.
        let first = (rip - hi).div_euclid(align) + i128::from((rip - hi).rem_euclid(align) != 0);
        let last = (rip - lo).div_euclid(align);
        for k in first..=last {
            if candidates.len() >= MAX_CANDIDATES {
                break;
            }
            let off = k * align;
            if kernel && !(0..LINUX_MAX_OFFSET).contains(&off) {
                continue;
            }
            candidates.insert(off);
        }
    }
    let scored = &rips[..rips.len().min(SCORED_RIPS)];
    let score = |off: i128| -> (u64, usize) {
        scored
            .iter()
            .filter(|(rip, _)| map.resolve(shift(*rip, off)).is_some())
            .fold((0, 0), |(e, r), (_, c)| (e + c, r + 1))
    };
    let mut best: Vec<(i128, (u64, usize))> = Vec::new();
    for off in candidates {
        let s = score(off);
        match best.first() {
            Some((_, b)) if s.0 < b.0 => {}
            Some((_, b)) if s.0 == b.0 => best.push((off, s)),
            _ => best = vec![(off, s)],
        }
    }
    let Some(&(off, (exits_in_code, rips_in_code))) = best.first() else {
        return Offset::NoFit { exits };
    };
    if exits_in_code == 0 {
        return Offset::NoFit { exits };
    }
    // The map as given (offset 0) wins a tie: a kallsyms dump is in runtime addresses.
    let off = if best.iter().any(|(o, _)| *o == 0) {
        0
    } else if best.len() > 1 {
        return Offset::Ambiguous {
            candidates: best.len(),
            exits_in_code,
        };
    } else {
        off
    };
    Offset::Inferred {
        offset: off as u64,
        exits_in_code,
        exits: scored.iter().map(|(_, c)| c).sum(),
        rips_in_code,
        rips: scored.len(),
    }
}

/// `rip − offset` in the map's terms (addresses wrap as the CPU's do).
pub(crate) fn shift(rip: u64, offset: i128) -> u64 {
    rip.wrapping_sub(offset as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> SymbolMap {
        let text = "ffffffff81000000 T _text\n\
                    ffffffff81080000 t native_write_msr\n\
                    ffffffff81a00000 t native_safe_halt\n\
                    ffffffff81c00000 T _etext\n\
                    ffffffff82000000 D data\n";
        match SymbolMap::read(text.as_bytes(), "map") {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_shifted_kernel_is_found_by_its_most_frequent_rips() {
        let m = map();
        let off = 0x3400000u64;
        let rips = [
            (0xffff_ffff_8108_0004 + off, 1000),
            (0xffff_ffff_81a0_000a + off, 500),
            (0x7f00_0000_1000, 20),
        ];
        match infer(&rips, &m) {
            Offset::Inferred {
                offset,
                exits_in_code,
                ..
            } => {
                assert_eq!(offset, off);
                assert_eq!(exits_in_code, 1500);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_rip_alone_fits_several_offsets_and_none_is_guessed() {
        let m = map();
        let rips = [(0xffff_ffff_8408_0004, 1000)];
        assert!(
            matches!(infer(&rips, &m), Offset::Ambiguous { .. }),
            "{:?}",
            infer(&rips, &m)
        );
        assert!(matches!(
            infer(&[(0x1000, 5)], &m),
            Offset::NoFit { exits: 5 }
        ));
    }
}
