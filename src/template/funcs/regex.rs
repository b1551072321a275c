//! Sprig regular-expression functions, with Go's RE2 syntax.
//!
//! Go patterns are translated for the `regex` crate: `\d \w \s \b` are
//! ASCII-only in Go, `{` that does not start a repeat count is a literal,
//! `\Q...\E` quotes. Syntax errors carry Go's messages
//! (`error parsing regexp: missing closing ]: `[``).
use super::util::{arg_int, arg_str, string_list};
use super::{CallContext, FuncResult, Param, Registry};
use crate::template::value::Value;
use regex::Regex;

/// A Go `regexp` syntax error: Go's error code text and the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error parsing regexp: {code}: `{expr}`")]
pub struct GoRegexError {
    /// Go's error code text, e.g. `missing closing ]`.
    pub code: String,
    /// The part of the pattern Go names.
    pub expr: String,
}

fn is_valid_repeat(chars: &[char], i: usize) -> Option<usize> {
    // chars[i] == '{': {n}, {n,}, {n,m}; returns the index after '}'.
    let mut j = i + 1;
    let start = j;
    while j < chars.len() && chars[j].is_ascii_digit() {
        j += 1;
    }
    if j == start {
        return None;
    }
    if j < chars.len() && chars[j] == ',' {
        j += 1;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
    }
    if j < chars.len() && chars[j] == '}' {
        Some(j + 1)
    } else {
        None
    }
}

fn push_escaped(out: &mut String, c: char) {
    if regex_syntax::is_meta_character(c) {
        out.push('\\');
    }
    out.push(c);
}

