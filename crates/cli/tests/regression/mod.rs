//! Regression tests of the cases issue 10 lists under "Why", one module per area, each test
//! named after what it guards. Each failed on the code before its fix.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod capture;
mod lab;
mod readers;
