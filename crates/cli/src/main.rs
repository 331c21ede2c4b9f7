//! virtlens: measure, explain and fix the overhead a hypervisor adds to a guest. The command
//! line is the library of this package (`lib.rs`); this binary only runs it.

use std::process::ExitCode;

fn main() -> ExitCode {
    virtlens::main()
}
