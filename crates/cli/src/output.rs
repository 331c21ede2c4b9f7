//! Printing: every command's result goes out through [`emit`] — text or JSON on stdout (through
//! anstream, so colour appears only on a terminal and `NO_COLOR` is honoured), and the HTML page
//! when `--html FILE` asked for one; errors go to stderr with their whole cause chain.
//!
//! A reader that goes away (`virtlens top | head -1`) closes the pipe: the next write fails
//! with EPIPE (Rust ignores SIGPIPE), and the program ends quietly with status 0, as `head`
//! asked, without an error message. Commands print once they have cleaned up, so [`fn@print`]
//! ends the process there; a loop that still holds resources (a live capture) uses
//! [`try_print`] and unwinds through its cleanup first.

use std::io::{IsTerminal, Write};

use anyhow::Context;
use virtlens_core::render::{Export, Style};
use virtlens_host::capture::OutputFile;

use crate::args::HtmlArgs;

/// Where a result goes: JSON or text on stdout, and the HTML page when one was asked for.
pub struct OutputOptions {
    pub json: bool,
    /// The page's file, checked and created (as a temporary) before the work starts.
    pub html: Option<OutputFile>,
}

impl OutputOptions {
    /// Text or JSON on stdout, no page.
    pub fn stdout(json: bool) -> Self {
        Self { json, html: None }
    }

    /// With `--html FILE [--force]`: the file is checked now (a folder, a device, an existing
    /// file without `--force`, a missing folder are refused before anything is measured) and
    /// renamed into place only once the page is written whole.
    pub fn with_html(json: bool, h: &HtmlArgs) -> anyhow::Result<Self> {
        let html = h
            .html
            .as_deref()
            .map(|p| OutputFile::prepare_for("--html", "page", p, h.force))
            .transpose()?;
        Ok(Self { json, html })
    }
}

/// Shows `result` as `opts` says: the page first (so a failure to write it is an error before
/// anything is printed), then JSON or text on stdout.
pub fn emit(result: &dyn Export, opts: OutputOptions) -> anyhow::Result<()> {
    if let Some(mut file) = opts.html {
        let page = result
            .html()
            .unwrap_or_else(|| Err(no_page()))
            .context("making the HTML page")?;
        let shown = file.path().display().to_string();
        let mut f = file.take_file()?;
        f.write_all(page.as_bytes())
            .and_then(|()| f.sync_all())
            .with_context(|| format!("writing {shown}"))?;
        drop(f);
        file.commit()?;
        if std::io::stderr().is_terminal() {
            eprintln!("virtlens: wrote {shown}");
        }
    }
    print(&rendered(result, opts.json));
    Ok(())
}

/// The JSON (with a final newline) or the styled text of `result`.
pub fn rendered(result: &dyn Export, json: bool) -> String {
    if json {
        format!("{}\n", result.json())
    } else {
        result.text(&style())
    }
}

fn no_page() -> virtlens_core::render::HtmlError {
    virtlens_core::render::HtmlError::Template("this result has no HTML page".into())
}

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

/// [`fn@print`] for callers that must clean up before the program ends: stdout closed by its
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
    let _ = writeln!(err, "{red}error{red:#}: {}", message(e));
}

/// An error and its causes as [`error`] prints them, without the colour and the `error: `.
pub fn message(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    let mut said = out.clone();
    for cause in e.chain().skip(1) {
        // An error that quotes its cause (an IO error naming the file) says it once.
        let text = cause.to_string();
        if !said.contains(&text) {
            out.push_str("\n  caused by: ");
            out.push_str(&text);
        }
        said = text;
    }
    out
}
