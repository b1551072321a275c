//! The tokenizer of Go's `text/template` (Go 1.23 rules).
//!
//! It produces the whole token list up front; a lexical error becomes the last
//! token (`Tok::Error`), which the parser reports exactly where Go's parser
//! would meet it. Delimiters are fixed to `{{` and `}}` as Helm never changes them.

/// The kind of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    /// A lexical error; the text is the message.
    Error,
    /// `:=`
    Declare,
    /// `=`
    Assign,
    /// A boolean constant.
    Bool,
    /// A printable ASCII character not otherwise used (e.g. `,`).
    Char,
    /// A character constant such as `'a'`.
    CharConstant,
    /// A complex number constant.
    Complex,
    /// End of input.
    Eof,
    /// `.Field`
    Field,
    /// A function or keyword-less word.
    Identifier,
    /// `{{`
    LeftDelim,
    /// `(`
    LeftParen,
    /// A number.
    Number,
    /// `|`
    Pipe,
    /// A raw string with back quotes.
    RawString,
    /// `}}`
    RightDelim,
    /// `)`
    RightParen,
    /// Spaces inside an action.
    Space,
    /// A double-quoted string.
    String,
    /// Plain text outside actions.
    Text,
    /// `$x`
    Variable,
    /// Keyword `block`.
    Block,
    /// Keyword `break`.
    Break,
    /// Keyword `continue`.
    Continue,
    /// A lone `.`.
    Dot,
    /// Keyword `define`.
    Define,
    /// Keyword `else`.
    Else,
    /// Keyword `end`.
    End,
    /// Keyword `if`.
    If,
    /// Keyword `nil`.
    Nil,
    /// Keyword `range`.
    Range,
    /// Keyword `template`.
    Template,
    /// Keyword `with`.
    With,
}

/// One token: its kind and byte range in the template text. Tokens hold no
/// text of their own (use [`Item::text`]), so a token list can be reused
/// from one template to the next. An `Error` token's range is empty; the
/// message is returned by [`lex`] beside the tokens.
///
/// Offsets are 32-bit ([`lex`] refuses longer texts), which keeps a token
/// at 12 bytes: a large template has tens of thousands. A token's line is
/// not stored: only error messages need it, and [`Lexed::line`] works it
/// out from the offset.
#[derive(Debug, Clone, Copy)]
pub struct Item {
    /// Kind.
    pub typ: Tok,
    /// Byte offset of the token in the template text.
    pub pos: u32,
    /// Byte offset just past the token.
    pub end: u32,
}

impl Item {
    /// The token's text in `src`, the template it was lexed from.
    pub fn text<'s>(&self, src: &'s str) -> &'s str {
        src.get(self.pos as usize..self.end as usize).unwrap_or("")
    }
    /// The byte offset of the token, as an index.
    pub fn offset(&self) -> usize {
        self.pos as usize
    }

    /// Go's `item.String()`, used in parse error messages.
    pub fn describe(&self, src: &str) -> String {
        let val = self.text(src);
        match self.typ {
            Tok::Eof => "EOF".into(),
            Tok::Error => "lexical error".into(),
            Tok::Block
            | Tok::Break
            | Tok::Continue
            | Tok::Define
            | Tok::Else
            | Tok::End
            | Tok::If
            | Tok::Range
            | Tok::Template
            | Tok::With
            | Tok::Nil
            | Tok::Dot => format!("<{val}>"),
            _ => {
                if val.chars().count() > 10 {
                    let s: String = val.chars().take(10).collect();
                    format!("{}...", crate::gostd::strconv::quote(&s))
                } else {
                    crate::gostd::strconv::quote(val)
                }
            }
        }
    }
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    if c.is_ascii() {
        return c == '_' || c.is_ascii_alphanumeric();
    }
    c.is_alphabetic() || c.is_numeric()
}

