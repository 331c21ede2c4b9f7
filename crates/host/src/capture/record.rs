//! Recording: run a [`Session`] until the duration is over or a stop signal arrives, with
//! the pages spooled as they come, then merge them in time order into the profile and, for
//! `virtlens record`, into the capture file (raw events + the profile in its metadata),
//! which appears at its path only once complete ([`OutputFile`]); the vCPU threads'
//! scheduling is sampled meanwhile and kept in the profile. The caller hears when
//! tracing is on ([`Ready`], what `--ready-fd` reports) and how it goes ([`Progress`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use virtlens_core::capture::{CAPTURE_KEY, CaptureMeta, PROFILE_KEY};
use virtlens_core::capture::{Hit, ProfileFeed};
use virtlens_core::profile::{Note, Profile, SchedSamples, Window};

use super::CaptureOptions;
use super::buffers::BufferPlan;
use super::error::CaptureError;
use super::merge::{self, MergeStats, PageSource};
use super::output::OutputFile;
use super::parquet_out::RawWriter;
use super::session::{Session, Stopped};
use super::spool::Spool;
use crate::sched::Sampler;

/// How often the capture loop reports progress and refreshes the kernel filter.
const TICK: Duration = Duration::from_secs(1);
/// How long the loop sleeps between reads of the buffers (unless they are filling fast):
/// reading often costs the traced guests more (the kernel copies partial pages, and the
/// reader competes for CPUs) than the buffers need (8 MiB per CPU hold ~250 000 events).
const IDLE: Duration = Duration::from_millis(25);

/// Progress of a running capture.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Progress {
    pub events: u64,
    pub lost: u64,
    pub elapsed: Duration,
    /// Events per second over the last tick.
    pub rate: f64,
}

/// Said once, when tracing is on: from now on every event is recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Ready {
    /// The tracefs instance (`virtlens-<pid>`).
    pub instance: String,
    pub buffers: BufferPlan,
}

/// How a caller steers a capture and hears from it.
pub struct Control<'a> {
    /// Set (by a signal handler) to end the capture.
    pub stop: &'a AtomicBool,
    /// Called once, when tracing is on.
    pub ready: &'a mut dyn FnMut(&Ready),
    /// Called about once a second.
    pub progress: &'a mut dyn FnMut(&Progress),
}

/// The version of `record --json`'s summary (docs/schemas/virtlens.record/1.json).
pub const RECORD_SCHEMA: &str = "virtlens.record/1";

/// What `record` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct RecordSummary {
    /// [`RECORD_SCHEMA`].
    pub schema: &'static str,
    pub path: String,
    pub events: u64,
    pub lost: u64,
    pub duration_ns: u64,
    pub bytes: u64,
    /// The field columns of the raw-event table.
    pub columns: Vec<String>,
    pub enabled: Vec<String>,
    pub buffers: BufferPlan,
    /// The signal that ended the capture (`SIGINT`, `SIGQUIT`, …), when one did.
    pub stopped_by: Option<String>,
    pub notes: Vec<String>,
}

/// Records into the capture file `out` (checked and created before the capture starts,
/// renamed into place at the end); see the module doc.
pub fn record_to_file(
    opts: &CaptureOptions,
    mut out: OutputFile,
    ctl: Control<'_>,
) -> Result<(Profile, RecordSummary), CaptureError> {
    let (mut session, stopped, spool, sched) = run(opts, &out.folder(), ctl)?;
    let file = out.take_file()?;
    let mut writer = RawWriter::create(file, out.path(), session.table.formats(), &session.seen)?;
    let columns = writer
        .field_columns()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut profile = build(&mut session, &stopped, spool, Some(&mut writer))?;
    profile.sched = Some(sched);
    let meta = meta(&session, &stopped, &profile, writer.rows());
    let metadata = vec![
        (
            PROFILE_KEY.to_string(),
            serde_json::to_string(&profile).map_err(|e| CaptureError::Decode(e.to_string()))?,
        ),
        (
            CAPTURE_KEY.to_string(),
            serde_json::to_string(&meta).map_err(|e| CaptureError::Decode(e.to_string()))?,
        ),
    ];
    let rows = writer.finish(metadata)?;
    let bytes = out.len();
    let path = out.path().display().to_string();
    out.commit()?;
    let summary = RecordSummary {
        schema: RECORD_SCHEMA,
        path,
        events: rows,
        lost: stopped.lost,
        duration_ns: stopped.duration_ns,
        bytes,
        columns,
        enabled: session.enabled.clone(),
        buffers: session.buffers,
        stopped_by: None,
        notes: profile.warnings.iter().map(|n| n.message.clone()).collect(),
    };
    Ok((profile, summary))
}

