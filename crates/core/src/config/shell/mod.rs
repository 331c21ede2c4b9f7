//! Splitting a launch script into commands and words the way a POSIX shell (and bash, for
//! arrays) reads them, as far as a QEMU command line needs: `\` line continuations, single,
//! double and `$'…'` quotes (also across lines), backslash escapes, `#` comments, `;`, `&&`,
//! `||`, `|`, `&`, `(`, `)` and newlines between commands, redirections (`2>&1`, `> log`,
//! here-documents, which are skipped), and the expansions a word holds — `$X`, `${X}`,
//! `${X:-default}` and its kin, `${A[@]}`, `$1`, `$@`, `$(…)`, `` `…` `` — kept as parts so
//! that [`super::script`] can resolve them ([`expansion`] reads them). Every word keeps the
//! line it starts on.

mod expansion;

/// One word of a command and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub parts: Vec<Part>,
    pub line: usize,
}

/// A piece of a word as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Text with its quotes removed: never expanded or split.
    Lit(String),
    /// A parameter expansion (`$X`, `${X:-word}`, `"$@"`).
    Param(Box<Param>),
    /// `$(…)`, `` `…` ``, `$((…))`, `<(…)`: output known only when the script runs (as written).
    Subst(String),
    /// `NAME=( … )`: the elements of an array assignment (right after `NAME=` or `NAME+=`).
    Array(Vec<Word>),
}

/// `${name[index] op word}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    /// `X`, `1`, `@`, `*`, `#`.
    pub name: String,
    /// `@`, `*` or an element number for `${A[…]}`.
    pub index: Option<String>,
    pub op: ParamOp,
    /// Inside double quotes (not field-split).
    pub quoted: bool,
    /// As written (`${CPU:-host}`), for messages.
    pub written: String,
}

/// What a parameter expansion does beyond substituting the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParamOp {
    Plain,
    /// `${X:-w}` (`colon`: also when empty) / `${X-w}`.
    Default {
        colon: bool,
        word: Word,
    },
    /// `${X:=w}` / `${X=w}`: as Default, and assigns.
    Assign {
        colon: bool,
        word: Word,
    },
    /// `${X:+w}` / `${X+w}`: `w` when set.
    Alternate {
        colon: bool,
        word: Word,
    },
    /// Length, pattern removal, substitution, substrings, indirection: not evaluated.
    Other,
}

/// Why a script could not be split: the line and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitError {
    pub line: usize,
    pub message: String,
}

pub(super) type Res<T> = Result<T, SplitError>;

pub(super) struct Lexer {
    chars: Vec<char>,
    pos: usize,
    pub(super) line: usize,
    /// Here-document delimiters waiting for the end of the line (`<<-` strips tabs).
    heredocs: Vec<(String, bool)>,
    /// How many `${…}` are open around the current position.
    nesting: usize,
}

/// The deepest `${…}` nesting read: real scripts nest two or three; each level is a frame of
/// the recursive reader, and 12,000 levels overflowed the stack (repro A1).
pub(super) const MAX_NESTING: usize = 64;

