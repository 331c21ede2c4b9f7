//! The line parser behind [`AddressMap::parse`](super::mtree::AddressMap::parse): section
//! headers, region lines and the noise around real dumps (see `mtree.rs` for the format).

use std::collections::HashMap;

use super::mtree::{AddressMap, MtreeError};
use super::mtree_flat::{Alias, Flat, Node, flat_from_ranges, render_space, sort_children};

const RANGE: &str = "an address range `START-END (prio N, TYPE): NAME`";
const PRIO: &str = "`(prio N, TYPE): NAME` after the address range";
const NAME: &str = "a region name after `): `";
const HEADER_FIRST: &str = "a section header (`address-space: NAME`, `memory-region: NAME` or \
                            `FlatView #N`) before the first address range";

/// Region visits allowed while flattening one dump.
const RENDER_BUDGET: u64 = 4_000_000;
/// Deepest nesting kept; deeper lines hang off the region at this depth.
const MAX_LEVEL: usize = 64;
/// Longest excerpt of a bad line quoted in an error.
const FOUND_MAX: usize = 80;

#[derive(Debug, Default)]
struct TreeSection {
    spaces: Vec<String>,
    region: Option<String>,
    roots: Vec<usize>,
    base_indent: Option<usize>,
    stack: Vec<(usize, usize)>,
}

#[derive(Debug, Default)]
struct FlatSection {
    spaces: Vec<String>,
    root: Option<String>,
    ranges: Vec<(u64, u64, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Before the first section, or after one ended: prose and prompts are skipped.
    Outside,
    Tree(usize),
    Flat(usize),
    /// The dispatch tree of `info mtree -f -d`, skipped up to the next blank line or header.
    Dispatch,
    /// QEMU 1.x `aliases` list: a bare line names the next region.
    Aliases,
}

/// A parsed `START-END (prio N, TYPE): REST` line.
struct RangeLine<'a> {
    indent: usize,
    start: u64,
    end: u64,
    prio: i32,
    rest: &'a str,
}

pub(super) struct Parser<'o> {
    origin: &'o str,
    mode: Mode,
    pub(super) saw_section: bool,
    after_blank: bool,
    nodes: Vec<Node>,
    trees: Vec<TreeSection>,
    flats: Vec<FlatSection>,
    names: Vec<String>,
    interned: HashMap<String, u32>,
    /// An alias line that ended before its `@TARGET` (e-mail wrapping).
    pending_alias: Option<usize>,
}

impl<'o> Parser<'o> {
    pub(super) fn new(origin: &'o str) -> Self {
        Parser {
            origin,
            mode: Mode::Outside,
            saw_section: false,
            after_blank: false,
            nodes: Vec::new(),
            trees: Vec::new(),
            flats: Vec::new(),
            names: Vec::new(),
            interned: HashMap::new(),
            pending_alias: None,
        }
    }

    fn unexpected(&self, line: usize, expected: &'static str, found: &str) -> MtreeError {
        let found = found.trim();
        let mut excerpt: String = found.chars().take(FOUND_MAX).collect();
        if found.chars().nth(FOUND_MAX).is_some() {
            excerpt.push('…');
        }
        MtreeError::Unexpected {
            origin: self.origin.to_string(),
            line,
            expected,
            found: excerpt,
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.interned.get(name) {
            return i;
        }
        let i = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_string());
        self.interned.insert(name.to_string(), i);
        i
    }

    /// Reads line number `no` (1-based).
    pub(super) fn line(&mut self, no: usize, raw: &str) -> Result<(), MtreeError> {
        let line = strip_quoting(raw.trim_end_matches('\r'));
        let t = line.trim();
        if t.is_empty() {
            self.after_blank = true;
            if self.mode == Mode::Dispatch {
                self.mode = Mode::Outside;
            }
            return Ok(());
        }
        let after_blank = std::mem::take(&mut self.after_blank);
        if self.header(t) {
            self.pending_alias = None;
            return Ok(());
        }
        if skippable(t) || self.mode == Mode::Dispatch {
            return Ok(());
        }
        if let (Some(tail), Some(id)) = (t.strip_prefix('@'), self.pending_alias.take()) {
            return self.alias_tail(no, id, tail);
        }
        self.pending_alias = None;
        let range = parse_range(line);
        if after_blank && range.is_err() && matches!(self.mode, Mode::Tree(_) | Mode::Flat(_)) {
            // Prose after a dump (e-mails, notes) ends the section instead of failing.
            self.mode = Mode::Outside;
        }
        match self.mode {
            Mode::Dispatch => Ok(()),
            Mode::Outside => match range {
                Ok(_) => Err(self.unexpected(no, HEADER_FIRST, t)),
                Err(_) => Ok(()),
            },
            Mode::Aliases => {
                if range.is_ok() {
                    return Err(self.unexpected(no, "a region name in the `aliases` list", t));
                }
                self.trees.push(TreeSection {
                    region: Some(t.to_string()),
                    ..TreeSection::default()
                });
                self.mode = Mode::Tree(self.trees.len() - 1);
                Ok(())
            }
            Mode::Tree(sec) => {
                let r = range.map_err(|e| self.unexpected(no, e, t))?;
                self.check_order(no, &r)?;
                self.tree_line(no, sec, &r)
            }
            Mode::Flat(sec) => {
                let r = range.map_err(|e| self.unexpected(no, e, t))?;
                self.check_order(no, &r)?;
                let name = flat_name(r.rest);
                if name.is_empty() {
                    return Err(self.unexpected(no, NAME, t));
                }
                let name = self.intern(name);
                if let Some(f) = self.flats.get_mut(sec) {
                    f.ranges.push((r.start, r.end, name));
                }
                Ok(())
            }
        }
    }

