//! The shell model of a launch script: runs its variable assignments in file order (`X=…`,
//! `export X=…`, `X+=…`, arrays `A=(…)`, `${X:=default}`, `unset X`) and expands every other
//! command's words the way the shell would at that point — `$X`, `${X}`, `${X:-default}`,
//! `${A[@]}`, field splitting of unquoted expansions on `IFS`. A value the file does not set
//! (the environment, the script's arguments, a command's output) stays unknown: its word keeps
//! the expansion as written and says why in [`Unknown`], so the QEMU reader can make it a
//! caveat instead of a value. [`invocations`] finds the commands that run QEMU.

mod invocation;

pub(crate) use invocation::{invocations, is_qemu_option};

use std::collections::HashMap;

use super::shell::{self, Param, ParamOp, Part, SplitError, Word};

/// A value the script does not determine: the expansion as written and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unknown {
    pub written: String,
    pub why: String,
}

/// One word after expansion, with the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub text: String,
    pub line: usize,
    /// Expansions in `text` (kept as written) whose values are unknown.
    pub unknown: Vec<Unknown>,
}

impl Token {
    /// A token with a known value.
    pub(crate) fn known(text: impl Into<String>, line: usize) -> Token {
        Token {
            text: text.into(),
            line,
            unknown: Vec::new(),
        }
    }

    /// True when `part` (a piece of this token's text) holds an unknown expansion.
    pub(crate) fn has_unknown_in(&self, part: &str) -> bool {
        self.unknown.iter().any(|u| part.contains(&u.written))
    }

    /// The unknown expansions in `part`, for a caveat.
    pub(crate) fn unknown_in(&self, part: &str) -> Vec<&Unknown> {
        self.unknown
            .iter()
            .filter(|u| part.contains(&u.written))
            .collect()
    }
}

const SUBST: &str = "the output of a command, known only when the script runs";

/// A piece of an expanded value: known text, or an unknown expansion (its text as written).
#[derive(Debug, Clone)]
struct Piece {
    text: String,
    unknown: Option<Unknown>,
    /// Known text from an unquoted expansion: field splitting applies.
    split: bool,
    /// The line of the word the text was written in (an assignment, for a variable's value).
    line: usize,
}

type Value = Vec<Piece>;

#[derive(Debug, Clone)]
enum Var {
    Scalar(Value),
    Array(Vec<Value>),
}

/// A command after expansion.
#[derive(Debug, Clone)]
pub(crate) struct Command {
    pub words: Vec<Token>,
    /// The line the command starts on.
    pub line: usize,
}

/// Variables as the script sets them, in order.
#[derive(Default)]
struct Env {
    vars: HashMap<String, Var>,
    /// Why expanding stopped: a value grew past [`MAX_VALUE`].
    error: Option<SplitError>,
}

/// The longest value a variable may take. A launch script's values are at most a few KiB; a
/// script that doubles a variable (`A=$A$A`) 22 times took 2.1 GB (repro A2).
pub(crate) const MAX_VALUE: usize = 1 << 20;

/// What a piece of a value costs besides its text (its bookkeeping), so that a value made of
/// millions of one-byte pieces counts for what it takes.
const PIECE_COST: usize = 64;

/// The bytes a variable takes: its text and its pieces.
fn size_of(var: &Var) -> usize {
    let value = |v: &Value| v.iter().map(|p| p.text.len() + PIECE_COST).sum::<usize>();
    match var {
        Var::Scalar(v) => value(v),
        Var::Array(vs) => vs.iter().map(value).sum(),
    }
}

/// Builtins whose arguments are assignments.
const DECLARE: [&str; 6] = ["export", "local", "readonly", "declare", "typeset", "set"];

/// `NAME=…` / `NAME+=…` at the start of a word: (name, append).
fn assignment(w: &Word) -> Option<(String, bool)> {
    let Some(Part::Lit(first)) = w.parts.first() else {
        return None;
    };
    let (head, _) = first.split_once('=')?;
    let (name, append) = match head.strip_suffix('+') {
        Some(n) => (n, true),
        None => (head, false),
    };
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then(|| (name.to_string(), append))
}

