//! The layout of KVM's binary statistics (`KVM_GET_STATS_FD`, api.rst §4.133): a header, an id
//! string, descriptors (flags, exponent, size, offset, bucket size, name) and the data block of
//! u64 values. Decoding is pure: the host side reads the fd, this module makes sense of the
//! bytes, so it is fuzzable and testable without /dev/kvm.

use serde::Serialize;

/// Why a stats buffer could not be decoded (names the byte offset and what was expected).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("KVM stats: at byte {offset}: expected {expected}")]
pub struct StatsError {
    pub offset: usize,
    pub expected: String,
}

/// What a statistic measures over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatType {
    Cumulative,
    Instant,
    Peak,
    LinearHist,
    LogHist,
    Unknown(u32),
}

/// The unit of a statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatUnit {
    None,
    Bytes,
    Seconds,
    Cycles,
    Boolean,
    Unknown(u32),
}

/// One descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Descriptor {
    pub name: String,
    pub kind: StatType,
    pub unit: StatUnit,
    /// Base of `exponent`: 10 or 2.
    pub base: u32,
    /// The value is `raw × base^exponent` in `unit`.
    pub exponent: i16,
    /// Number of u64 values (1, or the buckets of a histogram).
    pub size: u16,
    /// Byte offset of the values within the data block.
    pub offset: u32,
    pub bucket_size: u32,
}

/// The header, id and descriptors of a stats fd: read once, then only the data changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// `kvm-{pid}` or `kvm-{pid}/vcpu-{id}`.
    pub id: String,
    pub descriptors: Vec<Descriptor>,
    pub data_offset: u32,
    /// Bytes of the data block.
    pub data_len: usize,
}

const HEADER: usize = 24;
const DESC_FIXED: usize = 16;

fn u32_at(b: &[u8], at: usize) -> Result<u32, StatsError> {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_ne_bytes)
        .ok_or_else(|| StatsError {
            offset: at,
            expected: "4 more bytes".into(),
        })
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, StatsError> {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map(u16::from_ne_bytes)
        .ok_or_else(|| StatsError {
            offset: at,
            expected: "2 more bytes".into(),
        })
}

impl Layout {
    /// The header's size: how many bytes to read first.
    pub const HEADER_LEN: usize = HEADER;

    /// How many bytes from offset 0 hold the header, id and descriptors, given the header.
    pub fn prefix_len(header: &[u8]) -> Result<usize, StatsError> {
        let name_size = u32_at(header, 4)? as usize;
        let num_desc = u32_at(header, 8)? as usize;
        let id_offset = u32_at(header, 12)? as usize;
        let desc_offset = u32_at(header, 16)? as usize;
        let descs = num_desc
            .checked_mul(DESC_FIXED + name_size)
            .and_then(|n| n.checked_add(desc_offset))
            .ok_or_else(|| StatsError {
                offset: 8,
                expected: "a descriptor count that fits in memory".into(),
            })?;
        let len = descs.max(id_offset.saturating_add(name_size));
        if len > 16 << 20 {
            return Err(StatsError {
                offset: 8,
                expected: format!("descriptors of at most 16 MiB, not {len} bytes"),
            });
        }
        Ok(len)
    }

    /// Decodes the header, id and descriptors from `bytes` (at least [`Layout::prefix_len`]).
    pub fn parse(bytes: &[u8]) -> Result<Layout, StatsError> {
        let name_size = u32_at(bytes, 4)? as usize;
        let num_desc = u32_at(bytes, 8)? as usize;
        let id_offset = u32_at(bytes, 12)? as usize;
        let desc_offset = u32_at(bytes, 16)? as usize;
        let data_offset = u32_at(bytes, 20)?;
        if name_size == 0 || name_size > 4096 {
            return Err(StatsError {
                offset: 4,
                expected: format!("a name size of 1–4096 bytes, found {name_size}"),
            });
        }
        let id = c_string(bytes, id_offset, name_size)?;
        let mut descriptors = Vec::with_capacity(num_desc.min(4096));
        let mut data_len = 0usize;
        for i in 0..num_desc {
            let at = desc_offset + i * (DESC_FIXED + name_size);
            let flags = u32_at(bytes, at)?;
            let exponent = u16_at(bytes, at + 4)? as i16;
            let size = u16_at(bytes, at + 6)?;
            let offset = u32_at(bytes, at + 8)?;
            let bucket_size = u32_at(bytes, at + 12)?;
            let name = c_string(bytes, at + DESC_FIXED, name_size)?;
            data_len = data_len.max(offset as usize + usize::from(size) * 8);
            descriptors.push(Descriptor {
                name,
                kind: match flags & 0xf {
                    0 => StatType::Cumulative,
                    1 => StatType::Instant,
                    2 => StatType::Peak,
                    3 => StatType::LinearHist,
                    4 => StatType::LogHist,
                    t => StatType::Unknown(t),
                },
                unit: match (flags >> 4) & 0xf {
                    0 => StatUnit::None,
                    1 => StatUnit::Bytes,
                    2 => StatUnit::Seconds,
                    3 => StatUnit::Cycles,
                    4 => StatUnit::Boolean,
                    u => StatUnit::Unknown(u),
                },
                base: if (flags >> 8) & 0xf == 1 { 2 } else { 10 },
                exponent,
                size,
                offset,
                bucket_size,
            });
        }
        Ok(Layout {
            id,
            descriptors,
            data_offset,
            data_len,
        })
    }

