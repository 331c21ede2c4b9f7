//! Splitting a launch script into commands and words the way a POSIX shell would, as far as a
//! QEMU command line needs: `\` line continuations, single and double quotes (also across
//! lines), backslash escapes, `#` comments, and `;`, `&&`, `||`, `|`, `&` and newlines between
//! commands. Every word keeps the line it starts on. Variables and substitutions are kept
//! as written.

/// One word of a command and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub line: usize,
}

/// Why a script could not be split: the line and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    pub line: usize,
    pub message: String,
}

struct Splitter {
    commands: Vec<Vec<Token>>,
    command: Vec<Token>,
    word: Option<Token>,
    line: usize,
}

impl Splitter {
    fn push_char(&mut self, ch: char) {
        let line = self.line;
        self.word
            .get_or_insert_with(|| Token {
                text: String::new(),
                line,
            })
            .text
            .push(ch);
    }

    /// Starts a word even if it stays empty (`''`).
    fn touch(&mut self) {
        let line = self.line;
        self.word.get_or_insert_with(|| Token {
            text: String::new(),
            line,
        });
    }

    fn end_word(&mut self) {
        if let Some(w) = self.word.take() {
            self.command.push(w);
        }
    }

    fn end_command(&mut self) {
        self.end_word();
        if !self.command.is_empty() {
            self.commands.push(std::mem::take(&mut self.command));
        }
    }
}

/// The commands of `text`, each as its words.
pub fn split(text: &str) -> Result<Vec<Vec<Token>>, SplitError> {
    let mut s = Splitter {
        commands: Vec::new(),
        command: Vec::new(),
        word: None,
        line: 1,
    };
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\n' => {
                s.end_command();
                s.line += 1;
            }
            ' ' | '\t' | '\r' => s.end_word(),
            '\\' => match chars.next() {
                Some('\n') => s.line += 1,
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                    s.line += 1;
                }
                Some(c) => s.push_char(c),
                None => {}
            },
            '#' if s.word.is_none() => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            ';' => s.end_command(),
            '&' | '|' => {
                if chars.peek() == Some(&ch) {
                    chars.next();
                }
                s.end_command();
            }
            '\'' => {
                let open = s.line;
                s.touch();
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => {
                            if c == '\n' {
                                s.line += 1;
                            }
                            s.push_char(c);
                        }
                        None => return Err(unterminated('\'', open)),
                    }
                }
            }
            '"' => {
                let open = s.line;
                s.touch();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('\n') => s.line += 1,
                            Some(c @ ('"' | '\\' | '$' | '`')) => s.push_char(c),
                            Some(c) => {
                                s.push_char('\\');
                                if c == '\n' {
                                    s.line += 1;
                                }
                                s.push_char(c);
                            }
                            None => return Err(unterminated('"', open)),
                        },
                        Some(c) => {
                            if c == '\n' {
                                s.line += 1;
                            }
                            s.push_char(c);
                        }
                        None => return Err(unterminated('"', open)),
                    }
                }
            }
            c => s.push_char(c),
        }
    }
    s.end_command();
    Ok(s.commands)
}

fn unterminated(quote: char, line: usize) -> SplitError {
    SplitError {
        line,
        message: format!("unterminated {quote} quote; expected a closing {quote}"),
    }
}

/// True when `word` names a QEMU system emulator: `qemu-system-x86_64`, `qemu-kvm`, or
/// Debian/Proxmox's `kvm` wrapper, with or without a directory.
pub fn is_qemu_binary(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    base.starts_with("qemu-system-") || base == "qemu-kvm" || base == "kvm"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<String>> {
        split(text)
            .unwrap()
            .into_iter()
            .map(|c| c.into_iter().map(|t| t.text).collect())
            .collect()
    }

    #[test]
    fn continuations_quotes_comments() {
        let w = words(
            "LC_ALL=C \\\n/usr/bin/qemu-system-x86_64 \\\n-cpu 'qemu64,hv-vendor-id=KVM Hv' # c\n",
        );
        assert_eq!(
            w,
            vec![vec![
                "LC_ALL=C",
                "/usr/bin/qemu-system-x86_64",
                "-cpu",
                "qemu64,hv-vendor-id=KVM Hv"
            ]]
        );
        assert_eq!(
            words("a \"b \\\"c\\\"\" ''; d && e"),
            vec![vec!["a", "b \"c\"", ""], vec!["d"], vec!["e"]]
        );
    }

    #[test]
    fn lines_and_errors() {
        let c = split("a \\\n  b\nc 'x\ny' d").unwrap();
        assert_eq!(c[0][1].line, 2);
        assert_eq!(c[1][2].line, 4);
        let e = split("a\nb 'open").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("expected"));
    }

    #[test]
    fn binaries() {
        assert!(is_qemu_binary("/usr/bin/kvm"));
        assert!(is_qemu_binary("qemu-system-x86_64"));
        assert!(!is_qemu_binary("qemu-img"));
    }
}
