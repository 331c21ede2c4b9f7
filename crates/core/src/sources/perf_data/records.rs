//! The data section: a streaming reader of perf records (`u32 type, u16 misc, u16 size`,
//! then the body), and the layout of a PERF_RECORD_SAMPLE body given its event's
//! `sample_type`. Records are handed out borrowed from where the file is mapped (no copy at
//! all; the pages read are dropped behind, so memory does not grow with the file), or, when
//! it is not mapped, from the reader's buffer.
//! A record that cannot be framed (size smaller than its header, running past the data
//! section, or cut off by the end of the file) ends the stream with a message naming its byte
//! offset.

use std::io::Read;

use linux_perf_data::linux_perf_event_reader::{PerfEventAttr, ReadFormat, SampleFormat};

use super::bytes::Endian;
use crate::sources::mapped::Mapped;
use crate::sources::touch_ahead::TouchAhead;

/// One framed record.
#[derive(Debug, Clone, Copy)]
pub(super) struct Record<'a> {
    /// The file offset of its header.
    pub offset: u64,
    pub kind: u32,
    /// The body, after the 8-byte header.
    pub body: &'a [u8],
}

/// Reads records from `offset` up to `end`: from the file's map when it has one, else through
/// a buffer of its own: a record is a slice of the buffer (no per-record call into the
/// reader), and the buffer is refilled by moving the unread tail to the front.
pub(super) struct Records<'m, R> {
    reader: R,
    mapped: Option<&'m Mapped>,
    /// The map's bytes before this are dropped from memory.
    dropped: u64,
    /// Where the next stretch of the map begins: the reader then drops what is behind and
    /// says where it is to the toucher, if there is one.
    next_stretch: u64,
    ahead: Option<&'m TouchAhead<'m>>,
    endian: Endian,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    /// The unread bytes are `buf[lo..hi]`.
    lo: usize,
    hi: usize,
}

/// PERF_RECORD_AUXTRACE: its AUX data follows the record, outside its `size`.
const AUXTRACE: u32 = 71;

/// The read size; a record is at most 64 KiB (its size is a u16), so it always fits.
const BUF: usize = 1 << 20;

/// How many mapped bytes are read before they are dropped from memory.
const DROP_BEHIND: u64 = 8 << 20;

/// How often the record loop looks at where it is in the map: it says so to whoever touches
/// its pages ahead, and drops what is [`DROP_BEHIND`] behind.
const STRETCH: u64 = 1 << 20;

impl<'m, R: Read> Records<'m, R> {
    /// `reader` must be positioned at `start`; when the file is `mapped`, records come from
    /// the map instead.
    pub(super) fn new(
        reader: R,
        mapped: Option<&'m Mapped>,
        endian: Endian,
        start: u64,
        end: u64,
    ) -> Self {
        Self {
            reader,
            mapped,
            dropped: 0,
            next_stretch: start,
            ahead: None,
            endian,
            pos: start,
            end,
            buf: Vec::new(),
            lo: 0,
            hi: 0,
        }
    }

