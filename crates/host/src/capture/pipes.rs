//! The instance's per-CPU ring buffers: `per_cpu/cpuN/trace_pipe_raw` opened non-blocking
//! and read one page at a time (partial pages too, so nothing waits for a page to fill), and
//! `per_cpu/cpuN/stats`, whose overrun and dropped counts are the events the kernel lost.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::CaptureError;

/// One CPU's pipe.
#[derive(Debug)]
struct Pipe {
    cpu: u32,
    file: File,
}

/// Every CPU's pipe of one instance.
#[derive(Debug)]
pub(crate) struct Pipes {
    dir: PathBuf,
    pipes: Vec<Pipe>,
    page_size: usize,
    buf: Vec<u8>,
}

impl Pipes {
    /// Opens the pipe of every CPU listed under `instance/per_cpu`; `page_size` is the size
    /// of one ring-buffer page (one read).
    pub(crate) fn open(instance: &Path, page_size: usize) -> Result<Pipes, CaptureError> {
        let dir = instance.join("per_cpu");
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| CaptureError::io("listing the per-CPU buffers", &dir, e))?;
        let mut cpus: Vec<u32> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        let mut pipes = Vec::with_capacity(cpus.len());
        for cpu in cpus {
            let path = dir.join(format!("cpu{cpu}/trace_pipe_raw"));
            match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
            {
                Ok(file) => pipes.push(Pipe { cpu, file }),
                // An offline CPU has a directory but no buffer to read.
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {}
                Err(e) => return Err(CaptureError::io("opening a CPU's ring buffer", path, e)),
            }
        }
        if pipes.is_empty() {
            return Err(CaptureError::Decode(format!(
                "no CPU ring buffer could be opened under {}",
                dir.display()
            )));
        }
        Ok(Pipes {
            dir,
            pipes,
            page_size,
            buf: vec![0; page_size],
        })
    }

    /// How many CPUs are read.
    pub(crate) fn len(&self) -> usize {
        self.pipes.len()
    }

    /// The CPU number of pipe `i`.
    pub(crate) fn cpu(&self, i: usize) -> u32 {
        self.pipes.get(i).map_or(0, |p| p.cpu)
    }

    /// The next page of pipe `i`, or `None` when its buffer is empty now.
    pub(crate) fn read_page(&mut self, i: usize) -> Result<Option<&[u8]>, CaptureError> {
        let Some(pipe) = self.pipes.get_mut(i) else {
            return Ok(None);
        };
        self.buf.resize(self.page_size, 0);
        loop {
            match pipe.file.read(&mut self.buf) {
                Ok(0) => return Ok(None),
                Ok(n) => return Ok(Some(&self.buf[..n])),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    let path = self.dir.join(format!("cpu{}/trace_pipe_raw", pipe.cpu));
                    return Err(CaptureError::io("reading a CPU's ring buffer", path, e));
                }
            }
        }
    }

    /// Events lost so far, per CPU (only CPUs that lost any), from the `stats` files.
    pub(crate) fn lost(&self) -> BTreeMap<u32, u64> {
        self.pipes
            .iter()
            .filter_map(|p| {
                let text =
                    super::tracefs::read(&self.dir.join(format!("cpu{}/stats", p.cpu))).ok()?;
                let n = lost_in_stats(&text);
                (n > 0).then_some((p.cpu, n))
            })
            .collect()
    }
}

/// Lost events in a `stats` file: overwritten (`overrun`, `commit overrun`) plus dropped.
pub(crate) fn lost_in_stats(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "overrun" | "commit overrun" | "dropped events"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_files() {
        let text = "entries: 10\noverrun: 3\ncommit overrun: 1\nbytes: 100\n\
                    oldest event ts: 5.000\nnow ts: 6.0\ndropped events: 2\nread events: 7\n";
        assert_eq!(lost_in_stats(text), 6);
        assert_eq!(lost_in_stats(""), 0);
    }
}
