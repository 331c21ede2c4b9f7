//! Regression tests of the cases issue 10 lists under "Why", one module per area, each test
//! named after what it guards. Each failed on the code before its fix.

mod capture;
mod errors;
mod exit_codes;
mod lab;
mod readers;
