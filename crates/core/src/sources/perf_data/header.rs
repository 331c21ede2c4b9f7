//! The perf.data container around the records: the file header (magic, byte order, where the
//! attribute, data and feature sections are), the event attributes with their sample ids and
//! names, and the feature sections virtlens uses (tracing data, CPUID, CPU description, OS
//! release).
//!
//! Every size and offset read from the file is checked against the file's length before
//! anything is allocated or read, so a damaged header gives an error that names the byte and
//! what was expected, never a huge allocation or a panic. (linux-perf-data's own
//! `PerfFileReader` trusts these numbers, and it needs the feature sections at the end of the
//! file, which a truncated file has lost; its `PerfEventAttr` parser and constants are used.)

use std::io::{Read, Seek, SeekFrom};

use byteorder::{BigEndian, LittleEndian};
use linux_perf_data::Feature;
use linux_perf_data::linux_perf_event_reader::PerfEventAttr;

use super::bytes::{Cursor, Endian, padded_str};

/// The size of `struct perf_file_header` (magic, sizes, three sections, feature bitmap).
pub(super) const HEADER_SIZE: usize = 104;
/// The size of the smallest `perf_event_attr` (PERF_ATTR_SIZE_VER0).
const ATTR_SIZE_VER0: u64 = 64;

/// An (offset, size) pair of the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Section {
    pub offset: u64,
    pub size: u64,
}

impl Section {
    fn end(self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }
}

/// The file header.
#[derive(Debug, Clone)]
pub(super) struct FileHeader {
    pub endian: Endian,
    /// The size of one attribute entry (`perf_event_attr` + its ids section).
    pub attr_size: u64,
    pub attrs: Section,
    pub data: Section,
    pub features: [u64; 4],
}

/// One event of the recording.
#[derive(Debug, Clone)]
pub(super) struct Attr {
    pub attr: PerfEventAttr,
    /// The sample ids perf gave this event (one per CPU or thread it was opened on).
    pub ids: Vec<u64>,
    /// `kvm:kvm_exit`, from the EVENT_DESC feature when present.
    pub name: Option<String>,
}

/// Everything before and after the records.
#[derive(Debug, Clone)]
pub(super) struct Meta {
    pub header: FileHeader,
    pub attrs: Vec<Attr>,
    /// The tracing-data feature section, raw.
    pub tracing: Option<Vec<u8>>,
    /// Where the tracing data starts in the file.
    pub tracing_at: u64,
    /// `GenuineIntel,6,85,4`-style CPUID string.
    pub cpuid: Option<String>,
    /// The CPU's model name (`QEMU TCG CPU version 2.5+`).
    pub cpudesc: Option<String>,
    pub osrelease: Option<String>,
    /// Where the records are: `data.offset .. data_end` (cut to the file's length).
    pub data_end: u64,
    /// Problems that still let the records be read.
    pub warnings: Vec<String>,
}

/// Whether `head` starts with a perf.data magic (either byte order).
pub(super) fn is_magic(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP")
}