/// Rewrites Go-only syntax (`\Q..\E`, `\<`, literal `{`) so that the
/// `regex` crate parses the pattern as Go does. With `ascii_classes`, Perl
/// classes and word boundaries are also made ASCII-only.
fn translate(pat: &str, ascii_classes: bool) -> String {
    let chars: Vec<char> = pat.chars().collect();
    let mut out = String::with_capacity(pat.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    let mut class_start = false;
    let mut names: Vec<String> = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            i += 2;
            match n {
                'Q' => {
                    while i < chars.len() {
                        if chars[i] == '\\' && i + 1 < chars.len() && chars[i + 1] == 'E' {
                            i += 2;
                            break;
                        }
                        push_escaped(&mut out, chars[i]);
                        i += 1;
                    }
                }
                '<' | '>' => out.push(n),
                'd' | 'D' | 'w' | 'W' | 's' | 'S' if ascii_classes => {
                    let body = match n.to_ascii_lowercase() {
                        'd' => "0-9",
                        'w' => "0-9A-Za-z_",
                        _ => "\\t\\n\\f\\r ",
                    };
                    if n.is_ascii_uppercase() {
                        out.push_str(&format!("[^{body}]"));
                    } else if in_class {
                        out.push_str(body);
                    } else {
                        out.push_str(&format!("[{body}]"));
                    }
                }
                'b' | 'B' if ascii_classes && !in_class => {
                    out.push_str(&format!("(?-u:\\{n})"));
                }
                'p' | 'P' | 'x' if chars.get(i) == Some(&'{') => {
                    // \p{Greek}, \x{10FFFF}: copy the braces through.
                    out.push('\\');
                    out.push(n);
                    while i < chars.len() {
                        out.push(chars[i]);
                        i += 1;
                        if chars[i - 1] == '}' {
                            break;
                        }
                    }
                }
                _ => {
                    out.push('\\');
                    out.push(n);
                }
            }
            // Go takes a `-` after a class escape in a class as a literal
            // (`[\w-.]`); the regex crate would read a range.
            if in_class
                && "dDwWsSpP".contains(n)
                && chars.get(i) == Some(&'-')
                && chars.get(i + 1) != Some(&']')
            {
                out.push_str("\\-");
                i += 1;
            }
            class_start = false;
            continue;
        }
        if in_class {
            if c == ']' && !class_start {
                in_class = false;
            } else if c == '[' && chars.get(i + 1) == Some(&':') {
                // [:alpha:] inside a class: copy through the closing ":]".
                let mut j = i + 2;
                while j + 1 < chars.len() && !(chars[j] == ':' && chars[j + 1] == ']') {
                    j += 1;
                }
                if j + 1 < chars.len() {
                    out.extend(&chars[i..j + 2]);
                    i = j + 2;
                    class_start = false;
                    continue;
                }
            } else if c == '[' || (c == '&' || c == '~' || c == '-') && chars.get(i + 1) == Some(&c)
            {
                // Rust reads `[`, `&&`, `--` and `~~` in a class as set syntax; Go as literals.
                out.push('\\');
            }
            class_start = class_start && c == '^';
            out.push(c);
            i += 1;
            continue;
        }
        if c == '(' && chars.get(i + 1) == Some(&'?') {
            // Named groups: Go allows a name twice, the regex crate does not.
            let name_start = match (chars.get(i + 2), chars.get(i + 3)) {
                (Some('P'), Some('<')) => Some(i + 4),
                (Some('<'), _) => Some(i + 3),
                _ => None,
            };
            if let Some(ns) = name_start {
                if let Some(len) = chars[ns..].iter().position(|&x| x == '>') {
                    let name: String = chars[ns..ns + len].iter().collect();
                    out.extend(&chars[i..ns]);
                    if names.contains(&name) {
                        out.push_str(&format!("{name}__dup{}", names.len()));
                    } else {
                        out.push_str(&name);
                    }
                    names.push(name);
                    out.push('>');
                    i = ns + len + 1;
                    continue;
                }
            }
        }
        match c {
            '[' => {
                in_class = true;
                class_start = true;
                out.push(c);
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
            }
            '{' => match is_valid_repeat(&chars, i) {
                Some(end) => {
                    out.extend(&chars[i..end]);
                    i = end;
                    continue;
                }
                None => out.push_str("\\{"),
            },
            '}' => out.push_str("\\}"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

fn slice_bytes(s: &str, start: usize, end: usize) -> String {
    s.get(start.min(s.len())..end.min(s.len()))
        .unwrap_or("")
        .to_string()
}

/// The last `(` before byte offset `at` (the group an error is in).
fn open_paren(pat: &str, at: usize) -> usize {
    pat.get(..at).and_then(|p| p.rfind('(')).unwrap_or(at)
}

/// Go's error for a pattern the parser rejects.
fn go_error(pat: &str) -> Option<GoRegexError> {
    use regex_syntax::ast::ErrorKind as K;
    let mut parser = regex_syntax::ast::parse::Parser::new();
    let ast = match parser.parse(pat) {
        Ok(ast) => ast,
        Err(e) => {
            let sp = e.span();
            let (s, t) = (sp.start.offset, sp.end.offset);
            let (code, expr) = match e.kind() {
                K::ClassUnclosed => ("missing closing ]", slice_bytes(pat, s, pat.len())),
                K::GroupUnclosed => ("missing closing )", pat.to_string()),
                K::GroupUnopened => ("unexpected )", pat.to_string()),
                K::RepetitionMissing => (
                    "missing argument to repetition operator",
                    slice_bytes(pat, s, t.max(s + 1)),
                ),
                K::RepetitionCountInvalid
                | K::RepetitionCountUnclosed
                | K::RepetitionCountDecimalEmpty
                | K::DecimalInvalid
                | K::DecimalEmpty => ("invalid repeat count", slice_bytes(pat, s, t)),
                K::EscapeUnexpectedEof => {
                    ("trailing backslash at end of expression", String::new())
                }
                K::EscapeUnrecognized
                | K::UnsupportedBackreference
                | K::EscapeHexEmpty
                | K::EscapeHexInvalid
                | K::EscapeHexInvalidDigit
                | K::ClassEscapeInvalid
                | K::ClassRangeLiteral => ("invalid escape sequence", slice_bytes(pat, s, t)),
                K::ClassRangeInvalid => ("invalid character class range", slice_bytes(pat, s, t)),
                K::GroupNameDuplicate { .. } => {
                    ("duplicate capture group name", slice_bytes(pat, s, t))
                }
                K::GroupNameEmpty | K::GroupNameInvalid | K::GroupNameUnexpectedEof => (
                    "invalid named capture",
                    slice_bytes(pat, open_paren(pat, s), t + 1),
                ),
                _ => {
                    let open = open_paren(pat, s);
                    (
                        "invalid or unsupported Perl syntax",
                        slice_bytes(pat, open, t.max(s + 1)),
                    )
                }
            };
            return Some(GoRegexError {
                code: code.to_string(),
                expr,
            });
        }
    };
    if let Some(e) = check_repetitions(pat, &ast) {
        return Some(e);
    }
    let mut tr = regex_syntax::hir::translate::Translator::new();
    if let Err(e) = tr.translate(pat, &ast) {
        let sp = e.span();
        return Some(GoRegexError {
            code: "invalid character class range".into(),
            expr: slice_bytes(pat, sp.start.offset, sp.end.offset),
        });
    }
    None
}

/// Go's limits that the Rust parser does not have: a repetition operator
/// applied directly to another one (`a**`) and counts above 1000.
fn check_repetitions(pat: &str, ast: &regex_syntax::ast::Ast) -> Option<GoRegexError> {
    use regex_syntax::ast::{Ast, RepetitionKind, RepetitionRange};
    match ast {
        Ast::Repetition(rep) => {
            if let Some(e) = check_repetitions(pat, &rep.ast) {
                return Some(e);
            }
            if let Ast::Repetition(inner) = rep.ast.as_ref() {
                return Some(GoRegexError {
                    code: "invalid nested repetition operator".into(),
                    expr: slice_bytes(pat, inner.op.span.start.offset, rep.op.span.end.offset),
                });
            }
            if let RepetitionKind::Range(r) = &rep.op.kind {
                let too_big = match r {
                    RepetitionRange::Exactly(n) | RepetitionRange::AtLeast(n) => *n > 1000,
                    RepetitionRange::Bounded(a, b) => *a > 1000 || *b > 1000,
                };
                if too_big {
                    let op = slice_bytes(pat, rep.op.span.start.offset, rep.op.span.end.offset);
                    return Some(GoRegexError {
                        code: "invalid repeat count".into(),
                        expr: op.trim_end_matches('?').to_string(),
                    });
                }
            }
            None
        }
        Ast::Group(g) => check_repetitions(pat, &g.ast),
        Ast::Alternation(a) => a.asts.iter().find_map(|x| check_repetitions(pat, x)),
        Ast::Concat(c) => c.asts.iter().find_map(|x| check_repetitions(pat, x)),
        _ => None,
    }
}

/// Compiles a Go (RE2) pattern; the error is Go's `regexp.Compile` error.
/// Recently used patterns are cached per thread (templates call the regex
/// functions in loops).
pub fn compile(pat: &str) -> Result<Regex, GoRegexError> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<String, Result<Regex, GoRegexError>>> =
            RefCell::new(HashMap::new());
    }
    if let Some(hit) = CACHE.with(|c| c.borrow().get(pat).cloned()) {
        return hit;
    }
    let res = compile_uncached(pat);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 512 {
            c.clear();
        }
        c.insert(pat.to_string(), res.clone());
    });
    res
}

