//! Printing: stdout through anstream, so colour appears only on a terminal and `NO_COLOR` is
//! honoured; errors to stderr with their whole cause chain.
//!
//! A reader that goes away (`virtlens top | head -1`) closes the pipe: the next write fails
//! with EPIPE (Rust ignores SIGPIPE), and the program ends quietly with status 0, as `head`
//! asked, without an error message. Commands print once they have cleaned up, so [`print`]
//! ends the process there; a loop that still holds resources (a live capture) uses
//! [`try_print`] and unwinds through its cleanup first.

use std::io::Write;

use virtlens_core::render::Style;

/// Stdout was closed by its reader: not an error to report, the end of the program.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `text` to stdout, stripping colour where the terminal or `NO_COLOR` says so. When
/// the reader has closed stdout, the program ends here, quietly, with status 0.
pub fn print(text: &str) {
    if try_print(text).is_err() {
        std::process::exit(0);
    }
}

/// [`print`] for callers that must clean up before the program ends: stdout closed by its
/// reader is [`StdoutClosed`] (which `main` turns into a quiet exit 0); other write errors are
/// ignored, as a terminal that cannot show text has no better place to say so.
pub fn try_print(text: &str) -> anyhow::Result<()> {
    let mut out = anstream::stdout();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        _ => Ok(()),
    }
}

/// The line styles for text output.
pub fn style() -> Style {
    Style::default()
}

/// Prints an error and its causes to stderr.
pub fn error(e: &anyhow::Error) {
    let mut err = anstream::stderr();
    let red = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Red.into()));
    let _ = writeln!(err, "{red}error{red:#}: {e}");
    for cause in e.chain().skip(1) {
        let _ = writeln!(err, "  caused by: {cause}");
    }
}
