//! The capture file: Parquet (no compression codec; dictionary and run-length encodings, and
//! delta encoding for time) with one row per event:
//!
//! | column | type | |
//! |---|---|---|
//! | `ts_ns` | INT64 | trace clock (`mono`: CLOCK_MONOTONIC) in ns |
//! | `cpu`, `tid` | INT32 | host CPU, thread id (`common_pid`) |
//! | `pid`, `vcpu`, `vm` | INT32, INT32, STRING (nullable) | the VMM process, vCPU and VM name, where known |
//! | `system`, `event` | STRING | `kvm`, `kvm_pio` |
//! | one per field name | INT64 (UINT64 when unsigned), BINARY or STRING (nullable) | the event's fields, null in rows of events without that field |
//!
//! Field columns are the union of the fields of the events that occurred, by the kernel's
//! names (`port`, `rw`, `exit_reason`, `gpa`, …); a name that clashes with a fixed column is
//! prefixed `field_`, and one used with another kind of value by another event is suffixed
//! with that event's name. The profile and the capture's description go into the key/value
//! metadata at the end.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Encoding, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type};
use virtlens_core::capture::Hit;
use virtlens_core::capture::{Value, ValueKind, value, value_kind};
use virtlens_core::decode::EventFormat;

use super::error::CaptureError;

/// Rows per row group.
const ROW_GROUP: usize = 256 * 1024;
/// The fixed columns, in order.
const FIXED: [&str; 8] = [
    "ts_ns", "cpu", "tid", "pid", "vcpu", "vm", "system", "event",
];

/// Values of one field column.
#[derive(Debug)]
enum Values {
    Int(Vec<i64>),
    Bytes(Vec<ByteArray>),
}

#[derive(Debug)]
struct FieldColumn {
    name: String,
    kind: ValueKind,
    values: Values,
    defs: Vec<i16>,
}

/// The raw-event writer; see the module doc.
pub(crate) struct RawWriter {
    path: PathBuf,
    writer: SerializedFileWriter<BufWriter<File>>,
    /// For each format index: (field index, column index) of its fields.
    plan: Vec<Vec<(usize, usize)>>,
    names: Vec<(ByteArray, ByteArray)>,
    vm_names: HashMap<u32, ByteArray>,
    ts: Vec<i64>,
    cpu: Vec<i32>,
    tid: Vec<i32>,
    pid: (Vec<i32>, Vec<i16>),
    vcpu: (Vec<i32>, Vec<i16>),
    vm: (Vec<ByteArray>, Vec<i16>),
    system: Vec<ByteArray>,
    event: Vec<ByteArray>,
    fields: Vec<FieldColumn>,
    rows: u64,
}

