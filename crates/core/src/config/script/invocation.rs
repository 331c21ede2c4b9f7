//! Which commands of a script run QEMU: the command word — after keywords like `then` and
//! wrappers like `exec`, `sudo`, `taskset …` — is a QEMU emulator (not an assignment such as
//! `QEMU=/usr/bin/qemu-system-x86_64`, not an `echo` that names one). A command whose word is an
//! expansion the file does not set (`$QEMU`) counts when QEMU options follow it.

use super::{Command, Token};
use crate::config::shell;

const KEYWORDS: [&str; 9] = [
    "then", "else", "do", "{", "!", "time", "elif", "if", "while",
];
/// Commands that run the command that follows them (with their own options in between).
const WRAPPERS: [&str; 27] = [
    "exec",
    "command",
    "nohup",
    "setsid",
    "sudo",
    "doas",
    "nice",
    "ionice",
    "taskset",
    "numactl",
    "chrt",
    "env",
    "stdbuf",
    "systemd-run",
    "runuser",
    "firejail",
    "unbuffer",
    "catchsegv",
    "strace",
    "ltrace",
    "valgrind",
    "gdb",
    "schedtool",
    "cgexec",
    "prlimit",
    "timeout",
    "hugeadm",
];

/// One command that runs QEMU: the emulator word and its arguments.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    pub binary: Token,
    pub args: Vec<Token>,
    /// The line the command starts on.
    pub line: usize,
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The commands that run QEMU: the command word (after keywords like `then` and wrappers like
/// `exec`, `sudo`, `taskset …`) is a QEMU emulator. A command whose word is an unknown
/// expansion (`$QEMU` set elsewhere) counts when it passes QEMU options.
pub(crate) fn invocations(commands: &[Command]) -> Vec<Invocation> {
    let mut out = Vec::new();
    for c in commands {
        let mut i = 0;
        while c
            .words
            .get(i)
            .is_some_and(|w| KEYWORDS.contains(&w.text.as_str()))
        {
            i += 1;
        }
        let Some(first) = c.words.get(i) else {
            continue;
        };
        // After a wrapper the command is among the words that follow (past its options).
        let candidates = if WRAPPERS.contains(&base(&first.text)) {
            i + 1..c.words.len()
        } else {
            i..i + 1
        };
        let wholly_unknown =
            |w: &Token| !w.unknown.is_empty() && w.unknown.iter().all(|u| w.text == u.written);
        let at = candidates
            .clone()
            .find(|&k| shell::is_qemu_binary(&c.words[k].text) && c.words[k].unknown.is_empty())
            .or_else(|| {
                candidates
                    .clone()
                    .find(|&k| wholly_unknown(&c.words[k]))
                    .filter(|&k| c.words[k + 1..].iter().any(|w| is_qemu_option(&w.text)))
            });
        if let Some(at) = at {
            out.push(Invocation {
                binary: c.words[at].clone(),
                args: c.words[at + 1..].to_vec(),
                line: c.line,
            });
        }
    }
    out
}

/// Options only QEMU takes (a line of them is a QEMU argument list).
pub(crate) fn is_qemu_option(o: &str) -> bool {
    matches!(
        o,
        "-cpu"
            | "-machine"
            | "-M"
            | "-accel"
            | "-enable-kvm"
            | "-smp"
            | "-global"
            | "-rtc"
            | "-no-hpet"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::script::expand;

    #[test]
    fn the_qemu_line_runs_qemu() {
        let text = "QEMU=/usr/bin/qemu-system-x86_64\necho qemu-system-x86_64\n\
                    exec $QEMU -enable-kvm\nsudo taskset -c 0-3 qemu-kvm -m 1G\n$BIN -cpu host\n";
        let inv = invocations(&expand(&shell::split(text).unwrap()).unwrap());
        let bins: Vec<&str> = inv.iter().map(|i| i.binary.text.as_str()).collect();
        assert_eq!(bins, ["/usr/bin/qemu-system-x86_64", "qemu-kvm", "$BIN"]);
    }
}
