//! The decoding plan, made once before the records are read: for every event attribute its
//! sample layout, its name and payload [`Decoder`] (from the tracepoint format whose ID is
//! the attribute's `config`), and how a sample's id finds its attribute.

use std::collections::HashMap;

use linux_perf_data::linux_perf_event_reader::PerfEventType;

use super::bytes::Endian;
use super::header::Attr;
use super::kvm::Decoder;
use super::records::SampleLayout;
use super::tracing_data::TracingData;

/// How a sample names its attribute.
#[derive(Debug, Clone)]
enum IdMap {
    /// One attribute: every sample is its.
    Single,
    /// Ids are small: attribute index + 1 by id (0 = unknown).
    Dense(Vec<u32>),
    Sparse(HashMap<u64, u32>),
}

/// The plan; see the module doc.
#[derive(Debug, Clone)]
pub(super) struct Setup {
    /// Byte order of the records.
    pub endian: Endian,
    /// Byte order of the tracepoint payloads.
    pub payload_endian: Endian,
    pub layouts: Vec<SampleLayout>,
    pub decoders: Vec<Decoder>,
    /// Event names by attribute (the bare tracepoint name, `kvm_pio`).
    pub names: Vec<String>,
    /// Where the sample id is, when samples must be told apart.
    id_layout: Option<SampleLayout>,
    ids: IdMap,
    /// Remarks for the profile's warnings.
    pub notes: Vec<String>,
}

/// The largest id kept in a dense table.
const DENSE_IDS: u64 = 1 << 16;

impl Setup {
    pub(super) fn new(
        endian: Endian,
        attrs: &[Attr],
        tracing: Option<&TracingData>,
    ) -> Result<Self, String> {
        let mut notes = Vec::new();
        let by_id: HashMap<u64, usize> = tracing
            .map(|t| {
                t.events
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (u64::from(f.id), i))
                    .collect()
            })
            .unwrap_or_default();
        let mut names = Vec::with_capacity(attrs.len());
        let mut decoders = Vec::with_capacity(attrs.len());
        let mut missing_formats = 0usize;
        for (i, a) in attrs.iter().enumerate() {
            let format = match a.attr.type_ {
                PerfEventType::Tracepoint(id) => {
                    let f = tracing.and_then(|t| by_id.get(&id).and_then(|&k| t.events.get(k)));
                    missing_formats += usize::from(f.is_none());
                    f
                }
                _ => None,
            };
            let name = match (format, a.name.as_deref()) {
                (Some(f), _) => f.name.clone(),
                (None, Some(n)) => n.rsplit(':').next().unwrap_or(n).to_string(),
                (None, None) => format!("event#{i}"),
            };
            let decoder = match format {
                Some(f) => {
                    let (d, note) = Decoder::for_format(f);
                    notes.extend(note);
                    d
                }
                None => Decoder::Other,
            };
            names.push(name);
            decoders.push(decoder);
        }
        if missing_formats > 0 {
            let why = if tracing.is_none() {
                "the file has no tracing data"
            } else {
                "the tracing data has no format with their ID"
            };
            notes.push(format!(
                "{missing_formats} tracepoint event(s) cannot be decoded ({why}); they are counted by name"
            ));
        }
        let layouts: Vec<SampleLayout> = attrs.iter().map(|a| SampleLayout::new(&a.attr)).collect();
        let (id_layout, ids) = id_lookup(attrs, &layouts)?;
        Ok(Self {
            endian,
            payload_endian: tracing.map_or(endian, |t| t.endian),
            layouts,
            decoders,
            names,
            id_layout,
            ids,
            notes,
        })
    }

    /// The attribute a sample belongs to; `None` for an id no attribute has.
    #[inline]
    pub(super) fn attr_of(&self, body: &[u8]) -> Option<usize> {
        let id = match &self.ids {
            IdMap::Single => return Some(0),
            _ => self.id_layout.as_ref()?.id(self.endian, body)?,
        };
        match &self.ids {
            IdMap::Single => Some(0),
            IdMap::Dense(v) => usize::try_from(id)
                .ok()
                .and_then(|i| v.get(i))
                .and_then(|&a| (a as usize).checked_sub(1)),
            IdMap::Sparse(m) => m.get(&id).map(|&a| a as usize),
        }
    }
}

/// How to find a sample's attribute: by position when there is one attribute, else by id,
/// which must sit at the same place in every layout (perf's own requirement).
fn id_lookup(
    attrs: &[Attr],
    layouts: &[SampleLayout],
) -> Result<(Option<SampleLayout>, IdMap), String> {
    if attrs.len() == 1 {
        return Ok((None, IdMap::Single));
    }
    let first = layouts.first().copied();
    let same_place = layouts
        .iter()
        .all(|l| Some(l.id_at()) == first.map(|f| f.id_at()));
    if !same_place || first.is_some_and(|f| f.id_at().is_none()) {
        return Err(
            "the file has several events whose samples carry no id at a common place, so they \
             cannot be told apart"
                .into(),
        );
    }
    let max = attrs
        .iter()
        .flat_map(|a| a.ids.iter().copied())
        .max()
        .unwrap_or(0);
    let ids = if max < DENSE_IDS {
        let mut v = vec![0u32; max as usize + 1];
        for (i, a) in attrs.iter().enumerate() {
            for &id in &a.ids {
                if let Some(slot) = v.get_mut(id as usize) {
                    *slot = i as u32 + 1;
                }
            }
        }
        IdMap::Dense(v)
    } else {
        let mut m = HashMap::new();
        for (i, a) in attrs.iter().enumerate() {
            for &id in &a.ids {
                m.insert(id, i as u32);
            }
        }
        IdMap::Sparse(m)
    };
    Ok((first, ids))
}