/// Parses the 104-byte header of a file of `file_len` bytes.
pub(super) fn parse_header(head: &[u8], file_len: u64) -> Result<FileHeader, String> {
    let endian = match head.get(..8) {
        Some(b"PERFILE2") => Endian::Little,
        Some(b"2ELIFREP") => Endian::Big,
        Some(b"PERFFILE") => {
            return Err(
                "byte 0: a version-1 perf.data (perf before Linux 2.6.35); not supported".into(),
            );
        }
        _ => return Err("byte 0: expected the perf.data magic PERFILE2".into()),
    };
    let mut c = Cursor::new(head, endian, 0);
    c.bytes(8, "the magic")?;
    let header_size = c.u64("the header size")?;
    if header_size == 16 {
        return Err(
            "byte 8: a pipe-mode perf.data (`perf record -o -`); record to a file instead".into(),
        );
    }
    if head.len() < HEADER_SIZE {
        return Err(format!(
            "byte {}: the file ends inside its {HEADER_SIZE}-byte header",
            head.len()
        ));
    }
    if header_size < HEADER_SIZE as u64 || header_size > file_len {
        return Err(format!(
            "byte 8: header size {header_size} is impossible (expected {HEADER_SIZE}..{file_len})"
        ));
    }
    let attr_size = c.u64("the attribute size")?;
    let mut section = |what: &str| -> Result<Section, String> {
        Ok(Section {
            offset: c.u64(what)?,
            size: c.u64(what)?,
        })
    };
    let attrs = section("the attribute section")?;
    let data = section("the data section")?;
    let _event_types = section("the event-types section")?;
    let mut features = [0u64; 4];
    for f in &mut features {
        *f = c.u64("the feature bitmap")?;
    }
    if !(ATTR_SIZE_VER0 + 16..=4096).contains(&attr_size) {
        return Err(format!(
            "byte 16: attribute size {attr_size} is impossible (expected {}..4096)",
            ATTR_SIZE_VER0 + 16
        ));
    }
    if attrs.end().is_none_or(|e| e > file_len) || attrs.size % attr_size != 0 {
        return Err(format!(
            "byte 24: the attribute section ({} bytes at byte {}) does not fit the file ({file_len} \
             bytes) or is not a whole number of {attr_size}-byte entries",
            attrs.size, attrs.offset
        ));
    }
    if data.offset < header_size || data.offset > file_len || data.end().is_none() {
        return Err(format!(
            "byte 40: the data section starts at byte {}, outside the file ({file_len} bytes)",
            data.offset
        ));
    }
    Ok(FileHeader {
        endian,
        attr_size,
        attrs,
        data,
        features,
    })
}

fn read_at<R: Read + Seek>(r: &mut R, at: Section, what: &str) -> Result<Vec<u8>, String> {
    let len = usize::try_from(at.size).map_err(|_| format!("{what} is too large"))?;
    let mut buf = vec![0; len];
    r.seek(SeekFrom::Start(at.offset))
        .and_then(|_| r.read_exact(&mut buf))
        .map_err(|e| {
            format!(
                "byte {}: reading {what} ({} bytes): {e}",
                at.offset, at.size
            )
        })?;
    Ok(buf)
}

/// Reads the attributes and the feature sections. Hard errors are those that make the
/// records unreadable; lost or damaged feature sections become warnings.
pub(super) fn read_meta<R: Read + Seek>(
    r: &mut R,
    header: FileHeader,
    file_len: u64,
) -> Result<Meta, String> {
    let mut warnings = Vec::new();
    let attrs = read_attrs(r, &header, file_len)?;
    let data_end_declared = header.data.end().unwrap_or(u64::MAX);
    let data_end = if header.data.size == 0 {
        warnings.push(
            "the header says the data section is empty: perf record did not finish writing \
             this file; reading records up to the end of the file"
                .into(),
        );
        file_len
    } else {
        data_end_declared.min(file_len)
    };
    let mut meta = Meta {
        header,
        attrs,
        tracing: None,
        tracing_at: 0,
        cpuid: None,
        cpudesc: None,
        osrelease: None,
        data_end,
        warnings,
    };
    if data_end_declared > file_len && meta.header.data.size != 0 {
        meta.warnings.push(format!(
            "the file is truncated: it ends at byte {file_len} but its data section runs to byte \
             {data_end_declared}, and the header sections after it are lost"
        ));
        return Ok(meta);
    }
    if meta.header.data.size == 0 {
        return Ok(meta);
    }
    let features = feature_table(r, &meta.header, file_len, &mut meta.warnings);
    for (feature, at) in features {
        let name = feature_name(feature);
        let bytes = match read_at(r, at, name) {
            Ok(b) => b,
            Err(e) => {
                meta.warnings.push(e);
                continue;
            }
        };
        let e = meta.header.endian;
        match feature {
            Feature::TRACING_DATA => {
                meta.tracing = Some(bytes);
                meta.tracing_at = at.offset;
            }
            Feature::CPUID => meta.cpuid = header_string(&bytes, e),
            Feature::CPUDESC => meta.cpudesc = header_string(&bytes, e),
            Feature::OSRELEASE => meta.osrelease = header_string(&bytes, e),
            Feature::EVENT_DESC => {
                if let Err(err) = apply_event_desc(&bytes, e, at.offset, &mut meta.attrs) {
                    meta.warnings
                        .push(format!("the event descriptions are damaged: {err}"));
                }
            }
            _ => {}
        }
    }
    Ok(meta)
}

