//! The `$` forms of a shell word: `$NAME`, `$1`, `$@`, `${NAME[index] op word}` with the
//! default/assign/alternate operators (others kept unevaluated), `$(…)`, `$((…))`, backticks
//! and `$'…'` quoting.

use super::{Lexer, Param, ParamOp, Part, Res, Word, push_lit, quoted_empty, unterminated};

impl Lexer {
    /// After `$`.
    pub(super) fn dollar(&mut self, w: &mut Word, quoted: bool) -> Res<()> {
        match self.peek() {
            Some('{') => {
                self.bump();
                if self.nesting >= super::MAX_NESTING {
                    return self.err(
                        self.line,
                        format!(
                            "${{…}} nested more than {} deep: not a launch script virtlens reads",
                            super::MAX_NESTING
                        ),
                    );
                }
                self.nesting += 1;
                let p = self.braced(quoted);
                self.nesting -= 1;
                w.parts.push(Part::Param(Box::new(p?)));
            }
            Some('(') => {
                self.bump();
                let s = self.parens("$(")?;
                w.parts.push(Part::Subst(s));
            }
            Some('\'') if !quoted => {
                self.bump();
                self.ansi_c(w)?;
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let name = self.name();
                w.parts.push(param(name, None, ParamOp::Plain, quoted));
            }
            Some(c @ ('0'..='9' | '@' | '*' | '#' | '?' | '$' | '!' | '-')) => {
                self.bump();
                w.parts
                    .push(param(c.to_string(), None, ParamOp::Plain, quoted));
            }
            _ => push_lit(w, '$'),
        }
        Ok(())
    }

    /// A variable name (letters, digits, `_`) at the current position.
    fn name(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            name.push(c);
            self.bump();
        }
        name
    }

    /// After `${`.
    fn braced(&mut self, quoted: bool) -> Res<Param> {
        let open = self.line;
        let start = self.pos;
        let special = matches!(self.peek(), Some('#' | '!')) && self.peek_at(1) != Some('}');
        if special {
            self.bump();
        }
        let mut name = self.name();
        if name.is_empty()
            && let Some(c @ ('@' | '*' | '#' | '?' | '$' | '!' | '-')) = self.peek()
        {
            name.push(c);
            self.bump();
        }
        let mut index = None;
        if self.peek() == Some('[') {
            self.bump();
            let mut i = String::new();
            while let Some(c) = self.peek().filter(|c| *c != ']' && *c != '}') {
                i.push(c);
                self.bump();
            }
            if self.bump() != Some(']') {
                return self.err(open, "unterminated ${…[ ; expected ]".to_string());
            }
            index = Some(i);
        }
        let colon = self.peek() == Some(':') && matches!(self.peek_at(1), Some('-' | '=' | '+'));
        if colon {
            self.bump();
        }
        let op = match self.peek() {
            Some('}') => ParamOp::Plain,
            Some(c @ ('-' | '=' | '+')) if !special => {
                self.bump();
                let word = self.operand(quoted, open)?;
                match c {
                    '-' => ParamOp::Default { colon, word },
                    '=' => ParamOp::Assign { colon, word },
                    _ => ParamOp::Alternate { colon, word },
                }
            }
            _ => {
                self.operand(quoted, open)?;
                ParamOp::Other
            }
        };
        if self.bump() != Some('}') {
            return self.err(open, unterminated("${"));
        }
        let written: String = format!(
            "${{{}",
            self.chars[start..self.pos].iter().collect::<String>()
        );
        Ok(Param {
            name,
            index,
            op: if special { ParamOp::Other } else { op },
            quoted,
            written,
        })
    }

    /// The word after an operator in `${…}`, up to (not including) the closing `}`.
    fn operand(&mut self, quoted: bool, open: usize) -> Res<Word> {
        let mut w = Word {
            parts: Vec::new(),
            line: self.line,
        };
        loop {
            match self.peek() {
                Some('}') => return Ok(w),
                None => return self.err(open, unterminated("${")),
                Some(c) => {
                    self.bump();
                    match c {
                        '\\' => {
                            if let Some(x) = self.bump().filter(|x| *x != '\n') {
                                push_lit(&mut w, x);
                            }
                        }
                        '\'' if !quoted => loop {
                            match self.bump() {
                                Some('\'') => break,
                                Some(x) => push_lit(&mut w, x),
                                None => return self.err(open, unterminated("'")),
                            }
                        },
                        '"' => self.double_quoted(&mut w)?,
                        '$' => self.dollar(&mut w, quoted)?,
                        x => push_lit(&mut w, x),
                    }
                }
            }
        }
    }

    /// After `$(` (or `<(`): up to the matching `)`, as written.
    pub(super) fn parens(&mut self, opening: &str) -> Res<String> {
        let open = self.line;
        let start = self.pos;
        let mut depth = 1usize;
        while let Some(c) = self.bump() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.chars[start..self.pos - 1].iter().collect();
                        return Ok(format!("{opening}{inner})"));
                    }
                }
                '\\' => {
                    self.bump();
                }
                '\'' => while self.bump().is_some_and(|x| x != '\'') {},
                '"' => loop {
                    match self.bump() {
                        Some('\\') => {
                            self.bump();
                        }
                        Some('"') | None => break,
                        _ => {}
                    }
                },
                _ => {}
            }
        }
        self.err(open, unterminated(opening))
    }

    /// After `` ` ``: up to the closing backtick, as written.
    pub(super) fn backtick(&mut self) -> Res<String> {
        let open = self.line;
        let mut s = String::from("`");
        loop {
            match self.bump() {
                Some('`') => {
                    s.push('`');
                    return Ok(s);
                }
                Some('\\') => {
                    if let Some(x) = self.bump() {
                        s.push(x);
                    }
                }
                Some(c) => s.push(c),
                None => return self.err(open, unterminated("`")),
            }
        }
    }

    /// After `$'`: ANSI-C quoting with the common escapes.
    fn ansi_c(&mut self, w: &mut Word) -> Res<()> {
        let open = self.line;
        loop {
            match self.bump() {
                Some('\'') => {
                    quoted_empty(w);
                    return Ok(());
                }
                Some('\\') => match self.bump() {
                    Some('n') => push_lit(w, '\n'),
                    Some('t') => push_lit(w, '\t'),
                    Some(c) => push_lit(w, c),
                    None => return self.err(open, unterminated("$'")),
                },
                Some(c) => push_lit(w, c),
                None => return self.err(open, unterminated("$'")),
            }
        }
    }
}

fn param(name: String, index: Option<String>, op: ParamOp, quoted: bool) -> Part {
    let written = format!("${name}");
    Part::Param(Box::new(Param {
        name,
        index,
        op,
        quoted,
        written,
    }))
}
