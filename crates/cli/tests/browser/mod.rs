//! Headless Chromium for the page tests: loads a page with the network made unusable (no
//! proxy reachable, no name resolves, background networking off), returns the DOM Chromium
//! built, the console messages it logged and the requests the page made (from Chromium's net
//! log: requests whose network isolation key is the page's file:// site), takes screenshots,
//! and prints pages to PDF (their text read back with `pdftotext`). One Chromium at a time:
//! the machine is small.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

use crate::common::TempDir;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What Chromium made of a page.
pub struct Loaded {
    /// The DOM after loading, serialised by Chromium (`--dump-dom`).
    pub dom: String,
    /// Console messages (errors, CSP violations, logs).
    pub console: Vec<String>,
    /// URLs the page asked the network for.
    pub requests: Vec<String>,
}

/// One `<figure class="chart">` of the DOM.
pub struct ChartDom {
    pub id: String,
    pub title: String,
    pub desc: String,
    pub html: String,
}

impl Loaded {
    /// The charts, in page order.
    pub fn charts(&self) -> Vec<ChartDom> {
        let mut out = Vec::new();
        let mut rest = self.dom.as_str();
        while let Some(at) = rest.find("<figure class=\"chart\"") {
            let fig = &rest[at..];
            let end = fig.find("</figure>").map_or(fig.len(), |e| e + 9);
            let html = &fig[..end];
            let id = between(html, "data-chart=\"", "\"");
            out.push(ChartDom {
                title: between(html, &format!("<title id=\"{id}-title\">"), "</title>"),
                desc: between(html, &format!("<desc id=\"{id}-desc\">"), "</desc>"),
                id,
                html: html.to_string(),
            });
            rest = &fig[end..];
        }
        out
    }
}

fn between(s: &str, start: &str, end: &str) -> String {
    s.find(start)
        .map(|i| &s[i + start.len()..])
        .and_then(|r| r.find(end).map(|j| r[..j].to_string()))
        .unwrap_or_default()
}