    /// Makes at least `n` unread bytes available; false when the input ends first.
    fn fill(&mut self, n: usize) -> std::io::Result<bool> {
        if self.hi - self.lo >= n {
            return Ok(true);
        }
        self.buf.copy_within(self.lo..self.hi, 0);
        self.hi -= self.lo;
        self.lo = 0;
        if self.buf.len() < BUF.max(n) {
            self.buf.resize(BUF.max(n), 0);
        }
        while self.hi < n {
            match self.reader.read(&mut self.buf[self.hi..]) {
                Ok(0) => return Ok(false),
                Ok(k) => self.hi += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// The next record; `Ok(None)` at the end of the data section; `Err` (with the byte
    /// offset) when the stream is damaged or unreadable. After an error, stop reading.
    // Inlined into the record loop: called, its saves and restores were a fifth of it
    // (instruction counts, docs/performance.md).
    #[inline(always)]
    pub(super) fn next(&mut self) -> Result<Option<Record<'_>>, String> {
        let at = self.pos;
        if at >= self.end {
            return Ok(None);
        }
        let left = self.end - at;
        if left < 8 {
            return Err(format!(
                "byte {at}: {left} stray bytes at the end of the data section (expected a record header)"
            ));
        }
        if let Some(m) = self.mapped {
            return self.next_mapped(m, at, left);
        }
        let whole = self
            .fill(8)
            .map_err(|e| format!("byte {at}: reading a record: {e}"))?;
        if !whole {
            return Err(format!(
                "byte {at}: the file ends inside a record header (failed to fill whole buffer)"
            ));
        }
        let (kind, size) = frame(
            self.endian,
            &self.buf[self.lo..self.lo + 8],
            at,
            left,
            self.end,
        )?;
        let whole = self.fill(size).map_err(|err| {
            format!(
                "byte {at}: the file ends inside a record of type {kind} and {size} bytes ({err})"
            )
        })?;
        if !whole {
            return Err(format!(
                "byte {at}: the file ends inside a record of type {kind} and {size} bytes \
                 (failed to fill whole buffer)"
            ));
        }
        self.pos += size as u64;
        let body = &self.buf[self.lo + 8..self.lo + size];
        self.lo += size;
        Ok(Some(Record {
            offset: at,
            kind,
            body,
        }))
    }

    /// Says where the record loop is in the map to `ahead`, which touches the pages ahead.
    pub(super) fn touched_ahead_by(mut self, ahead: &'m TouchAhead<'m>) -> Self {
        self.ahead = Some(ahead);
        self
    }

    /// [`Records::next`] from the map `m`: the record at `at`, `left` bytes before the end of
    /// the data section.
    fn next_mapped(
        &mut self,
        m: &'m Mapped,
        at: u64,
        left: u64,
    ) -> Result<Option<Record<'m>>, String> {
        let all = m.bytes();
        let from = usize::try_from(at).unwrap_or(usize::MAX);
        let Some(head) = all.get(from..from.saturating_add(8)) else {
            return Err(format!(
                "byte {at}: the file ends inside a record header (failed to fill whole buffer)"
            ));
        };
        let (kind, size) = frame(self.endian, head, at, left, self.end)?;
        let Some(body) = all.get(from + 8..from + size) else {
            return Err(format!(
                "byte {at}: the file ends inside a record of type {kind} and {size} bytes \
                 (failed to fill whole buffer)"
            ));
        };
        self.pos += size as u64;
        if self.pos >= self.next_stretch {
            self.next_stretch = self.pos + STRETCH;
            if let Some(ahead) = self.ahead {
                ahead.reader_at(self.pos as usize);
            }
            if self.pos - self.dropped >= DROP_BEHIND {
                // Nothing read before this record is needed again (records are decoded into
                // values as they are read).
                m.done_with(self.dropped as usize, at as usize);
                self.dropped = at;
            }
        }
        Ok(Some(Record {
            offset: at,
            kind,
            body,
        }))
    }
}

/// The type and size of the record whose 8-byte header is `head`, at byte `at`, `left` bytes
/// before the data section's `end`; an error when it cannot be framed.
// Inlined, its errors apart: returned through memory, the size was read back right after the
// callee's narrow stores, a stall `perf annotate` put at a fifth of `Records::next`.
#[inline(always)]
fn frame(e: Endian, head: &[u8], at: u64, left: u64, end: u64) -> Result<(u32, usize), String> {
    let kind = e.u32(head, 0).unwrap_or(0);
    let size = usize::from(e.u16(head, 6).unwrap_or(0));
    if size < 8 || size as u64 > left || kind == AUXTRACE {
        return Err(unframed(kind, size, at, left, end));
    }
    Ok((kind, size))
}

/// Why the record of type `kind` and `size` bytes at byte `at` cannot be framed.
#[cold]
fn unframed(kind: u32, size: usize, at: u64, left: u64, end: u64) -> String {
    if size < 8 {
        format!(
            "byte {at}: record of type {kind} says it is {size} bytes long, less than its \
             8-byte header"
        )
    } else if size as u64 > left {
        format!(
            "byte {at}: record of type {kind} and {size} bytes runs past the end of the data \
             section at byte {end}"
        )
    } else {
        // Its AUX data follows outside `size`; such files are not kvm tracepoint captures.
        format!("byte {at}: AUX trace data (perf record with an AUX area) is not supported")
    }
}

/// The fields of a sample virtlens uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Sample<'a> {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub cpu: Option<u32>,
    /// The tracepoint payload (PERF_SAMPLE_RAW).
    pub raw: Option<&'a [u8]>,
}

