//! Waiting for a program's readiness instead of sleeping: [`with_ready_fd`] gives a command
//! the write end of a pipe as its file descriptor 3 (the program is told so by its own flag,
//! e.g. virtlens's `--ready-fd 3`), and [`Ready::wait`] blocks until the program writes its
//! line, or fails when the program closed the descriptor (exited) without one.

use std::io::{BufRead, BufReader, PipeReader};
use std::process::{Command, Stdio};

/// The read end of a command's readiness pipe.
#[derive(Debug)]
pub struct Ready(BufReader<PipeReader>);

/// `cmd` wrapped so that it starts with descriptor 3 = the write end of a new pipe (and stdin
/// from /dev/null); its program, arguments, environment and folder are kept. Set stdout and
/// stderr on the returned command, spawn it, and drop it right away (it holds the write end
/// until then, and [`Ready::wait`] sees the end of the pipe only when no writer is left).
pub fn with_ready_fd(cmd: &Command) -> (Command, Ready) {
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => panic!("pipe: {e}"),
    };
    let mut sh = Command::new("sh");
    sh.args(["-c", "exec \"$0\" \"$@\" 3<&0 0</dev/null"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(Stdio::from(writer));
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    (sh, Ready(BufReader::new(reader)))
}

impl Ready {
    /// Blocks until the program wrote a line (returned, without its newline); an error when
    /// the pipe ended first (the program exited, or closed it without being ready).
    pub fn wait(mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.0.read_line(&mut line) {
            Ok(0) => Err("the program closed its readiness descriptor without a line".into()),
            Ok(_) => Ok(line.trim_end().to_string()),
            Err(e) => Err(format!("reading the readiness pipe: {e}")),
        }
    }
}
