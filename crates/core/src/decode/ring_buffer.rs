//! The kernel's tracing ring-buffer pages, as `per_cpu/cpuN/trace_pipe_raw` returns them.
//!
//! A page starts with the header that `events/header_page` describes (on x86-64:
//! `u64 timestamp @0; local_t commit @8; data @16`), then `commit & COMMIT_MASK` bytes of
//! events. Bit 31 of `commit` says events were lost before this page; bit 30 that their
//! number is stored as an `unsigned long` right after the data. Each event starts with a
//! `u32` of `type_len:5 | time_delta:27`:
//!
//! ```text
//! type_len 1..=28  payload of 4·type_len bytes follows
//! type_len 0       u32 length (counting itself), then length−4 bytes of payload
//! type_len 29      padding: the end of the page when time_delta is 0, else skip 4 + u32 bytes
//! type_len 30      time extend: delta = (u32 << 27) | time_delta, 8 bytes in all
//! type_len 31      absolute time stamp (lower 59 bits), 8 bytes in all
//! ```
//!
//! Every data event's time is the page's timestamp plus the deltas before it. Numbers are in
//! the running kernel's byte order (native). Damaged pages never panic: iteration stops at
//! the first event that does not fit, and [`Events::damage`] says where and why.

/// `type_len` values with a meaning of their own.
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// Bits of `time_delta` in an event header.
const TS_SHIFT: u32 = 27;
/// The length bits of `commit`.
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// `commit` flag: events were lost (overwritten or dropped) before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// `commit` flag: the number of lost events is stored after the data.
const MISSED_STORED: u64 = 1 << 30;
/// The high bits an absolute time stamp does not carry.
const TS_MSB: u64 = 0xf8 << 56;

/// Where the page header's fields are (from `events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    pub timestamp_offset: usize,
    pub commit_offset: usize,
    /// 8 on 64-bit kernels (`local_t` is a long), 4 on 32-bit ones.
    pub commit_size: usize,
    pub data_offset: usize,
    /// The room for events in one page.
    pub data_size: usize,
}

impl Default for PageLayout {
    /// The x86-64 layout: 4 KiB pages, 16 header bytes.
    fn default() -> Self {
        Self {
            timestamp_offset: 0,
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
            data_size: 4080,
        }
    }
}

impl PageLayout {
    /// Parses the text of `events/header_page`:
    /// `field: u64 timestamp; offset:0; size:8; signed:0;` … `field: char data; offset:16;
    /// size:4080; signed:0;`. The `overwrite` field (an alias of a commit bit) is ignored.
    pub fn parse(text: &str) -> Result<PageLayout, String> {
        let (mut ts, mut commit, mut data) = (None, None, None);
        for line in text.lines() {
            let mut name = None;
            let (mut offset, mut size) = (None, None);
            for part in line.split(';') {
                let part = part.trim();
                if let Some(decl) = part.strip_prefix("field:") {
                    name = decl.split_whitespace().last().map(str::to_string);
                } else if let Some(v) = part.strip_prefix("offset:") {
                    offset = v.trim().parse::<usize>().ok();
                } else if let Some(v) = part.strip_prefix("size:") {
                    size = v.trim().parse::<usize>().ok();
                }
            }
            let (Some(name), Some(offset), Some(size)) = (name, offset, size) else {
                continue;
            };
            match name.as_str() {
                "timestamp" => ts = Some(offset),
                "commit" => commit = Some((offset, size)),
                "data" => data = Some((offset, size)),
                _ => {}
            }
        }
        let missing = |what: &str| format!("the page header format has no `{what}` field");
        let timestamp_offset = ts.ok_or_else(|| missing("timestamp"))?;
        let (commit_offset, commit_size) = commit.ok_or_else(|| missing("commit"))?;
        let (data_offset, data_size) = data.ok_or_else(|| missing("data"))?;
        if !matches!(commit_size, 4 | 8) {
            return Err(format!(
                "the page header's commit field has size {commit_size}, expected 4 or 8"
            ));
        }
        if data_size == 0 || data_offset < timestamp_offset + 8 {
            return Err(format!(
                "the page header's data field (offset {data_offset}, size {data_size}) is not \
                 after the timestamp"
            ));
        }
        Ok(PageLayout {
            timestamp_offset,
            commit_offset,
            commit_size,
            data_offset,
            data_size,
        })
    }

    /// The bytes of one page (header and data), which is what one read returns.
    pub fn page_size(&self) -> usize {
        self.data_offset + self.data_size
    }

