//! KVM statistics of QEMU VMs through QMP (`query-stats`, QEMU 7.1 and later): for a VM whose
//! VMM holds no statistics fd, QEMU itself reads its VM and vCPU stats fds and answers with
//! their values. `serve --qmp PATH` names QMP sockets (`-qmp unix:PATH,server=on,wait=off`);
//! the VM a socket belongs to is the process that holds the socket's listening end
//! (`/proc/net/unix` and `/proc/PID/fd`). Cumulative counters are summed over the VM and its
//! vCPUs; the caller turns successive answers into increments.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

/// How long one QMP exchange may take.
const TIMEOUT: Duration = Duration::from_secs(2);

/// One QMP connection, past its capabilities negotiation.
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// The statistics that are plain cumulative counters (`query-stats-schemas`).
    counters: Option<std::collections::BTreeSet<String>>,
}

impl Qmp {
    /// Connects and leaves capabilities-negotiation mode.
    pub fn connect(path: &Path) -> Result<Qmp, String> {
        let what = |e: std::io::Error| format!("QMP socket {}: {e}", path.display());
        let stream = UnixStream::connect(path).map_err(what)?;
        stream.set_read_timeout(Some(TIMEOUT)).map_err(what)?;
        stream.set_write_timeout(Some(TIMEOUT)).map_err(what)?;
        let writer = stream.try_clone().map_err(what)?;
        let mut q = Qmp {
            reader: BufReader::new(stream),
            writer,
            counters: None,
        };
        let greeting = q.read()?;
        if greeting.get("QMP").is_none() {
            return Err(format!(
                "{} did not greet as a QMP server: {greeting}",
                path.display()
            ));
        }
        q.execute("qmp_capabilities", None)?;
        let schemas = q.execute("query-stats-schemas", Some(json!({ "provider": "kvm" })))?;
        q.counters = Some(counters(&schemas));
        Ok(q)
    }

    fn read(&mut self) -> Result<Value, String> {
        loop {
            let mut line = String::new();
            let n = self
                .reader
                .read_line(&mut line)
                .map_err(|e| format!("reading from QMP: {e}"))?;
            if n == 0 {
                return Err("QMP closed the connection".into());
            }
            let v: Value =
                serde_json::from_str(&line).map_err(|e| format!("QMP sent bad JSON: {e}"))?;
            // Asynchronous events interleave with answers.
            if v.get("event").is_none() {
                return Ok(v);
            }
        }
    }

    /// Runs `command` and returns its `return` value.
    pub fn execute(&mut self, command: &str, arguments: Option<Value>) -> Result<Value, String> {
        let mut msg = json!({ "execute": command });
        if let Some(a) = arguments {
            msg["arguments"] = a;
        }
        writeln!(self.writer, "{msg}").map_err(|e| format!("writing to QMP: {e}"))?;
        let v = self.read()?;
        if let Some(e) = v.get("error") {
            return Err(format!("QMP {command}: {e}"));
        }
        Ok(v.get("return").cloned().unwrap_or(Value::Null))
    }

    /// The KVM statistics of the VM and its vCPUs, integers summed by name.
    pub fn kvm_stats(&mut self) -> Result<BTreeMap<String, u64>, String> {
        let mut out = BTreeMap::new();
        for target in ["vm", "vcpu"] {
            let r = self.execute(
                "query-stats",
                Some(json!({ "target": target, "providers": [{ "provider": "kvm" }] })),
            )?;
            sum_stats(&r, &mut out);
        }
        if let Some(c) = &self.counters {
            out.retain(|name, _| c.contains(name));
        }
        Ok(out)
    }
}

/// Adds the integer statistics of a `query-stats` answer to `out` (histograms and booleans
/// are left out).
pub(crate) fn sum_stats(answer: &Value, out: &mut BTreeMap<String, u64>) {
    for result in answer.as_array().into_iter().flatten() {
        for s in result["stats"].as_array().into_iter().flatten() {
            if let (Some(name), Some(v)) = (s["name"].as_str(), s["value"].as_u64()) {
                let slot = out.entry(name.to_string()).or_default();
                *slot = slot.saturating_add(v);
            }
        }
    }
}

/// The names of the statistics a `query-stats-schemas` answer says are cumulative counters
/// without a unit (not times, instants, peaks or histograms).
pub(crate) fn counters(schemas: &Value) -> std::collections::BTreeSet<String> {
    schemas
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["stats"].as_array().into_iter().flatten())
        .filter(|s| s["type"] == "cumulative" && s.get("unit").is_none())
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect()
}

/// The process holding the listening end of unix socket `path`, if this process can see it.
pub(crate) fn socket_owner(path: &Path) -> Option<u32> {
    let table = std::fs::read_to_string("/proc/net/unix").ok()?;
    let want = path.to_str()?;
    // `Num RefCount Protocol Flags Type St Inode Path`; a listening socket has flag 00010000.
    let inode = table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 8 && f[7] == want && f[3] == "00010000").then(|| f[6].to_string())
    })?;
    let link = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == link.as_str()) {
                return Some(pid);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_statistics_are_summed_over_targets() {
        // The shape of QEMU's answer (qapi/stats.json): one result per VM/vCPU object.
        let answer = json!([
            { "provider": "kvm", "qom-path": "/machine/unattached/device[0]",
              "stats": [ { "name": "exits", "value": 10 }, { "name": "halt_wait_hist", "value": [1, 2] },
                         { "name": "guest_mode", "value": false } ] },
            { "provider": "kvm", "qom-path": "/machine/unattached/device[1]",
              "stats": [ { "name": "exits", "value": 5 } ] }
        ]);
        let mut out = BTreeMap::new();
        sum_stats(&answer, &mut out);
        assert_eq!(out.get("exits"), Some(&15));
        assert_eq!(out.len(), 1);
        let schemas = json!([{ "provider": "kvm", "target": "vcpu", "stats": [
            { "name": "exits", "type": "cumulative", "base": 10, "exponent": 0 },
            { "name": "halt_wait_ns", "type": "cumulative", "unit": "seconds", "base": 10, "exponent": -9 },
            { "name": "pages_4k", "type": "instant", "base": 10, "exponent": 0 } ] }]);
        let c = counters(&schemas);
        assert_eq!(c.into_iter().collect::<Vec<_>>(), ["exits"]);
    }
}