/// The flags that keep Chromium headless, quiet and off the network.
fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--hide-scrollbars",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--no-pings",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-features=Translate,OptimizationHints,MediaRouter,SpellCheck",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Runs Chromium to its end; it must succeed.
fn run(c: &mut Command) -> std::process::Output {
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("cannot run chromium: {e}"));
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn url(page: &Path) -> String {
    let abs = std::fs::canonicalize(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    format!("file://{}", abs.display())
}

/// Loads `page` and returns its DOM, console messages and network requests.
pub fn load(page: &Path) -> Loaded {
    let _machine = virtlens_testkit::shared();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let work = TempDir::new(&format!(
        "chromium-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let net = work.0.join("net.json");
    let out = run(chromium(&work.0.join("profile"))
        .arg(format!("--log-net-log={}", net.display()))
        .arg("--dump-dom")
        .arg(url(page)));
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let log: Value = serde_json::from_slice(&std::fs::read(&net).unwrap())
        .unwrap_or_else(|e| panic!("chromium's net log: {e}"));
    Loaded {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
        requests: page_requests(&log),
    }
}

/// The URLs of requests the page (a file:// document) started.
fn page_requests(log: &Value) -> Vec<String> {
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_u64();
    let mut out: Vec<String> = log["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|e| e["type"].as_u64() == start)
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.contains("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .collect();
    out.dedup();
    out
}

/// Where the screenshots go: `target/ci-artifacts/html/` (CARGO_TARGET_DIR honoured).
pub fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || virtlens_testkit::repo_root().join("target"),
        PathBuf::from,
    );
    target.join("ci-artifacts/html")
}

/// Saves a screenshot of `page` (1280 px wide, the top 4000 px) as `NAME.png`.
pub fn screenshot(page: &Path, name: &str) {
    let _machine = virtlens_testkit::shared();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = artifacts();
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join(format!("{name}.png"));
    let work = TempDir::new(&format!("shot-{name}"));
    run(chromium(&work.0.join("profile"))
        .arg("--window-size=1280,4000")
        .arg(format!("--screenshot={}", png.display()))
        .arg(url(page)));
    assert!(png.is_file(), "no screenshot at {}", png.display());
}

/// Prints `page` as Chromium prints it (print stylesheet, A4/Letter default, no header or
/// footer) to `NAME.pdf` among the artifacts, and returns the PDF's text (`pdftotext -layout`)
/// and its page count.
pub fn print(page: &Path, name: &str) -> (String, usize) {
    let _machine = virtlens_testkit::shared();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = artifacts();
    std::fs::create_dir_all(&dir).unwrap();
    let pdf = dir.join(format!("{name}.pdf"));
    let work = TempDir::new(&format!("print-{name}"));
    run(chromium(&work.0.join("profile"))
        .arg("--no-pdf-header-footer")
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(url(page)));
    assert!(pdf.is_file(), "no PDF at {}", pdf.display());
    let out = Command::new("pdftotext")
        .args(["-layout", &pdf.display().to_string(), "-"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run pdftotext: {e}"));
    assert!(
        out.status.success(),
        "pdftotext failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // pdftotext ends every page with a form feed.
    let pages = text.matches('\u{c}').count();
    (text, pages)
}

/// What the page's layout looks like in Chromium at 1280 px, measured by a script run in a
/// copy of the page (the page itself forbids scripts).
#[derive(Debug, serde::Deserialize)]
pub struct Layout {
    /// SVG texts whose box leaves their drawing (`chart: text [box] of [viewBox]`).
    pub clipped: Vec<String>,
    /// Charts narrower than 90% of their column (`chart: width of column`).
    pub narrow: Vec<String>,
    /// Elements that hide what overflows them and have more than fits.
    pub overflow: Vec<String>,
    /// Every chart: `[id, drawn width, column width]` in CSS px.
    pub widths: Vec<(String, f64, f64)>,
}

const LAYOUT_JS: &str = r#"<script>(function(){
const out = {clipped: [], narrow: [], overflow: [], widths: []};
const inner = e => { const s = getComputedStyle(e); return e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); };
for (const svg of document.querySelectorAll('svg')) {
  const fig = svg.closest('figure') || svg.parentElement;
  const vb = svg.viewBox.baseVal;
  for (const t of svg.querySelectorAll('text')) {
    const b = t.getBBox();
    if (b.width === 0) continue;
    if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5)
      out.clipped.push(fig.id + ': ' + t.textContent + ' [' + [b.x, b.y, b.width, b.height].map(Math.round) + '] of [' + [vb.width, vb.height].map(Math.round) + ']');
  }
  const w = svg.getBoundingClientRect().width, col = inner(fig);
  out.widths.push([fig.id, w, col]);
  if (w < 0.9 * col) out.narrow.push(fig.id + ': ' + w + ' of ' + col);
  const fw = fig.getBoundingClientRect().width, page = inner(fig.parentElement);
  if (fw < 0.9 * page) out.narrow.push(fig.id + ' (figure): ' + fw + ' of ' + page);
}
for (const e of document.querySelectorAll('body *')) {
  if (!(e instanceof HTMLElement) || e.classList.contains('visually-hidden') || e.id === 'layout-check') continue;
  const s = getComputedStyle(e);
  const hides = v => v === 'hidden' || v === 'clip';
  if ((hides(s.overflowX) && e.scrollWidth > e.clientWidth + 1) || (hides(s.overflowY) && e.scrollHeight > e.clientHeight + 1))
    out.overflow.push(e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 80));
}
const pre = document.createElement('pre');
pre.id = 'layout-check';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
})();</script>"#;

/// Measures `page`'s layout in Chromium at 1280 × 4000 px: a copy with its
/// Content-Security-Policy removed and [`LAYOUT_JS`] added runs and writes what it found into
/// the DOM Chromium dumps.
pub fn layout(page: &Path) -> Layout {
    let _machine = virtlens_testkit::shared();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let html = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let csp = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap_or_else(|| panic!("{}: no Content-Security-Policy", page.display()));
    let end = csp + html[csp..].find('>').unwrap() + 1;
    let body = html.rfind("</body>").unwrap();
    let copy = format!(
        "{}{}{LAYOUT_JS}{}",
        &html[..csp],
        &html[end..body],
        &html[body..]
    );
    let work = TempDir::new(&format!(
        "layout-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let measured = work.0.join("page.html");
    std::fs::write(&measured, copy).unwrap();
    let out = run(chromium(&work.0.join("profile"))
        .arg("--window-size=1280,4000")
        .arg("--dump-dom")
        .arg(url(&measured)));
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = between(&dom, "<pre id=\"layout-check\">", "</pre>")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("the layout script's answer {json:?}: {e}"))
}

/// A word of a PDF page: where it starts and ends across the page, its text.
type Word = (f64, f64, String);

/// The words of the printed `NAME.pdf` (see [`print`]) that run past the right margin of
/// their page (taken as wide as the left one: the leftmost word's start), where Chromium
/// clips them: `pdftotext -bbox` gives every word's box.
pub fn cut_words(name: &str) -> Vec<String> {
    let pdf = artifacts().join(format!("{name}.pdf"));
    let out = Command::new("pdftotext")
        .args(["-bbox", &pdf.display().to_string(), "-"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run pdftotext: {e}"));
    assert!(out.status.success(), "pdftotext -bbox failed");
    let html = String::from_utf8_lossy(&out.stdout);
    let num = |tag: &str, attr: &str| -> f64 {
        between(tag, &format!("{attr}=\""), "\"")
            .parse()
            .unwrap_or_else(|e| panic!("pdftotext -bbox: {attr} of {tag}: {e}"))
    };
    let pages: Vec<(f64, Vec<Word>)> = html
        .split("<page ")
        .skip(1)
        .map(|page| {
            let words = page
                .split("<word ")
                .skip(1)
                .map(|w| (num(w, "xMin"), num(w, "xMax"), between(w, ">", "</word>")))
                .collect();
            (num(page, "width"), words)
        })
        .collect();
    // Every page has the same margins.
    let margin = pages
        .iter()
        .flat_map(|p| p.1.iter().map(|w| w.0))
        .fold(f64::INFINITY, f64::min);
    let mut cut = Vec::new();
    for (width, words) in &pages {
        for (_, x_max, text) in words {
            if *x_max > width - margin + 1.0 {
                cut.push(format!("{text} (ends at {x_max:.1} of {width:.1})"));
            }
        }
    }
    cut
}