fn compile_uncached(pat: &str) -> Result<Regex, GoRegexError> {
    let pre = translate(pat, false);
    if let Some(e) = go_error(&pre) {
        return Err(e);
    }
    Regex::new(&translate(pat, true)).map_err(|e| GoRegexError {
        code: "invalid or unsupported Perl syntax".into(),
        expr: e.to_string(),
    })
}

/// Go's `regexp.MustCompile` panic text.
fn must_compile(pat: &str) -> Result<Regex, super::FuncError> {
    compile(pat).map_err(|e| {
        let q = if pat.contains('`') || pat.chars().any(|c| c.is_control() && c != '\t') {
            crate::gostd::strconv::quote(pat)
        } else {
            format!("`{pat}`")
        };
        super::util::err(format!("regexp: Compile({q}): {e}"))
    })
}

fn plain(pat: &str) -> Result<Regex, super::FuncError> {
    compile(pat).map_err(|e| super::util::err(e.to_string()))
}

/// Go's `FindAllString(s, n)`: at most `n` matches (all when `n < 0`).
fn find_all(re: &Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let it = re.find_iter(s).map(|m| m.as_str().to_string());
    if n < 0 {
        it.collect()
    } else {
        it.take(n as usize).collect()
    }
}

/// Go's `Regexp.Split(s, n)`.
fn split(re: &Regex, pat: &str, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pat.is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let matches: Vec<(usize, usize)> = {
        let it = re.find_iter(s).map(|m| (m.start(), m.end()));
        if n < 0 {
            it.collect()
        } else {
            it.take(n as usize).collect()
        }
    };
    let mut out = Vec::with_capacity(matches.len() + 1);
    let (mut beg, mut end) = (0, 0);
    for (ms, me) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = ms;
        if me != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = me;
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    out
}

