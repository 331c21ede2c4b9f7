//! Workloads of emulated devices: writing to a port device (a serial console), reading a
//! disk one request at a time without the page cache, and sending datagrams through a NIC.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::UdpSocket;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use super::Deadline;

/// Writes `block` bytes of text to `path` in a loop.
pub(super) fn write(
    path: &str,
    block: usize,
    deadline: Deadline,
    announce: &mut dyn FnMut(&str),
) -> Result<u64, String> {
    let mut f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("opening {path}: {e}"))?;
    let line: Vec<u8> = (0..block)
        .map(|i| {
            if i % 64 == 63 {
                b'\n'
            } else {
                b'a' + (i % 26) as u8
            }
        })
        .collect();
    announce(&format!("{block} bytes per write to {path}"));
    let mut n = 0u64;
    loop {
        f.write_all(&line)
            .map_err(|e| format!("writing {path}: {e}"))?;
        n += 1;
        if deadline.passed(n, 1) {
            return Ok(n);
        }
    }
}

/// Reads `path` in `block`-byte requests with O_DIRECT, one at a time, wrapping around at
/// its end.
pub(super) fn read_direct(
    path: &str,
    block: usize,
    deadline: Deadline,
    announce: &mut dyn FnMut(&str),
) -> Result<u64, String> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| format!("opening {path} with O_DIRECT: {e}"))?;
    let size = device_size(&f).map_err(|e| format!("size of {path}: {e}"))?;
    let blocks = (size / block as u64).max(1);
    // O_DIRECT wants a buffer aligned to the logical block size: 4096 covers every disk.
    let mut raw = vec![0u8; block + 4096];
    let off = raw.as_ptr().align_offset(4096);
    let buf = raw
        .get_mut(off..off + block)
        .ok_or_else(|| "buffer alignment".to_string())?;
    announce(&format!("{block}-byte O_DIRECT reads of {path}"));
    let mut n = 0u64;
    loop {
        let at = (n % blocks) * block as u64;
        f.read_at(buf, at)
            .map_err(|e| format!("reading {path} at {at}: {e}"))?;
        n += 1;
        if deadline.passed(n, 1) {
            return Ok(n);
        }
    }
}

/// The size of a file or block device (seeking to its end).
fn device_size(f: &File) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = f;
    let size = f.seek(SeekFrom::End(0))?;
    f.seek(SeekFrom::Start(0))?;
    Ok(size)
}

/// Sends `block`-byte datagrams to `to` in a loop; a refused send (no listener) is counted
/// like any other, as the packet left the guest all the same.
pub(super) fn udp_send(
    to: &str,
    block: usize,
    deadline: Deadline,
    announce: &mut dyn FnMut(&str),
) -> Result<u64, String> {
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("UDP socket: {e}"))?;
    let payload = vec![0x5au8; block];
    announce(&format!("{block}-byte datagrams to {to}"));
    let mut n = 0u64;
    loop {
        match sock.send_to(&payload, to) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(format!("sending to {to}: {e}")),
        }
        n += 1;
        if deadline.passed(n, 1) {
            return Ok(n);
        }
    }
}
