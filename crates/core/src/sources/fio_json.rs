//! fio's JSON output (`fio --output-format=json`, also `json+`): the IO rate of a run, for
//! `diagnose --fio`. The rate is the sum over `jobs[]` of `read.iops` and `write.iops` (and
//! `trim.iops`), as fio reports them per job (with `group_reporting` one job stands for the
//! group); the queue depth and engine come from the jobs' options when they agree. Text that
//! fio prints before the JSON (warnings, `note:` lines) is skipped.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// The IO rate one fio run reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FioRun {
    /// IOs per second, all jobs and directions.
    pub iops: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub jobs: usize,
    /// The longest job's run time, seconds.
    pub runtime_s: Option<f64>,
    /// `iodepth` when every job has the same.
    pub iodepth: Option<u32>,
    /// `ioengine` when every job has the same.
    pub ioengine: Option<String>,
    pub fio_version: Option<String>,
}

fn err(name: &str, message: String) -> Error {
    Error::Input {
        path: name.to_string(),
        message,
    }
}

/// The job option `key` of `job` (fio writes them as strings), and of its global options.
fn option<'a>(doc: &'a Value, job: &'a Value, key: &str) -> Option<&'a str> {
    job.get("job options")
        .and_then(|o| o.get(key))
        .or_else(|| doc.get("global options").and_then(|o| o.get(key)))
        .and_then(Value::as_str)
}

/// The one value all jobs agree on.
fn agreed<T: PartialEq>(mut values: impl Iterator<Item = Option<T>>) -> Option<T> {
    let first = values.next()??;
    for v in values {
        if v.as_ref() != Some(&first) {
            return None;
        }
    }
    Some(first)
}

/// Reads fio's JSON output from `bytes` (`name` names it in errors).
pub fn read(bytes: &[u8], name: &str) -> Result<FioRun> {
    let start = bytes.iter().position(|&b| b == b'{').ok_or_else(|| {
        err(
            name,
            "not fio JSON: no `{` in it (run fio with --output-format=json)".into(),
        )
    })?;
    let doc: Value = serde_json::from_slice(&bytes[start..]).map_err(|e| {
        let skipped = bytes[..start].iter().filter(|&&b| b == b'\n').count();
        Error::Parse {
            path: name.to_string(),
            line: e.line() + skipped,
            message: format!("not fio JSON ({e}): expected fio --output-format=json output"),
        }
    })?;
    let jobs = doc.get("jobs").and_then(Value::as_array).ok_or_else(|| {
        err(
            name,
            "no `jobs` array: expected fio --output-format=json output".into(),
        )
    })?;
    if jobs.is_empty() {
        return Err(err(name, "`jobs` is empty: fio ran no job".into()));
    }
    let rate = |job: &Value, dir: &str| -> Result<f64> {
        match job.get(dir).map(|d| d.get("iops")) {
            None | Some(None) => Ok(0.0),
            Some(Some(v)) => v
                .as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| err(name, format!("`{dir}.iops` is not a number ≥ 0: {v}"))),
        }
    };
    let (mut read_iops, mut write_iops, mut trim) = (0.0, 0.0, 0.0);
    for (i, job) in jobs.iter().enumerate() {
        if job.get("read").is_none() && job.get("write").is_none() {
            return Err(err(
                name,
                format!("job {i} has neither `read` nor `write`: not fio's job format"),
            ));
        }
        read_iops += rate(job, "read")?;
        write_iops += rate(job, "write")?;
        trim += rate(job, "trim")?;
    }
    let runtime_s = jobs
        .iter()
        .filter_map(|j| j.get("job_runtime").and_then(Value::as_f64))
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        .map(|ms| ms / 1000.0);
    Ok(FioRun {
        iops: read_iops + write_iops + trim,
        read_iops,
        write_iops,
        jobs: jobs.len(),
        runtime_s,
        iodepth: agreed(
            jobs.iter()
                .map(|j| option(&doc, j, "iodepth").and_then(|v| v.parse().ok())),
        ),
        ioengine: agreed(
            jobs.iter()
                .map(|j| option(&doc, j, "ioengine").map(str::to_string)),
        ),
        fio_version: doc
            .get("fio version")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_add_up_over_jobs_and_directions() {
        let doc = br#"fio: note: something
{"fio version": "fio-3.33", "jobs": [
 {"jobname": "a", "job options": {"iodepth": "8", "ioengine": "libaio"},
  "read": {"iops": 100.5}, "write": {"iops": 50}, "job_runtime": 2000},
 {"jobname": "b", "job options": {"iodepth": "8", "ioengine": "io_uring"},
  "read": {"iops": 10}, "write": {"iops": 0}, "job_runtime": 3000}]}"#;
        let r = read(doc, "x.json").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.iops, 160.5);
        assert_eq!((r.jobs, r.iodepth, r.ioengine), (2, Some(8), None));
        assert_eq!(r.runtime_s, Some(3.0));
    }

    #[test]
    fn what_is_not_fio_json_is_an_error_naming_the_input() {
        for bad in [
            &b"hello"[..],
            b"{\"jobs\": 3}",
            b"{\"jobs\": []}",
            b"{\"jobs\": [{}]}",
        ] {
            let e = read(bad, "x.json")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.starts_with("x.json"), "{e}");
        }
        let e = read(
            b"{\n\"jobs\": [\n{\"read\": {\"iops\": \"many\"}}]}",
            "x.json",
        );
        assert!(e.is_err());
        let e = read(b"warning\n{\n\"jobs\": [,]}", "x.json").err();
        assert!(e.is_some_and(|e| e.to_string().starts_with("x.json:3")));
    }
}
