//! YAML writing, byte for byte as Helm writes it.
//!
//! `toYaml` is sigs.k8s.io/yaml's `Marshal`: `json.Marshal`, then the JSON is
//! read back by yaml.v2 (so numbers get yaml.v2's int/uint/float types) and
//! written by yaml.v2's port of the libyaml emitter. `toYamlPretty` is yaml.v3's
//! encoder on the value itself with an indent of 2. Both emitters are the
//! libyaml algorithm: scalar analysis decides which styles are allowed
//! (plain, single-quoted, double-quoted, literal), plain and quoted scalars are
//! folded at spaces past column 80 (yaml.v2 only), block sequences are not
//! indented under a mapping key (yaml.v2 only), mapping keys are sorted with
//! yaml.v2's "natural" order.
use super::parse::V;
use super::resolve::{self, Scalar};
use super::Node;
use crate::gostd::float::format_go_float;
use std::cmp::Ordering;

/// Which Go library's emitter to imitate.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flavor {
    /// gopkg.in/yaml.v2 (through sigs.k8s.io/yaml): width 80, indentless sequences.
    V2,
    /// gopkg.in/yaml.v3 with `SetIndent(2)`: no folding, indented sequences.
    V3,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// What libyaml's `analyze_scalar` concludes about a scalar.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// libyaml's `IS_PRINTABLE` on UTF-8: LF, ASCII printables, U+00A0..U+D7FF,
/// U+E000..U+FFFD except the BOM. Characters beyond the BMP are not printable.
fn is_printable(c: char) -> bool {
    let n = c as u32;
    n == 0x0A
        || (0x20..=0x7E).contains(&n)
        || (0xA0..=0xD7FF).contains(&n)
        || ((0xE000..=0xFFFD).contains(&n) && n != 0xFEFF)
}

fn analyze(value: &str, flavor: Flavor) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let mut block_indicators = false;
    let mut line_breaks = false;
    let mut special = false;
    let mut tabs = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    if value.starts_with("---") || value.starts_with("...") {
        block_indicators = true;
    }
    let mut preceded_by_ws = true;
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws = match chars.get(i + 1) {
            None => true,
            Some(&n) => match flavor {
                Flavor::V2 => is_blank(n) || is_break(n),
                Flavor::V3 => is_blank(n),
            },
        };
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_ws => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_indicators = true,
                '#' if preceded_by_ws => block_indicators = true,
                _ => {}
            }
        }
        if c == '\t' && flavor == Flavor::V3 {
            tabs = true;
        } else if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i == last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = is_blank(c) || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || tabs || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