    fn check_order(&self, no: usize, r: &RangeLine<'_>) -> Result<(), MtreeError> {
        if r.end < r.start {
            return Err(MtreeError::Inverted {
                origin: self.origin.to_string(),
                line: no,
                start: r.start,
                end: r.end,
            });
        }
        Ok(())
    }

    fn new_tree(&mut self, section: TreeSection) {
        self.saw_section = true;
        self.trees.push(section);
        self.mode = Mode::Tree(self.trees.len() - 1);
    }

    /// Recognises a section header or flat-view metadata (`t` is trimmed) and switches mode.
    fn header(&mut self, t: &str) -> bool {
        if let Some(name) = t.strip_prefix("address-space:") {
            let name = name.trim().to_string();
            // Consecutive headers share the tree printed after them.
            if let Mode::Tree(sec) = self.mode
                && let Some(s) = self.trees.get_mut(sec)
                && s.roots.is_empty()
                && s.region.is_none()
            {
                s.spaces.push(name);
                return true;
            }
            self.new_tree(TreeSection {
                spaces: vec![name],
                ..TreeSection::default()
            });
            return true;
        }
        if let Some(name) = t.strip_prefix("memory-region:") {
            let region = Some(name.trim().to_string());
            self.new_tree(TreeSection {
                region,
                ..TreeSection::default()
            });
            return true;
        }
        if t.starts_with("FlatView #") {
            self.saw_section = true;
            self.flats.push(FlatSection::default());
            self.mode = Mode::Flat(self.flats.len() - 1);
            return true;
        }
        if let Mode::Flat(sec) = self.mode {
            let Some(f) = self.flats.get_mut(sec) else {
                return false;
            };
            if let Some(rest) = t.strip_prefix("AS \"") {
                if let Some(end) = rest.find('"') {
                    f.spaces.push(rest[..end].to_string());
                }
                return true;
            }
            if let Some(root) = t.strip_prefix("Root memory region:") {
                f.root = Some(root.trim().to_string());
                return true;
            }
            if t.starts_with("No rendered FlatView") {
                return true;
            }
            if t == "Dispatch" {
                self.mode = Mode::Dispatch;
                return true;
            }
        }
        // QEMU 1.x headers.
        match t {
            "memory" | "I/O" => {
                self.new_tree(TreeSection {
                    spaces: vec![t.to_string()],
                    ..TreeSection::default()
                });
                true
            }
            "aliases" if self.saw_section => {
                self.mode = Mode::Aliases;
                true
            }
            _ => false,
        }
    }

    fn tree_line(&mut self, no: usize, sec: usize, r: &RangeLine<'_>) -> Result<(), MtreeError> {
        let t = r.rest.trim();
        let (body, disabled) = strip_disabled(strip_owner(t));
        let (name, alias) = match body.strip_prefix("alias ") {
            Some(a) => match a.rfind(" @") {
                Some(at) => (a[..at].trim(), parse_alias_target(&a[at + 2..])),
                // Wrapped before `@TARGET`: the next line may complete it.
                None => (
                    a.trim(),
                    Some(Alias {
                        target: String::new(),
                        offset: None,
                    }),
                ),
            },
            None => (body.trim(), None),
        };
        if name.is_empty() {
            return Err(self.unexpected(no, NAME, t));
        }
        let wrapped = alias.as_ref().is_some_and(|a| a.target.is_empty());
        let name = self.intern(name);
        let id = self.nodes.len();
        self.nodes.push(Node {
            start: r.start,
            end: r.end,
            prio: r.prio,
            name,
            alias,
            disabled,
            children: Vec::new(),
            line: no,
        });
        if wrapped {
            self.pending_alias = Some(id);
        }
        let Some(s) = self.trees.get_mut(sec) else {
            return Ok(());
        };
        let base = *s.base_indent.get_or_insert(r.indent);
        let level = (r.indent.saturating_sub(base) / 2).min(MAX_LEVEL);
        while s.stack.last().is_some_and(|&(l, _)| l >= level) {
            s.stack.pop();
        }
        match s.stack.last() {
            Some(&(_, parent)) => {
                if let Some(p) = self.nodes.get_mut(parent) {
                    p.children.push(id);
                }
            }
            None => s.roots.push(id),
        }
        s.stack.push((level, id));
        Ok(())
    }

