//! The capture file's way to disk. `-o` is checked before the capture starts (a folder, a
//! device or FIFO, an existing file without `--force`, a folder that does not exist or cannot
//! be written are refused then, not after minutes of tracing); the capture is written to a
//! temporary file in the same folder (`.NAME.virtlens-part-PID-N`, registered with
//! [`super::leftovers`] so the next run removes it if this one is killed) and renamed into
//! place only when complete. So a reader never sees a half-written file, and two captures
//! to one path cannot interleave: without `--force` the second to finish finds the first's
//! file there, leaves it alone and keeps its own next to it under a name it reports.
//! Other outputs written the same way (`--html FILE`) use [`OutputFile::prepare_for`].

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::error::CaptureError;
use super::leftovers::{Kind, PART_MARK, Registration};

/// A capture file being written; see the module doc.
#[derive(Debug)]
pub struct OutputFile {
    /// The path the user gave (for messages).
    shown: PathBuf,
    /// Where the file goes (`shown`: never a symbolic link).
    target: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    force: bool,
    done: bool,
    /// What is written, for messages: `capture`, `page`.
    what: &'static str,
    _registration: Registration,
}

impl OutputFile {
    /// Checks `path` (given with `-o`) and creates the temporary file next to it; see the
    /// module doc.
    pub fn prepare(path: &Path, force: bool) -> Result<OutputFile, CaptureError> {
        Self::prepare_for("-o", "capture", path, force)
    }