/// Records for `opts.duration` (until `ctl.stop` when unset), and returns the profile (no
/// file is written; the spool goes to the temporary folder).
pub fn record_profile(opts: &CaptureOptions, ctl: Control<'_>) -> Result<Profile, CaptureError> {
    let (mut session, stopped, spool, sched) = run(opts, &std::env::temp_dir(), ctl)?;
    let mut profile = build(&mut session, &stopped, spool, None)?;
    profile.sched = Some(sched);
    Ok(profile)
}

/// The capture loop; the vCPU threads' scheduling is sampled alongside ([`Sampler`]).
fn run(
    opts: &CaptureOptions,
    spool_dir: &Path,
    ctl: Control<'_>,
) -> Result<(Session, Stopped, Spool, SchedSamples), CaptureError> {
    let mut session = Session::start(opts)?;
    let mut spool = Spool::create(spool_dir, session.cpus().len())?;
    let mut sched = Sampler::new(session.selected.clone());
    (ctl.ready)(&Ready {
        instance: session.instance_name().unwrap_or_default().to_string(),
        buffers: session.buffers,
    });
    let mut sink = |i: usize, page: &[u8]| spool.write(i, page);
    let started = Instant::now();
    let mut last_tick = (started, 0u64);
    loop {
        let now = Instant::now();
        if ctl.stop.load(Ordering::Relaxed) || opts.duration.is_some_and(|d| now - started >= d) {
            break;
        }
        let (_, busy) = session.poll(&mut sink)?;
        sched.poll();
        if now - last_tick.0 >= TICK {
            sched.close_interval();
            let dt = (now - last_tick.0).as_secs_f64();
            (ctl.progress)(&Progress {
                events: session.events,
                lost: session.lost(),
                elapsed: now - started,
                rate: (session.events - last_tick.1) as f64 / dt,
            });
            last_tick = (now, session.events);
            session.refresh_filter();
        }
        if !busy {
            let left = opts
                .duration
                .map_or(IDLE, |d| d.saturating_sub(now - started));
            std::thread::sleep(IDLE.min(left));
        }
    }
    let stopped = session.stop(&mut sink)?;
    Ok((session, stopped, spool, sched.finish()))
}

/// Merges the spooled pages into the profile (and the raw-event writer).
fn build(
    session: &mut Session,
    stopped: &Stopped,
    spool: Spool,
    writer: Option<&mut RawWriter>,
) -> Result<Profile, CaptureError> {
    let (_dir, readers) = spool.into_readers()?;
    let sources: Vec<(u32, _)> = session.cpus().iter().copied().zip(readers).collect();
    profile_of(
        session,
        sources,
        stopped.duration_ns,
        (stopped.lost, &stopped.lost_by_cpu),
        writer,
    )
}

