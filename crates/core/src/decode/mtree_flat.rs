//! Flattening of a parsed `info mtree` tree into sorted, non-overlapping ranges, the way QEMU
//! dispatches accesses: priorities, subregions, disabled regions and aliases (see `mtree.rs`).

use std::collections::{BTreeMap, HashMap};

/// Most alias hops followed from one region (QEMU never nests deeper than 2–3).
const MAX_ALIAS_DEPTH: u8 = 4;
/// Most distinct ranges kept per address space.
const MAX_RANGES: usize = 1_000_000;

/// Non-overlapping ranges sorted by start: `starts[i]..=ends[i]` is region `names[i]`.
#[derive(Debug, Default, Clone)]
pub(super) struct Flat {
    pub(super) starts: Vec<u64>,
    pub(super) ends: Vec<u64>,
    pub(super) names: Vec<u32>,
}

impl Flat {
    /// The region index at `addr`.
    pub(super) fn find(&self, addr: u64) -> Option<u32> {
        let i = self.starts.partition_point(|&s| s <= addr).checked_sub(1)?;
        if *self.ends.get(i)? >= addr {
            self.names.get(i).copied()
        } else {
            None
        }
    }
}

/// One region line of the tree view.
#[derive(Debug)]
pub(super) struct Node {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) prio: i32,
    pub(super) name: u32,
    pub(super) alias: Option<Alias>,
    pub(super) disabled: bool,
    pub(super) children: Vec<usize>,
    pub(super) line: usize,
}

/// `alias NAME @TARGET OFFSET-…`.
#[derive(Debug)]
pub(super) struct Alias {
    pub(super) target: String,
    /// Offset into the target; `None` until a wrapped `@TARGET …` line supplies it.
    pub(super) offset: Option<u64>,
}

/// Puts siblings in dispatch order: priority, then the smaller region, then the later line.
pub(super) fn sort_children(nodes: &mut [Node]) {
    let keys: Vec<(i32, u64, usize)> = nodes
        .iter()
        .map(|n| (n.prio, n.end.saturating_sub(n.start), n.line))
        .collect();
    for n in nodes.iter_mut() {
        n.children
            .sort_by(|&a, &b| match (keys.get(a), keys.get(b)) {
                (Some(a), Some(b)) => b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)),
                _ => std::cmp::Ordering::Equal,
            });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Regions without subregions claim their addresses first, by priority.
    Leaves,
    /// Then regions with subregions name what is left inside them.
    Containers,
}

/// Renders the trees under `roots` (an address space's root regions) into a [`Flat`].
/// `regions` maps `memory-region:` names to their section roots, for aliases; `budget` caps the
/// region visits of the whole dump so hostile alias fan-out stays bounded.
pub(super) fn render_space(
    nodes: &[Node],
    regions: &HashMap<&str, usize>,
    roots: &[usize],
    budget: &mut u64,
) -> Flat {
    let r = Render { nodes, regions };
    let mut claims = Claims::default();
    for pass in [Pass::Leaves, Pass::Containers] {
        for &root in roots {
            let at = Window {
                shift: 0,
                lo: 0,
                hi: u64::MAX,
                depth: 0,
            };
            r.node(root, at, pass, true, &mut claims, budget);
        }
    }
    claims.into_flat()
}

/// Flat-view ranges (already non-overlapping in QEMU's output) as a [`Flat`].
pub(super) fn flat_from_ranges(ranges: &[(u64, u64, u32)]) -> Flat {
    let mut claims = Claims::default();
    for &(s, e, n) in ranges {
        claims.fill(s, e, n);
    }
    claims.into_flat()
}

struct Render<'a> {
    nodes: &'a [Node],
    regions: &'a HashMap<&'a str, usize>,
}

/// Where a region is being rendered: section coordinates + `shift` = address-space
/// coordinates, clipped to `lo..=hi`, `depth` alias hops down.
#[derive(Clone, Copy)]
struct Window {
    shift: i128,
    lo: u64,
    hi: u64,
    depth: u8,
}