/// What [`lex`] returns besides the tokens.
#[derive(Debug, Default)]
pub struct Lexed {
    /// The message of the lexical error the tokens stop at, if any.
    pub error: Option<String>,
    /// For each comment with newlines in it: the offset just past its
    /// `*/` and the newlines in this and all earlier comments. Go's lexer
    /// counts every newline except those inside comments.
    comment_newlines: Vec<(u32, u32)>,
}

impl Lexed {
    /// The 1-based line Go's lexer gives byte offset `pos` of `src` (the
    /// lexed text): one more than the newlines before it, not counting
    /// those inside comments.
    pub fn line(&self, src: &str, pos: usize) -> usize {
        let head = src.as_bytes().get(..pos).unwrap_or(src.as_bytes());
        let skipped = self
            .comment_newlines
            .iter()
            .take_while(|&&(end, _)| end as usize <= pos)
            .last()
            .map_or(0, |&(_, n)| n as usize);
        1 + memchr::memchr_iter(b'\n', head).count() - skipped
    }
}

/// Whether `b` may continue a word: an ASCII letter, digit or `_` (other
/// characters go through [`is_alnum`]).
fn is_word_byte(b: u8) -> bool {
    const TABLE: [bool; 256] = {
        let mut t = [false; 256];
        let mut i = 0;
        while i < 256 {
            let c = i as u8;
            t[i] = c == b'_' || c.is_ascii_alphanumeric();
            i += 1;
        }
        t
    };
    TABLE[b as usize]
}

/// Byte offset of the next `{{` in `s`.
fn find_left_delim(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    memchr::memchr_iter(b'{', b).find(|&i| b.get(i + 1) == Some(&b'{'))
}

struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    paren_depth: i32,
    items: &'a mut Vec<Item>,
    lexed: Lexed,
}

/// Tokenizes a whole template into `items` (cleared first). The last item
/// is `Eof`, or `Error` when lexing stopped at an error, whose message is
/// returned in [`Lexed::error`].
pub fn lex(input: &str, items: &mut Vec<Item>) -> Lexed {
    items.clear();
    if input.len() >= u32::MAX as usize {
        items.push(Item {
            typ: Tok::Error,
            pos: 0,
            end: 0,
        });
        return Lexed {
            error: Some("template is 4 GiB or longer".into()),
            ..Lexed::default()
        };
    }
    // Room for a token per four bytes: templates average one per nine (a
    // text between actions counts one), so the buffer rarely grows (which
    // copies every token), and room that is never written is never touched.
    // Counting the actions first cost a substring search per action.
    let room = input.len() / 4 + 2;
    if items.capacity() < room {
        // A fresh buffer, not `reserve`: growing an empty vector still
        // copies its whole old capacity, mostly never-written room, and
        // reading such pages maps the zero page into them, to be replaced
        // (with a TLB flush on every core) when the memory is reused.
        *items = Vec::with_capacity(room);
    }
    let mut l = Lexer {
        input,
        pos: 0,
        start: 0,
        paren_depth: 0,
        items,
        lexed: Lexed::default(),
    };
    l.run();
    l.lexed
}

