//! Regression tests for issue 10's cases, one module per area, each test named after what it
//! guards.

mod bounds;
mod damaged_lines;
mod lint;
mod readers;
