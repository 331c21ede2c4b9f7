//! Guest symbol maps for attributing exits to guest code: a Linux `System.map` or a dump of
//! `/proc/kallsyms` (`ADDR TYPE NAME [module]`, see [`linux`]) and a Windows linker `.map`
//! (its `Publics by Value` section, see [`windows`]). A [`SymbolMap`] resolves an address to
//! `function+0xoff`: the text symbol with the greatest address at or below it, as
//! `perf report --kallsyms` does. Memory is bounded ([`MAX_SYMBOLS`]); a damaged line is
//! noted with its number and skipped, never a panic.

pub(crate) mod linux;
pub(crate) mod windows;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};
use crate::profile::Note;

/// The most symbols kept (a distribution kernel with its modules has about 200,000).
pub(crate) const MAX_SYMBOLS: usize = 2_000_000;
/// The longest name kept; longer names are cut (Rust's mangled names reach a few hundred).
pub(crate) const MAX_NAME: usize = 512;
/// An address further than this past its symbol is not attributed to it: no kernel function is
/// this long, so the address is past the end of the text the map knows.
pub(crate) const MAX_FUNCTION: u64 = 1 << 20;
/// The longest module name kept.
const MAX_MODULE: usize = 64;
/// The most damaged lines noted one by one; the rest are counted.
const NOTED_LINES: usize = 10;

/// Which kind of map a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    /// `System.map` or `/proc/kallsyms`: `ADDR TYPE NAME [module]`.
    Linux,
    /// A Windows linker map (`link /MAP`).
    Windows,
}

impl MapKind {
    /// The alignment of the load offset a guest may have applied (KASLR): Linux x86-64
    /// randomizes its base in `CONFIG_PHYSICAL_ALIGN` steps (2 MiB); PE images load at 64 KiB
    /// boundaries.
    pub fn load_alignment(self) -> u64 {
        match self {
            MapKind::Linux => 2 << 20,
            MapKind::Windows => 64 << 10,
        }
    }
}

/// How a symbol ranks when several share an address (the best is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Binding {
    /// Not code: data, read-only data, BSS. It ends the code before it.
    Data,
    /// A section marker in code (`__irqentry_text_start`, `_stext`): named only where no
    /// function starts at its address.
    Marker,
    Local,
    Weak,
    Global,
}

/// One symbol as a parser hands it over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Symbol<'a> {
    pub addr: u64,
    pub name: &'a str,
    pub module: Option<&'a str>,
    /// `Data` for symbols that are not code.
    pub binding: Binding,
}

/// An address resolved to a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved<'a> {
    pub function: &'a str,
    /// The symbol's own address in the map.
    pub start: u64,
    pub offset: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    /// Into `names`: start and length (length 0 and `Data`: a boundary).
    name: (u32, u32),
    binding: Binding,
}

/// A guest's symbols, sorted by address; see the module doc.
#[derive(Debug, Clone)]
pub struct SymbolMap {
    pub kind: MapKind,
    /// The file, as named in notes.
    pub path: String,
    entries: Vec<Entry>,
    names: String,
    /// How many code symbols the map holds.
    pub functions: usize,
    /// The lowest and highest code address.
    pub text: Option<(u64, u64)>,
    /// Damaged lines, symbols beyond [`MAX_SYMBOLS`].
    pub notes: Vec<Note>,
}

/// Collects symbols in file order and notes damaged lines.
#[derive(Debug)]
pub(crate) struct Builder {
    entries: Vec<Entry>,
    names: String,
    damaged: usize,
    dropped: usize,
    notes: Vec<Note>,
    nonzero: bool,
}

impl Builder {
    fn new() -> Self {
        Self {
            entries: Vec::new(),
            names: String::new(),
            damaged: 0,
            dropped: 0,
            notes: Vec::new(),
            nonzero: false,
        }
    }

    pub(crate) fn push(&mut self, s: Symbol<'_>) {
        self.nonzero |= s.addr != 0;
        if self.entries.len() >= MAX_SYMBOLS {
            self.dropped += 1;
            return;
        }
        let name = if s.binding == Binding::Data {
            (0, 0)
        } else {
            let start = self.names.len();
            self.names.push_str(cut(s.name, MAX_NAME));
            if let Some(m) = s.module {
                self.names.push_str(" [");
                self.names.push_str(cut(m, MAX_MODULE));
                self.names.push(']');
            }
            (start as u32, (self.names.len() - start) as u32)
        };
        self.entries.push(Entry {
            addr: s.addr,
            name,
            binding: s.binding,
        });
    }

    pub(crate) fn damaged(&mut self, line: usize, expected: &str) {
        self.damaged += 1;
        if self.damaged <= NOTED_LINES {
            self.notes.push(Note {
                line: Some(line),
                message: format!("a damaged line, skipped: expected {expected}"),
            });
        }
    }