enum State {
    Text,
    LeftDelim,
    Inside,
    Done,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }
    fn byte(&self) -> Option<u8> {
        self.input.as_bytes().get(self.pos).copied()
    }
    fn peek(&self) -> Option<char> {
        match self.byte() {
            Some(b) if b.is_ascii() => Some(b as char),
            Some(_) => self.rest().chars().next(),
            None => None,
        }
    }
    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn backup(&mut self, c: char) {
        self.pos -= c.len_utf8();
    }
    /// Skips ASCII bytes that satisfy `f` (never a newline).
    fn skip_ascii(&mut self, f: impl Fn(u8) -> bool) {
        let b = self.input.as_bytes();
        while self.pos < b.len() && f(b[self.pos]) {
            self.pos += 1;
        }
    }
    /// Appends a token. `lex` refuses texts of 4 GiB or more, so offsets
    /// fit in 32 bits.
    fn push(&mut self, typ: Tok, pos: usize, end: usize) {
        self.items.push(Item {
            typ,
            pos: pos as u32,
            end: end as u32,
        });
    }
    fn emit(&mut self, typ: Tok) {
        self.push(typ, self.start, self.pos);
        self.start = self.pos;
    }
    fn ignore(&mut self) {
        self.start = self.pos;
    }
    fn error(&mut self, msg: String) -> State {
        self.push(Tok::Error, self.start, self.start);
        self.lexed.error = Some(msg);
        State::Done
    }
    fn accept(&mut self, valid: &str) -> bool {
        if let Some(c) = self.peek() {
            if valid.contains(c) {
                self.next();
                return true;
            }
        }
        false
    }
    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn run(&mut self) {
        let mut st = State::Text;
        loop {
            st = match st {
                State::Text => self.lex_text(),
                State::LeftDelim => self.lex_left_delim(),
                State::Inside => self.lex_inside(),
                State::Done => return,
            }
        }
    }

    fn lex_text(&mut self) -> State {
        if let Some(x) = find_left_delim(self.rest()) {
            if x > 0 {
                self.pos += x;
                let mut trim = 0;
                if has_left_trim(&self.input[self.pos + LEFT.len()..]) {
                    let text = &self.input[self.start..self.pos];
                    trim = text.len()
                        - text
                            .trim_end_matches(|c: char| c.is_ascii() && is_space(c as u8))
                            .len();
                }
                let end = self.pos - trim;
                if end > self.start {
                    self.push(Tok::Text, self.start, end);
                }
                self.start = self.pos;
            }
            return State::LeftDelim;
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.push(Tok::Text, self.start, self.pos);
            self.start = self.pos;
        }
        self.push(Tok::Eof, self.pos, self.pos);
        State::Done
    }

    /// Whether the input at pos is a right delimiter, and whether it has a trim marker.
    fn at_right_delim(&self) -> (bool, bool) {
        let r = self.rest().as_bytes();
        match r {
            [b'}', b'}', ..] => (true, false),
            [s, b'-', b'}', b'}', ..] if is_space(*s) => (true, true),
            _ => (false, false),
        }
    }

    fn lex_left_delim(&mut self) -> State {
        self.pos += LEFT.len();
        let trim = has_left_trim(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with("/*") {
            self.pos += after;
            self.ignore();
            return self.lex_comment();
        }
        self.emit(Tok::LeftDelim);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        State::Inside
    }

    fn lex_comment(&mut self) -> State {
        self.pos += 2;
        let Some(x) = self.rest().find("*/") else {
            return self.error("unclosed comment".into());
        };
        self.pos += x + 2;
        // Go's lexer skips the comment without counting its newlines.
        let newlines =
            memchr::memchr_iter(b'\n', &self.input.as_bytes()[self.start..self.pos]).count();
        if newlines > 0 {
            let before = self.lexed.comment_newlines.last().map_or(0, |&(_, n)| n);
            self.lexed
                .comment_newlines
                .push((self.pos as u32, before + newlines as u32));
        }
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.error("comment ends before closing delimiter".into());
        }
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT.len();
        if trim {
            self.pos += left_trim_len(self.rest());
        }
        self.ignore();
        State::Text
    }

    fn lex_right_delim(&mut self) -> State {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(Tok::RightDelim);
        if trim {
            self.pos += left_trim_len(self.rest());
            self.ignore();
        }
        State::Text
    }

    fn lex_inside(&mut self) -> State {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return self.lex_right_delim();
            }
            return self.error("unclosed left paren".into());
        }
        let Some(b) = self.byte() else {
            return self.error("unclosed action".into());
        };
        if b.is_ascii() {
            // One byte, never a newline here (spaces are handled first).
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => return self.lex_space(),
                b'"' => {
                    self.pos += 1;
                    return self.lex_quote();
                }
                b'`' => {
                    self.pos += 1;
                    return self.lex_raw_quote();
                }
                b'$' => {
                    self.pos += 1;
                    return self.lex_field_or_var(Tok::Variable);
                }
                b'.' => match self.input.as_bytes().get(self.pos + 1) {
                    Some(d) if !d.is_ascii_digit() => {
                        self.pos += 1;
                        return self.lex_field_or_var(Tok::Field);
                    }
                    _ => return self.lex_number(),
                },
                b'+' | b'-' | b'0'..=b'9' => return self.lex_number(),
                b'_' | b'a'..=b'z' | b'A'..=b'Z' => return self.lex_identifier(),
                _ => {}
            }
        }
        let Some(r) = self.next() else {
            return self.error("unclosed action".into());
        };
        match r {
            '=' => self.emit(Tok::Assign),
            ':' => {
                if self.next() != Some('=') {
                    return self.error("expected :=".into());
                }
                self.emit(Tok::Declare);
            }
            '|' => self.emit(Tok::Pipe),
            '\'' => return self.lex_char(),
            c if is_alnum(c) => {
                self.backup(c);
                return self.lex_identifier();
            }
            '(' => {
                self.emit(Tok::LeftParen);
                self.paren_depth += 1;
            }
            ')' => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.error("unexpected right paren".into());
                }
                self.emit(Tok::RightParen);
            }
            c if c.is_ascii() && !c.is_ascii_control() => self.emit(Tok::Char),
            c => {
                return self.error(format!(
                    "unrecognized character in action: {}",
                    crate::gostd::fmt::unicode_sharp(c)
                ))
            }
        }
        State::Inside
    }

    fn lex_space(&mut self) -> State {
        let b = self.input.as_bytes();
        let from = self.pos;
        while self.pos < b.len() && is_space(b[self.pos]) {
            self.pos += 1;
        }
        let n = self.pos - from;
        let before = &self.input[self.pos - 1..];
        if has_right_trim(before) && before[2..].starts_with(RIGHT) {
            self.pos -= 1;
            if n == 1 {
                return self.lex_right_delim();
            }
        }
        self.emit(Tok::Space);
        State::Inside
    }

    fn at_terminator(&self) -> bool {
        match self.byte() {
            None => true,
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'.' | b',' | b'|' | b':' | b')' | b'(') => true,
            Some(_) => self.rest().starts_with(RIGHT),
        }
    }

    /// Skips an alphanumeric run; returns the character that ended it
    /// (left unread), if any.
    fn skip_alnum(&mut self) -> Option<char> {
        loop {
            self.skip_ascii(is_word_byte);
            match self.peek() {
                Some(c) if !c.is_ascii() && is_alnum(c) => self.pos += c.len_utf8(),
                other => return other,
            }
        }
    }

    fn lex_field_or_var(&mut self, typ: Tok) -> State {
        if self.at_terminator() {
            self.emit(if typ == Tok::Variable {
                Tok::Variable
            } else {
                Tok::Dot
            });
            return State::Inside;
        }
        if let Some(err) = self.word() {
            return err;
        }
        self.emit(typ);
        State::Inside
    }

    /// Skips a word (an alphanumeric run), which must end at a terminator;
    /// otherwise the error state (Go's "bad character").
    fn word(&mut self) -> Option<State> {
        let last = self.skip_alnum();
        if self.at_terminator() {
            return None;
        }
        let c = last.unwrap_or('\u{FFFD}');
        Some(self.error(format!(
            "bad character {}",
            crate::gostd::fmt::unicode_sharp(c)
        )))
    }

    fn lex_identifier(&mut self) -> State {
        if let Some(err) = self.word() {
            return err;
        }
        let word = &self.input[self.start..self.pos];
        let typ = match word {
            "block" => Tok::Block,
            "break" => Tok::Break,
            "continue" => Tok::Continue,
            "define" => Tok::Define,
            "else" => Tok::Else,
            "end" => Tok::End,
            "if" => Tok::If,
            "range" => Tok::Range,
            "nil" => Tok::Nil,
            "template" => Tok::Template,
            "with" => Tok::With,
            "true" | "false" => Tok::Bool,
            _ => Tok::Identifier,
        };
        self.emit(typ);
        State::Inside
    }

    fn lex_char(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => {
                    if let Some(c) = self.next() {
                        if c == '\n' {
                            return self.error("unterminated character constant".into());
                        }
                    } else {
                        return self.error("unterminated character constant".into());
                    }
                }
                None | Some('\n') => return self.error("unterminated character constant".into()),
                Some('\'') => break,
                Some(_) => {}
            }
        }
        self.emit(Tok::CharConstant);
        State::Inside
    }

    fn lex_number(&mut self) -> State {
        if !self.scan_number() {
            let t = self.input[self.start..self.pos].to_string();
            return self.error(format!(
                "bad number syntax: {}",
                crate::gostd::strconv::quote(&t)
            ));
        }
        if matches!(self.peek(), Some('+' | '-')) {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let t = self.input[self.start..self.pos].to_string();
                return self.error(format!(
                    "bad number syntax: {}",
                    crate::gostd::strconv::quote(&t)
                ));
            }
            self.emit(Tok::Complex);
        } else {
            self.emit(Tok::Number);
        }
        State::Inside
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if let Some(c) = self.peek() {
            if is_alnum(c) {
                self.next();
                return false;
            }
        }
        true
    }

    fn lex_quote(&mut self) -> State {
        let b = self.input.as_bytes();
        loop {
            // Only '\\', '"' and '\n' matter; everything else (UTF-8
            // included) is part of the string.
            match memchr::memchr3(b'\\', b'"', b'\n', &b[self.pos..]) {
                None => {
                    self.pos = b.len();
                    return self.error("unterminated quoted string".into());
                }
                Some(i) => {
                    self.pos += i;
                    match b[self.pos] {
                        b'\\' => match b.get(self.pos + 1) {
                            None | Some(b'\n') => {
                                return self.error("unterminated quoted string".into())
                            }
                            Some(_) => {
                                // Skip the backslash and the whole escaped
                                // character.
                                self.pos += 1;
                                self.next();
                            }
                        },
                        b'"' => {
                            self.pos += 1;
                            break;
                        }
                        _ => return self.error("unterminated quoted string".into()),
                    }
                }
            }
        }
        self.emit(Tok::String);
        State::Inside
    }

    fn lex_raw_quote(&mut self) -> State {
        let b = self.input.as_bytes();
        let Some(i) = memchr::memchr(b'`', &b[self.pos..]) else {
            self.pos = b.len();
            return self.error("unterminated raw quoted string".into());
        };
        self.pos += i + 1;
        self.emit(Tok::RawString);
        State::Inside
    }
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1])
}

