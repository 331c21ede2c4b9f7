//! Reading a trace file on every core, with the same profile as reading it line by line.
//!
//! The file is cut into blocks of [`BLOCK`] bytes; a block owns the lines that start in it
//! (the line that runs over its end is read on from the next bytes). Blocks are parsed where
//! the file is mapped ([`Mapped`]; read with positioned reads when it cannot be) and scanned ([`scan`]: the costly, stateless part of every line) by one
//! thread per core, the calling thread among them ([`queue`]). The calling thread also
//! replays the blocks in file order through the one [`Reader`] and its
//! [`crate::events::ProfileBuilder`], exactly as the sequential reader would have seen them:
//! pairing of exits with entries, line numbers in notes, wrapped lines joined across block
//! ends, the first-line and nothing-found checks are all the sequential code, run in the
//! sequential order, so the profile is the same to the last bit (`parallel_tests` checks it).
//!
//! Memory: blocks are claimed at most [`WINDOW_PER_THREAD`] per thread ahead of the replay,
//! so it is bounded by the number of cores, never by the file.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::Reader;
use super::queue::{Queue, Step};
use super::scan::{Block, Data, Item, scan};
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::sources::lines::{MAX_LINE, line_text, too_long};
use crate::sources::mapped::Mapped;

/// Bytes of the file per block.
pub(super) const BLOCK: usize = 2 << 20;

/// How many blocks per thread may be scanned ahead of the replay.
const WINDOW_PER_THREAD: usize = 2;

/// How much more is read at a time after a block's end, to finish its last line.
const TAIL_READ: usize = 64 << 10;

/// A block's scan, or the error reading it.
type Scanned<'a> = std::io::Result<Block<'a>>;

/// Reads `file` (a regular file; `path` names it) on `threads` threads, the calling one
/// included, in blocks of `block` bytes; mapped when `map` is set and it can be.
pub(super) fn read_file(
    file: &File,
    path: &str,
    threads: usize,
    block: usize,
    map: bool,
) -> Result<Profile> {
    let len = file.metadata().map_err(|e| io(path, e))?.len();
    let block = block.max(1);
    let threads = threads.max(1);
    let blocks = usize::try_from(len.div_ceil(block as u64)).unwrap_or(usize::MAX);
    let mapped = if map { Mapped::new(file) } else { None };
    let source = match &mapped {
        Some(m) => Source::Mapped(m),
        None => Source::File(file, len),
    };
    let queue: Queue<Scanned, Block> = Queue::new(blocks, threads * WINDOW_PER_THREAD);
    let read = |i: usize, spare: Option<Block<'_>>| load_and_scan(source, i, block, spare);
    // Once a block is replayed, its pages may leave memory.
    let done = |i: usize| {
        if let Some(m) = &mapped {
            m.done_with(i.saturating_mul(block), (i + 1).saturating_mul(block));
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(|| {
                let _guard = queue.helper_guard();
                while let Some((i, spare)) = queue.next_for_helper() {
                    queue.put(i, read(i, spare));
                }
            });
        }
        // Whatever the replay's end (its answer found early, an error, the last block, even a
        // panic), the helpers stop claiming and the scope joins them.
        let _stop = queue.stop_on_drop();
        replay(&queue, &read, &done, blocks, path)
    })
}

/// Where blocks come from: the file's mapped bytes, or the file and its length.
#[derive(Clone, Copy)]
enum Source<'a> {
    Mapped(&'a Mapped),
    File(&'a File, u64),
}

/// Reads block `i` (into the buffers of `spare`, when there is one) and scans it.
fn load_and_scan<'a>(
    source: Source<'a>,
    i: usize,
    block: usize,
    spare: Option<Block<'_>>,
) -> Scanned<'a> {
    let (buffer, items, events) = match spare {
        Some(b) => (b.data.into_buffer(), b.items, b.events),
        None => Default::default(),
    };
    let (data, start, end) = match source {
        Source::Mapped(map) => {
            let all = map.bytes();
            let (bytes, start, end) = slice(all, i, block);
            (
                Data::Mapped(simdutf8::basic::from_utf8(bytes).map_err(|_| bytes)),
                start,
                end,
            )
        }
        Source::File(file, len) => {
            let mut bytes = buffer;
            let (start, end) = load(file, i, block, len, &mut bytes)?;
            let data = String::from_utf8(bytes).map_err(|e| e.into_bytes());
            (Data::Read(data), start, end)
        }
    };
    Ok(scan(data, items, events, start, end))
}

