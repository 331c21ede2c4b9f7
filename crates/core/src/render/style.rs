//! Colour for text output: styles for whole lines (titles, headers, idle rows, verdicts),
//! applied after alignment so widths are never thrown off. The CLI strips them when stdout is
//! not a terminal or `NO_COLOR` is set.

use anstyle::{AnsiColor, Effects};

/// Line styles used by the text renderers.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub title: anstyle::Style,
    pub header: anstyle::Style,
    pub idle: anstyle::Style,
    pub good: anstyle::Style,
    pub bad: anstyle::Style,
    pub note: anstyle::Style,
}

impl Default for Style {
    fn default() -> Self {
        Self {
            title: anstyle::Style::new().effects(Effects::BOLD),
            header: anstyle::Style::new().effects(Effects::UNDERLINE),
            idle: anstyle::Style::new().effects(Effects::DIMMED),
            good: anstyle::Style::new().fg_color(Some(AnsiColor::Green.into())),
            bad: anstyle::Style::new().fg_color(Some(AnsiColor::Red.into())),
            note: anstyle::Style::new().fg_color(Some(AnsiColor::Yellow.into())),
        }
    }
}

impl Style {
    /// No styling at all (for text that goes into another format, e.g. an HTML page).
    pub fn plain() -> Self {
        let none = anstyle::Style::new();
        Self {
            title: none,
            header: none,
            idle: none,
            good: none,
            bad: none,
            note: none,
        }
    }

    /// `text` wrapped in `style`.
    pub fn paint(style: anstyle::Style, text: &str) -> String {
        format!("{style}{text}{style:#}")
    }
}