/// Where a sample's fields are, from its event's `sample_type` and `read_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SampleLayout {
    id_at: Option<usize>,
    tid_at: Option<usize>,
    time_at: Option<usize>,
    cpu_at: Option<usize>,
    /// Where the variable part (READ, CALLCHAIN, RAW) starts.
    fixed_end: usize,
    read: Option<ReadFormat>,
    callchain: bool,
    raw: bool,
}

impl SampleLayout {
    pub(super) fn new(attr: &PerfEventAttr) -> Self {
        let f = attr.sample_format;
        let mut at = 0usize;
        let mut take = |flag: SampleFormat| -> Option<usize> {
            f.contains(flag).then(|| {
                at += 8;
                at - 8
            })
        };
        let identifier = take(SampleFormat::IDENTIFIER);
        let _ip = take(SampleFormat::IP);
        let tid_at = take(SampleFormat::TID);
        let time_at = take(SampleFormat::TIME);
        let _addr = take(SampleFormat::ADDR);
        let id = take(SampleFormat::ID);
        let _stream = take(SampleFormat::STREAM_ID);
        let cpu_at = take(SampleFormat::CPU);
        let _period = take(SampleFormat::PERIOD);
        Self {
            id_at: identifier.or(id),
            tid_at,
            time_at,
            cpu_at,
            fixed_end: at,
            read: f.contains(SampleFormat::READ).then_some(attr.read_format),
            callchain: f.contains(SampleFormat::CALLCHAIN),
            raw: f.contains(SampleFormat::RAW),
        }
    }

    /// Where the sample id is (IDENTIFIER or ID), if the samples carry one.
    pub(super) fn id_at(&self) -> Option<usize> {
        self.id_at
    }

    /// The sample id, which names the event when a file has several.
    #[inline]
    pub(super) fn id(&self, e: Endian, body: &[u8]) -> Option<u64> {
        e.u64(body, self.id_at?)
    }

    /// The fields of `body`; `Err` says what did not fit.
    #[inline]
    pub(super) fn parse<'a>(&self, e: Endian, body: &'a [u8]) -> Result<Sample<'a>, &'static str> {
        if body.len() < self.fixed_end {
            return Err("sample shorter than its fixed fields");
        }
        let mut s = Sample {
            pid: self.tid_at.and_then(|a| e.u32(body, a)),
            tid: self.tid_at.and_then(|a| e.u32(body, a + 4)),
            time: self.time_at.and_then(|a| e.u64(body, a)),
            cpu: self.cpu_at.and_then(|a| e.u32(body, a)),
            raw: None,
        };
        if !self.raw {
            return Ok(s);
        }
        let mut at = self.fixed_end;
        if let Some(rf) = self.read {
            at = at
                .checked_add(read_size(rf, e, body, at).ok_or("sample read values cut off")?)
                .ok_or("sample read values cut off")?;
        }
        if self.callchain {
            let nr = e.u64(body, at).ok_or("sample callchain cut off")?;
            let len = usize::try_from(nr)
                .ok()
                .and_then(|n| n.checked_mul(8)?.checked_add(8))
                .ok_or("sample callchain length impossible")?;
            at = at.checked_add(len).ok_or("sample callchain cut off")?;
        }
        let size = e.u32(body, at).ok_or("sample raw size cut off")? as usize;
        let start = at + 4;
        s.raw = Some(
            body.get(start..start.checked_add(size).ok_or("sample raw data cut off")?)
                .ok_or("sample raw data runs past its record")?,
        );
        Ok(s)
    }
}

