//! Regression tests for issue 10's cases (and issue 20's damaged lines), one module per area, each test named after what it
//! guards.

mod damaged_lines;
mod lint;
mod readers;