    /// The header of `page` and an iterator over its events.
    pub fn page<'a>(&self, page: &'a [u8]) -> Result<Page<'a>, String> {
        Page::parse(self, page)
    }
}

/// Events lost before a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    /// Some were lost; how many, when the kernel had room to say.
    Some(Option<u64>),
}

/// One page: its header and the events in it.
#[derive(Debug, Clone)]
pub struct Page<'a> {
    /// The time of the page (the base of the first event's delta).
    pub timestamp: u64,
    /// Events lost before this page.
    pub missed: Missed,
    data: &'a [u8],
}

impl<'a> Page<'a> {
    /// Reads the header of `page`; an error when the page is shorter than its header or its
    /// length is past the page's end.
    pub fn parse(layout: &PageLayout, page: &'a [u8]) -> Result<Page<'a>, String> {
        let timestamp = uint(page, layout.timestamp_offset, 8)
            .ok_or_else(|| format!("a page of {} bytes has no timestamp", page.len()))?;
        let commit = uint(page, layout.commit_offset, layout.commit_size)
            .ok_or_else(|| format!("a page of {} bytes has no commit field", page.len()))?;
        let len = (commit & COMMIT_MASK) as usize;
        let end = layout.data_offset.saturating_add(len);
        let data = page.get(layout.data_offset..end).ok_or_else(|| {
            format!(
                "the page says it holds {len} bytes of events, but only {} follow its header",
                page.len().saturating_sub(layout.data_offset)
            )
        })?;
        let missed = if commit & MISSED_EVENTS == 0 {
            Missed::None
        } else if commit & MISSED_STORED != 0 {
            let word = layout.commit_size;
            Missed::Some(uint(page, end, word))
        } else {
            Missed::Some(None)
        };
        Ok(Page {
            timestamp,
            missed,
            data,
        })
    }

    /// The bytes of events.
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// The events, in time order.
    pub fn events(&self) -> Events<'a> {
        Events {
            data: self.data,
            pos: 0,
            ts: self.timestamp,
            damage: None,
        }
    }
}

/// One event: its time and its payload (which starts with `u16 common_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent<'a> {
    pub ts: u64,
    pub payload: &'a [u8],
}

/// The events of a page; see [`Page::events`].
#[derive(Debug, Clone)]
pub struct Events<'a> {
    data: &'a [u8],
    pos: usize,
    ts: u64,
    damage: Option<String>,
}

impl<'a> Events<'a> {
    /// Why iteration stopped early, if it did: the byte in the page's data and the reason.
    pub fn damage(&self) -> Option<&str> {
        self.damage.as_deref()
    }

    fn fail(&mut self, why: &str) -> Option<RawEvent<'a>> {
        self.damage = Some(format!("data byte {}: {why}", self.pos));
        self.pos = self.data.len();
        None
    }

    fn word(&self, at: usize) -> Option<u32> {
        uint(self.data, at, 4).map(|v| v as u32)
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = RawEvent<'a>;

    fn next(&mut self) -> Option<RawEvent<'a>> {
        loop {
            if self.pos >= self.data.len() {
                return None;
            }
            let Some(header) = self.word(self.pos) else {
                return self.fail("an event header is cut short");
            };
            let type_len = header & 31;
            let delta = u64::from(header >> 5);
            let at = self.pos;
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // The rest of the page is unused.
                        self.pos = self.data.len();
                        return None;
                    }
                    let Some(len) = self.word(at + 4) else {
                        return self.fail("a padding event has no length");
                    };
                    self.pos = at.saturating_add(4).saturating_add(len as usize);
                }
                TYPE_TIME_EXTEND => {
                    let Some(high) = self.word(at + 4) else {
                        return self.fail("a time extend is cut short");
                    };
                    self.ts = self.ts.wrapping_add((u64::from(high) << TS_SHIFT) | delta);
                    self.pos = at + 8;
                }
                TYPE_TIME_STAMP => {
                    let Some(high) = self.word(at + 4) else {
                        return self.fail("an absolute time stamp is cut short");
                    };
                    let abs = (u64::from(high) << TS_SHIFT) | delta;
                    self.ts = fix_abs_ts(abs, self.ts);
                    self.pos = at + 8;
                }
                0 => {
                    let Some(len) = self.word(at + 4) else {
                        return self.fail("a long event has no length");
                    };
                    let Some(body) = (len as usize).checked_sub(4) else {
                        return self.fail("a long event's length is less than 4");
                    };
                    let start = at + 8;
                    let Some(payload) = self.data.get(start..start.saturating_add(body)) else {
                        return self.fail("a long event runs past the end of the page");
                    };
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = start + body.next_multiple_of(4);
                    return Some(RawEvent {
                        ts: self.ts,
                        payload,
                    });
                }
                n => {
                    // 1..=28: the payload is 4·n bytes.
                    let start = at + 4;
                    let len = 4 * n as usize;
                    let Some(payload) = self.data.get(start..start + len) else {
                        return self.fail("an event runs past the end of the page");
                    };
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = start + len;
                    return Some(RawEvent {
                        ts: self.ts,
                        payload,
                    });
                }
            }
        }
    }
}

