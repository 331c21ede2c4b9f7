//! The page model every HTML page is built from (header, banner, sections of blocks: charts,
//! tables, findings, paragraphs) and its rendering through the templates. One template set
//! for every command, so every page has the same structure, styles and print layout.

use minijinja::{AutoEscape, Environment};
use serde::Serialize;

use super::Error;
use super::chart::Figure;

/// A whole page.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Page {
    /// `virtlens compare`, …: the `<title>` and the heading.
    pub title: String,
    /// What the page is about, in one line (the inputs, the host).
    pub subtitle: String,
    /// What measured the figures (the backend label), shown in the header.
    pub measured: String,
    /// A warning shown above everything (a recording, not a measurement).
    pub banner: Vec<String>,
    /// The answer first: verdicts, headline sentences.
    pub summary: Vec<String>,
    pub sections: Vec<Section>,
    pub notes: Vec<String>,
}

impl Page {
    pub(super) fn new(title: &str, subtitle: String, measured: String) -> Page {
        Page {
            title: title.to_string(),
            subtitle,
            measured,
            banner: Vec::new(),
            summary: Vec::new(),
            sections: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// One section, with its own entry in the page's contents.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Section {
    /// The element id (a link target).
    pub id: String,
    pub heading: String,
    pub intro: Vec<String>,
    pub blocks: Vec<Block>,
}

impl Section {
    pub(super) fn new(id: impl Into<String>, heading: impl Into<String>) -> Section {
        Section {
            id: id.into(),
            heading: heading.into(),
            intro: Vec::new(),
            blocks: Vec::new(),
        }
    }
}

/// What a section holds.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(super) enum Block {
    Chart(Box<Figure>),
    Timeline(Box<super::timeline::TimelineFigure>),
    Table(DataTable),
    Finding(Box<FindingView>),
    Para { text: String },
}

/// A table of formatted cells; `numeric[i]` right-aligns column `i`.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct DataTable {
    pub caption: String,
    pub head: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl DataTable {
    /// A table with `head` columns, the first text and the rest numbers.
    pub(super) fn new(caption: impl Into<String>, head: &[&str]) -> DataTable {
        DataTable {
            caption: caption.into(),
            head: head.iter().map(|h| h.to_string()).collect(),
            numeric: (0..head.len()).map(|i| i > 0).collect(),
            rows: Vec::new(),
        }
    }
}

/// One diagnosis finding, formatted.
#[derive(Debug, Clone, Serialize)]
pub(super) struct FindingView {
    /// The element id (`finding-1-timer.acpi-pm-port`).
    pub anchor: String,
    /// The stable finding id (`timer.acpi-pm-port`).
    pub id: String,
    pub title: String,
    pub severity: String,
    pub confidence: String,
    pub role: String,
    /// `#1 of input 1`.
    pub place: String,
    /// The cost, the grade and the expected effect, each a sentence.
    pub lines: Vec<(String, String)>,
    pub evidence: Option<DataTable>,
    pub against: Vec<String>,
    pub competing: Vec<String>,
    pub cause: String,
    pub fixes: Vec<FixView>,
    pub sources: Vec<SourceView>,
}

/// One fix with its snippets.
#[derive(Debug, Clone, Serialize)]
pub(super) struct FixView {
    pub summary: String,
    /// `(label, language, code)`: QEMU flags, libvirt XML, host and guest changes.
    pub snippets: Vec<(String, String, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct SourceView {
    pub text: String,
    pub url: Option<String>,
}

impl SourceView {
    /// A source line, linked when it holds an address (`title, https://…` or the address
    /// alone).
    pub(super) fn of_text(s: &str) -> SourceView {
        let url = s
            .split_whitespace()
            .find(|w| w.starts_with("https://") || w.starts_with("http://"))
            .map(|u| u.trim_end_matches([',', '.', ')']).to_string());
        SourceView {
            text: s.to_string(),
            url,
        }
    }
}

const PAGE: &str = include_str!("templates/page.html");
const BARS: &str = include_str!("templates/bars.svg");
const TIMELINE: &str = include_str!("templates/timeline.svg");
const PATTERNS: &str = include_str!("templates/patterns.svg");
const BLOCKS: &str = include_str!("templates/blocks.html");
const CSS: &str = include_str!("templates/style.css");

/// What the page model decides for the page as a whole before it is drawn: one fill pattern
/// per series name across every chart (idle never shares a pattern with an input), and a
/// chart's backend label only where it differs from the page header's.
fn finish(mut page: Page) -> Page {
    let mut names: Vec<String> = Vec::new();
    let measured = page.measured.clone();
    let mut pattern_of = |figure_names: &[String]| -> Vec<usize> {
        figure_names
            .iter()
            .map(|n| {
                names.iter().position(|m| m == n).unwrap_or_else(|| {
                    names.push(n.clone());
                    names.len() - 1
                })
            })
            .collect()
    };
    for b in page.sections.iter_mut().flat_map(|s| s.blocks.iter_mut()) {
        let label = match b {
            Block::Chart(f) => {
                f.set_patterns(pattern_of(&f.names));
                &mut f.measured
            }
            Block::Timeline(f) => {
                f.set_patterns(pattern_of(&f.names));
                &mut f.measured
            }
            _ => continue,
        };
        if *label == measured {
            label.clear();
        }
    }
    page
}

/// The page as one self-contained HTML document.
pub(super) fn render(page: &Page) -> Result<String, Error> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    let template = |e: minijinja::Error| Error::Template(format!("{e:#}"));
    env.add_template("page.html", PAGE).map_err(template)?;
    env.add_template("bars.svg", BARS).map_err(template)?;
    env.add_template("timeline.svg", TIMELINE)
        .map_err(template)?;
    env.add_template("patterns.svg", PATTERNS)
        .map_err(template)?;
    env.add_template("blocks.html", BLOCKS).map_err(template)?;
    env.add_filter("md", |s: String| {
        minijinja::Value::from_safe_string(super::text::inline_markdown(&s))
    });
    let page = &finish(page.clone());
    let t = env.get_template("page.html").map_err(template)?;
    t.render(minijinja::context! {
        page => minijinja::value::Serde(page),
        css => CSS,
        version => crate::VERSION,
    })
    .map_err(template)
}