/// The size of a PERF_SAMPLE_READ block at `at`.
fn read_size(rf: ReadFormat, e: Endian, body: &[u8], at: usize) -> Option<usize> {
    let times = usize::from(rf.contains(ReadFormat::TOTAL_TIME_ENABLED))
        + usize::from(rf.contains(ReadFormat::TOTAL_TIME_RUNNING));
    const LOST: u64 = 1 << 4; // PERF_FORMAT_LOST (Linux 6.0)
    let per_value =
        1 + usize::from(rf.contains(ReadFormat::ID)) + usize::from(rf.bits() & LOST != 0);
    if rf.contains(ReadFormat::GROUP) {
        let nr = usize::try_from(e.u64(body, at)?).ok()?;
        nr.checked_mul(per_value)?
            .checked_add(1 + times)?
            .checked_mul(8)
    } else {
        Some((per_value + times) * 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut r = kind.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    type Framed = Vec<(u64, u32, Vec<u8>)>;

    /// The records of `bytes` read through a buffer of `cap` bytes; the same must come from
    /// the bytes mapped from a file.
    fn all(bytes: &[u8], cap: usize) -> (Framed, Option<String>) {
        let reader = std::io::BufReader::with_capacity(cap, Cursor::new(bytes));
        let buffered = frame_all(Records::new(
            reader,
            None,
            Endian::Little,
            0,
            bytes.len() as u64,
        ));
        // Removed when dropped, also when an assertion below fails.
        let dir = virtlens_testkit::TempDir::new("records");
        let path = dir.path().join("records.data");
        std::fs::write(&path, bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        if let Some(m) = Mapped::new(&file) {
            let recs = Records::new(
                Cursor::new(bytes),
                Some(&m),
                Endian::Little,
                0,
                bytes.len() as u64,
            );
            assert_eq!(frame_all(recs), buffered, "mapped");
        }
        buffered
    }

    fn frame_all<R: Read>(mut recs: Records<'_, R>) -> (Framed, Option<String>) {
        let mut out = Vec::new();
        loop {
            match recs.next() {
                Ok(Some(r)) => out.push((r.offset, r.kind, r.body.to_vec())),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn frames_records_across_buffer_boundaries() {
        let mut bytes = Vec::new();
        for i in 0..50u8 {
            bytes.extend(record(9, &vec![i; usize::from(i % 7) * 8]));
        }
        for cap in [8, 13, 64, 4096] {
            let (recs, err) = all(&bytes, cap);
            assert_eq!(err, None);
            assert_eq!(recs.len(), 50, "capacity {cap}");
            assert_eq!(recs[49].2, vec![49; 0]);
            assert_eq!(recs[13].2, vec![13; 48]);
        }
    }

    #[test]
    fn damage_is_reported_with_its_offset() {
        let mut bytes = record(9, &[1; 16]);
        bytes.extend(record(3, &[2; 8]));
        let (recs, err) = all(&bytes[..bytes.len() - 3], 64);
        assert_eq!(recs.len(), 1);
        assert_eq!(
            err.as_deref(),
            Some(
                "byte 24: record of type 3 and 16 bytes runs past the end of the data section \
                 at byte 37"
            )
        );
        let mut aux = bytes.clone();
        aux.extend(record(AUXTRACE, &[0; 8]));
        let (recs, err) = all(&aux, 64);
        assert_eq!(recs.len(), 2);
        assert_eq!(
            err.as_deref(),
            Some("byte 40: AUX trace data (perf record with an AUX area) is not supported")
        );
        let mut bad = bytes.clone();
        bad[30] = 2; // second record's size → 2
        bad[31] = 0;
        let (recs, err) = all(&bad, 64);
        assert_eq!(recs.len(), 1);
        assert_eq!(
            err.as_deref(),
            Some("byte 24: record of type 3 says it is 2 bytes long, less than its 8-byte header")
        );
    }
}
