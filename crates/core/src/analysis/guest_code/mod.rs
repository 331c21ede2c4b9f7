//! Guest code attribution: which guest code makes the exits (what `perf kvm --guest` tells).
//! The `guest_rip` table counts exits by reason and guest RIP; with the guest's symbols
//! ([`crate::sources::symbols`]) each RIP becomes `function+0xoff`, after the load offset is
//! settled ([`kaslr`]). [`attribute`] groups each exit reason's exits by guest function (by
//! RIP where nothing resolves), most first, with each function's share of that reason's exits.

pub(crate) mod kaslr;
mod tables;

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::profile::{Key, Profile, TableKind};
use crate::sources::symbols::SymbolMap;
pub use kaslr::Offset;
pub(crate) use tables::report_tables;

/// The most distinct RIPs of one function listed.
const SITES_LISTED: usize = 4;

/// What the user gave for attribution.
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    /// `--guest-symbols FILE`.
    pub map: Option<Arc<SymbolMap>>,
    /// `--guest-kaslr-offset`.
    pub offset: Option<u64>,
}

/// One input's exits by guest code.
#[derive(Debug, Clone, Serialize)]
pub struct GuestCode {
    /// The exit reasons, most exits first.
    pub reasons: Vec<ReasonCode>,
    /// The symbol map used, its size and the offset, when symbols were given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols: Option<MapUsed>,
    /// Exits whose RIPs the table folded into its `other` row (no reason, no RIP).
    pub folded: u64,
    /// How many VMs (VMM processes) the exits come from, when the input tells them apart.
    pub vms: usize,
}

/// The symbol map an attribution used.
#[derive(Debug, Clone, Serialize)]
pub struct MapUsed {
    pub path: String,
    pub functions: usize,
    pub offset: Offset,
    /// Exits whose RIP resolved to a function, of all with a RIP.
    pub resolved: u64,
    pub exits: u64,
    /// What reading the map noted (damaged lines), as `FILE:LINE: message`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One exit reason's exits by guest code.
#[derive(Debug, Clone, Serialize)]
pub struct ReasonCode {
    pub reason: String,
    /// Its exits with a RIP.
    pub exits: u64,
    /// By function (or by RIP where no function is known), most first.
    pub code: Vec<CodeRow>,
}

/// Exits of one reason from one guest function (or one unresolved RIP).
#[derive(Debug, Clone, Serialize)]
pub struct CodeRow {
    /// The function, `None` when the RIP did not resolve.
    pub function: Option<String>,
    pub count: u64,
    /// Of the reason's exits with a RIP.
    pub share: f64,
    /// The RIPs, most exits first (at most four): the RIP as traced, and `function+0xoff`.
    pub sites: Vec<Site>,
    /// How many distinct RIPs the function had.
    pub distinct: usize,
    /// Where an unresolved RIP is, when its address tells: `user space`, `module`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<&'static str>,
}

/// Linux x86-64's module area (above the 1 GiB kernel image area).
const LINUX_MODULES: std::ops::Range<u64> = 0xffff_ffff_c000_0000..0xffff_ffff_ff00_0000;

/// Where an unresolved RIP is: in a 64-bit guest whose kernel runs in the upper half, a
/// lower-half RIP is user space; above a Linux kernel's image, modules.
fn place(rip: u64, upper_half_kernel: bool, linux: bool) -> Option<&'static str> {
    if upper_half_kernel && rip < 0x0000_8000_0000_0000 {
        Some("user space")
    } else if linux && LINUX_MODULES.contains(&rip) {
        Some("module")
    } else {
        None
    }
}

/// One RIP.
#[derive(Debug, Clone, Serialize)]
pub struct Site {
    pub rip: u64,
    /// `function+0xoff`, when resolved.
    pub label: Option<String>,
    pub count: u64,
}