impl Render<'_> {
    fn node(
        &self,
        id: usize,
        at: Window,
        pass: Pass,
        is_root: bool,
        out: &mut Claims,
        budget: &mut u64,
    ) {
        let Some(n) = self.nodes.get(id) else { return };
        if n.disabled || *budget == 0 {
            return;
        }
        *budget -= 1;
        let Some((a, b)) = clip(n.start, n.end, at) else {
            return;
        };
        let inner = Window { lo: a, hi: b, ..at };
        let container = self.contents(id, inner, pass, out, budget);
        if is_root && container {
            return;
        }
        if (pass == Pass::Leaves) != container {
            out.fill(a, b, n.name);
        }
    }

    /// Renders a region's subregions and, for an alias, its target's; returns whether there
    /// were any (i.e. the region is a container).
    fn contents(
        &self,
        id: usize,
        at: Window,
        pass: Pass,
        out: &mut Claims,
        budget: &mut u64,
    ) -> bool {
        let Some(n) = self.nodes.get(id) else {
            return false;
        };
        let mut has = !n.children.is_empty();
        for &c in &n.children {
            self.node(c, at, pass, false, out, budget);
        }
        let Some(alias) = &n.alias else { return has };
        if at.depth >= MAX_ALIAS_DEPTH {
            return has;
        }
        let target = self.regions.get(alias.target.as_str()).copied();
        if let (Some(t), Some(off)) = (target, alias.offset)
            && let Some(tn) = self.nodes.get(t).filter(|_| t != id)
        {
            // The alias window starts at target offset `off`; the target's section prints its
            // own start (`tn.start`) at offset 0.
            let start = i128::from(n.start) + at.shift;
            let shift = start - i128::from(off) - i128::from(tn.start);
            let inner = Window {
                shift,
                depth: at.depth + 1,
                ..at
            };
            has |= self.contents(t, inner, pass, out, budget);
        }
        has
    }
}

/// `start..=end` shifted and clipped to the window.
fn clip(start: u64, end: u64, at: Window) -> Option<(u64, u64)> {
    let s = (i128::from(start) + at.shift).max(i128::from(at.lo));
    let e = (i128::from(end) + at.shift).min(i128::from(at.hi));
    if s > e {
        return None;
    }
    Some((u64::try_from(s).ok()?, u64::try_from(e).ok()?))
}

/// Claimed, non-overlapping ranges: start → (end inclusive, name).
#[derive(Default)]
struct Claims {
    map: BTreeMap<u64, (u64, u32)>,
}

impl Claims {
    /// Names every address of `a..=b` that is not claimed yet.
    fn fill(&mut self, a: u64, b: u64, name: u32) {
        if self.map.len() >= MAX_RANGES {
            return;
        }
        let mut cur = a;
        if let Some((_, &(e, _))) = self.map.range(..=a).next_back()
            && e >= a
        {
            if e >= b {
                return;
            }
            cur = e + 1;
        }
        let mut gaps = Vec::new();
        let mut covered = false;
        for (&s, &(e, _)) in self.map.range(cur..=b) {
            if s > cur {
                gaps.push((cur, s - 1));
            }
            if e >= b {
                covered = true;
                break;
            }
            cur = e + 1;
        }
        if !covered {
            gaps.push((cur, b));
        }
        for (s, e) in gaps {
            self.map.insert(s, (e, name));
        }
    }

    fn into_flat(self) -> Flat {
        let mut f = Flat::default();
        for (s, (e, n)) in self.map {
            // Merge touching ranges of the same region.
            if let (Some(pe), Some(&pn)) = (f.ends.last_mut(), f.names.last())
                && pn == n
                && pe.checked_add(1) == Some(s)
            {
                *pe = e;
                continue;
            }
            f.starts.push(s);
            f.ends.push(e);
            f.names.push(n);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_only_claims_gaps() {
        let mut c = Claims::default();
        c.fill(0x10, 0x1f, 1);
        c.fill(0x30, 0x3f, 2);
        c.fill(0x00, 0xff, 3);
        c.fill(0x00, u64::MAX, 4);
        c.fill(0x15, 0x35, 5);
        let f = c.into_flat();
        assert_eq!(f.find(0x00), Some(3));
        assert_eq!(f.find(0x10), Some(1));
        assert_eq!(f.find(0x25), Some(3));
        assert_eq!(f.find(0x3f), Some(2));
        assert_eq!(f.find(0x100), Some(4));
        assert_eq!(f.find(u64::MAX), Some(4));
        assert_eq!(f.starts.len(), 6);
    }

    #[test]
    fn touching_ranges_merge() {
        let f = flat_from_ranges(&[(0, 9, 1), (10, 19, 1), (20, 29, 2)]);
        assert_eq!(f.starts, vec![0, 20]);
        assert_eq!(Flat::default().find(5), None);
    }
}