fn select_style(a: &Analysis, requested: Style, value: &str, simple_key: bool) -> Style {
    let mut style = requested;
    if simple_key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

struct Emitter {
    out: String,
    column: usize,
    indent: isize,
    indents: Vec<isize>,
    whitespace: bool,
    indention: bool,
    best_width: usize,
    flavor: Flavor,
}

impl Emitter {
    fn new(flavor: Flavor) -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
            best_width: match flavor {
                Flavor::V2 => 80,
                Flavor::V3 => usize::MAX,
            },
            flavor,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.indention = true;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
            self.indention = true;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in ind.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { 2 } else { 0 };
        } else if !indentless {
            self.indent += 2;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn node(&mut self, v: &V, mapping: bool, simple_key: bool) {
        crate::stack::deeper(|| self.node_inner(v, mapping, simple_key))
    }

    fn node_inner(&mut self, v: &V, mapping: bool, simple_key: bool) {
        match v {
            V::Seq(items) if !items.is_empty() => {
                let indentless = self.flavor == Flavor::V2 && mapping && !self.indention;
                self.increase_indent(false, indentless);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, false, false);
                }
                self.pop_indent();
            }
            V::Map(pairs) if !pairs.is_empty() => {
                self.increase_indent(false, false);
                let mut sorted: Vec<&(V, V)> = pairs.iter().collect();
                let flavor = self.flavor;
                merge_sort(&mut sorted, &|a, b| key_less(&a.0, &b.0, flavor));
                for (k, val) in sorted {
                    self.write_indent();
                    let (text, style) = scalar_text(k);
                    if is_simple_key(&text, self.flavor) {
                        self.scalar(&text, style, true);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.scalar(&text, style, false);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                    }
                    self.node(val, true, false);
                }
                self.pop_indent();
            }
            V::Seq(_) => self.empty_flow("[", "]"),
            V::Map(_) => self.empty_flow("{", "}"),
            scalar => {
                let (text, style) = scalar_text(scalar);
                self.scalar(&text, style, simple_key);
            }
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn scalar(&mut self, value: &str, requested: Style, simple_key: bool) {
        let a = analyze(value, self.flavor);
        let style = select_style(&a, requested, value, simple_key);
        self.increase_indent(true, false);
        match style {
            Style::Plain => self.write_plain(value, !simple_key),
            Style::Single => self.write_single(value, !simple_key),
            Style::Double => self.write_double(value, !simple_key),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !value.is_empty() && !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        if !value.is_empty() {
            self.whitespace = false;
        }
        self.indention = false;
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        // yaml.v2's BOM test looks at the start of the whole value, not at the
        // current character: a value that starts with a BOM has every
        // character escaped, and a BOM elsewhere is written as it is.
        let leading_bom = value.starts_with('\u{feff}');
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || leading_bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let n = c as u32;
                match n {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let hex = if n <= 0xFF {
                            format!("x{n:02X}")
                        } else if n <= 0xFFFF {
                            format!("u{n:04X}")
                        } else {
                            format!("U{n:08X}")
                        };
                        for h in hex.chars() {
                            self.put(h);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let chomp = match chars.len() {
            0 => Some('-'),
            n if !is_break(chars[n - 1]) => Some('-'),
            1 => Some('+'),
            n if is_break(chars[n - 2]) => Some('+'),
            _ => None,
        };
        if let Some(c) = chomp {
            self.write_indicator(&c.to_string(), false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }

    fn document(mut self, v: &V) -> String {
        self.node(v, false, false);
        // Document end: a final line break unless one was just written.
        self.indent = -1;
        self.write_indent();
        self.out
    }
}

/// libyaml's `check_simple_key` for a scalar key: single-line and at most
/// 128 bytes.
fn is_simple_key(text: &str, flavor: Flavor) -> bool {
    !analyze(text, flavor).multiline && text.len() <= 128
}

/// The text and requested style of a scalar, as yaml.v2/v3's encoder builds it.
fn scalar_text(v: &V) -> (String, Style) {
    match v {
        V::Null => ("null".into(), Style::Plain),
        V::Bool(b) => (b.to_string(), Style::Plain),
        V::Int(i) => (i.to_string(), Style::Plain),
        V::Uint(u) => (u.to_string(), Style::Plain),
        V::Float(f) => (yaml_float(*f), Style::Plain),
        V::Str(s) => {
            let can_plain =
                matches!(resolve::resolve_plain(s), Scalar::Str) && !resolve::is_base60_float(s);
            let style = if s.contains('\n') {
                Style::Literal
            } else if can_plain {
                Style::Plain
            } else {
                Style::Double
            };
            (s.clone(), style)
        }
        // Collections are never keys after the JSON round trip.
        V::Seq(_) | V::Map(_) => (String::new(), Style::Double),
    }
}

/// yaml.v2/v3's float text: Go's `%v` with `.inf`/`-.inf`/`.nan`.
fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        ".nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        }
    } else {
        format_go_float(f)
    }
}

/// yaml.v2's key order: numbers and bools by value, then strings by a
/// "natural" comparison where runs of digits compare as numbers and
/// non-letters sort before letters.
fn key_less(a: &V, b: &V, flavor: Flavor) -> bool {
    let num = |v: &V| -> Option<f64> {
        match v {
            V::Int(i) => Some(*i as f64),
            V::Uint(u) => Some(*u as f64),
            V::Float(f) => Some(*f),
            V::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    };
    let kind = |v: &V| -> u8 {
        // reflect.Kind order: Bool < Int < Uint < Float < Map < Slice < String.
        match v {
            V::Null => 0,
            V::Bool(_) => 1,
            V::Int(_) => 2,
            V::Uint(_) => 3,
            V::Float(_) => 4,
            V::Map(_) => 5,
            V::Seq(_) => 6,
            V::Str(_) => 7,
        }
    };
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        if x != y {
            return x < y;
        }
        if kind(a) != kind(b) {
            return kind(a) < kind(b);
        }
        return match (a, b) {
            (V::Int(x), V::Int(y)) => x < y,
            (V::Uint(x), V::Uint(y)) => x < y,
            (V::Float(x), V::Float(y)) => x < y,
            (V::Bool(x), V::Bool(y)) => !x & y,
            _ => false,
        };
    }
    let (V::Str(sa), V::Str(sb)) = (a, b) else {
        return kind(a) < kind(b);
    };
    natural_less(sa, sb, flavor == Flavor::V3)
}

/// The string part of yaml.v2's key comparison.
pub(crate) fn str_key_less(sa: &str, sb: &str) -> bool {
    natural_less(sa, sb, false)
}

/// The natural string comparison; `after_digit_letter_first` is yaml.v3's
/// refinement: when the runes before the first difference end in a digit, a
/// letter sorts before a non-letter (`1e3` < `1~`), where yaml.v2 always
/// puts the non-letter first.
fn natural_less(sa: &str, sb: &str, after_digit_letter_first: bool) -> bool {
    let ar: Vec<char> = sa.chars().collect();
    let br: Vec<char> = sb.chars().collect();
    let mut i = 0;
    let mut digits = false;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            digits = crate::gostd::unicode::is_digit(ar[i]);
            i += 1;
            continue;
        }
        let al = crate::gostd::unicode::is_letter(ar[i]);
        let bl = crate::gostd::unicode::is_letter(br[i]);
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return if after_digit_letter_first && digits {
                al
            } else {
                bl
            };
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && crate::gostd::unicode::is_digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && crate::gostd::unicode::is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && crate::gostd::unicode::is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// A stable merge sort that tolerates a comparison that is not a total
/// order (yaml.v2's key order is not transitive for some key sets; Go then
/// depends on map iteration order, so any stable result is as good).
fn merge_sort<T: Copy>(v: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    if v.len() <= 1 {
        return;
    }
    let mid = v.len() / 2;
    merge_sort(&mut v[..mid], less);
    merge_sort(&mut v[mid..], less);
    let mut merged = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, mid);
    while i < mid && j < v.len() {
        if less(&v[j], &v[i]) {
            merged.push(v[j]);
            j += 1;
        } else {
            merged.push(v[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&v[i..mid]);
    merged.extend_from_slice(&v[j..]);
    v.copy_from_slice(&merged);
}

/// Why a value cannot be written as YAML the way Helm writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// `json.Marshal` refused a value (`json: unsupported value: +Inf`).
    #[error("error marshaling into JSON: json: unsupported value: {0}")]
    Unsupported(String),
    /// yaml.v2 could not read the JSON back: a character libyaml's reader
    /// refuses (DEL, C1 controls, U+FFFE/U+FFFF) appears in a string.
    #[error("error converting JSON to YAML: yaml: control characters are not allowed")]
    ControlCharacter,
    /// yaml.v2 reads a JSON object key as a simple key, which must stay on
    /// one line (no U+0085) and span at most 1024 characters of JSON text;
    /// otherwise the key loses its ':' and the flow mapping is malformed.
    #[error("error converting JSON to YAML: yaml: did not find expected ',' or '}}'")]
    KeyNotSimple,
}

/// libyaml's reader accepts TAB, LF, CR, U+0020..U+007E, U+0085,
/// U+00A0..U+D7FF, U+E000..U+FFFD and beyond the BMP.
fn reader_allows(c: char) -> bool {
    let n = c as u32;
    n == 0x09
        || n == 0x0A
        || n == 0x0D
        || (0x20..=0x7E).contains(&n)
        || n == 0x85
        || (0xA0..=0xD7FF).contains(&n)
        || (0xE000..=0xFFFD).contains(&n)
        || n >= 0x10000
}

/// A JSON string as yaml.v2 reads it back from `json.Marshal`'s output:
/// raw U+0085 (the only line break Go leaves unescaped) is folded the way
/// libyaml folds line breaks inside a double-quoted scalar.
fn json_string_through_yaml(s: &str) -> Result<String, EmitError> {
    // Bytes that are not UTF-8 come out of `json.Marshal` as U+FFFD.
    let s = &*crate::gostd::gostr::to_valid(s);
    // Characters Go escapes (< 0x20, U+2028, U+2029) reach yaml.v2 as escape
    // sequences, which it decodes without checks.
    let escaped_by_go = |c: char| (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}';
    if s.chars().any(|c| !escaped_by_go(c) && !reader_allows(c)) {
        return Err(EmitError::ControlCharacter);
    }
    if !s.contains('\u{85}') {
        return Ok(s.to_string());
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != ' ' && chars[i] != '\u{85}' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        // A run of spaces and line breaks: spaces around breaks are
        // dropped, one break becomes a space, n breaks become n-1 newlines.
        let mut j = i;
        let mut breaks = 0;
        while j < chars.len() && (chars[j] == ' ' || chars[j] == '\u{85}') {
            if chars[j] == '\u{85}' {
                breaks += 1;
            }
            j += 1;
        }
        match breaks {
            0 => out.extend(&chars[i..j]),
            1 => out.push(' '),
            n => out.extend(std::iter::repeat_n('\n', n - 1)),
        }
        i = j;
    }
    Ok(out)
}

/// A node after `json.Marshal` and yaml.v2's `Unmarshal` of the JSON.
fn through_json(n: &Node) -> Result<V, EmitError> {
    crate::stack::deeper(|| through_json_inner(n))
}

fn through_json_inner(n: &Node) -> Result<V, EmitError> {
    Ok(match n {
        Node::Null => V::Null,
        Node::Bool(b) => V::Bool(*b),
        Node::Int(i) => V::Int(*i),
        Node::Float(f) => {
            if !f.is_finite() {
                return Err(EmitError::Unsupported(format_go_float(*f)));
            }
            let text = super::json::format_json_float(*f);
            match resolve::resolve_plain(&text) {
                Scalar::Int(i) => V::Int(i),
                Scalar::Uint(u) => V::Uint(u),
                Scalar::Float(x) => V::Float(x),
                _ => V::Float(*f),
            }
        }
        Node::Str(s) => V::Str(json_string_through_yaml(s)?),
        Node::Seq(items) => V::Seq(items.iter().map(through_json).collect::<Result<_, _>>()?),
        Node::Map(m) => {
            let mut pairs: Vec<(V, V)> = Vec::with_capacity(m.len());
            for (k, x) in m {
                let mut encoded = String::new();
                super::json::write_string(&mut encoded, k, true);
                if k.contains('\u{85}') || encoded.chars().count() > 1024 {
                    return Err(EmitError::KeyNotSimple);
                }
                let key = json_string_through_yaml(k)?;
                let val = through_json(x)?;
                // Folding can make two keys equal; the later one wins.
                if let Some(slot) = pairs.iter_mut().find(|(pk, _)| *pk == V::Str(key.clone())) {
                    slot.1 = val;
                } else {
                    pairs.push((V::Str(key), val));
                }
            }
            V::Map(pairs)
        }
    })
}

fn direct(n: &Node) -> V {
    crate::stack::deeper(|| direct_inner(n))
}

fn direct_inner(n: &Node) -> V {
    match n {
        Node::Null => V::Null,
        Node::Bool(b) => V::Bool(*b),
        Node::Int(i) => V::Int(*i),
        Node::Float(f) => V::Float(*f),
        Node::Str(s) => V::Str(s.clone()),
        Node::Seq(items) => V::Seq(items.iter().map(direct).collect()),
        Node::Map(m) => V::Map(
            m.iter()
                .map(|(k, x)| (V::Str(k.clone()), direct(x)))
                .collect(),
        ),
    }
}

/// sigs.k8s.io/yaml's `Marshal` (what Helm's `toYaml` calls), with its errors.
/// The text ends with a newline, as `Marshal` returns it.
pub fn try_to_yaml(node: &Node) -> Result<String, EmitError> {
    let v = through_json(node)?;
    Ok(Emitter::new(Flavor::V2).document(&v))
}

/// sigs.k8s.io/yaml's `Marshal`: Go's JSON encoding, read back by yaml.v2,
/// written by yaml.v2 (sorted keys, YAML 1.1-safe quoting, folding at 80
/// columns, block scalars, lists not indented under their key). Ends with a
/// newline (Helm's `toYaml` trims it). Empty when Go would fail (a
/// non-finite float, a control character yaml.v2 refuses), as `toYaml` is.
pub fn to_yaml(node: &Node) -> String {
    try_to_yaml(node).unwrap_or_default()
}

/// yaml.v3's encoder with `SetIndent(2)` on the value itself (Helm's
/// `toYamlPretty`, before it trims the final newline): lists indented under
/// their key, no folding, floats in Go's `%v` form (`1e+06`).
pub fn to_yaml_pretty(node: &Node) -> String {
    Emitter::new(Flavor::V3).document(&direct(node))
}

/// yaml.v2's natural key order, exposed for callers that sort like Helm's
/// YAML output (`a2` < `a10`, `_x` < `9` < `10` < `Alpha` < `alpha`).
pub fn yaml_key_cmp(a: &str, b: &str) -> Ordering {
    if str_key_less(a, b) {
        Ordering::Less
    } else if str_key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}
