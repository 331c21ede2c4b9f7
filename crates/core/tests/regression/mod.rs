//! Regression tests for issue 10's cases (and issue 20's damaged lines), one module per area, each test named after what it
//! guards.

mod bounds;
mod damaged_hists_boxed_bcc;
mod damaged_prof_kvm_stat_counters;
mod lint;
mod readers;