/// The profile of the events of `sources` (per-CPU pages) over `duration_ns`, with `lost`
/// events (total, per CPU): decoded, filtered to the selected VMMs, merged in time order, fed
/// to the profile builder and `writer`; the KVM statistics table since the previous snapshot;
/// the session's notes.
pub(crate) fn profile_of<S: PageSource>(
    session: &mut Session,
    sources: Vec<(u32, S)>,
    duration_ns: u64,
    lost: (u64, &BTreeMap<u32, u64>),
    mut writer: Option<&mut RawWriter>,
) -> Result<Profile, CaptureError> {
    let mut feed = ProfileFeed::new(
        crate::facts::origin(virtlens_core::capture::FORMAT),
        &session.table,
    );
    let vm_names: HashMap<u32, String> = session.identities.vm_names().into_iter().collect();
    let mut write_error = None;
    let mut kept_pids = BTreeSet::new();
    let table = &session.table;
    let ids = &session.identities;
    let selected = &session.selected;
    let mut span: Option<(u64, u64)> = None;
    let stats: MergeStats = merge::merge(sources, &session.layout, |ts, cpu, payload| {
        let Some(idx) = table.index_of(payload) else {
            return;
        };
        let tid = table.tid_of(payload).unwrap_or(0);
        let thread = ids.get(tid);
        let pid = thread.and_then(|t| t.pid);
        if let Some(sel) = selected
            && !pid.is_some_and(|p| sel.contains(&p))
        {
            return;
        }
        if let Some(p) = pid {
            kept_pids.insert(p);
        }
        span = Some(span.map_or((ts, ts), |(a, b)| (a.min(ts), b.max(ts))));
        let hit = Hit {
            index: idx,
            ts,
            cpu,
            tid,
            payload,
            thread,
        };
        feed.push(table, &hit);
        if let Some(w) = writer.as_deref_mut()
            && write_error.is_none()
        {
            let name = pid.and_then(|p| vm_names.get(&p)).map(String::as_str);
            if let Err(e) = w.push(table.formats(), &hit, name) {
                write_error = Some(e);
            }
        }
    })?;
    if let Some(e) = write_error {
        return Err(e);
    }
    session.span = span;
    let mut profile = feed.finish(&session.table);
    profile.origin.vm_names = session.identities.names_of(kept_pids.into_iter());
    let window = Window {
        start: None,
        end: None,
        duration_ns: Some(duration_ns),
        intervals: 0,
    };
    for t in &mut profile.tables {
        t.window = Some(window.clone());
    }
    if let Some((set, before)) = &mut session.stats {
        let after = set.snapshot();
        if let Some(t) = set.table(before, &after, duration_ns) {
            for p in t.rows.iter().filter_map(|r| r.pid) {
                if let Some(n) = vm_names.get(&p) {
                    profile.origin.vm_names.insert(p, n.clone());
                }
            }
            profile.tables.push(t);
        }
        *before = after;
    }
    let mut notes = std::mem::take(&mut session.notes);
    if lost.0 > 0 {
        let per_cpu: Vec<String> = lost
            .1
            .iter()
            .map(|(c, n)| format!("cpu {c}: {n}"))
            .collect();
        let per_cpu = if per_cpu.is_empty() {
            String::new()
        } else {
            format!(" ({})", per_cpu.join(", "))
        };
        notes.push(format!(
            "{} events were lost{per_cpu}: the ring buffer was full, so counts are lower \
             bounds; a larger --buffer-kb or fewer --events helps",
            lost.0
        ));
    } else if stats.pages_after_loss > 0 {
        notes.push(format!(
            "{} pages followed lost events ({} counted)",
            stats.pages_after_loss, stats.lost_counted
        ));
    }
    if let Some(f) = &session.filter {
        notes.push(format!("kernel filter: {f}"));
    }
    notes.extend(
        stats
            .damage
            .iter()
            .take(5)
            .map(|d| format!("damaged page skipped: {d}")),
    );
    profile
        .warnings
        .extend(notes.into_iter().map(|message| Note {
            line: None,
            message,
        }));
    Ok(profile)
}

/// The capture's description for the file's metadata.
fn meta(session: &Session, stopped: &Stopped, profile: &Profile, rows: u64) -> CaptureMeta {
    CaptureMeta {
        schema: virtlens_core::capture::SCHEMA.to_string(),
        clock: session.clock.clone(),
        realtime_offset_ns: session.realtime_offset_ns,
        start_ns: session.span.map(|s| s.0),
        end_ns: session.span.map(|s| s.1),
        duration_ns: stopped.duration_ns,
        events: rows,
        lost_events: stopped.lost,
        lost_by_cpu: stopped.lost_by_cpu.clone(),
        enabled: session.enabled.clone(),
        filter: session.filter.clone(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string()),
        kernel: profile.origin.kernel.clone(),
        backend: profile.origin.backend.clone(),
    }
}