fn has_right_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0]) && b[1] == b'-'
}

fn left_trim_len(s: &str) -> usize {
    s.len()
        - s.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8))
            .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_stay_small() {
        assert_eq!(std::mem::size_of::<Item>(), 12);
    }

    fn kinds(s: &str) -> Vec<Tok> {
        let mut items = Vec::new();
        lex(s, &mut items);
        items.into_iter().map(|i| i.typ).collect()
    }

    #[test]
    fn trims_and_fields() {
        let src = "a  {{- .x.y -}}  b";
        let mut items = Vec::new();
        assert_eq!(lex(src, &mut items).error, None);
        assert_eq!(items[0].text(src), "a");
        assert_eq!(items[2].text(src), ".x");
        assert_eq!(items[3].text(src), ".y");
        assert_eq!(items.last().map(|i| i.typ), Some(Tok::Eof));
        assert_eq!(items[items.len() - 2].text(src), "b");
    }

    #[test]
    fn minus_number_is_not_trim() {
        assert_eq!(
            kinds("{{-3}}"),
            vec![Tok::LeftDelim, Tok::Number, Tok::RightDelim, Tok::Eof]
        );
    }

    #[test]
    fn bad_number() {
        let mut items = Vec::new();
        let error = lex("{{3-}}", &mut items).error;
        assert_eq!(items.last().map(|i| i.typ), Some(Tok::Error));
        assert_eq!(error.as_deref(), Some("bad number syntax: \"3-\""));
    }
}