impl RawWriter {
    /// A writer to `file` (named `path` in messages) for events of `formats`, with columns
    /// for the fields of those whose `seen` count is not zero.
    pub(crate) fn create(
        file: File,
        path: &Path,
        formats: &[EventFormat],
        seen: &[u64],
    ) -> Result<RawWriter, CaptureError> {
        let fail = |message: String| CaptureError::Write {
            path: path.to_path_buf(),
            message,
        };
        let (plan, fields) = plan(formats, seen);
        let schema = schema(&fields).map_err(|e| fail(e.to_string()))?;
        let props = WriterProperties::builder()
            .set_created_by(format!("virtlens {}", virtlens_core::VERSION))
            .set_column_dictionary_enabled(ColumnPath::from("ts_ns"), false)
            .set_column_encoding(ColumnPath::from("ts_ns"), Encoding::DELTA_BINARY_PACKED)
            .build();
        let writer = SerializedFileWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            Arc::new(schema),
            Arc::new(props),
        )
        .map_err(|e| fail(e.to_string()))?;
        let names = formats
            .iter()
            .map(|f| {
                (
                    ByteArray::from(f.system.as_bytes().to_vec()),
                    ByteArray::from(f.name.as_bytes().to_vec()),
                )
            })
            .collect();
        Ok(RawWriter {
            path: path.to_path_buf(),
            writer,
            plan,
            names,
            vm_names: HashMap::new(),
            ts: Vec::new(),
            cpu: Vec::new(),
            tid: Vec::new(),
            pid: (Vec::new(), Vec::new()),
            vcpu: (Vec::new(), Vec::new()),
            vm: (Vec::new(), Vec::new()),
            system: Vec::new(),
            event: Vec::new(),
            fields,
            rows: 0,
        })
    }

    /// The names of the field columns, in order.
    pub(crate) fn field_columns(&self) -> Vec<&str> {
        self.fields.iter().map(|f| f.name.as_str()).collect()
    }

    /// Adds one event, of VM `vm_name` when known.
    pub(crate) fn push(
        &mut self,
        formats: &[EventFormat],
        hit: &Hit<'_>,
        vm_name: Option<&str>,
    ) -> Result<(), CaptureError> {
        let Hit {
            index,
            ts,
            cpu,
            tid,
            payload,
            thread,
        } = *hit;
        let (Some((system, event)), Some(format), Some(plan)) = (
            self.names.get(index),
            formats.get(index),
            self.plan.get(index),
        ) else {
            return Ok(());
        };
        self.ts.push(ts as i64);
        self.cpu.push(cpu as i32);
        self.tid.push(tid as i32);
        opt(&mut self.pid, thread.and_then(|t| t.pid).map(|p| p as i32));
        opt(
            &mut self.vcpu,
            thread.and_then(|t| t.vcpu).map(|v| v as i32),
        );
        let vm = thread.and_then(|t| t.pid).zip(vm_name).map(|(pid, name)| {
            self.vm_names
                .entry(pid)
                .or_insert_with(|| ByteArray::from(name.as_bytes().to_vec()))
                .clone()
        });
        opt(&mut self.vm, vm);
        self.system.push(system.clone());
        self.event.push(event.clone());
        for c in &mut self.fields {
            c.defs.push(0);
        }
        for &(fi, ci) in plan {
            let (Some(field), Some(col)) = (format.fields.get(fi), self.fields.get_mut(ci)) else {
                continue;
            };
            let Some(v) = value(field, payload) else {
                continue;
            };
            let stored = match (&mut col.values, v) {
                (Values::Int(vals), Value::Int(i)) => {
                    vals.push(i);
                    true
                }
                (Values::Int(vals), Value::UInt(u)) => {
                    vals.push(u as i64);
                    true
                }
                (Values::Bytes(vals), Value::Bytes(b)) => {
                    vals.push(ByteArray::from(b.to_vec()));
                    true
                }
                (Values::Bytes(vals), Value::Text(t)) => {
                    vals.push(ByteArray::from(t.as_bytes().to_vec()));
                    true
                }
                _ => false,
            };
            if stored && let Some(d) = col.defs.last_mut() {
                *d = 1;
            }
        }
        self.rows += 1;
        if self.ts.len() >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Rows written so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> Result<(), CaptureError> {
        if self.ts.is_empty() {
            return Ok(());
        }
        let mut fixed: Vec<Column<'_>> = vec![
            Column::I64(&self.ts, None),
            Column::I32(&self.cpu, None),
            Column::I32(&self.tid, None),
            Column::I32(&self.pid.0, Some(&self.pid.1)),
            Column::I32(&self.vcpu.0, Some(&self.vcpu.1)),
            Column::Bytes(&self.vm.0, Some(&self.vm.1)),
            Column::Bytes(&self.system, None),
            Column::Bytes(&self.event, None),
        ];
        for f in &self.fields {
            fixed.push(match &f.values {
                Values::Int(v) => Column::I64(v, Some(&f.defs)),
                Values::Bytes(v) => Column::Bytes(v, Some(&f.defs)),
            });
        }
        let fail = write_error(&self.path);
        let mut group = self.writer.next_row_group().map_err(&fail)?;
        for col in fixed {
            let Some(mut w) = group.next_column().map_err(&fail)? else {
                break;
            };
            let written = match (w.untyped(), col) {
                (ColumnWriter::Int64ColumnWriter(w), Column::I64(v, d)) => {
                    w.write_batch(v, d, None).map(|_| ())
                }
                (ColumnWriter::Int32ColumnWriter(w), Column::I32(v, d)) => {
                    w.write_batch(v, d, None).map(|_| ())
                }
                (ColumnWriter::ByteArrayColumnWriter(w), Column::Bytes(v, d)) => {
                    w.write_batch(v, d, None).map(|_| ())
                }
                _ => Err(parquet::errors::ParquetError::General(
                    "a column's values do not match its type".into(),
                )),
            };
            written.and_then(|()| w.close()).map_err(&fail)?;
        }
        group.close().map_err(&fail)?;
        self.ts.clear();
        self.cpu.clear();
        self.tid.clear();
        for (v, d) in [&mut self.pid, &mut self.vcpu] {
            v.clear();
            d.clear();
        }
        self.vm.0.clear();
        self.vm.1.clear();
        self.system.clear();
        self.event.clear();
        for f in &mut self.fields {
            f.defs.clear();
            match &mut f.values {
                Values::Int(v) => v.clear(),
                Values::Bytes(v) => v.clear(),
            }
        }
        Ok(())
    }

    /// Writes the rest, the key/value metadata, and the footer.
    pub(crate) fn finish(mut self, metadata: Vec<(String, String)>) -> Result<u64, CaptureError> {
        self.flush()?;
        for (k, v) in metadata {
            self.writer.append_key_value_metadata(KeyValue::new(k, v));
        }
        let fail = write_error(&self.path);
        let buffered = self.writer.into_inner().map_err(fail)?;
        buffered.into_inner().map_err(|e| {
            CaptureError::io("writing the capture file", &self.path, e.into_error())
        })?;
        Ok(self.rows)
    }
}