impl CodeRow {
    /// How the row is named: `native_write_msr+0x4` when one RIP holds all its exits, the
    /// function when several do, the RIP when nothing resolved.
    pub fn name(&self) -> String {
        let top = self.sites.first();
        match (&self.function, top) {
            (Some(_), Some(Site { label: Some(l), .. })) if self.distinct == 1 => l.clone(),
            (Some(f), _) => f.clone(),
            (None, Some(s)) => match self.place {
                Some(place) => format!("{:#x} ({place})", s.rip),
                None => format!("{:#x}", s.rip),
            },
            (None, None) => "?".into(),
        }
    }
}

/// The exits of `profile` by guest code, `None` when no exit carried a RIP.
pub fn attribute(profile: &Profile, symbols: &Symbols) -> Option<GuestCode> {
    let tables: Vec<_> = profile
        .tables
        .iter()
        .filter(|t| t.kind == TableKind::GuestRip)
        .collect();
    if tables.is_empty() {
        return None;
    }
    // (reason, rip) → exits, across VMs.
    let mut by_rip: HashMap<(&str, u64), u64> = HashMap::new();
    let mut folded = 0u64;
    let mut vms: Vec<u32> = Vec::new();
    for r in tables.iter().flat_map(|t| &t.rows) {
        if let Some(pid) = r.pid
            && !vms.contains(&pid)
            && vms.len() < 64
        {
            vms.push(pid);
        }
        match &r.key {
            Key::GuestRip { reason, rip } => {
                let c = by_rip.entry((reason.as_str(), *rip)).or_default();
                *c = c.saturating_add(r.count);
            }
            _ => folded = folded.saturating_add(r.count),
        }
    }
    if by_rip.is_empty() {
        return None;
    }
    let mut rips: HashMap<u64, u64> = HashMap::new();
    for (&(_, rip), &c) in &by_rip {
        *rips.entry(rip).or_default() += c;
    }
    let mut rips: Vec<(u64, u64)> = rips.into_iter().collect();
    rips.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let map = symbols.map.as_deref();
    let offset = map.map(|m| match symbols.offset {
        Some(offset) => Offset::Given { offset },
        None => kaslr::infer(&rips, m),
    });
    let shift = offset.as_ref().and_then(Offset::value);
    let resolve = |rip: u64| {
        let (m, off) = map.zip(shift)?;
        m.resolve(kaslr::shift(rip, i128::from(off)))
    };
    let upper_half_kernel = rips.iter().any(|(r, _)| *r >= 0xffff_8000_0000_0000);
    let linux = map.is_some_and(|m| m.kind == crate::sources::symbols::MapKind::Linux);
    // reason → function (or RIP) → sites.
    let mut groups: HashMap<&str, HashMap<Result<String, u64>, Vec<Site>>> = HashMap::new();
    let mut resolved = 0u64;
    for (&(reason, rip), &count) in &by_rip {
        let r = resolve(rip);
        resolved += if r.is_some() { count } else { 0 };
        let group = match &r {
            Some(r) => Ok(r.function.to_string()),
            None => Err(rip),
        };
        groups
            .entry(reason)
            .or_default()
            .entry(group)
            .or_default()
            .push(Site {
                rip,
                label: r.map(|r| r.label()),
                count,
            });
    }
    let mut reasons: Vec<ReasonCode> = groups
        .into_iter()
        .map(|(reason, fns)| {
            let exits: u64 = fns.values().flatten().map(|s| s.count).sum();
            let mut code: Vec<CodeRow> = fns
                .into_iter()
                .map(|(f, mut sites)| {
                    sites.sort_unstable_by(|a, b| b.count.cmp(&a.count).then(a.rip.cmp(&b.rip)));
                    let count = sites.iter().map(|s| s.count).sum();
                    let distinct = sites.len();
                    sites.truncate(SITES_LISTED);
                    let place = match f {
                        Err(rip) => place(rip, upper_half_kernel, linux),
                        Ok(_) => None,
                    };
                    CodeRow {
                        place,
                        function: f.ok(),
                        count,
                        share: count as f64 / exits.max(1) as f64,
                        sites,
                        distinct,
                    }
                })
                .collect();
            code.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name().cmp(&b.name())));
            ReasonCode {
                reason: reason.to_string(),
                exits,
                code,
            }
        })
        .collect();
    reasons.sort_by(|a, b| b.exits.cmp(&a.exits).then_with(|| a.reason.cmp(&b.reason)));
    let exits = reasons.iter().map(|r| r.exits).sum();
    Some(GuestCode {
        reasons,
        symbols: map.zip(offset).map(|(m, offset)| MapUsed {
            path: m.path.clone(),
            functions: m.functions,
            offset,
            resolved,
            exits,
            notes: m
                .notes
                .iter()
                .map(|n| match n.line {
                    Some(l) => format!("{}:{l}: {}", m.path, n.message),
                    None => format!("{}: {}", m.path, n.message),
                })
                .collect(),
        }),
        folded,
        vms: vms.len(),
    })
}

