//! The accumulated timeline made the profile's [`Timeline`]: reasons decoded and the top ones
//! kept, lanes ranked and the rest folded into one.

use super::{BUCKETS, LaneAcc, SHOWN_LANES, SHOWN_REASONS, TimelineAcc, decode};
use crate::decode::Isa;
use crate::profile::{LaneSched, OTHER_REASONS, Timeline, TimelineLane, TimelineSeries};

impl TimelineAcc {
    /// The timeline, reasons decoded under `isa`: the top [`SHOWN_REASONS`] reasons and
    /// [`SHOWN_LANES`] lanes, the rest folded; `None` when no exit had a timestamp.
    pub(crate) fn finish(self, isa: Option<Isa>) -> Option<Timeline> {
        let layout = self.layout?;
        let (first_ns, last_ns) = self.exits_at?;
        let buckets = ((layout.hi >> layout.shift) - layout.start() + 1) as usize;
        let buckets = buckets.min(BUCKETS);
        // Reasons by decoded name (a code and a name may decode alike), most exits first.
        let names: Vec<String> = self
            .reasons
            .iter()
            .map(|r| decode(r, isa).key_text())
            .collect();
        let name_of =
            |r: u32| -> &str { names.get(r as usize).map_or(OTHER_REASONS, String::as_str) };
        let mut totals: Vec<(String, u64)> = Vec::new();
        let all_lanes = self.lanes.iter().chain(self.rest.iter());
        for (r, b) in all_lanes.flat_map(|l| l.series.iter()) {
            let n: u64 = b.iter().sum();
            let name = name_of(*r);
            match totals.iter_mut().find(|(t, _)| t == name) {
                Some(t) => t.1 += n,
                None => totals.push((name.to_string(), n)),
            }
        }
        totals.retain(|(_, n)| *n > 0);
        totals.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut shown: Vec<String> = totals
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| n != OTHER_REASONS)
            .take(SHOWN_REASONS)
            .collect();
        if totals.len() > shown.len() {
            shown.push(OTHER_REASONS.to_string());
        }
        let index_of = |r: u32| -> usize {
            let name = name_of(r);
            shown
                .iter()
                .position(|s| s == name)
                .unwrap_or(shown.len().saturating_sub(1))
        };
        let mut lanes: Vec<LaneAcc> = self.lanes;
        lanes.sort_by(|a, b| b.exits.cmp(&a.exits).then_with(|| a.key.cmp(&b.key)));
        let mut folded: Vec<LaneAcc> = lanes.split_off(lanes.len().min(SHOWN_LANES));
        let n = (folded.len() + self.rest_keys.len()) as u32;
        folded.extend(self.rest);
        let mut out: Vec<TimelineLane> = lanes
            .iter()
            .map(|l| finish_lane(std::slice::from_ref(l), buckets, &index_of, 0))
            .collect();
        if !folded.is_empty() {
            out.push(finish_lane(&folded, buckets, &index_of, n));
        }
        Some(Timeline {
            start_ns: layout.start_ns(),
            bucket_ns: layout.bucket_ns(),
            buckets,
            first_ns,
            last_ns,
            reasons: shown,
            lanes: out,
        })
    }
}

/// `lanes` as one lane of the finished timeline, series by shown reason index.
fn finish_lane(
    lanes: &[LaneAcc],
    buckets: usize,
    index_of: &dyn Fn(u32) -> usize,
    folded: u32,
) -> TimelineLane {
    let mut series: Vec<TimelineSeries> = Vec::new();
    let mut sched: Option<LaneSched> = None;
    for l in lanes {
        for (r, b) in &l.series {
            let reason = index_of(*r);
            let i = match series.iter().position(|s| s.reason == reason) {
                Some(i) => i,
                None => {
                    series.push(TimelineSeries {
                        reason,
                        counts: vec![0; buckets],
                    });
                    series.len() - 1
                }
            };
            for (c, v) in series[i].counts.iter_mut().zip(b.iter()) {
                *c = c.saturating_add(*v);
            }
        }
        if let Some(s) = &l.sched {
            let into = sched.get_or_insert_with(|| LaneSched {
                running_ns: vec![0; buckets],
                ready_ns: vec![0; buckets],
                sleeping_ns: vec![0; buckets],
            });
            let rows = [
                &mut into.running_ns,
                &mut into.ready_ns,
                &mut into.sleeping_ns,
            ];
            for (row, from) in rows.into_iter().zip(s.iter()) {
                for (c, v) in row.iter_mut().zip(from.iter()) {
                    *c = c.saturating_add(*v);
                }
            }
        }
    }
    series.retain(|s| s.counts.iter().any(|&c| c > 0));
    series.sort_by_key(|s| s.reason);
    let (pid, vcpu) = match lanes {
        [one] if folded == 0 => one.key,
        _ => (None, None),
    };
    TimelineLane {
        pid,
        vm: None,
        vcpu,
        folded,
        exits: lanes.iter().map(|l| l.exits).sum(),
        series,
        sched,
    }
}