    /// The values of every statistic in a data block (`data_len` bytes read at `data_offset`).
    pub fn values(&self, data: &[u8]) -> Result<Vec<Vec<u64>>, StatsError> {
        self.descriptors
            .iter()
            .map(|d| {
                (0..usize::from(d.size))
                    .map(|i| {
                        let at = d.offset as usize + i * 8;
                        data.get(at..at + 8)
                            .and_then(|s| s.try_into().ok())
                            .map(u64::from_ne_bytes)
                            .ok_or_else(|| StatsError {
                                offset: at,
                                expected: format!("the 8-byte value of `{}`", d.name),
                            })
                    })
                    .collect()
            })
            .collect()
    }

    /// The index of the statistic called `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.descriptors.iter().position(|d| d.name == name)
    }
}

fn c_string(b: &[u8], at: usize, len: usize) -> Result<String, StatsError> {
    let raw = b.get(at..at + len).ok_or_else(|| StatsError {
        offset: at,
        expected: format!("a {len}-byte name"),
    })?;
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    Ok(String::from_utf8_lossy(&raw[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stats fd image as the kernel lays it out: header, id, descriptors, data.
    pub(crate) fn image(id: &str, stats: &[(&str, u32, u16, &[u64])]) -> Vec<u8> {
        let name_size = 48usize;
        let desc_offset = HEADER + name_size;
        let data_offset = desc_offset + stats.len() * (DESC_FIXED + name_size);
        let mut b = Vec::new();
        for v in [
            0u32,
            name_size as u32,
            stats.len() as u32,
            HEADER as u32,
            desc_offset as u32,
            data_offset as u32,
        ] {
            b.extend(v.to_ne_bytes());
        }
        let mut name = id.as_bytes().to_vec();
        name.resize(name_size, 0);
        b.extend(&name);
        let mut offset = 0u32;
        for (n, flags, size, _) in stats {
            b.extend(flags.to_ne_bytes());
            b.extend(0i16.to_ne_bytes());
            b.extend(size.to_ne_bytes());
            b.extend(offset.to_ne_bytes());
            b.extend(0u32.to_ne_bytes());
            let mut name = n.as_bytes().to_vec();
            name.resize(name_size, 0);
            b.extend(&name);
            offset += u32::from(*size) * 8;
        }
        for (_, _, _, values) in stats {
            for v in *values {
                b.extend(v.to_ne_bytes());
            }
        }
        b
    }

    #[test]
    fn decodes_header_descriptors_and_values() {
        let img = image(
            "kvm-42/vcpu-0",
            &[
                ("exits", 0, 1, &[7]),
                ("halt_wait_ns", 0x20, 1, &[99]),
                ("halt_poll_hist", 4, 3, &[1, 2, 3]),
            ],
        );
        let prefix = Layout::prefix_len(&img[..Layout::HEADER_LEN]).unwrap_or(0);
        let layout = Layout::parse(&img[..prefix]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(layout.id, "kvm-42/vcpu-0");
        assert_eq!(layout.descriptors.len(), 3);
        assert_eq!(layout.descriptors[1].unit, StatUnit::Seconds);
        assert_eq!(layout.descriptors[2].kind, StatType::LogHist);
        let data = &img[layout.data_offset as usize..];
        let values = layout.values(data).unwrap_or_default();
        assert_eq!(values, vec![vec![7], vec![99], vec![1, 2, 3]]);
        assert_eq!(layout.index("exits"), Some(0));
    }

    #[test]
    fn truncated_buffers_are_errors_with_offsets() {
        let img = image("kvm-1", &[("exits", 0, 1, &[1])]);
        for cut in [0, 3, 10, 30, 80] {
            if let Err(e) = Layout::parse(&img[..cut]) {
                assert!(e.to_string().contains("at byte"), "{e}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let _ = Layout::prefix_len(&bytes);
            if let Ok(l) = Layout::parse(&bytes) {
                let _ = l.values(&bytes);
            }
        }
    }
}
