//! Path safety: a tool reads only regular files under the server's `--root` directories. A
//! path is resolved (a relative one under each root in turn; symlinks and `..` followed by the
//! kernel's own canonicalisation) before it is checked, so neither can lead out of a root.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The directories the tools may read under, canonical.
#[derive(Debug, Clone)]
pub struct Roots {
    dirs: Vec<PathBuf>,
}

impl Roots {
    /// The `--root` directories (the working directory when none is given), each resolved; one
    /// that is not a directory is an error at start.
    pub fn new(given: &[PathBuf]) -> anyhow::Result<Roots> {
        let given = if given.is_empty() {
            vec![std::env::current_dir().context("reading the working directory")?]
        } else {
            given.to_vec()
        };
        let dirs = given
            .iter()
            .map(|d| {
                let c = d
                    .canonicalize()
                    .with_context(|| format!("--root {}", d.display()))?;
                if !c.is_dir() {
                    bail!("--root {}: not a directory", d.display());
                }
                Ok(c)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Roots { dirs })
    }

    /// The directories, for messages and the server's instructions.
    pub fn describe(&self) -> String {
        self.dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The canonical path of the regular file `given` names, if it lies under a root. A
    /// missing file is the error the CLI gives for it (`PATH: No such file or directory`);
    /// standard input (`-`) is the protocol's, never an input.
    pub fn file(&self, given: &str) -> anyhow::Result<PathBuf> {
        if given == "-" {
            bail!("`-` (standard input) carries this server's protocol; give a file or the text");
        }
        let path = Path::new(given);
        // A relative path is looked for under each root in turn; an absolute one as it is.
        let candidates: Vec<PathBuf> = if path.is_absolute() {
            vec![path.to_path_buf()]
        } else {
            self.dirs.iter().map(|d| d.join(path)).collect()
        };
        let mut first_error = None;
        let mut found = None;
        for c in &candidates {
            match c.canonicalize() {
                Ok(real) => {
                    found = Some(real);
                    break;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let Some(real) = found else {
            return Err(match first_error {
                Some(e) => anyhow::anyhow!("{given}: {e}"),
                None => anyhow::anyhow!("{given}: no root to look under"),
            });
        };
        if !self.dirs.iter().any(|d| real.starts_with(d)) {
            bail!(
                "{given}: outside the directories this server may read ({}); start it with \
                 --root DIR to allow another",
                self.describe()
            );
        }
        if !real.is_file() {
            bail!("{given}: not a regular file");
        }
        Ok(real)
    }
}