    /// [`OutputFile::prepare`] for a file given with option `flag` (`--html`), holding a
    /// `what` (`page`), as messages name them.
    pub fn prepare_for(
        flag: &str,
        what: &'static str,
        path: &Path,
        force: bool,
    ) -> Result<OutputFile, CaptureError> {
        let usage = |m: String| CaptureError::Usage(format!("{flag} {}: {m}", path.display()));
        if path.as_os_str().is_empty() {
            return Err(CaptureError::Usage(format!("{flag} needs a file path")));
        }
        let target = path.to_path_buf();
        match std::fs::symlink_metadata(path) {
            // Never written through: in a shared folder a planted link would turn `--force`
            // into "replace any file" for a root capture.
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(path)
                    .map_or_else(|_| "?".to_string(), |t| t.display().to_string());
                return Err(usage(format!(
                    "is a symbolic link (to {to}); virtlens does not write through links, even \
                     with --force: give the file's own path"
                )));
            }
            Ok(_) => check_existing(path, force).map_err(usage)?,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(CaptureError::io("looking at the output path", path, e)),
        }
        let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return Err(usage("not a file name".into()));
        };
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(usage(format!(
                "the folder {} does not exist",
                dir.display()
            )));
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let temp = dir.join(format!(
            ".{name}{PART_MARK}{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let registration = Registration::new(Kind::Part, &temp)?;
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| {
                CaptureError::Usage(format!(
                    "{flag} {}: cannot write in {}: {e}",
                    path.display(),
                    dir.display()
                ))
            })?;
        Ok(OutputFile {
            shown: path.to_path_buf(),
            target,
            temp,
            file: Some(file),
            force,
            done: false,
            what,
            _registration: registration,
        })
    }

    /// The path the user gave.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The folder the file goes to (where the temporary file is).
    pub fn folder(&self) -> PathBuf {
        match self.temp.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    /// The temporary file to write (once).
    pub fn take_file(&mut self) -> Result<File, CaptureError> {
        self.file.take().ok_or_else(|| {
            CaptureError::io(
                "writing the capture file",
                &self.temp,
                std::io::Error::other("already taken"),
            )
        })
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        std::fs::metadata(&self.temp).map_or(0, |m| m.len())
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Puts the finished file in place: over an existing file only with `--force`; see the
    /// module doc for what happens when another file appeared there meanwhile.
    pub fn commit(mut self) -> Result<(), CaptureError> {
        self.file = None;
        if self.force {
            std::fs::rename(&self.temp, &self.target).map_err(|e| {
                CaptureError::io(
                    format!("renaming the {} into place", self.what),
                    &self.target,
                    e,
                )
            })?;
            self.done = true;
            return Ok(());
        }
        match place_new(&self.temp, &self.target) {
            Ok(()) => {
                self.done = true;
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                let kept = self.keep_aside()?;
                Err(CaptureError::Usage(format!(
                    "{} was created by something else while this {what} was made, and is left \
                     as it is (no --force); this {what} is in {}",
                    self.shown.display(),
                    kept.display(),
                    what = self.what
                )))
            }
            Err(e) => Err(CaptureError::io(
                format!("renaming the {} into place", self.what),
                &self.target,
                e,
            )),
        }
    }

    /// Moves the finished capture to `STEM-PID.EXT` (or `-PID-N`) next to the target.
    fn keep_aside(&mut self) -> Result<PathBuf, CaptureError> {
        let stem = self
            .target
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = self
            .target
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let pid = std::process::id();
        for n in 0..100 {
            let name = if n == 0 {
                format!("{stem}-{pid}{ext}")
            } else {
                format!("{stem}-{pid}-{n}{ext}")
            };
            let kept = self.target.with_file_name(name);
            match place_new(&self.temp, &kept) {
                Ok(()) => {
                    self.done = true;
                    return Ok(kept);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(CaptureError::io("keeping the capture", kept, e)),
            }
        }
        Err(CaptureError::io(
            "keeping the capture",
            &self.temp,
            std::io::Error::other("no free name next to the output"),
        ))
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.done {
            self.file = None;
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Why an existing `path` cannot be the output (`Ok`: it can, being a file and `force`).
fn check_existing(path: &Path, force: bool) -> Result<(), String> {
    let m = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let t = m.file_type();
    if t.is_dir() {
        return Err("is a folder; give the path of a file to write".into());
    }
    let kind = if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if !force {
        return Err("exists; give --force to replace it, or another path".into());
    } else {
        return Ok(());
    };
    Err(format!(
        "is {kind}, not a file: the capture is written to a new file and renamed into place"
    ))
}

/// Gives `temp` the name `target` unless `target` exists (then `AlreadyExists`), atomically
/// where the file system has hard links.
fn place_new(temp: &Path, target: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(temp, target) {
        Ok(()) => std::fs::remove_file(temp),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(e),
        // No hard links here (vfat, some FUSE): check, then rename.
        Err(_) if !target.exists() => std::fs::rename(temp, target),
        Err(_) => Err(ErrorKind::AlreadyExists.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("virtlens-out-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        Dir(d)
    }

    fn write(out: &mut OutputFile, bytes: &[u8]) {
        use std::io::Write;
        let mut f = out.take_file().unwrap_or_else(|e| panic!("{e}"));
        f.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
    }

    fn err(r: Result<OutputFile, CaptureError>) -> String {
        match r {
            Ok(o) => panic!("accepted: {o:?}"),
            Err(e) => {
                assert!(e.is_usage(), "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn bad_outputs_are_refused_before_anything_is_written() {
        let d = dir("bad");
        assert!(err(OutputFile::prepare(&d.0, false)).contains("is a folder"));
        assert!(err(OutputFile::prepare(&d.0, true)).contains("is a folder"));
        let e = err(OutputFile::prepare(Path::new("/dev/null"), true));
        assert!(e.contains("character device"), "{e}");
        let e = err(OutputFile::prepare(&d.0.join("no/such/x.parquet"), false));
        assert!(e.contains("does not exist"), "{e}");
        let existing = d.0.join("old.parquet");
        std::fs::write(&existing, b"old").unwrap_or_else(|e| panic!("{e}"));
        assert!(err(OutputFile::prepare(&existing, false)).contains("--force"));
        let left: Vec<_> = std::fs::read_dir(&d.0)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "no temporary file is left: {left:?}");
    }

    #[test]
    fn the_file_appears_whole_at_commit_and_force_replaces() {
        let d = dir("commit");
        let path = d.0.join("cap.parquet");
        let mut out = OutputFile::prepare(&path, false).unwrap_or_else(|e| panic!("{e}"));
        write(&mut out, b"first");
        assert!(!path.exists(), "nothing at the path before the commit");
        out.commit().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read(&path).ok().as_deref(), Some(&b"first"[..]));
        let mut again = OutputFile::prepare(&path, true).unwrap_or_else(|e| panic!("{e}"));
        write(&mut again, b"second");
        again.commit().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read(&path).ok().as_deref(), Some(&b"second"[..]));
    }

    #[test]
    fn two_captures_to_one_path_never_interleave() {
        let d = dir("race");
        let path = d.0.join("cap.parquet");
        let mut a = OutputFile::prepare(&path, false).unwrap_or_else(|e| panic!("{e}"));
        let mut b = OutputFile::prepare(&path, false).unwrap_or_else(|e| panic!("{e}"));
        write(&mut a, b"aaaa");
        write(&mut b, b"bb");
        a.commit().unwrap_or_else(|e| panic!("{e}"));
        let e = b.commit().map(|()| "committed").unwrap_err().to_string();
        assert!(e.contains("created by something else"), "{e}");
        assert_eq!(std::fs::read(&path).ok().as_deref(), Some(&b"aaaa"[..]));
        let kept = d.0.join(format!("cap-{}.parquet", std::process::id()));
        assert!(e.contains(&kept.display().to_string()), "{e}");
        assert_eq!(std::fs::read(&kept).ok().as_deref(), Some(&b"bb"[..]));
    }

    #[test]
    fn an_abandoned_capture_leaves_nothing() {
        let d = dir("drop");
        let path = d.0.join("cap.parquet");
        let mut out = OutputFile::prepare(&path, false).unwrap_or_else(|e| panic!("{e}"));
        write(&mut out, b"partial");
        drop(out);
        assert_eq!(std::fs::read_dir(&d.0).map(|r| r.count()).unwrap_or(1), 0);
    }

    #[test]
    fn a_symbolic_link_is_never_written_through() {
        // repro E1: `record --force -o LINK` replaced the file LINK pointed to.
        let d = dir("link");
        let precious = d.0.join("precious.conf");
        std::fs::write(&precious, b"precious").unwrap_or_else(|e| panic!("{e}"));
        let link = d.0.join("cap.parquet");
        std::os::unix::fs::symlink(&precious, &link).unwrap_or_else(|e| panic!("{e}"));
        for force in [false, true] {
            let e = err(OutputFile::prepare(&link, force));
            assert!(e.contains("symbolic link"), "{e}");
        }
        // A link planted after the checks: the rename replaces the link, not its target.
        let late = d.0.join("late.parquet");
        let mut out = OutputFile::prepare(&late, true).unwrap_or_else(|e| panic!("{e}"));
        write(&mut out, b"capture");
        std::os::unix::fs::symlink(&precious, &late).unwrap_or_else(|e| panic!("{e}"));
        out.commit().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read(&precious).ok().as_deref(),
            Some(&b"precious"[..])
        );
        assert_eq!(std::fs::read(&late).ok().as_deref(), Some(&b"capture"[..]));
    }
}