fn regex_match(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let ok = compile(&arg_str(a, 0)).is_ok_and(|re| re.is_match(&arg_str(a, 1)));
    Ok(Value::Bool(ok))
}

fn must_regex_match(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = plain(&arg_str(a, 0))?;
    Ok(Value::Bool(re.is_match(&arg_str(a, 1))))
}

fn regex_find_all(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = must_compile(&arg_str(a, 0))?;
    Ok(string_list(find_all(&re, &arg_str(a, 1), arg_int(a, 2))))
}

fn must_regex_find_all(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = plain(&arg_str(a, 0))?;
    Ok(string_list(find_all(&re, &arg_str(a, 1), arg_int(a, 2))))
}

fn find_one(re: &Regex, s: &str) -> Value {
    Value::str(re.find(s).map(|m| m.as_str()).unwrap_or(""))
}

fn regex_find(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = must_compile(&arg_str(a, 0))?;
    Ok(find_one(&re, &arg_str(a, 1)))
}

fn must_regex_find(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = plain(&arg_str(a, 0))?;
    Ok(find_one(&re, &arg_str(a, 1)))
}

fn replace_all(re: &Regex, s: &str, repl: &str, literal: bool) -> Value {
    if literal {
        Value::str(re.replace_all(s, regex::NoExpand(repl)).into_owned())
    } else {
        Value::str(re.replace_all(s, repl).into_owned())
    }
}

fn regex_replace_all(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = must_compile(&arg_str(a, 0))?;
    Ok(replace_all(&re, &arg_str(a, 1), &arg_str(a, 2), false))
}

fn must_regex_replace_all(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = plain(&arg_str(a, 0))?;
    Ok(replace_all(&re, &arg_str(a, 1), &arg_str(a, 2), false))
}

fn regex_replace_all_literal(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = must_compile(&arg_str(a, 0))?;
    Ok(replace_all(&re, &arg_str(a, 1), &arg_str(a, 2), true))
}

fn must_regex_replace_all_literal(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let re = plain(&arg_str(a, 0))?;
    Ok(replace_all(&re, &arg_str(a, 1), &arg_str(a, 2), true))
}

fn regex_split(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let pat = arg_str(a, 0);
    let re = must_compile(&pat)?;
    Ok(string_list(split(&re, &pat, &arg_str(a, 1), arg_int(a, 2))))
}

fn must_regex_split(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let pat = arg_str(a, 0);
    let re = plain(&pat)?;
    Ok(string_list(split(&re, &pat, &arg_str(a, 1), arg_int(a, 2))))
}