    /// Completes an alias whose `@TARGET OFF-OFF` was wrapped onto its own line.
    fn alias_tail(&mut self, no: usize, id: usize, tail: &str) -> Result<(), MtreeError> {
        let (tail, disabled) = strip_disabled(strip_owner(tail.trim()));
        let Some(alias) = parse_alias_target(tail) else {
            return Err(self.unexpected(no, "an alias target `@NAME START-END`", tail));
        };
        if let Some(n) = self.nodes.get_mut(id) {
            n.alias = Some(alias);
            n.disabled |= disabled;
        }
        Ok(())
    }

    /// Flattens every address space.
    pub(super) fn finish(mut self) -> AddressMap {
        sort_children(&mut self.nodes);
        let mut regions: HashMap<&str, usize> = HashMap::new();
        for s in &self.trees {
            if let (Some(r), Some(&root)) = (&s.region, s.roots.first()) {
                regions.entry(r.as_str()).or_insert(root);
            }
        }
        let mut spaces: Vec<(String, usize)> = Vec::new();
        let mut flats: Vec<Flat> = Vec::new();
        let mut add = |names: &[String], flat: Flat| {
            let idx = flats.len();
            flats.push(flat);
            for n in names {
                if !spaces.iter().any(|(s, _)| s == n) {
                    spaces.push((n.clone(), idx));
                }
            }
        };
        let mut budget = RENDER_BUDGET;
        for s in self.trees.iter().filter(|s| !s.spaces.is_empty()) {
            add(
                &s.spaces,
                render_space(&self.nodes, &regions, &s.roots, &mut budget),
            );
        }
        for f in &self.flats {
            // The root region (`io`) only stands for unassigned addresses: leave those to the
            // built-in tables, as the tree view does.
            let root = f
                .root
                .as_deref()
                .and_then(|r| self.interned.get(r))
                .copied();
            let ranges: Vec<_> = f
                .ranges
                .iter()
                .copied()
                .filter(|&(_, _, n)| Some(n) != root)
                .collect();
            add(&f.spaces, flat_from_ranges(&ranges));
        }
        AddressMap::from_parts(self.names, flats, spaces)
    }
}

/// Removes e-mail quoting (`> `, `>> `) from the front of a line.
fn strip_quoting(mut l: &str) -> &str {
    while let Some(r) = l.strip_prefix('>') {
        l = r.strip_prefix(' ').unwrap_or(r);
    }
    l
}

/// Lines that carry nothing: monitor prompts and banners, elisions.
fn skippable(t: &str) -> bool {
    t.starts_with("(qemu)")
        || t.starts_with("QEMU ")
        || t.starts_with("info mtree")
        || matches!(t, "[...]" | "..." | "…")
}

/// Parses `START-END (prio N, TYPE): REST`, or says what was expected.
fn parse_range(line: &str) -> Result<RangeLine<'_>, &'static str> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let body = body
        .strip_prefix("[DETECTED OVERFLOW!]")
        .map_or(body, str::trim_start);
    let (start, after) = body.split_once('-').ok_or(RANGE)?;
    let start = parse_hex(start).ok_or(RANGE)?;
    let end_len = after
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(after.len());
    let end = parse_hex(&after[..end_len]).ok_or(RANGE)?;
    let after = after[end_len..].strip_prefix(" (prio ").ok_or(PRIO)?;
    let (prio, after) = after.split_once(',').ok_or(PRIO)?;
    let prio: i32 = prio.trim().parse().map_err(|_| PRIO)?;
    let (_kind, rest) = after.split_once("):").ok_or(PRIO)?;
    Ok(RangeLine {
        indent,
        start,
        end,
        prio,
        rest,
    })
}

fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// Cuts the owner annotation of `info mtree -o`.
fn strip_owner(t: &str) -> &str {
    match [" owner:{", " parent:{"]
        .iter()
        .filter_map(|m| t.find(m))
        .min()
    {
        Some(i) => &t[..i],
        None => t.strip_suffix(" orphan").unwrap_or(t),
    }
}

fn strip_disabled(t: &str) -> (&str, bool) {
    let t = t.trim_end();
    match t.strip_suffix("[disabled]") {
        Some(r) => (r.trim_end(), true),
        None => (t, false),
    }
}

/// `TARGET START-END` after an alias's `@`.
fn parse_alias_target(t: &str) -> Option<Alias> {
    let (target, range) = t.trim().rsplit_once(' ')?;
    let (off, _end) = range.split_once('-')?;
    let offset = parse_hex(off)?;
    let target = target.trim();
    if target.is_empty() {
        return None;
    }
    Some(Alias {
        target: target.to_string(),
        offset: Some(offset),
    })
}

/// The region name of a flat-view line, without owner, accelerator tag and `@offset`.
fn flat_name(rest: &str) -> &str {
    let mut t = strip_owner(rest.trim()).trim_end();
    if let Some((head, last)) = t.rsplit_once(' ')
        && ["kvm", "hvf", "whpx", "nvmm", "mshv", "tcg", "xen", "hax"].contains(&last)
    {
        t = head.trim_end();
    }
    if let Some((head, off)) = t.rsplit_once(" @")
        && parse_hex(off).is_some()
    {
        t = head.trim_end();
    }
    t.trim()
}

#[cfg(test)]
#[path = "mtree_parse_tests.rs"]
mod tests;
