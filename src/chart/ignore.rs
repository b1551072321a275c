//! `.helmignore`: Helm's ignore rules, including their quirks.
//!
//! Rules are evaluated in file order and the first decision wins. A negated
//! rule (`!p`) *ignores* every path that does not match `p` and lets matching
//! paths fall through to the next rule, which is how Helm behaves (so any `!`
//! rule ends up ignoring `Chart.yaml`). Patterns use Go's `filepath.Match`,
//! implemented here by [`glob_match`].

/// A malformed `.helmignore`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    /// A rule uses `**`.
    #[error("double-star (**) syntax is not supported")]
    DoubleStar,
    /// A rule is not a valid `filepath.Match` pattern.
    #[error("syntax error in pattern")]
    BadPattern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum MatchKind {
    /// Leading `/`: match the whole relative path.
    Root,
    /// Contains `/`: match the whole relative path.
    Structural,
    /// No `/`: match the base name only.
    Base,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    raw: String,
    pattern: Vec<char>,
    /// The literal text before the first and after the last wildcard
    /// (`*`, `?`, `[`, `\\`): a subject that does not start and end with
    /// them cannot match, which settles most rules without the matcher.
    prefix: Vec<char>,
    suffix: Vec<char>,
    negate: bool,
    must_dir: bool,
    kind: MatchKind,
}

/// A parsed set of ignore rules.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

/// The rule Helm always appends when loading a directory: dot files and dot
/// directories directly in `templates/`.
pub const DEFAULT_RULE: &str = "templates/.?*";

impl Rules {
    /// No rules: nothing is ignored.
    pub fn empty() -> Rules {
        Rules::default()
    }

    /// Parses a `.helmignore` file (a leading UTF-8 BOM is ignored).
    pub fn parse(text: &str) -> Result<Rules, IgnoreError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut rules = Rules::default();
        for line in text.lines() {
            rules.add(line)?;
        }
        Ok(rules)
    }

    /// Appends Helm's default rule ([`DEFAULT_RULE`]).
    pub fn add_defaults(&mut self) {
        // The default rule is well-formed.
        let _ = self.add(DEFAULT_RULE);
    }

    /// Parses and appends one rule line.
    pub fn add(&mut self, line: &str) -> Result<(), IgnoreError> {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(IgnoreError::DoubleStar);
        }
        glob_match(rule, "abc")?;
        let mut p = rule;
        let negate = if let Some(rest) = p.strip_prefix('!') {
            p = rest;
            true
        } else {
            false
        };
        let must_dir = if let Some(rest) = p.strip_suffix('/') {
            p = rest;
            true
        } else {
            false
        };
        let (kind, pattern) = if let Some(rest) = p.strip_prefix('/') {
            (MatchKind::Root, rest)
        } else if p.contains('/') {
            (MatchKind::Structural, p)
        } else {
            (MatchKind::Base, p)
        };
        let pattern: Vec<char> = pattern.chars().collect();
        let wild = |c: &char| matches!(c, '*' | '?' | '[' | '\\');
        let (prefix, suffix) = match (
            pattern.iter().position(wild),
            pattern.iter().rposition(wild),
        ) {
            // Classes and escapes make the tail's meaning depend on what
            // came before: keep only the prefix then.
            (Some(first), _) if pattern.iter().any(|c| matches!(c, '[' | '\\')) => {
                (pattern[..first].to_vec(), Vec::new())
            }
            (Some(first), Some(last)) => (pattern[..first].to_vec(), pattern[last + 1..].to_vec()),
            // No wildcard: the whole pattern is both.
            _ => (pattern.clone(), pattern.clone()),
        };
        self.patterns.push(Pattern {
            raw: rule.to_string(),
            pattern,
            prefix,
            suffix,
            negate,
            must_dir,
            kind,
        });
        Ok(())
    }

    /// Whether `path` (relative, `/`-separated) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        let whole: Vec<char> = path.chars().collect();
        let base: Vec<char> = base_name(path).chars().collect();
        for p in &self.patterns {
            if p.negate {
                if p.must_dir && !is_dir {
                    return true;
                }
                if !p.matches(&whole, &base) {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if p.matches(&whole, &base) {
                return true;
            }
        }
        false
    }
}

impl Pattern {
    fn matches(&self, whole: &[char], base: &[char]) -> bool {
        let subject = match self.kind {
            MatchKind::Root | MatchKind::Structural => whole,
            MatchKind::Base => base,
        };
        if !subject.starts_with(&self.prefix) || !subject.ends_with(&self.suffix) {
            return false;
        }
        match_chars(&self.pattern, subject).unwrap_or(false)
    }
}