/// Go's `regexp.QuoteMeta`: a backslash before each of `\.+*?()|[]{}^$`.
pub fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn regex_quote_meta(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(quote_meta(&arg_str(a, 0))))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    const SS: &[Param] = &[Param::String, Param::String];
    const SSI: &[Param] = &[Param::String, Param::String, Param::Int];
    const SSS: &[Param] = &[Param::String, Param::String, Param::String];
    r.add("regexMatch", SS, None, regex_match);
    r.add("mustRegexMatch", SS, None, must_regex_match);
    r.add("regexFindAll", SSI, None, regex_find_all);
    r.add("mustRegexFindAll", SSI, None, must_regex_find_all);
    r.add("regexFind", SS, None, regex_find);
    r.add("mustRegexFind", SS, None, must_regex_find);
    r.add("regexReplaceAll", SSS, None, regex_replace_all);
    r.add("mustRegexReplaceAll", SSS, None, must_regex_replace_all);
    r.add(
        "regexReplaceAllLiteral",
        SSS,
        None,
        regex_replace_all_literal,
    );
    r.add(
        "mustRegexReplaceAllLiteral",
        SSS,
        None,
        must_regex_replace_all_literal,
    );
    r.add("regexSplit", SSI, None, regex_split);
    r.add("mustRegexSplit", SSI, None, must_regex_split);
    r.add("regexQuoteMeta", &[Param::String], None, regex_quote_meta);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    /// Go reads `-` after a class escape as a literal (redis-ha's
    /// `masterGroupName` check is `^[\w-\.]+$`).
    #[test]
    fn dash_after_class_escape_is_literal() {
        assert_eq!(
            show("regexMatch", &[s(r"^[\w-\.]+$"), s("my-master.1")]),
            "true"
        );
        assert_eq!(show("regexMatch", &[s(r"^[\w-\.]+$"), s("a b")]), "false");
        assert_eq!(show("regexMatch", &[s(r"^[\d-]+$"), s("1-2")]), "true");
    }

    #[test]
    fn errors_like_go() {
        assert_eq!(show("regexMatch", &[s("["), s("x")]), "false");
        assert_eq!(
            show("mustRegexMatch", &[s("["), s("x")]),
            "ERR: error parsing regexp: missing closing ]: `[`"
        );
        assert_eq!(
            show("regexFind", &[s("("), s("x")]),
            "ERR: regexp: Compile(`(`): error parsing regexp: missing closing ): `(`"
        );
        assert_eq!(
            show("mustRegexFind", &[s("a)"), s("x")]),
            "ERR: error parsing regexp: unexpected ): `a)`"
        );
        assert_eq!(
            show("mustRegexFind", &[s("*a"), s("x")]),
            "ERR: error parsing regexp: missing argument to repetition operator: `*`"
        );
        assert_eq!(
            show("mustRegexFind", &[s("[z-a]"), s("x")]),
            "ERR: error parsing regexp: invalid character class range: `z-a`"
        );
        assert_eq!(
            show("mustRegexFind", &[s("a+*?"), s("x")]),
            "ERR: error parsing regexp: invalid nested repetition operator: `+*?`"
        );
        assert_eq!(
            show("mustRegexFind", &[s("a{1001}"), s("x")]),
            "ERR: error parsing regexp: invalid repeat count: `{1001}`"
        );
        assert_eq!(
            show("mustRegexFind", &[s("(?P<n>a)(?P<n>b)"), s("ab")]),
            "ab"
        );
        assert_eq!(
            show("mustRegexFind", &[s("\\q"), s("x")]),
            "ERR: error parsing regexp: invalid escape sequence: `\\q`"
        );
    }

    #[test]
    fn finds_and_splits() {
        assert_eq!(
            show("regexFind", &[s("[a-zA-Z][1-9]"), s("abcd1234")]),
            "d1"
        );
        assert_eq!(show("regexFind", &[s("z"), s("abc")]), "");
        assert_eq!(show("regexSplit", &[s("z+"), s("pizza"), i(-1)]), "[pi a]");
        assert_eq!(show("regexSplit", &[s("z+"), s("pizza"), i(1)]), "[pizza]");
        assert_eq!(show("regexSplit", &[s(""), s("abc"), i(-1)]), "[a b c]");
        assert_eq!(
            show("regexFindAll", &[s("a*"), s("baaab"), i(-1)]),
            "[ aaa ]"
        );
        assert_eq!(
            show("regexReplaceAll", &[s("(a)"), s("xa"), s("$1x|${1}x|$")]),
            "x|ax|$"
        );
        assert_eq!(
            show("regexQuoteMeta", &[s("1.2.3[a]*")]),
            "1\\.2\\.3\\[a\\]\\*"
        );
        assert_eq!(
            show("regexFindAll", &[s("\\p{Greek}"), s("aβγd"), i(-1)]),
            "[β γ]"
        );
        assert_eq!(show("regexMatch", &[s("^.{3}$"), s("héx")]), "true");
        assert_eq!(show("regexMatch", &[s("^\\d$"), s("٣")]), "false");
        assert_eq!(show("regexMatch", &[s("^a{$"), s("a{")]), "true");
        assert_eq!(
            show(
                "regexReplaceAll",
                &[s("a(x*)b"), s("-ab-axxb-"), s("${1}W")]
            ),
            "-W-xxW-"
        );
        assert_eq!(
            show(
                "regexReplaceAllLiteral",
                &[s("a(x*)b"), s("-ab-axxb-"), s("${1}")]
            ),
            "-${1}-${1}-"
        );
        assert_eq!(
            show("regexReplaceAll", &[s("\\."), s("-"), s("a.b.c")]),
            "-"
        );
    }
}