fn feature_name(f: Feature) -> &'static str {
    match f {
        Feature::TRACING_DATA => "the tracing data (tracepoint formats)",
        Feature::CPUID => "the CPUID header",
        Feature::CPUDESC => "the CPU description header",
        Feature::OSRELEASE => "the OS release header",
        Feature::EVENT_DESC => "the event descriptions",
        _ => "a header section",
    }
}

/// The (feature, section) table after the data section, for the features virtlens reads.
fn feature_table<R: Read + Seek>(
    r: &mut R,
    h: &FileHeader,
    file_len: u64,
    warnings: &mut Vec<String>,
) -> Vec<(Feature, Section)> {
    let wanted = [
        Feature::TRACING_DATA,
        Feature::OSRELEASE,
        Feature::CPUID,
        Feature::CPUDESC,
        Feature::EVENT_DESC,
    ];
    let bits: Vec<u32> = (0..256u32)
        .filter(|&b| h.features[(b / 64) as usize] & (1u64 << (b % 64)) != 0)
        .collect();
    let table_at = h.data.end().unwrap_or(u64::MAX);
    let table = Section {
        offset: table_at,
        size: bits.len() as u64 * 16,
    };
    if table.end().is_none_or(|e| e > file_len) {
        warnings.push(format!(
            "byte {table_at}: the table of {} header sections after the data section is cut off \
             (the file has {file_len} bytes)",
            bits.len()
        ));
        return Vec::new();
    }
    let bytes = match read_at(r, table, "the header-section table") {
        Ok(b) => b,
        Err(e) => {
            warnings.push(e);
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    let mut unused_lost = Vec::new();
    for (i, &bit) in bits.iter().enumerate() {
        let feature = Feature(bit);
        let e = h.endian;
        let at = Section {
            offset: e.u64(&bytes, i * 16).unwrap_or(u64::MAX),
            size: e.u64(&bytes, i * 16 + 8).unwrap_or(u64::MAX),
        };
        let fits = at.end().is_some_and(|end| end <= file_len);
        match (wanted.contains(&feature), fits) {
            (true, true) => out.push((feature, at)),
            (true, false) => warnings.push(format!(
                "byte {}: {} ({} bytes at byte {}) lies past the end of the file ({file_len} \
                 bytes): the file is truncated or damaged",
                table_at + i as u64 * 16,
                feature_name(feature),
                at.size,
                at.offset
            )),
            (false, false) => unused_lost.push(table_at + i as u64 * 16),
            (false, true) => {}
        }
    }
    if let Some(first) = unused_lost.first() {
        warnings.push(format!(
            "byte {first}: {} header section(s) lie past the end of the file ({file_len} bytes): \
             the file is truncated or damaged (virtlens does not use those sections)",
            unused_lost.len()
        ));
    }
    out
}

/// `struct perf_header_string { u32 len; char str[len]; }` (NUL-padded).
fn header_string(bytes: &[u8], e: Endian) -> Option<String> {
    let len = e.u32(bytes, 0)? as usize;
    let s = padded_str(bytes.get(4..4usize.checked_add(len)?)?);
    (!s.is_empty()).then_some(s)
}

fn parse_attr(bytes: &[u8], e: Endian) -> Option<PerfEventAttr> {
    let parsed = match e {
        Endian::Little => PerfEventAttr::parse::<_, LittleEndian>(bytes),
        Endian::Big => PerfEventAttr::parse::<_, BigEndian>(bytes),
    };
    parsed.ok().map(|(attr, _)| attr)
}

/// The attribute section: `attr_size`-byte entries of `perf_event_attr` + an ids section.
fn read_attrs<R: Read + Seek>(
    r: &mut R,
    h: &FileHeader,
    file_len: u64,
) -> Result<Vec<Attr>, String> {
    let bytes = read_at(r, h.attrs, "the attribute section")?;
    let entry = h.attr_size as usize;
    let mut attrs = Vec::new();
    for (i, chunk) in bytes.chunks_exact(entry).enumerate() {
        let at = h.attrs.offset + (i * entry) as u64;
        let attr = parse_attr(&chunk[..entry - 16], h.endian)
            .ok_or_else(|| format!("byte {at}: attribute #{i} is not a valid perf_event_attr"))?;
        let ids_at = Section {
            offset: h.endian.u64(chunk, entry - 16).unwrap_or(u64::MAX),
            size: h.endian.u64(chunk, entry - 8).unwrap_or(u64::MAX),
        };
        if ids_at.end().is_none_or(|e| e > file_len) || !ids_at.size.is_multiple_of(8) {
            return Err(format!(
                "byte {}: the ids of attribute #{i} ({} bytes at byte {}) do not fit the file",
                at + entry as u64 - 16,
                ids_at.size,
                ids_at.offset
            ));
        }
        let raw = read_at(r, ids_at, "attribute ids")?;
        let ids = raw
            .chunks_exact(8)
            .filter_map(|c| h.endian.u64(c, 0))
            .collect();
        attrs.push(Attr {
            attr,
            ids,
            name: None,
        });
    }
    if attrs.is_empty() {
        return Err(format!(
            "byte {}: the file describes no events (empty attribute section)",
            h.attrs.offset
        ));
    }
    Ok(attrs)
}

/// Names the attributes from HEADER_EVENT_DESC: `u32 nr, u32 attr_size`, then per event the
/// attr, `u32 nr_ids`, a header string (the name) and the ids. Matched by first id, else by
/// position.
fn apply_event_desc(bytes: &[u8], e: Endian, base: u64, attrs: &mut [Attr]) -> Result<(), String> {
    let mut c = Cursor::new(bytes, e, base);
    let nr = c.u32("the event count")?;
    let attr_size = u64::from(c.u32("the attribute size")?);
    for i in 0..nr as usize {
        c.bytes(attr_size, "an attribute")?;
        let nr_ids = c.u32("the id count")?;
        let len = c.u32("the name length")?;
        let name = padded_str(c.bytes(u64::from(len), "the event name")?);
        let ids = c.bytes(u64::from(nr_ids) * 8, "the event ids")?;
        let first = e.u64(ids, 0);
        let target = match first {
            Some(id) => attrs.iter().position(|a| a.ids.first() == Some(&id)),
            None => None,
        }
        .or((i < attrs.len()).then_some(i));
        if let Some(a) = target.and_then(|t| attrs.get_mut(t)) {
            a.name = Some(name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(data: Section, features: u64, attr_size: u64) -> Vec<u8> {
        let mut h = b"PERFILE2".to_vec();
        for v in [
            104,
            attr_size,
            104,
            attr_size,
            data.offset,
            data.size,
            0,
            0,
            features,
            0,
            0,
            0,
        ] {
            h.extend_from_slice(&u64::to_le_bytes(v));
        }
        h
    }

    #[test]
    fn header_checks_name_the_byte() {
        let data = Section {
            offset: 300,
            size: 100,
        };
        let h = header(data, 0, 136);
        assert!(parse_header(&h, 1000).is_ok());
        assert!(
            parse_header(b"PERFFILE", 1000)
                .unwrap_err()
                .contains("version-1")
        );
        assert!(
            parse_header(b"garbage!", 1000)
                .unwrap_err()
                .starts_with("byte 0")
        );
        assert!(
            parse_header(&h[..50], 1000)
                .unwrap_err()
                .contains("ends inside")
        );
        let bad = header(data, 0, 3);
        assert!(parse_header(&bad, 1000).unwrap_err().starts_with("byte 16"));
        let far = header(
            Section {
                offset: 5000,
                size: 1,
            },
            0,
            136,
        );
        assert!(parse_header(&far, 1000).unwrap_err().starts_with("byte 40"));
        let mut pipe = b"PERFILE2".to_vec();
        pipe.extend_from_slice(&16u64.to_le_bytes());
        assert!(parse_header(&pipe, 16).unwrap_err().contains("pipe-mode"));
    }

    #[test]
    fn header_strings() {
        let mut b = 8u32.to_le_bytes().to_vec();
        b.extend_from_slice(b"6.1.0\0\0\0");
        assert_eq!(header_string(&b, Endian::Little).as_deref(), Some("6.1.0"));
        assert_eq!(header_string(&b[..6], Endian::Little), None);
    }
}
