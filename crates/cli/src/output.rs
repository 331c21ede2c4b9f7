//! Printing: stdout through anstream, so colour appears only on a terminal and `NO_COLOR` is
//! honoured; errors to stderr with their whole cause chain.

use std::io::Write;

use virtlens_core::render::Style;

/// Writes `text` to stdout, stripping colour where the terminal or `NO_COLOR` says so.
pub fn print(text: &str) {
    let mut out = anstream::stdout();
    // A closed pipe (e.g. `| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
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
