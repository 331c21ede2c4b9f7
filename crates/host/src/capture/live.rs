//! `virtlens top`'s capture: a [`Session`] read into memory, and every interval the events
//! since the previous one merged into that interval's profile (with the KVM statistics that
//! moved meanwhile).

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use virtlens_core::profile::Profile;

use super::CaptureOptions;
use super::error::CaptureError;
use super::record::{Ready, profile_of};
use super::session::Session;

/// One interval's profile.
#[derive(Debug, Clone)]
pub struct Interval {
    pub profile: Profile,
    pub duration_ns: u64,
    pub events: u64,
    /// Events lost in this interval.
    pub lost: u64,
}

/// A live capture for `top`.
pub struct Live {
    session: Session,
    pages: Vec<VecDeque<Vec<u8>>>,
    since: Instant,
    lost_before: u64,
}

impl Live {
    /// Starts capturing.
    pub fn start(opts: &CaptureOptions) -> Result<Live, CaptureError> {
        let session = Session::start(opts)?;
        let pages = vec![VecDeque::new(); session.cpus().len()];
        Ok(Live {
            session,
            pages,
            since: Instant::now(),
            lost_before: 0,
        })
    }

    /// What the capture runs with (tracing is on once [`Live::start`] returned).
    pub fn ready(&self) -> Ready {
        Ready {
            instance: self.session.instance_name().unwrap_or_default().to_string(),
            buffers: self.session.buffers,
        }
    }

    /// `system:name` of every event the capture has enabled.
    pub fn enabled(&self) -> &[String] {
        &self.session.enabled
    }

    /// Reads what the kernel has now into memory.
    pub fn poll(&mut self) -> Result<(), CaptureError> {
        let pages = &mut self.pages;
        self.session.poll(&mut |i, page| {
            if let Some(q) = pages.get_mut(i) {
                q.push_back(page.to_vec());
            }
            Ok(())
        })?;
        Ok(())
    }

    /// The profile of the events since the previous call (or the start).
    pub fn take(&mut self) -> Result<Interval, CaptureError> {
        self.poll()?;
        let duration_ns = self.since.elapsed().as_nanos() as u64;
        self.since = Instant::now();
        let lost_now = self.session.lost();
        let lost = lost_now.saturating_sub(self.lost_before);
        self.lost_before = lost_now;
        let sources: Vec<(u32, VecDeque<Vec<u8>>)> = self
            .session
            .cpus()
            .iter()
            .copied()
            .zip(self.pages.iter_mut().map(std::mem::take))
            .collect();
        let profile = profile_of(
            &mut self.session,
            sources,
            duration_ns,
            (lost, &BTreeMap::new()),
            None,
        )?;
        let events = profile
            .tables
            .iter()
            .filter(|t| t.kind.as_str() == "events")
            .map(|t| t.count())
            .sum();
        Ok(Interval {
            profile,
            duration_ns,
            events,
            lost,
        })
    }

    /// Stops capturing and takes the instance down.
    pub fn stop(mut self) -> Result<(), CaptureError> {
        self.session.stop(&mut |_, _| Ok(()))?;
        Ok(())
    }
}