/// The script's commands with assignments applied and words expanded; an error when a variable
/// grows past [`MAX_VALUE`].
pub(crate) fn expand(commands: &[Vec<Word>]) -> Result<Vec<Command>, SplitError> {
    let mut env = Env::default();
    let mut out = Vec::new();
    for cmd in commands {
        if let Some(e) = env.error.take() {
            return Err(e);
        }
        // `then X=1`, `{ X=1; }`: a keyword before an assignment does not make it a command.
        let kw = cmd
            .iter()
            .take_while(|w| ["then", "else", "do", "{"].contains(&shell::literal(w).as_str()))
            .count();
        let cmd = &cmd[kw..];
        if cmd.is_empty() {
            continue;
        }
        let lead = cmd.iter().take_while(|w| assignment(w).is_some()).count();
        let mut rest = &cmd[lead..];
        let declares = rest
            .first()
            .is_some_and(|w| DECLARE.contains(&shell::literal(w).as_str()));
        if lead == cmd.len() || declares {
            if declares {
                rest = &rest[1..];
            }
            for w in cmd[..lead].iter().chain(rest) {
                env.assign(w);
            }
            continue;
        }
        match shell::literal(&rest[0]).as_str() {
            "unset" => {
                for w in &rest[1..] {
                    env.vars.remove(&shell::literal(w));
                }
                continue;
            }
            "read" => {
                for w in rest[1..]
                    .iter()
                    .filter(|w| !shell::literal(w).starts_with('-'))
                {
                    env.vars.remove(&shell::literal(w));
                }
                continue;
            }
            _ => {}
        }
        let mut words = Vec::new();
        for w in rest {
            words.extend(env.expand_word(w));
        }
        out.push(Command {
            words,
            line: rest[0].line,
        });
    }
    match env.error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

impl Env {
    /// Applies `NAME=value`, `NAME+=value`, `NAME=(…)`; other words (declare's options) are
    /// ignored.
    fn assign(&mut self, w: &Word) {
        let Some((name, append)) = assignment(w) else {
            return;
        };
        let mut parts = w.parts.clone();
        if let Some(Part::Lit(first)) = parts.first_mut()
            && let Some((_, rest)) = first.split_once('=')
        {
            *first = rest.to_string();
        }
        if let Some(Part::Array(elements)) = parts.iter().find(|p| matches!(p, Part::Array(_))) {
            let mut values: Vec<Value> = Vec::new();
            for e in elements {
                values.extend(self.expand_word(e).into_iter().map(value_of));
            }
            let var = match (append, self.vars.remove(&name)) {
                (true, Some(Var::Array(mut old))) => {
                    old.extend(values);
                    Var::Array(old)
                }
                (true, Some(Var::Scalar(old))) => {
                    Var::Array(std::iter::once(old).chain(values).collect())
                }
                _ => Var::Array(values),
            };
            self.keep(name, var, w.line);
            return;
        }
        // No field splitting in an assignment.
        let value = self.expand_joined(&Word {
            parts,
            line: w.line,
        });
        let var = match (append, self.vars.remove(&name)) {
            (true, Some(Var::Scalar(mut old))) => {
                old.extend(value);
                Var::Scalar(old)
            }
            (true, Some(Var::Array(mut old))) => {
                if let Some(first) = old.first_mut() {
                    first.extend(value);
                } else {
                    old.push(value);
                }
                Var::Array(old)
            }
            _ => Var::Scalar(value),
        };
        self.keep(name, var, w.line);
    }

    /// Sets `name` to `var`, unless it grew past [`MAX_VALUE`]: then expanding stops with an
    /// error naming the line.
    fn keep(&mut self, name: String, var: Var, line: usize) {
        if size_of(&var) > MAX_VALUE {
            self.error.get_or_insert(SplitError {
                line,
                message: format!(
                    "`{name}` grows past {} KiB here: not a launch script virtlens reads",
                    MAX_VALUE >> 10
                ),
            });
            return;
        }
        self.vars.insert(name, var);
    }

    /// A word's value without field splitting (assignments, `${X:-word}`).
    fn expand_joined(&mut self, w: &Word) -> Value {
        let mut v = Value::new();
        for p in &w.parts {
            match p {
                Part::Lit(s) => v.push(known(s, w.line)),
                Part::Param(param) => {
                    let fields = self.param(param, w.line);
                    let joined = join(fields, ' ');
                    v.extend(joined.into_iter().map(|mut x| {
                        x.split = false;
                        x
                    }));
                }
                Part::Subst(s) => v.push(unknown(s, SUBST, w.line)),
                Part::Array(_) => {}
            }
        }
        v
    }

    fn ifs(&self) -> Vec<char> {
        match self.vars.get("IFS") {
            Some(Var::Scalar(v)) if v.iter().all(|p| p.unknown.is_none()) => {
                v.iter().flat_map(|p| p.text.chars()).collect()
            }
            _ => vec![' ', '\t', '\n'],
        }
    }

    /// The fields of a parameter expansion (before field splitting): one for a scalar, one per
    /// element for `${A[@]}`.
    fn param(&mut self, p: &Param, line: usize) -> Vec<Value> {
        let quoted = p.quoted;
        let mark = |mut v: Value| -> Value {
            for x in &mut v {
                x.split = !quoted && x.unknown.is_none();
            }
            v
        };
        let value = self.lookup(p);
        let set = value.is_some();
        let empty = value.as_ref().is_none_or(|f| {
            f.iter()
                .all(|v| v.iter().all(|x| x.text.is_empty() && x.unknown.is_none()))
        });
        let fields = match &p.op {
            ParamOp::Plain => value,
            ParamOp::Default { colon, word } | ParamOp::Assign { colon, word } => {
                if set && !(*colon && empty) {
                    value
                } else {
                    let d = self.expand_joined(word);
                    if matches!(p.op, ParamOp::Assign { .. }) {
                        self.keep(p.name.clone(), Var::Scalar(d.clone()), line);
                    }
                    Some(vec![d])
                }
            }
            ParamOp::Alternate { colon, word } => {
                if set && !(*colon && empty) {
                    Some(vec![self.expand_joined(word)])
                } else {
                    Some(Vec::new())
                }
            }
            ParamOp::Other => None,
        };
        match fields {
            Some(f) => f.into_iter().map(mark).collect(),
            None => vec![vec![unknown(&p.written, &why_unknown(p), line)]],
        }
    }

    /// The value of `p`'s variable (`None`: not set in the file, or not evaluated).
    fn lookup(&self, p: &Param) -> Option<Vec<Value>> {
        if matches!(p.op, ParamOp::Other) {
            return None;
        }
        let var = self.vars.get(&p.name)?;
        Some(match (var, p.index.as_deref()) {
            (Var::Scalar(v), None | Some("0" | "@" | "*")) => vec![v.clone()],
            (Var::Scalar(_), Some(_)) => Vec::new(),
            (Var::Array(a), None) => a.first().cloned().into_iter().collect(),
            (Var::Array(a), Some("@")) => a.clone(),
            (Var::Array(a), Some("*")) => {
                let sep = self.ifs().first().copied().unwrap_or(' ');
                vec![join(a.clone(), sep)]
            }
            (Var::Array(a), Some(i)) => {
                let i: usize = i.trim().parse().ok()?;
                a.get(i).cloned().into_iter().collect()
            }
        })
    }

    /// A word's fields after expansion and field splitting.
    fn expand_word(&mut self, w: &Word) -> Vec<Token> {
        let ifs = self.ifs();
        let mut fields: Vec<Value> = Vec::new();
        let mut current: Value = Vec::new();
        let mut started = false;
        for p in &w.parts {
            match p {
                Part::Lit(s) => {
                    current.push(known(s, w.line));
                    started = true;
                }
                Part::Subst(s) => {
                    current.push(unknown(s, SUBST, w.line));
                    started = true;
                }
                Part::Array(_) => {}
                Part::Param(param) => {
                    let values = self.param(param, w.line);
                    let n = values.len();
                    for (i, v) in values.into_iter().enumerate() {
                        if i > 0 {
                            fields.push(std::mem::take(&mut current));
                        }
                        if param.quoted {
                            started = true;
                        }
                        for piece in v {
                            if !piece.split {
                                started |= !piece.text.is_empty() || piece.unknown.is_some();
                                current.push(piece);
                                continue;
                            }
                            let mut rest = piece.text.as_str();
                            while let Some(at) = rest.find(|c| ifs.contains(&c)) {
                                if at > 0 {
                                    current.push(known(&rest[..at], piece.line));
                                    started = true;
                                }
                                if started {
                                    fields.push(std::mem::take(&mut current));
                                    started = false;
                                }
                                rest = &rest
                                    [at + rest[at..].chars().next().map_or(1, char::len_utf8)..];
                            }
                            if !rest.is_empty() {
                                current.push(known(rest, piece.line));
                                started = true;
                            }
                        }
                        if param.quoted && i + 1 < n {
                            started = true;
                        }
                    }
                }
            }
        }
        if started || !current.is_empty() {
            fields.push(current);
        }
        fields
            .into_iter()
            .filter(|f| !f.is_empty() || w.parts.iter().any(|p| matches!(p, Part::Lit(_))))
            .map(|f| token(f, w.line))
            .collect()
    }
}

fn known(s: &str, line: usize) -> Piece {
    Piece {
        text: s.to_string(),
        unknown: None,
        split: false,
        line,
    }
}

fn unknown(written: &str, why: &str, line: usize) -> Piece {
    Piece {
        line,
        text: written.to_string(),
        unknown: Some(Unknown {
            written: written.to_string(),
            why: why.to_string(),
        }),
        split: false,
    }
}

fn why_unknown(p: &Param) -> String {
    match p.name.as_str() {
        "@" | "*" | "#" => "the script's arguments, known only when it runs".to_string(),
        n if n.chars().all(|c| c.is_ascii_digit()) => {
            "an argument of the script, known only when it runs".to_string()
        }
        "?" | "$" | "!" | "-" => "a shell status value".to_string(),
        _ if matches!(p.op, ParamOp::Other) => {
            "a length, pattern or substring expansion, not evaluated".to_string()
        }
        _ => "not set in this file (it comes from the environment or a sourced file)".to_string(),
    }
}

fn join(values: Vec<Value>, sep: char) -> Value {
    let mut out = Value::new();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            let line = out.last().map_or(1, |p: &Piece| p.line);
            out.push(known(&sep.to_string(), line));
        }
        out.extend(v);
    }
    out
}

fn value_of(t: Token) -> Value {
    if t.unknown.is_empty() {
        return vec![known(&t.text, t.line)];
    }
    // Keep unknown pieces recognisable: split the text around their written forms.
    let mut out = Value::new();
    let mut rest = t.text.as_str();
    while let Some((at, u)) = t
        .unknown
        .iter()
        .filter_map(|u| rest.find(&u.written).map(|at| (at, u)))
        .min_by_key(|(at, _)| *at)
    {
        if at > 0 {
            out.push(known(&rest[..at], t.line));
        }
        out.push(unknown(&u.written, &u.why, t.line));
        rest = &rest[at + u.written.len()..];
    }
    if !rest.is_empty() {
        out.push(known(rest, t.line));
    }
    out
}

/// A field as a token, on the line its first piece was written (an assignment's line for a
/// variable's value, so findings point where the value can be changed).
fn token(f: Value, line: usize) -> Token {
    let line = f.first().map_or(line, |p| p.line);
    let mut t = Token::known(String::new(), line);
    for p in f {
        t.text.push_str(&p.text);
        if let Some(u) = p.unknown
            && !t.unknown.contains(&u)
        {
            t.unknown.push(u);
        }
    }
    t
}

#[cfg(test)]
mod tests;
