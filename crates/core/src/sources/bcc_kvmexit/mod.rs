//! Source for bcc kvmexit output in all its modes. (Being written: reports an error until then.)

use std::io::BufRead;

use crate::error::{Error, Result};
use crate::profile::Profile;

/// The name of this format (`--format bcc-kvmexit`, `origin.format`).
pub const FORMAT: &str = "bcc-kvmexit";

/// Whether `head` (the first bytes of an input) looks like this format.
pub fn looks_like(_head: &[u8]) -> bool {
    false
}

/// Reads the whole input into a profile; `path` names it in notes and errors.
pub fn read<R: BufRead + std::io::Seek>(_reader: R, path: &str) -> Result<Profile> {
    Err(Error::Input {
        path: path.to_string(),
        message: format!("the {FORMAT} reader is not built yet"),
    })
}