/// An absolute time stamp keeps only the lower 59 bits: the high bits come from the time
/// before it (as the kernel's `rb_fix_abs_ts` does).
fn fix_abs_ts(abs: u64, before: u64) -> u64 {
    if before & TS_MSB == 0 {
        return abs;
    }
    let fixed = abs | (before & TS_MSB);
    if fixed < before {
        fixed.wrapping_add(1 << 59)
    } else {
        fixed
    }
}

/// A native-endian unsigned integer of 4 or 8 bytes at `at`.
fn uint(buf: &[u8], at: usize, size: usize) -> Option<u64> {
    let bytes = buf.get(at..at.checked_add(size)?)?;
    match size {
        4 => Some(u64::from(u32::from_ne_bytes(bytes.try_into().ok()?))),
        8 => Some(u64::from_ne_bytes(bytes.try_into().ok()?)),
        _ => None,
    }
}

/// Builds pages in the kernel's format, for tests and fuzzing of everything that reads them.
pub(crate) mod build {
    use super::{COMMIT_MASK, MISSED_EVENTS, MISSED_STORED, PageLayout, TYPE_TIME_EXTEND};

    /// A page being filled with events.
    #[derive(Debug, Clone)]
    pub struct PageBuilder {
        layout: PageLayout,
        data: Vec<u8>,
        last_ts: u64,
        timestamp: u64,
        missed: Option<Option<u64>>,
    }

    impl PageBuilder {
        /// An empty page whose time is `timestamp`.
        pub fn new(layout: PageLayout, timestamp: u64) -> Self {
            Self {
                layout,
                data: Vec::new(),
                last_ts: timestamp,
                timestamp,
                missed: None,
            }
        }

        /// Marks the page as following lost events (`Some(n)`: n of them, stored).
        pub fn missed(&mut self, count: Option<u64>) -> &mut Self {
            self.missed = Some(count);
            self
        }

        /// Appends an event with `payload` at time `ts` (not before the previous event);
        /// false when it does not fit.
        pub fn event(&mut self, ts: u64, payload: &[u8]) -> bool {
            let delta = ts.saturating_sub(self.last_ts);
            let mut bytes = Vec::new();
            if delta >= 1 << 27 {
                let header = TYPE_TIME_EXTEND | (((delta & ((1 << 27) - 1)) as u32) << 5);
                bytes.extend_from_slice(&header.to_ne_bytes());
                bytes.extend_from_slice(&((delta >> 27) as u32).to_ne_bytes());
            }
            let small_delta = if delta >= 1 << 27 { 0 } else { delta as u32 };
            let padded = payload.len().next_multiple_of(4);
            if (1..=28 * 4).contains(&padded) {
                let header = (padded / 4) as u32 | (small_delta << 5);
                bytes.extend_from_slice(&header.to_ne_bytes());
            } else {
                bytes.extend_from_slice(&(small_delta << 5).to_ne_bytes());
                bytes.extend_from_slice(&((padded + 4) as u32).to_ne_bytes());
            }
            bytes.extend_from_slice(payload);
            bytes.resize(bytes.len() + padded - payload.len(), 0);
            let room = self.layout.data_size.saturating_sub(8);
            if self.data.len() + bytes.len() > room {
                return false;
            }
            self.data.extend_from_slice(&bytes);
            self.last_ts = ts.max(self.last_ts);
            true
        }