/// Maps a Parquet error to a write error naming `path`.
fn write_error(path: &Path) -> impl Fn(parquet::errors::ParquetError) -> CaptureError + use<> {
    let path = path.to_path_buf();
    move |e| CaptureError::Write {
        path: path.clone(),
        message: e.to_string(),
    }
}

/// One column's values for a row group, with its definition levels when nullable.
enum Column<'a> {
    I64(&'a [i64], Option<&'a [i16]>),
    I32(&'a [i32], Option<&'a [i16]>),
    Bytes(&'a [ByteArray], Option<&'a [i16]>),
}

fn opt<T>(col: &mut (Vec<T>, Vec<i16>), v: Option<T>) {
    match v {
        Some(v) => {
            col.0.push(v);
            col.1.push(1);
        }
        None => col.1.push(0),
    }
}

/// The field columns of the formats that occurred, and each format's fields' columns.
fn plan(formats: &[EventFormat], seen: &[u64]) -> (Vec<Vec<(usize, usize)>>, Vec<FieldColumn>) {
    let mut cols: Vec<FieldColumn> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut plans = Vec::with_capacity(formats.len());
    for (fi, f) in formats.iter().enumerate() {
        let mut plan = Vec::new();
        if seen.get(fi).copied().unwrap_or(0) == 0 {
            plans.push(plan);
            continue;
        }
        for (i, field) in f.fields.iter().enumerate() {
            if field.name.starts_with("common_") {
                continue;
            }
            let Some(kind) = value_kind(field) else {
                continue;
            };
            let base = if FIXED.contains(&field.name.as_str()) {
                format!("field_{}", field.name)
            } else {
                field.name.clone()
            };
            let class = |k: ValueKind| matches!(k, ValueKind::Int | ValueKind::UInt);
            let ci = match by_name.get(&base).copied() {
                Some(ci)
                    if class(cols[ci].kind) == class(kind)
                        && (class(kind) || cols[ci].kind == kind) =>
                {
                    if kind == ValueKind::Int {
                        cols[ci].kind = ValueKind::Int;
                    }
                    ci
                }
                Some(_) => {
                    let name = format!("{base}_{}", f.name);
                    match by_name.get(&name).copied() {
                        Some(ci) => ci,
                        None => new_column(&mut cols, &mut by_name, name, kind),
                    }
                }
                None => new_column(&mut cols, &mut by_name, base, kind),
            };
            plan.push((i, ci));
        }
        plans.push(plan);
    }
    (plans, cols)
}