/// The blocks in file order through one [`Reader`]; while a block is not scanned yet, this
/// thread scans the next unclaimed one itself.
fn replay<'a>(
    queue: &Queue<Scanned<'a>, Block<'a>>,
    read: &dyn Fn(usize, Option<Block<'a>>) -> Scanned<'a>,
    done: &dyn Fn(usize),
    blocks: usize,
    path: &str,
) -> Result<Profile> {
    let mut state = Reader::new(path);
    let mut base = 0usize;
    let mut cut = None;
    for i in 0..blocks {
        let b = loop {
            match queue.take(i) {
                Step::Ready(b) => break b,
                Step::Scan(j, spare) => queue.put(j, read(j, spare)),
                Step::Lost => {
                    return Err(Error::Input {
                        path: path.to_string(),
                        message: "a reading thread stopped before the end of the file".into(),
                    });
                }
            }
        }
        .map_err(|e| io(path, e))?;
        let (text, bytes) = (b.data.text(), b.data.bytes());
        for (k, item) in b.items.iter().enumerate() {
            let n = base + k + 1;
            let scanned = match *item {
                Item::Event(_, e) => text.zip(b.events.get(e as usize)),
                _ => None,
            };
            match (*item, scanned) {
                (_, Some((text, e))) => state.scanned(n, e, text),
                (Item::Line(span) | Item::Event(span, _), None) => {
                    let raw = bytes.get(span.0 as usize..span.1 as usize).unwrap_or(&[]);
                    state.line(n, &line_text(raw));
                }
                (Item::TooLong, None) => return Err(too_long(path, n)),
            }
            if state.not_a_trace(n) {
                return state.finish(None);
            }
        }
        base += b.items.len();
        if b.unterminated && !b.items.is_empty() {
            cut = Some(base);
        }
        queue.give_back(b);
        done(i);
    }
    state.finish(cut)
}

fn io(path: &str, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_string(),
        source: e,
    }
}

/// Reads block `i`: from the byte before it (to see whether a line starts at its first byte)
/// to the end of the last line that starts in it, into `bytes`. Returns where its first line
/// starts and where its own lines end (a line starting at or after it is the next block's).
fn load(
    file: &File,
    i: usize,
    block: usize,
    len: u64,
    bytes: &mut Vec<u8>,
) -> std::io::Result<(usize, usize)> {
    let lo = (i as u64 * block as u64).saturating_sub(1);
    let hi = ((i as u64 + 1) * block as u64).min(len);
    bytes.resize(usize::try_from(hi - lo).unwrap_or(0), 0);
    let got = read_at(file, bytes, lo)?;
    bytes.truncate(got);
    let own_end = bytes.len();
    let start = first_line_start(bytes, i);
    if start >= own_end || bytes.last() == Some(&b'\n') {
        return Ok((start, own_end));
    }
    // The last line runs on into the next block: read up to its newline (or the end of the
    // file, or past the longest line there may be).
    let mut at = lo + bytes.len() as u64;
    loop {
        let from = bytes.len();
        bytes.resize(from + TAIL_READ, 0);
        let got = read_at(file, &mut bytes[from..], at)?;
        bytes.truncate(from + got);
        at += got as u64;
        if let Some(j) = memchr::memchr(b'\n', &bytes[from..]) {
            bytes.truncate(from + j + 1);
            break;
        }
        if got == 0 || bytes.len() - own_end > MAX_LINE + 2 {
            break;
        }
    }
    Ok((start, own_end))
}

/// Where the first line of block `i` starts in `own` (its bytes from the one before it to its
/// end): after the first newline, the byte before the block included, so that a line starting
/// at the block's first byte is its own; past the end when no line starts in the block.
fn first_line_start(own: &[u8], i: usize) -> usize {
    if i == 0 {
        return 0;
    }
    match memchr::memchr(b'\n', &own[..own.len().saturating_sub(1)]) {
        Some(j) => j + 1,
        None => own.len(),
    }
}

/// Block `i` of the mapped file `all`, as [`load`] reads it: the bytes from the one before the
/// block to the end of its last line, where its first line starts and where its own lines end.
fn slice(all: &[u8], i: usize, block: usize) -> (&[u8], usize, usize) {
    let lo = i.saturating_mul(block).saturating_sub(1).min(all.len());
    let hi = i.saturating_add(1).saturating_mul(block).min(all.len());
    let own = &all[lo..hi];
    let own_end = own.len();
    let start = first_line_start(own, i);
    if start >= own_end || own.last() == Some(&b'\n') {
        return (own, start, own_end);
    }
    // The last line runs on: to its newline, the end of the file, or past the longest line
    // there may be (then `scan` refuses it as too long).
    let limit = hi.saturating_add(MAX_LINE + 3).min(all.len());
    let end = match memchr::memchr(b'\n', &all[hi..limit]) {
        Some(j) => hi + j + 1,
        None => limit,
    };
    (&all[lo..end], start, own_end)
}

/// `buf.len()` bytes at `offset`, fewer only at the end of the file.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
#[path = "parallel_tests.rs"]
mod tests;