        /// The page: header, events, the lost count when stored, zeros to the page's size.
        pub fn finish(&self) -> Vec<u8> {
            let l = &self.layout;
            let mut page = vec![0u8; l.page_size()];
            page[l.timestamp_offset..l.timestamp_offset + 8]
                .copy_from_slice(&self.timestamp.to_ne_bytes());
            let mut commit = self.data.len() as u64 & COMMIT_MASK;
            let end = l.data_offset + self.data.len();
            page[l.data_offset..end].copy_from_slice(&self.data);
            if let Some(count) = self.missed {
                commit |= MISSED_EVENTS;
                if let Some(n) = count {
                    commit |= MISSED_STORED;
                    let word = l.commit_size;
                    let bytes = n.to_ne_bytes();
                    page[end..end + word].copy_from_slice(&bytes[..word]);
                }
            }
            let bytes = commit.to_ne_bytes();
            page[l.commit_offset..l.commit_offset + l.commit_size]
                .copy_from_slice(&bytes[..l.commit_size]);
            page
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::PageBuilder;
    use super::*;

    /// This machine's `events/header_page`.
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
        \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
        \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
        \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    #[test]
    fn header_page_format() {
        let l = PageLayout::parse(HEADER_PAGE).unwrap();
        assert_eq!(l, PageLayout::default());
        assert_eq!(l.page_size(), 4096);
        assert!(PageLayout::parse("field: u64 timestamp; offset:0; size:8;").is_err());
        let odd = HEADER_PAGE.replace("size:8;\tsigned:1", "size:3;\tsigned:1");
        assert!(PageLayout::parse(&odd).unwrap_err().contains("size 3"));
    }

    #[test]
    fn events_small_long_extended_and_lost() {
        let l = PageLayout::default();
        let mut b = PageBuilder::new(l, 1_000);
        assert!(b.event(1_010, &[1, 0, 0, 0, 7, 0, 0, 0]));
        let long = vec![9u8; 200];
        assert!(b.event(1_500, &long));
        assert!(b.event(1_000_000_000, &[2, 0, 0, 0]));
        b.missed(Some(42));
        let bytes = b.finish();
        let page = l.page(&bytes).unwrap();
        assert_eq!(page.missed, Missed::Some(Some(42)));
        let mut it = page.events();
        let got: Vec<(u64, usize)> = it.by_ref().map(|e| (e.ts, e.payload.len())).collect();
        assert_eq!(got, vec![(1_010, 8), (1_500, 200), (1_000_000_000, 4)]);
        assert!(it.damage().is_none());
    }

    #[test]
    fn padding_absolute_stamps_and_end_of_page() {
        let mut data = Vec::new();
        // padding of 16 bytes with a non-zero delta (a discarded event): its length word
        // counts everything after the header
        data.extend_from_slice(&(TYPE_PADDING | (5 << 5)).to_ne_bytes());
        data.extend_from_slice(&12u32.to_ne_bytes());
        data.extend_from_slice(&[0; 8]);
        // absolute stamp 0x1_2345_6789
        let abs: u64 = 0x1_2345_6789;
        let h = TYPE_TIME_STAMP | (((abs & ((1 << 27) - 1)) as u32) << 5);
        data.extend_from_slice(&h.to_ne_bytes());
        data.extend_from_slice(&((abs >> 27) as u32).to_ne_bytes());
        // an event 3 ns later
        data.extend_from_slice(&(1u32 | (3 << 5)).to_ne_bytes());
        data.extend_from_slice(&[4, 0, 0, 0]);
        // end-of-page padding, then garbage that must not be read
        data.extend_from_slice(&TYPE_PADDING.to_ne_bytes());
        data.extend_from_slice(&[0xff; 8]);
        let mut page = vec![0u8; 16];
        page[8..16].copy_from_slice(&(data.len() as u64).to_ne_bytes());
        page.extend_from_slice(&data);
        let p = Page::parse(&PageLayout::default(), &page).unwrap();
        let got: Vec<u64> = p.events().map(|e| e.ts).collect();
        assert_eq!(got, vec![abs + 3]);
        assert_eq!(fix_abs_ts(5, 0x0800_0000_0000_0010), 0x1000_0000_0000_0005);
        assert_eq!(fix_abs_ts(5, 0x10), 5);
    }

    #[test]
    fn damage_stops_iteration_with_a_reason() {
        let mut page = vec![0u8; 16];
        page[8..16].copy_from_slice(&12u64.to_ne_bytes());
        page.extend_from_slice(&(0u32).to_ne_bytes());
        page.extend_from_slice(&1000u32.to_ne_bytes()); // long event past the end
        page.extend_from_slice(&[0; 4]);
        let p = Page::parse(&PageLayout::default(), &page).unwrap();
        let mut it = p.events();
        assert_eq!(it.next(), None);
        assert!(it.damage().unwrap().contains("past the end"));
        let mut short = vec![0u8; 16];
        short[8..16].copy_from_slice(&100u64.to_ne_bytes());
        assert!(Page::parse(&PageLayout::default(), &short).is_err());
        assert!(Page::parse(&PageLayout::default(), &[0; 10]).is_err());
    }
}