fn new_column(
    cols: &mut Vec<FieldColumn>,
    by_name: &mut HashMap<String, usize>,
    name: String,
    kind: ValueKind,
) -> usize {
    let values = match kind {
        ValueKind::Int | ValueKind::UInt => Values::Int(Vec::new()),
        ValueKind::Bytes | ValueKind::Text => Values::Bytes(Vec::new()),
    };
    by_name.insert(name.clone(), cols.len());
    cols.push(FieldColumn {
        name,
        kind,
        values,
        defs: Vec::new(),
    });
    cols.len() - 1
}

fn schema(fields: &[FieldColumn]) -> parquet::errors::Result<Type> {
    let prim = |name: &str, t: Physical, rep: Repetition, logical: Option<LogicalType>| {
        Type::primitive_type_builder(name, t)
            .with_repetition(rep)
            .with_logical_type(logical)
            .build()
            .map(Arc::new)
    };
    const OPTIONAL: Repetition = Repetition::OPTIONAL;
    const REQUIRED: Repetition = Repetition::REQUIRED;
    let mut cols = vec![
        prim("ts_ns", Physical::INT64, REQUIRED, None)?,
        prim("cpu", Physical::INT32, REQUIRED, None)?,
        prim("tid", Physical::INT32, REQUIRED, None)?,
        prim("pid", Physical::INT32, OPTIONAL, None)?,
        prim("vcpu", Physical::INT32, OPTIONAL, None)?,
        prim(
            "vm",
            Physical::BYTE_ARRAY,
            OPTIONAL,
            Some(LogicalType::String),
        )?,
        prim(
            "system",
            Physical::BYTE_ARRAY,
            REQUIRED,
            Some(LogicalType::String),
        )?,
        prim(
            "event",
            Physical::BYTE_ARRAY,
            REQUIRED,
            Some(LogicalType::String),
        )?,
    ];
    for f in fields {
        cols.push(match f.kind {
            ValueKind::Int => prim(&f.name, Physical::INT64, OPTIONAL, None)?,
            ValueKind::UInt => prim(
                &f.name,
                Physical::INT64,
                OPTIONAL,
                Some(LogicalType::integer(64, false)),
            )?,
            ValueKind::Bytes => prim(&f.name, Physical::BYTE_ARRAY, OPTIONAL, None)?,
            ValueKind::Text => prim(
                &f.name,
                Physical::BYTE_ARRAY,
                OPTIONAL,
                Some(LogicalType::String),
            )?,
        });
    }
    Type::group_type_builder("virtlens_event")
        .with_fields(cols)
        .build()
}

#[cfg(test)]
mod tests {
    use virtlens_core::decode::parse_event_format;

    use super::*;

    #[test]
    fn columns_are_the_union_of_fields_that_occurred() {
        let f = |text: &str| parse_event_format("kvm", text).unwrap_or_else(|e| panic!("{e}"));
        let a = f(
            "name: a\nID: 1\nformat:\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
                   \tfield:u32 port;\toffset:8;\tsize:4;\tsigned:0;\n\
                   \tfield:u32 cpu;\toffset:12;\tsize:4;\tsigned:0;\n",
        );
        let b = f(
            "name: b\nID: 2\nformat:\n\tfield:int port;\toffset:8;\tsize:4;\tsigned:1;\n\
                   \tfield:u8 insn[3];\toffset:12;\tsize:3;\tsigned:0;\n",
        );
        let c =
            f("name: c\nID: 3\nformat:\n\tfield:char port[4];\toffset:8;\tsize:4;\tsigned:0;\n");
        let unseen =
            f("name: d\nID: 4\nformat:\n\tfield:u32 never;\toffset:8;\tsize:4;\tsigned:0;\n");
        let (plans, cols) = plan(&[a, b, c, unseen], &[1, 1, 1, 0]);
        let names: Vec<(&str, ValueKind)> =
            cols.iter().map(|c| (c.name.as_str(), c.kind)).collect();
        assert_eq!(
            names,
            vec![
                ("port", ValueKind::Int),
                ("field_cpu", ValueKind::UInt),
                ("insn", ValueKind::Bytes),
                ("port_c", ValueKind::Text),
            ]
        );
        assert_eq!(plans[1], vec![(0, 0), (1, 2)]);
        assert!(plans[3].is_empty());
        assert!(schema(&cols).is_ok());
    }
}
