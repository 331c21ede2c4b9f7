//! While recording, pages go to a spool as the kernel hands them over (the cheapest thing
//! the reader can do): one file per CPU in a hidden folder next to the output, each page as
//! `u32 length` + its used bytes. After the capture they are read back in order per CPU
//! ([`SpoolReader`], a [`PageSource`]) and merged by time. The folder is removed when the
//! spool is dropped, on every path; while it exists it is registered
//! ([`super::leftovers`]), so that the next virtlens command removes it if this process is
//! killed.

use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use super::error::CaptureError;
use super::leftovers::{Kind, Registration, SPOOL_PREFIX};
use super::merge::PageSource;

/// The spool being written.
#[derive(Debug)]
pub(crate) struct Spool {
    dir: PathBuf,
    files: Vec<BufWriter<File>>,
    bytes: u64,
    /// Dropped after the folder is removed (fields drop after `Drop::drop`).
    registration: Option<Registration>,
}

impl Spool {
    /// A spool for `cpus` CPUs in a hidden folder in `parent`, registered before it is
    /// created.
    pub(crate) fn create(parent: &Path, cpus: usize) -> Result<Spool, CaptureError> {
        let dir = parent.join(format!("{SPOOL_PREFIX}{}-{}", std::process::id(), unique()));
        let registration = Registration::new(Kind::Spool, &dir)?;
        let mut spool = Spool {
            dir,
            files: Vec::with_capacity(cpus),
            bytes: 0,
            registration: Some(registration),
        };
        std::fs::create_dir(&spool.dir)
            .map_err(|e| CaptureError::io("creating the spool folder", &spool.dir, e))?;
        for i in 0..cpus {
            let path = spool.path(i);
            let f = File::create(&path)
                .map_err(|e| CaptureError::io("creating a spool file", &path, e))?;
            spool.files.push(BufWriter::with_capacity(1 << 20, f));
        }
        Ok(spool)
    }

    fn path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("cpu{i}.pages"))
    }

    /// Appends a page of pipe `i`.
    pub(crate) fn write(&mut self, i: usize, page: &[u8]) -> Result<(), CaptureError> {
        let path = self.path(i);
        let Some(f) = self.files.get_mut(i) else {
            return Ok(());
        };
        let len = u32::try_from(page.len()).unwrap_or(u32::MAX);
        f.write_all(&len.to_le_bytes())
            .and_then(|()| f.write_all(&page[..len as usize]))
            .map_err(|e| CaptureError::io("writing the spool", path, e))?;
        self.bytes += 4 + u64::from(len);
        Ok(())
    }

    /// Flushes the files and opens them for reading, pipe by pipe.
    pub(crate) fn into_readers(mut self) -> Result<(SpoolDir, Vec<SpoolReader>), CaptureError> {
        let mut readers = Vec::with_capacity(self.files.len());
        for (i, f) in std::mem::take(&mut self.files).into_iter().enumerate() {
            let path = self.path(i);
            f.into_inner()
                .map_err(|e| CaptureError::io("flushing the spool", &path, e.into_error()))?;
            let file =
                File::open(&path).map_err(|e| CaptureError::io("reading the spool", &path, e))?;
            readers.push(SpoolReader {
                file: BufReader::with_capacity(1 << 20, file),
                path,
            });
        }
        let dir = SpoolDir {
            dir: std::mem::take(&mut self.dir),
            _registration: self.registration.take(),
        };
        Ok((dir, readers))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if !self.dir.as_os_str().is_empty() {
            self.files.clear();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The spool folder while it is read; removed on drop.
#[derive(Debug)]
pub(crate) struct SpoolDir {
    dir: PathBuf,
    _registration: Option<Registration>,
}

impl Drop for SpoolDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The pages of one CPU, in the order they were read.
#[derive(Debug)]
pub(crate) struct SpoolReader {
    file: BufReader<File>,
    path: PathBuf,
}

impl PageSource for SpoolReader {
    fn next_page(&mut self, buf: &mut Vec<u8>) -> Result<bool, CaptureError> {
        let mut len = [0u8; 4];
        match self.file.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(CaptureError::io("reading the spool", &self.path, e)),
        }
        buf.resize(u32::from_le_bytes(len) as usize, 0);
        self.file
            .read_exact(buf)
            .map_err(|e| CaptureError::io("reading the spool", &self.path, e))?;
        Ok(true)
    }
}

/// A number that differs between spools of one process.
fn unique() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_come_back_in_order_and_the_folder_goes() {
        let parent = std::env::temp_dir();
        let mut s = Spool::create(&parent, 2).unwrap_or_else(|e| panic!("{e}"));
        let link = s
            .registration
            .as_ref()
            .map(|r| r.link().to_path_buf())
            .unwrap_or_default();
        assert_eq!(std::fs::read_link(&link).ok(), Some(s.dir.clone()));
        s.write(0, b"first").unwrap_or_else(|e| panic!("{e}"));
        s.write(1, b"other").unwrap_or_else(|e| panic!("{e}"));
        s.write(0, b"second!").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.bytes, 4 * 3 + 5 + 5 + 7);
        let (dir, mut readers) = s.into_readers().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.dir.clone();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while readers[0].next_page(&mut buf).unwrap_or(false) {
            got.push(String::from_utf8_lossy(&buf).into_owned());
        }
        assert_eq!(got, ["first", "second!"]);
        drop(readers);
        drop(dir);
        assert!(!path.exists());
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the registration goes too"
        );
    }
}
