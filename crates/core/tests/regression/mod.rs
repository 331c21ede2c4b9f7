//! Regression tests for issue 10's cases, one module per area, each test named after what it
//! guards.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod lint;
mod readers;