    fn finish(mut self, kind: MapKind, path: &str) -> Result<SymbolMap> {
        if self.damaged > NOTED_LINES {
            self.notes.push(Note {
                line: None,
                message: format!(
                    "{} more damaged lines were skipped",
                    self.damaged - NOTED_LINES
                ),
            });
        }
        if self.dropped > 0 {
            self.notes.push(Note {
                line: None,
                message: format!(
                    "more than {MAX_SYMBOLS} symbols: the last {} were not read",
                    self.dropped
                ),
            });
        }
        if !self.entries.is_empty() && !self.nonzero {
            return Err(Error::Input {
                path: path.to_string(),
                message: "every address is 0: /proc/kallsyms hides them from users without \
                          CAP_SYSLOG (kptr_restrict); dump it as root"
                    .into(),
            });
        }
        // At one address keep the best binding: code over data, global over weak over local.
        self.entries
            .sort_by(|a, b| a.addr.cmp(&b.addr).then(b.binding.cmp(&a.binding)));
        self.entries.dedup_by_key(|e| e.addr);
        let code = || self.entries.iter().filter(|e| e.binding != Binding::Data);
        let functions = code().count();
        let text = code()
            .next()
            .map(|f| f.addr)
            .zip(code().next_back().map(|l| l.addr));
        if functions == 0 {
            return Err(Error::Input {
                path: path.to_string(),
                message: match kind {
                    MapKind::Linux => "no text symbol (type t, T or W) in it: expected \
                                       System.map or /proc/kallsyms lines `ADDR TYPE NAME`"
                        .into(),
                    MapKind::Windows => "no function (flag `f`) in its `Publics by Value` \
                                         section"
                        .into(),
                },
            });
        }
        Ok(SymbolMap {
            kind,
            path: path.to_string(),
            entries: self.entries,
            names: self.names,
            functions,
            text,
            notes: self.notes,
        })
    }
}

impl SymbolMap {
    /// Reads a map from `reader` (any wrapping [`crate::sources::wrapped`] knows), telling
    /// the Windows map by its `Publics by Value` header.
    pub fn read<R: Read>(reader: R, path: &str) -> Result<SymbolMap> {
        let mut head = BufReader::new(reader);
        let wrap = head
            .fill_buf()
            .map_err(|e| Error::io(Path::new(path), e))
            .map(crate::sources::wrapped::wrapping)?;
        let reader: Box<dyn Read + '_> = match wrap {
            Some(w) => crate::sources::wrapped::unwrap(w, head)
                .map_err(|e| Error::io(Path::new(path), e))?,
            None => Box::new(head),
        };
        let mut lines = BufReader::new(reader);
        let mut b = Builder::new();
        let mut kind = MapKind::Linux;
        let mut buf = Vec::new();
        let mut n = 0usize;
        let mut in_publics = false;
        loop {
            buf.clear();
            let got = lines
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::io(Path::new(path), e))?;
            if got == 0 {
                break;
            }
            n += 1;
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if windows::is_publics_header(line) {
                kind = MapKind::Windows;
                in_publics = true;
                continue;
            }
            match kind {
                MapKind::Linux if n <= 64 && windows::is_map_preamble(line) => {
                    // A Windows map's first lines (module name, timestamp, load address).
                    kind = MapKind::Windows;
                }
                MapKind::Linux => linux::line(&mut b, n, line),
                MapKind::Windows if in_publics => windows::line(&mut b, n, line),
                MapKind::Windows => {}
            }
        }
        b.finish(kind, path)
    }

    /// Reads the map at `path`.
    pub fn read_path(path: &Path) -> Result<SymbolMap> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Self::read(f, &crate::sources::input::display_name(path))
    }

    /// The function `addr` (an address in the map's own terms) is in, when the map knows
    /// code there.
    pub fn resolve(&self, addr: u64) -> Option<Resolved<'_>> {
        let at = self
            .entries
            .partition_point(|e| e.addr <= addr)
            .checked_sub(1)?;
        let e = self.entries.get(at)?;
        let offset = addr - e.addr;
        if e.binding == Binding::Data || offset >= MAX_FUNCTION {
            return None;
        }
        let (start, len) = (e.name.0 as usize, e.name.1 as usize);
        let function = self.names.get(start..start + len)?;
        Some(Resolved {
            function,
            start: e.addr,
            offset,
        })
    }

    /// How many symbols (of any kind) the map holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the map holds no symbol (never, once read).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Resolved<'_> {
    /// `function+0xoff`.
    pub fn label(&self) -> String {
        format!("{}+{:#x}", self.function, self.offset)
    }
}
