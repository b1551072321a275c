//! The glob dialect of `.Files.Glob`: gobwas/glob compiled with `/` as the
//! separator.
//!
//! `*` and `?` never cross a `/`, `**` matches anything, `[abc]`, `[!a-z]`
//! are character classes, `{a,b}` are alternatives (nested allowed) and `\`
//! escapes the next character. Helm falls back to matching every file when the
//! pattern does not compile, so [`Glob::new`] reports that as `None` and the
//! caller decides.

/// One element of a compiled pattern.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Lit(char),
    /// `?`: one character that is not the separator.
    Any,
    /// `*`: any run of non-separator characters.
    Star,
    /// `**`: any run of characters.
    SuperStar,
    /// `[...]`: ranges (inclusive) and negation.
    Class {
        neg: bool,
        ranges: Vec<(char, char)>,
    },
    /// `{a,b}`: alternatives, each a pattern.
    Alt(Vec<Vec<Tok>>),
}

/// A compiled glob pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Glob {
    toks: Vec<Tok>,
}

const SEP: char = '/';

impl Glob {
    /// Compiles a pattern; `None` when it is malformed (unclosed `[` or `{`,
    /// trailing `\`).
    pub fn new(pattern: &str) -> Option<Glob> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut pos = 0;
        let toks = parse_seq(&chars, &mut pos, false)?;
        if pos != chars.len() {
            return None;
        }
        Some(Glob { toks })
    }

    /// Whether `name` matches the whole pattern.
    pub fn is_match(&self, name: &str) -> bool {
        let chars: Vec<char> = name.chars().collect();
        match_seq(&self.toks, &chars, &[])
    }
}

/// Parses until the end, or until `,`/`}` when inside alternatives.
fn parse_seq(chars: &[char], pos: &mut usize, in_alt: bool) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    while *pos < chars.len() {
        let c = chars[*pos];
        match c {
            ',' | '}' if in_alt => return Some(out),
            '\\' => {
                *pos += 1;
                let e = *chars.get(*pos)?;
                out.push(Tok::Lit(e));
                *pos += 1;
            }
            '?' => {
                out.push(Tok::Any);
                *pos += 1;
            }
            '*' => {
                if chars.get(*pos + 1) == Some(&'*') {
                    out.push(Tok::SuperStar);
                    *pos += 2;
                } else {
                    out.push(Tok::Star);
                    *pos += 1;
                }
            }
            '[' => {
                *pos += 1;
                let mut neg = false;
                if chars.get(*pos) == Some(&'!') {
                    neg = true;
                    *pos += 1;
                }
                let mut ranges = Vec::new();
                loop {
                    let c = *chars.get(*pos)?;
                    if c == ']' {
                        *pos += 1;
                        break;
                    }
                    let lo = if c == '\\' {
                        *pos += 1;
                        *chars.get(*pos)?
                    } else {
                        c
                    };
                    *pos += 1;
                    if chars.get(*pos) == Some(&'-')
                        && chars.get(*pos + 1).is_some_and(|c| *c != ']')
                    {
                        let hi = chars[*pos + 1];
                        *pos += 2;
                        if hi < lo {
                            return None;
                        }
                        ranges.push((lo, hi));
                    } else {
                        ranges.push((lo, lo));
                    }
                }
                out.push(Tok::Class { neg, ranges });
            }
            '{' => {
                *pos += 1;
                let mut alts = Vec::new();
                loop {
                    let alt = parse_seq(chars, pos, true)?;
                    alts.push(alt);
                    match chars.get(*pos) {
                        Some(',') => *pos += 1,
                        Some('}') => {
                            *pos += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
                out.push(Tok::Alt(alts));
            }
            _ => {
                out.push(Tok::Lit(c));
                *pos += 1;
            }
        }
    }
    if in_alt {
        return None;
    }
    Some(out)
}

/// Matches `toks` followed by the continuation `rest` (used by alternatives)
/// against all of `s`.
fn match_seq(toks: &[Tok], s: &[char], rest: &[&[Tok]]) -> bool {
    let Some((first, tail)) = toks.split_first() else {
        return match rest.split_first() {
            Some((next, more)) => match_seq(next, s, more),
            None => s.is_empty(),
        };
    };
    match first {
        Tok::Lit(c) => s.first() == Some(c) && match_seq(tail, &s[1..], rest),
        Tok::Any => s.first().is_some_and(|c| *c != SEP) && match_seq(tail, &s[1..], rest),
        Tok::Class { neg, ranges } => match s.first() {
            Some(c) => {
                let inside = ranges.iter().any(|(lo, hi)| lo <= c && c <= hi);
                inside != *neg && match_seq(tail, &s[1..], rest)
            }
            None => false,
        },
        Tok::Star => {
            let mut i = 0;
            loop {
                if match_seq(tail, &s[i..], rest) {
                    return true;
                }
                if i >= s.len() || s[i] == SEP {
                    return false;
                }
                i += 1;
            }
        }
        Tok::SuperStar => (0..=s.len()).any(|i| match_seq(tail, &s[i..], rest)),
        Tok::Alt(alts) => {
            let mut cont: Vec<&[Tok]> = Vec::with_capacity(rest.len() + 1);
            cont.push(tail);
            cont.extend_from_slice(rest);
            alts.iter().any(|a| match_seq(a, s, &cont))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Glob::new(p).unwrap().is_match(s)
    }

    #[test]
    fn star_stays_in_segment() {
        assert!(m("files/*.txt", "files/a.txt"));
        assert!(!m("files/*.txt", "files/x/a.txt"));
        assert!(!m("*", "files/a.txt"));
        assert!(m("**/app.ini", "files/config/app.ini"));
        assert!(m("**.yaml", "a/b/c.yaml"));
    }

    #[test]
    fn classes_and_alternatives() {
        assert!(m("files/{a,b}.txt", "files/b.txt"));
        assert!(!m("files/{a,b}.txt", "files/c.txt"));
        assert!(m("f[a-c]", "fb"));
        assert!(!m("f[!a-c]", "fb"));
        assert!(m("f?", "fx"));
        assert!(!m("f?", "f/"));
        assert!(m("{a,{b,c}d}e", "cde"));
        assert!(m(r"a\*", "a*"));
    }

    #[test]
    fn malformed() {
        assert!(Glob::new("a[").is_none());
        assert!(Glob::new("{a,b").is_none());
        assert!(Glob::new("a\\").is_none());
    }
}