/// Characters that end an unquoted word.
fn is_break(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `NAME=`, `NAME+=`: the start of an assignment (an array literal may follow).
fn is_assignment_head(w: &Word) -> bool {
    match w.parts.as_slice() {
        [Part::Lit(s)] => s
            .strip_suffix('=')
            .map(|n| n.strip_suffix('+').unwrap_or(n))
            .is_some_and(is_name),
        _ => false,
    }
}

impl Lexer {
    pub(super) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    pub(super) fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    pub(super) fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if let Some(ch) = c {
            self.pos += 1;
            if ch == '\n' {
                self.line += 1;
            }
        }
        c
    }

    pub(super) fn err<T>(&self, line: usize, message: String) -> Res<T> {
        Err(SplitError { line, message })
    }

    /// Skips blanks and `\`-newline continuations (not newlines).
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => {
                    self.bump();
                }
                Some('\\') if self.peek_at(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                _ => return,
            }
        }
    }

    fn skip_comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.bump();
        }
    }

    /// After a newline: the bodies of pending here-documents.
    fn skip_heredocs(&mut self) {
        for (delim, strip) in std::mem::take(&mut self.heredocs) {
            while self.peek().is_some() {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                self.bump();
                let t = if strip {
                    text.trim_start_matches('\t')
                } else {
                    &text
                };
                if t.trim_end_matches('\r') == delim {
                    break;
                }
            }
        }
    }

    /// One word, or `None` at an operator, a newline, a comment or the end.
    fn word(&mut self) -> Res<Option<Word>> {
        let mut w = Word {
            parts: Vec::new(),
            line: self.line,
        };
        let mut started = false;
        while let Some(c) = self.peek() {
            if is_break(c) {
                if c == '(' && is_assignment_head(&w) {
                    self.bump();
                    let elements = self.array()?;
                    w.parts.push(Part::Array(elements));
                    continue;
                }
                break;
            }
            if c == '#' && !started {
                break;
            }
            started = true;
            self.bump();
            match c {
                '\\' => match self.bump() {
                    Some('\n') | None => {}
                    Some(x) => push_lit(&mut w, x),
                },
                '\'' => {
                    let open = self.line;
                    loop {
                        match self.bump() {
                            Some('\'') => {
                                quoted_empty(&mut w);
                                break;
                            }
                            Some(x) => push_lit(&mut w, x),
                            None => return self.err(open, unterminated("'")),
                        }
                    }
                }
                '"' => self.double_quoted(&mut w)?,
                '$' => self.dollar(&mut w, false)?,
                '`' => {
                    let s = self.backtick()?;
                    w.parts.push(Part::Subst(s));
                }
                x => push_lit(&mut w, x),
            }
        }
        Ok(started.then_some(w))
    }

    pub(super) fn double_quoted(&mut self, w: &mut Word) -> Res<()> {
        let open = self.line;
        loop {
            match self.bump() {
                Some('"') => {
                    quoted_empty(w);
                    return Ok(());
                }
                Some('\\') => match self.bump() {
                    Some('\n') => {}
                    Some(c @ ('"' | '\\' | '$' | '`')) => push_lit(w, c),
                    Some(c) => {
                        push_lit(w, '\\');
                        push_lit(w, c);
                    }
                    None => return self.err(open, unterminated("\"")),
                },
                Some('$') => self.dollar(w, true)?,
                Some('`') => {
                    let s = self.backtick()?;
                    w.parts.push(Part::Subst(s));
                }
                Some(c) => push_lit(w, c),
                None => return self.err(open, unterminated("\"")),
            }
        }
    }

    /// After `NAME=(`: the elements up to `)`, across lines.
    fn array(&mut self) -> Res<Vec<Word>> {
        let open = self.line;
        let mut out = Vec::new();
        loop {
            self.skip_blanks();
            match self.peek() {
                Some(')') => {
                    self.bump();
                    return Ok(out);
                }
                Some('\n') => {
                    self.bump();
                }
                Some('#') => self.skip_comment(),
                None => return self.err(open, unterminated("(")),
                Some(c) if is_break(c) => {
                    return self.err(
                        self.line,
                        format!("`{c}` inside an array; expected words and a closing )"),
                    );
                }
                Some(_) => {
                    if let Some(w) = self.word()? {
                        out.push(w);
                    }
                }
            }
        }
    }

    /// At `<`/`>` (an optional fd number already read as `pending`): skips the operator and
    /// its target word; a here-document's body is skipped at the end of the line.
    fn redirection(&mut self) -> Res<()> {
        let first = self.bump();
        let mut heredoc = None;
        match (first, self.peek()) {
            (Some('<'), Some('<')) => {
                self.bump();
                if self.peek() == Some('<') {
                    self.bump(); // here-string: the target is a word
                } else {
                    let strip = self.peek() == Some('-');
                    if strip {
                        self.bump();
                    }
                    heredoc = Some(strip);
                }
            }
            (Some('<'), Some('(')) | (Some('>'), Some('(')) => {
                self.bump();
                self.parens("<(")?;
                return Ok(());
            }
            (Some('>'), Some('>' | '&' | '|')) | (Some('<'), Some('&' | '>')) => {
                self.bump();
            }
            _ => {}
        }
        self.skip_blanks();
        let target = self.word()?;
        if let Some(strip) = heredoc {
            let delim = target.map(|w| literal(&w)).unwrap_or_default();
            self.heredocs.push((delim, strip));
        }
        Ok(())
    }
}