/// Go's `filepath.Base` for `/`-separated paths.
fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "." } else { "/" };
    }
    match trimmed.rfind('/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// Go's `filepath.Match` on a Unix system: `*` and `?` never match `/`,
/// `[...]` classes with ranges and `^` negation, `\` escapes.
///
/// ```
/// use rudder::chart::ignore::glob_match;
/// assert!(glob_match("*.md", "README.md").unwrap());
/// assert!(!glob_match("*", "a/b").unwrap());
/// assert!(glob_match("templates/.?*", "templates/.x").unwrap());
/// assert!(glob_match("[", "x").is_err());
/// ```
pub fn glob_match(pattern: &str, name: &str) -> Result<bool, IgnoreError> {
    let pat: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    match_chars(&pat, &name)
}

/// [`glob_match`] on decoded characters (rules keep their pattern decoded).
fn match_chars(pat: &[char], name: &[char]) -> Result<bool, IgnoreError> {
    let mut pat = pat;
    let mut name = name;
    'outer: while !pat.is_empty() {
        let (star, chunk, rest) = scan_chunk(pat);
        pat = rest;
        if star && chunk.is_empty() {
            return Ok(!name.contains(&'/'));
        }
        let res = match_chunk(chunk, name);
        if let Ok(Some(t)) = res {
            if t.is_empty() || !pat.is_empty() {
                name = t;
                continue;
            }
        }
        res?;
        if star {
            let mut i = 0;
            while i < name.len() && name[i] != '/' {
                let r = match_chunk(chunk, &name[i + 1..]);
                if let Ok(Some(t)) = r {
                    if pat.is_empty() && !t.is_empty() {
                        i += 1;
                        continue;
                    }
                    name = t;
                    continue 'outer;
                }
                r?;
                i += 1;
            }
        }
        while !pat.is_empty() {
            let (_, chunk, rest) = scan_chunk(pat);
            pat = rest;
            match_chunk(chunk, &[])?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

fn scan_chunk(pattern: &[char]) -> (bool, &[char], &[char]) {
    let mut p = pattern;
    let mut star = false;
    while p.first() == Some(&'*') {
        p = &p[1..];
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' if i + 1 < p.len() => i += 1,
            '[' => in_range = true,
            ']' => in_range = false,
            '*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &p[..i], &p[i..])
}

fn get_esc(chunk: &[char]) -> Result<(char, &[char]), IgnoreError> {
    let mut c = chunk;
    match c.first() {
        None | Some('-') | Some(']') => return Err(IgnoreError::BadPattern),
        Some('\\') => {
            c = &c[1..];
            if c.is_empty() {
                return Err(IgnoreError::BadPattern);
            }
        }
        _ => {}
    }
    let r = c[0];
    let rest = &c[1..];
    if rest.is_empty() {
        return Err(IgnoreError::BadPattern);
    }
    Ok((r, rest))
}

/// Matches one chunk at the start of `s`; `Ok(Some(rest))` on a match.
fn match_chunk<'a>(chunk: &[char], s: &'a [char]) -> Result<Option<&'a [char]>, IgnoreError> {
    let mut chunk = chunk;
    let mut s = s;
    let mut failed = false;
    while !chunk.is_empty() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match chunk[0] {
            '[' => {
                let mut r = '\0';
                if !failed {
                    r = s[0];
                    s = &s[1..];
                }
                chunk = &chunk[1..];
                let mut negated = false;
                if chunk.first() == Some(&'^') {
                    negated = true;
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut nrange = 0;
                loop {
                    if chunk.first() == Some(&']') && nrange > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk[0] == '-' {
                        let (h, rest) = get_esc(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    nrange += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    if s[0] == '/' {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
            c => {
                let c = if c == '\\' {
                    chunk = &chunk[1..];
                    match chunk.first() {
                        Some(&c) => c,
                        None => return Err(IgnoreError::BadPattern),
                    }
                } else {
                    c
                };
                if !failed {
                    if c != s[0] {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
        }
    }
    if failed {
        Ok(None)
    } else {
        Ok(Some(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_match_cases() {
        // Cases from Go's filepath.Match documentation and tests.
        let cases: &[(&str, &str, Result<bool, IgnoreError>)] = &[
            ("abc", "abc", Ok(true)),
            ("*", "abc", Ok(true)),
            ("*c", "abc", Ok(true)),
            ("a*", "a", Ok(true)),
            ("a*", "abc", Ok(true)),
            ("a*", "ab/c", Ok(false)),
            ("a*/b", "abc/b", Ok(true)),
            ("a*/b", "a/c/b", Ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", Ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", Ok(false)),
            ("a*b?c*x", "abxbbxdbxebxczzx", Ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", Ok(false)),
            ("ab[c]", "abc", Ok(true)),
            ("ab[b-d]", "abc", Ok(true)),
            ("ab[e-g]", "abc", Ok(false)),
            ("ab[^c]", "abc", Ok(false)),
            ("ab[^b-d]", "abc", Ok(false)),
            ("ab[^e-g]", "abc", Ok(true)),
            ("a\\*b", "a*b", Ok(true)),
            ("a\\*b", "ab", Ok(false)),
            ("a?b", "a☺b", Ok(true)),
            ("a[^a]b", "a☺b", Ok(true)),
            ("a???b", "a☺b", Ok(false)),
            ("a[!a]b", "a☺b", Ok(false)),
            ("[a-ζ]*", "α", Ok(true)),
            ("*[a-ζ]", "A", Ok(false)),
            ("a?b", "a/b", Ok(false)),
            ("a*b", "a/b", Ok(false)),
            ("[\\]a]", "]", Ok(true)),
            ("[\\-]", "-", Ok(true)),
            ("[x\\-]", "x", Ok(true)),
            ("[x\\-]", "-", Ok(true)),
            ("[x\\-]", "z", Ok(false)),
            ("[\\-x]", "x", Ok(true)),
            ("[\\-x]", "-", Ok(true)),
            ("[\\-x]", "a", Ok(false)),
            ("[]a]", "]", Err(IgnoreError::BadPattern)),
            ("[-]", "-", Err(IgnoreError::BadPattern)),
            ("[x-]", "x", Err(IgnoreError::BadPattern)),
            ("[x-]", "-", Err(IgnoreError::BadPattern)),
            ("[x-]", "z", Err(IgnoreError::BadPattern)),
            ("[-x]", "x", Err(IgnoreError::BadPattern)),
            ("[-x]", "-", Err(IgnoreError::BadPattern)),
            ("[-x]", "a", Err(IgnoreError::BadPattern)),
            ("\\", "a", Err(IgnoreError::BadPattern)),
            ("[a-b-c]", "a", Err(IgnoreError::BadPattern)),
            ("[", "a", Err(IgnoreError::BadPattern)),
            ("[^", "a", Err(IgnoreError::BadPattern)),
            ("[^bc", "a", Err(IgnoreError::BadPattern)),
            ("a[", "a", Err(IgnoreError::BadPattern)),
            ("a[", "ab", Err(IgnoreError::BadPattern)),
            ("a[", "x", Err(IgnoreError::BadPattern)),
            ("a/b[", "x", Err(IgnoreError::BadPattern)),
            ("*x", "xxx", Ok(true)),
        ];
        for (p, n, want) in cases {
            assert_eq!(&glob_match(p, n), want, "Match({p:?}, {n:?})");
        }
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// The prefix/suffix shortcut never changes a decision.
        #[test]
        fn shortcut_agrees_with_the_matcher(
            pat in proptest::collection::vec(proptest::sample::select(vec![
                "a", "b", ".", "*", "?", "/", "[a*]", "[^a]", "[*]", "\\\\*", "\\\\a", "[a-c]", "!",
            ]), 1..5).prop_map(|t| t.concat()),
            name in proptest::collection::vec(proptest::sample::select(vec![
                "a", "b", ".", "*", "/", "?", "c",
            ]), 0..6).prop_map(|t| t.concat()),
        ) {
            let mut rules = Rules::empty();
            if rules.add(&pat).is_ok() {
                let p = &rules.patterns[0];
                let base: Vec<char> = base_name(&name).chars().collect();
                let whole: Vec<char> = name.chars().collect();
                let subject = if p.kind == MatchKind::Base { &base } else { &whole };
                let want = match_chars(&p.pattern, subject).unwrap_or(false);
                proptest::prop_assert_eq!(p.matches(&whole, &base), want, "{} {}", pat, name);
            }
        }
    }

    #[test]
    fn helm_rules() {
        let mut r = Rules::parse("/*.md\ndocs/*\ntemplates/x.yaml\n# c\n\n").unwrap();
        r.add_defaults();
        assert!(r.ignore("b.md", false));
        assert!(!r.ignore("docs/c.md", false) || r.ignore("docs/c.md", false));
        assert!(r.ignore("docs/c.md", false));
        assert!(!r.ignore("sub/c.md", false));
        assert!(r.ignore("templates/x.yaml", false));
        assert!(r.ignore("templates/.hidden.yaml", false));
        assert!(r.ignore("templates/.dir", true));
        assert!(!r.ignore("templates/sub/.x.yaml", false));
        assert!(!r.ignore("Chart.yaml", false));
        assert!(!r.ignore(".", true));
    }

    #[test]
    fn negation_quirk() {
        let r = Rules::parse("*.txt\n!keep.txt").unwrap();
        assert!(r.ignore("Chart.yaml", false));
        let r = Rules::parse("!keep.txt").unwrap();
        assert!(r.ignore("Chart.yaml", false));
        assert!(!r.ignore("keep.txt", false));
    }

    #[test]
    fn dir_rules() {
        let r = Rules::parse("tmp/").unwrap();
        assert!(r.ignore("tmp", true));
        assert!(!r.ignore("tmp", false));
        assert_eq!(Rules::parse("a/**"), Err(IgnoreError::DoubleStar));
        assert_eq!(Rules::parse("a["), Err(IgnoreError::BadPattern));
    }
}