impl GuestCode {
    /// What the attribution rests on, in words: the map, the offset and how it was found, and
    /// how many exits resolved (honest when none did).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.symbols {
            None => out.push(
                "guest code: RIPs only; --guest-symbols FILE (the guest's System.map, \
                 /proc/kallsyms or a Windows linker map) names their functions"
                    .into(),
            ),
            Some(m) => {
                let how = match &m.offset {
                    Offset::Given { offset } => format!("load offset {offset:#x} as given"),
                    Offset::Inferred { offset: 0, .. } => {
                        "the map's addresses as they are (load offset 0 fits best)".into()
                    }
                    Offset::Inferred {
                        offset,
                        exits_in_code,
                        exits,
                        rips_in_code,
                        rips,
                    } => format!(
                        "load offset (KASLR) {offset:#x} inferred: it puts {rips_in_code} of \
                         {rips} kernel RIPs ({exits_in_code} of {exits} exits) inside the map's \
                         functions, more than any other offset; --guest-kaslr-offset sets it"
                    ),
                    Offset::Ambiguous { candidates, .. } => format!(
                        "the load offset (KASLR) could not be inferred: {candidates} offsets fit \
                         the RIPs equally well, so no RIP was named; pass --guest-kaslr-offset \
                         (the guest's `_text` in /proc/kallsyms minus the map's) or a dump of \
                         the guest's /proc/kallsyms"
                    ),
                    Offset::NoFit { .. } => "no load offset puts any RIP inside the map's \
                                             functions: the map is not the guest's kernel"
                        .into(),
                };
                out.push(format!(
                    "guest code: {} ({} functions), {how}; {} of {} exits with a RIP resolved",
                    m.path, m.functions, m.resolved, m.exits
                ));
                out.extend(m.notes.iter().map(|n| format!("guest symbols: {n}")));
                if m.resolved == 0 && m.offset.value().is_some() {
                    out.push(
                        "guest code: no RIP resolved to a function: the map may be of another \
                         kernel, or the exits come from user space or modules it lacks"
                            .into(),
                    );
                }
            }
        }
        if self.vms > 1 {
            out.push(format!(
                "guest code: the exits of {} VMs are counted together, and one map names all \
                 their RIPs; --pid or --vm selects one guest",
                self.vms
            ));
        }
        if self.folded > 0 {
            out.push(format!(
                "guest code: {} exits from the rarest RIPs were folded into one row and are \
                 not attributed",
                self.folded
            ));
        }
        out
    }

    /// One sentence per exit reason whose exits mostly come from one function: `87% of the
    /// MSR_WRITE exits come from native_write_msr+0x4`.
    pub fn headline(&self, reason: &ReasonCode) -> Option<String> {
        let top = reason.code.first()?;
        Some(format!(
            "{:.0}% of the {} exits come from {}",
            top.share * 100.0,
            reason.reason,
            top.name()
        ))
    }
}