pub(super) fn unterminated(what: &str) -> String {
    let close = match what {
        "'" | "$'" => "'",
        "\"" => "\"",
        "`" => "`",
        "${" => "}",
        _ => ")",
    };
    format!("unterminated {what}; expected a closing {close}")
}

pub(super) fn push_lit(w: &mut Word, c: char) {
    if let Some(Part::Lit(s)) = w.parts.last_mut() {
        s.push(c);
    } else {
        w.parts.push(Part::Lit(c.to_string()));
    }
}

/// After closing quotes: makes sure the word has a part (so `''` is a word).
pub(super) fn quoted_empty(w: &mut Word) {
    if w.parts.is_empty() {
        w.parts.push(Part::Lit(String::new()));
    }
}

/// The text of a word's literal parts (expansions as written).
pub(crate) fn literal(w: &Word) -> String {
    w.parts
        .iter()
        .map(|p| match p {
            Part::Lit(s) => s.clone(),
            Part::Param(p) => p.written.clone(),
            Part::Subst(s) => s.clone(),
            Part::Array(_) => "(…)".to_string(),
        })
        .collect()
}

/// The commands of `text`, each as its words.
pub(crate) fn split(text: &str) -> Result<Vec<Vec<Word>>, SplitError> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        heredocs: Vec::new(),
        nesting: 0,
    };
    let mut commands = Vec::new();
    let mut command: Vec<Word> = Vec::new();
    loop {
        lx.skip_blanks();
        let Some(c) = lx.peek() else { break };
        match c {
            '\n' => {
                lx.bump();
                lx.skip_heredocs();
                end(&mut commands, &mut command);
            }
            '#' => lx.skip_comment(),
            ';' | '|' | '(' | ')' => {
                lx.bump();
                end(&mut commands, &mut command);
            }
            '&' if lx.peek_at(1) == Some('>') => {
                lx.bump();
                lx.redirection()?;
            }
            '&' => {
                lx.bump();
                end(&mut commands, &mut command);
            }
            '<' | '>' => lx.redirection()?,
            _ => {
                if let Some(w) = lx.word()? {
                    // `2>&1`, `1> log`: a number right before the operator is its fd.
                    let fd = matches!(lx.peek(), Some('<' | '>'))
                        && matches!(w.parts.as_slice(), [Part::Lit(s)] if s.chars().all(|c| c.is_ascii_digit()));
                    if !fd {
                        command.push(w);
                    }
                }
            }
        }
    }
    end(&mut commands, &mut command);
    Ok(commands)
}

fn end(commands: &mut Vec<Vec<Word>>, command: &mut Vec<Word>) {
    if !command.is_empty() {
        commands.push(std::mem::take(command));
    }
}

/// True when `word` names a QEMU system emulator: `qemu-system-x86_64`, `qemu-kvm`, or
/// Debian/Proxmox's `kvm` wrapper, with or without a directory.
pub(crate) fn is_qemu_binary(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    base.starts_with("qemu-system-") || base == "qemu-kvm" || base == "kvm"
}

#[cfg(test)]
mod tests;
