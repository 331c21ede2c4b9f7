//! How `record -o FILE` says what it wrote: one line with the events, the time, the losses and
//! the file, the buffers, the notes, and the command that reads it; as JSON, the summary.

use virtlens_core::render::{Export, Style, count, json};

use super::record::RecordSummary;

impl Export for RecordSummary {
    fn json(&self) -> String {
        json(self)
    }

    fn text(&self, _style: &Style) -> String {
        let stopped = self
            .stopped_by
            .as_ref()
            .map(|s| format!(", stopped by {s}"))
            .unwrap_or_default();
        let mut text = format!(
            "recorded {} events in {:.2} s ({} lost{stopped}) to {} ({} bytes, {} event columns)\n",
            count(self.events),
            self.duration_ns as f64 / 1e9,
            count(self.lost),
            self.path,
            count(self.bytes),
            self.columns.len()
        );
        text.push_str(&format!("{}\n", self.buffers.describe()));
        for n in &self.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        text.push_str(&format!("read it with: virtlens report {}\n", self.path));
        text
    }
}
