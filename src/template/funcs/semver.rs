//! Sprig `semver` and `semverCompare`, on a port of Masterminds/semver v3.3.0:
//! its lenient version parser ([`parse_version`]), its ordering, and its
//! constraint language ([`Constraints`]: `=`, `!=`, `>`, `<`, `>=`, `<=`,
//! `~`, `^`, `x`/`*` wildcards, hyphen ranges, `||`, comma or space
//! conjunctions, and the rule that pre-releases only match constraints that
//! carry a pre-release themselves).
//!
//! [`constraint_matches`] is what Helm's `kubeVersion` check
//! (`chartutil.IsCompatibleRange`) needs.
use super::util::{arg_str, err, params};
use super::{CallContext, FuncResult, Registry};
use crate::gostd::unicode::is_regexp_space;
use crate::template::value::{GoObject, Value};
use regex_lite::Regex;
use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;
use std::sync::OnceLock;

/// Errors of Masterminds/semver, with its exact messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SemverError {
    /// `ErrInvalidSemVer`.
    #[error("Invalid Semantic Version")]
    InvalidSemVer,
    /// `ErrSegmentStartsZero`.
    #[error("Version segment starts with 0")]
    SegmentStartsZero,
    /// `ErrInvalidMetadata`.
    #[error("Invalid Metadata string")]
    InvalidMetadata,
    /// `ErrInvalidPrerelease`.
    #[error("Invalid Prerelease string")]
    InvalidPrerelease,
    /// A numeric segment out of the uint64 range.
    #[error("Error parsing version segment: strconv.ParseUint: parsing {0}: value out of range")]
    SegmentRange(String),
    /// A constraint (or one `||` alternative) that does not parse.
    #[error("improper constraint: {0}")]
    ImproperConstraint(String),
    /// A constraint whose version part does not parse.
    #[error("constraint Parser Error")]
    ConstraintParser,
}

/// A semantic version as Masterminds/semver holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Major number.
    pub major: u64,
    /// Minor number.
    pub minor: u64,
    /// Patch number.
    pub patch: u64,
    /// Pre-release (without `-`), empty when none.
    pub pre: String,
    /// Build metadata (without `+`), empty when none.
    pub metadata: String,
    /// The text it was parsed from.
    pub original: String,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
/// The version expression, kept to test [`scan_version`] against.
#[cfg(test)]
const SV: &str = r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

/// Masterminds' expressions, compiled on first use. Plain constraints and
/// every version are read by the hand-written scanners below, which accept
/// exactly what these expressions accept (property-tested against them);
/// the expressions serve the rest (wildcards mixed with digits, `|` inside
/// a version, malformed text and its errors).
struct Patterns {
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

/// Compiles one of Masterminds' expressions. They are ASCII-only and run on
/// short strings, so `regex-lite` serves them: it builds all five in a tenth
/// of the time the full engine takes, which every process that meets a
/// `semverCompare` or a `kubeVersion` would otherwise pay. Go's `\s` is
/// ASCII `[\t\n\f\r ]`, spelled out.
fn compile(pat: &str) -> Result<Regex, regex_lite::Error> {
    Regex::new(&pat.replace(r"\s", r"[\t\n\x0C\r ]"))
}

/// The same expression with every group non-capturing (the patterns above
/// have no `(` inside a character class and no escaped `(`).
fn uncaptured(pat: &str) -> String {
    pat.replace("(?:", "(").replace('(', "(?:")
}

fn patterns() -> Option<&'static Patterns> {
    static P: OnceLock<Option<Patterns>> = OnceLock::new();
    P.get_or_init(|| {
        Some(Patterns {
            constraint: compile(&format!(r"^\s*({OPS})\s*({CV})\s*$")).ok()?,
            range: compile(&format!(r"\s*({CV})\s+-\s+({CV})\s*")).ok()?,
            // Only whole matches of these two are used: without capture
            // groups, regex-lite's per-search state is a few slots per NFA
            // state instead of some ninety (hundreds of KiB to zero).
            find: compile(&uncaptured(&format!(r"({OPS})\s*({CV})"))).ok()?,
            valid: compile(&uncaptured(&format!(
                r"^(\s*({OPS})\s*({CV})\s*)((?:\s+|,\s*)({OPS})\s*({CV})\s*)*$"
            )))
            .ok()?,
        })
    })
    .as_ref()
}

fn only(s: &str, allowed: impl Fn(char) -> bool) -> bool {
    s.chars().all(allowed)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

fn validate_prerelease(p: &str) -> Result<(), SemverError> {
    for part in p.split('.') {
        if only(part, |c| c.is_ascii_digit()) {
            if part.len() > 1 && part.starts_with('0') {
                return Err(SemverError::SegmentStartsZero);
            }
        } else if !only(part, is_ident_char) {
            return Err(SemverError::InvalidPrerelease);
        }
    }
    Ok(())
}

fn validate_metadata(m: &str) -> Result<(), SemverError> {
    if m.split('.').all(|p| only(p, is_ident_char)) {
        Ok(())
    } else {
        Err(SemverError::InvalidMetadata)
    }
}

fn parse_segment(s: &str) -> Result<u64, SemverError> {
    s.parse::<u64>()
        .map_err(|_| SemverError::SegmentRange(crate::gostd::strconv::quote(s)))
}

/// The groups of Masterminds' version expression
/// (`^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-(ID(\.ID)*))?(\+(ID(\.ID)*))?$`,
/// ID = `[0-9A-Za-z-]+`): numbers without their dots, pre-release and
/// metadata without their marks (empty when absent).
#[derive(Debug, PartialEq)]
struct VersionGroups<'a> {
    major: &'a str,
    minor: Option<&'a str>,
    patch: Option<&'a str>,
    pre: &'a str,
    meta: &'a str,
}

/// A small cursor over ASCII bytes for the scanners.
struct Scan<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }
    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }
    /// The longest run of bytes satisfying `f` (possibly empty).
    fn run(&mut self, f: impl Fn(u8) -> bool) -> &'a str {
        let start = self.i;
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
        &self.s[start..self.i]
    }
    /// `ID(\.ID)*` with ID = `[0-9A-Za-z-]+`: a dot must be followed by an
    /// identifier, else the dot is left unread.
    fn dotted_idents(&mut self) -> Option<&'a str> {
        let start = self.i;
        if self.run(is_ident_byte).is_empty() {
            return None;
        }
        loop {
            let before = self.i;
            if !self.eat(b'.') || self.run(is_ident_byte).is_empty() {
                self.i = before;
                return Some(&self.s[start..self.i]);
            }
        }
    }
    /// `(-(IDs))?(\+(IDs))?`: the pre-release and metadata texts. A mark
    /// without an identifier after it is left unread.
    fn pre_and_meta(&mut self) -> (&'a str, &'a str) {
        let mut part = |mark: u8| {
            let before = self.i;
            if self.eat(mark) {
                if let Some(ids) = self.dotted_idents() {
                    return ids;
                }
                self.i = before;
            }
            ""
        };
        let pre = part(b'-');
        let meta = part(b'+');
        (pre, meta)
    }
}

fn is_ident_byte(b: u8) -> bool {
    is_ident_char(char::from(b))
}

/// Masterminds' version expression, matched by hand: its groups, or `None`
/// where the expression does not match.
fn scan_version(v: &str) -> Option<VersionGroups<'_>> {
    let mut sc = Scan { s: v, i: 0 };
    if v.as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
        sc.eat(b'v');
    }
    let major = sc.run(|b| b.is_ascii_digit());
    if major.is_empty() {
        return None;
    }
    let number = |sc: &mut Scan<'_>| {
        let before = sc.i;
        if sc.eat(b'.') {
            let n = sc.run(|b| b.is_ascii_digit());
            if !n.is_empty() {
                return Some(&v[before + 1..sc.i]);
            }
            sc.i = before;
        }
        None
    };
    let minor = number(&mut sc);
    let patch = number(&mut sc);
    let (pre, meta) = sc.pre_and_meta();
    (sc.i == v.len()).then_some(VersionGroups {
        major,
        minor,
        patch,
        pre,
        meta,
    })
}

/// One alternative of a constraint (text between `||`) in the plain form
/// nearly every chart writes: operators, versions whose parts are digits or
/// one of `x X *`, separated by blanks or a comma. Gives each constraint's
/// operator, whole version text and its major/`.minor`/`.patch`/`-pre`
/// groups as the expressions would, or `None` to leave the text to them.
fn scan_plain_alternative(alt: &str) -> Option<Vec<(&str, [&str; 5])>> {
    const OPS: [&str; 12] = [
        "", "=", "!=", ">", "<", ">=", "=>", "<=", "=<", "~", "~>", "^",
    ];
    let mut sc = Scan { s: alt, i: 0 };
    let mut out = Vec::new();
    sc.run(is_regexp_space);
    loop {
        let op = sc.run(|b| matches!(b, b'=' | b'!' | b'<' | b'>' | b'~' | b'^'));
        if !OPS.contains(&op) {
            return None;
        }
        sc.run(is_regexp_space);
        let start = sc.i;
        if sc
            .s
            .as_bytes()
            .get(sc.i + 1)
            .is_some_and(|&b| b.is_ascii_digit() || matches!(b, b'x' | b'X' | b'*'))
        {
            sc.eat(b'v');
        }
        let part = |sc: &mut Scan<'_>| -> Option<()> {
            if sc.run(|b| b.is_ascii_digit()).is_empty()
                && !(sc.eat(b'x') || sc.eat(b'X') || sc.eat(b'*'))
            {
                return None;
            }
            Some(())
        };
        let major_start = sc.i;
        part(&mut sc)?;
        let major = &alt[major_start..sc.i];
        let dotted = |sc: &mut Scan<'_>| -> Option<&str> {
            let before = sc.i;
            if sc.eat(b'.') {
                part(sc)?;
                return Some(&alt[before..sc.i]);
            }
            Some("")
        };
        let minor = dotted(&mut sc)?;
        let patch = if minor.is_empty() {
            ""
        } else {
            dotted(&mut sc)?
        };
        let pre_start = sc.i;
        let (pre, _) = sc.pre_and_meta();
        let pre = if pre.is_empty() {
            ""
        } else {
            &alt[pre_start..pre_start + 1 + pre.len()]
        };
        let version = &alt[start..sc.i];
        out.push((op, [version, major, minor, patch, pre]));
        // A version ends at a blank, a comma or the end; anything else
        // (a digit after a wildcard, a fourth part, `|`) is not plain.
        let had_space = !sc.run(is_regexp_space).is_empty();
        if sc.eat(b',') {
            sc.run(is_regexp_space);
        } else if sc.i == alt.len() {
            return Some(out);
        } else if !had_space {
            return None;
        }
        if sc.i == alt.len() {
            // A trailing comma: an error, worded by the expressions.
            return None;
        }
    }
}

/// Masterminds `NewVersion`: lenient (`v` prefix, missing minor or patch,
/// leading zeros in numbers).
pub fn parse_version(v: &str) -> Result<Version, SemverError> {
    let g = scan_version(v).ok_or(SemverError::InvalidSemVer)?;
    let mut sv = Version {
        major: parse_segment(g.major)?,
        minor: 0,
        patch: 0,
        pre: g.pre.to_string(),
        metadata: g.meta.to_string(),
        original: v.to_string(),
    };
    if let Some(minor) = g.minor {
        sv.minor = parse_segment(minor)?;
    }
    if let Some(patch) = g.patch {
        sv.patch = parse_segment(patch)?;
    }
    if !sv.pre.is_empty() {
        validate_prerelease(&sv.pre)?;
    }
    if !sv.metadata.is_empty() {
        validate_metadata(&sv.metadata)?;
    }
    Ok(sv)
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

fn compare_prerelease(v: &str, o: &str) -> Ordering {
    let sp: Vec<&str> = v.split('.').collect();
    let op: Vec<&str> = o.split('.').collect();
    for i in 0..sp.len().max(op.len()) {
        let d = compare_pre_part(
            sp.get(i).copied().unwrap_or(""),
            op.get(i).copied().unwrap_or(""),
        );
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

impl Version {
    /// Semver precedence (metadata ignored; a release sorts after its pre-releases).
    pub fn compare(&self, o: &Version) -> Ordering {
        self.major
            .cmp(&o.major)
            .then(self.minor.cmp(&o.minor))
            .then(self.patch.cmp(&o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }

    fn v_prefix(&self) -> &'static str {
        if self.original.starts_with('v') {
            "v"
        } else {
            ""
        }
    }

    fn with_original(mut self, prefix: &str) -> Version {
        self.original = format!("{prefix}{self}");
        self
    }

    /// `IncPatch`: drops a pre-release, or else bumps the patch.
    pub fn inc_patch(&self) -> Version {
        let mut n = self.clone();
        n.metadata.clear();
        if n.pre.is_empty() {
            n.patch += 1;
        }
        n.pre.clear();
        n.with_original(self.v_prefix())
    }

    /// `IncMinor`.
    pub fn inc_minor(&self) -> Version {
        let mut n = self.clone();
        n.metadata.clear();
        n.pre.clear();
        n.patch = 0;
        n.minor += 1;
        n.with_original(self.v_prefix())
    }

    /// `IncMajor`.
    pub fn inc_major(&self) -> Version {
        let mut n = self.clone();
        n.metadata.clear();
        n.pre.clear();
        n.patch = 0;
        n.minor = 0;
        n.major += 1;
        n.with_original(self.v_prefix())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    TildeOrEqual,
    NotEqual,
    Gt,
    Lt,
    Ge,
    Le,
    Tilde,
    Caret,
}

#[derive(Debug, Clone)]
struct Constraint {
    con: Version,
    op: Op,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

/// A parsed constraint: alternatives (`||`) of conjunctions.
#[derive(Debug, Clone)]
pub struct Constraints {
    alternatives: Vec<Vec<Constraint>>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

fn parse_one(c: &str) -> Result<Constraint, SemverError> {
    let p = patterns().ok_or(SemverError::ConstraintParser)?;
    if c.is_empty() {
        return Ok(Constraint {
            con: parse_version("0.0.0")?,
            op: Op::TildeOrEqual,
            minor_dirty: false,
            patch_dirty: false,
            dirty: true,
        });
    }
    let m = p
        .constraint
        .captures(c)
        .ok_or_else(|| SemverError::ImproperConstraint(c.to_string()))?;
    let g = |i: usize| m.get(i).map(|x| x.as_str()).unwrap_or("");
    constraint_from_groups(g(1), [g(2), g(3), g(4), g(5), g(6)])
}

/// A constraint from its operator and the version groups of the constraint
/// expression: the whole version, major, `.minor`, `.patch`, `-pre`.
fn constraint_from_groups(op: &str, groups: [&str; 5]) -> Result<Constraint, SemverError> {
    let [whole, m3, m4, m5, m6] = groups;
    let op = match op {
        "" | "=" => Op::TildeOrEqual,
        "!=" => Op::NotEqual,
        ">" => Op::Gt,
        "<" => Op::Lt,
        ">=" | "=>" => Op::Ge,
        "<=" | "=<" => Op::Le,
        "~" | "~>" => Op::Tilde,
        _ => Op::Caret,
    };
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let ver = if is_x(m3) || m3.is_empty() {
        dirty = true;
        format!("0.0.0{m6}")
    } else if is_x(m4.trim_start_matches('.')) || m4.is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{m3}.0.0{m6}")
    } else if is_x(m5.trim_start_matches('.')) || m5.is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{m3}{m4}.0{m6}")
    } else {
        whole.to_string()
    };
    let con = parse_version(&ver).map_err(|_| SemverError::ConstraintParser)?;
    Ok(Constraint {
        con,
        op,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

/// Rewrites hyphen ranges `a - b` to `>= a, <= b `.
fn rewrite_range(p: &Patterns, input: &str) -> String {
    let mut out = input.to_string();
    let found: Vec<(String, String, String)> = p
        .range
        .captures_iter(input)
        .map(|c| {
            let g = |i: usize| c.get(i).map(|x| x.as_str().to_string()).unwrap_or_default();
            (g(0), g(1), g(11))
        })
        .collect();
    for (whole, a, b) in found {
        out = out.replacen(&whole, &format!(">= {a}, <= {b} "), 1);
    }
    out
}

/// One alternative read with Masterminds' expressions.
fn parse_alternative(alt: &str) -> Result<Vec<Constraint>, SemverError> {
    let p = patterns().ok_or(SemverError::ConstraintParser)?;
    if !p.valid.is_match(alt) {
        return Err(SemverError::ImproperConstraint(alt.to_string()));
    }
    let mut parts: Vec<&str> = p.find.find_iter(alt).map(|m| m.as_str()).collect();
    if parts.is_empty() {
        parts.push(alt);
    }
    parts.into_iter().map(parse_one).collect()
}

impl Constraints {
    /// Masterminds `NewConstraint`.
    pub fn parse(c: &str) -> Result<Constraints, SemverError> {
        // The range expression needs blanks around its `-`; a pre-release
        // dash never has one before it.
        let has_range = c
            .as_bytes()
            .windows(3)
            .any(|w| is_regexp_space(w[0]) && w[1] == b'-' && is_regexp_space(w[2]));
        let ranged;
        let c = if has_range {
            ranged = rewrite_range(patterns().ok_or(SemverError::ConstraintParser)?, c);
            ranged.as_str()
        } else {
            c
        };
        let mut alternatives = Vec::new();
        for alt in c.split("||") {
            if let Some(plain) = scan_plain_alternative(alt) {
                alternatives.push(
                    plain
                        .into_iter()
                        .map(|(op, groups)| constraint_from_groups(op, groups))
                        .collect::<Result<_, _>>()?,
                );
                continue;
            }
            alternatives.push(parse_alternative(alt)?);
        }
        Ok(Constraints { alternatives })
    }

    /// Masterminds `Constraints.Check`.
    pub fn check(&self, v: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|c| check_one(c, v)))
    }
}

fn tilde(v: &Version, c: &Constraint) -> bool {
    if v.compare(&c.con) == Ordering::Less {
        return false;
    }
    if c.con.major == 0 && c.con.minor == 0 && c.con.patch == 0 && !c.minor_dirty && !c.patch_dirty
    {
        return true;
    }
    if v.major != c.con.major {
        return false;
    }
    v.minor == c.con.minor || c.minor_dirty
}

fn check_one(c: &Constraint, v: &Version) -> bool {
    let pre_blocked = !v.pre.is_empty() && c.con.pre.is_empty();
    match c.op {
        Op::NotEqual => {
            if c.dirty {
                if pre_blocked {
                    return false;
                }
                if c.con.major != v.major {
                    return true;
                }
                if c.con.minor != v.minor && !c.minor_dirty {
                    return true;
                } else if c.minor_dirty {
                    return false;
                } else if c.con.patch != v.patch && !c.patch_dirty {
                    return true;
                } else if c.patch_dirty {
                    if !v.pre.is_empty() || !c.con.pre.is_empty() {
                        return compare_prerelease(&v.pre, &c.con.pre) != Ordering::Equal;
                    }
                    return false;
                }
            }
            v.compare(&c.con) != Ordering::Equal
        }
        _ if pre_blocked => false,
        Op::Gt => {
            if !c.dirty {
                return v.compare(&c.con) == Ordering::Greater;
            }
            if v.major > c.con.major {
                true
            } else if v.major < c.con.major || c.minor_dirty {
                false
            } else if c.patch_dirty {
                v.minor > c.con.minor
            } else {
                v.compare(&c.con) == Ordering::Greater
            }
        }
        Op::Lt => v.compare(&c.con) == Ordering::Less,
        Op::Ge => v.compare(&c.con) != Ordering::Less,
        Op::Le => {
            if !c.dirty {
                return v.compare(&c.con) != Ordering::Greater;
            }
            !(v.major > c.con.major
                || (v.major == c.con.major && v.minor > c.con.minor && !c.minor_dirty))
        }
        Op::Tilde => tilde(v, c),
        Op::TildeOrEqual => {
            if c.dirty {
                tilde(v, c)
            } else {
                v.compare(&c.con) == Ordering::Equal
            }
        }
        Op::Caret => {
            if v.compare(&c.con) == Ordering::Less {
                return false;
            }
            if c.con.major > 0 || c.minor_dirty {
                return v.major == c.con.major;
            }
            if v.major > 0 {
                return false;
            }
            if c.con.minor > 0 || c.patch_dirty {
                return v.minor == c.con.minor;
            }
            if v.minor > 0 {
                return false;
            }
            c.con.patch == v.patch
        }
    }
}

/// Whether `version` satisfies `constraint` (Masterminds `NewConstraint`,
/// `NewVersion`, `Check`), as Sprig's `semverCompare` and Helm's
/// `kubeVersion` check use it.
pub fn constraint_matches(constraint: &str, version: &str) -> Result<bool, SemverError> {
    let c = memo(&PARSED_CONSTRAINTS, constraint, Constraints::parse)?;
    let v = memo(&PARSED_VERSIONS, version, parse_version)?;
    Ok(c.check(&v))
}

type Memo<T> = std::cell::RefCell<std::collections::HashMap<String, Result<T, SemverError>>>;

thread_local! {
    // A chart checks the same few constraints (`>=1.19-0`, ...) against the
    // same KubeVersion in template after template, and each parse runs
    // several regular expressions: remember the parses.
    static PARSED_CONSTRAINTS: Memo<Constraints> = Default::default();
    static PARSED_VERSIONS: Memo<Version> = Default::default();
}

/// `parse(key)`, remembered per thread (at most 256 entries; then the memo
/// starts over).
fn memo<T: Clone>(
    table: &'static std::thread::LocalKey<Memo<T>>,
    key: &str,
    parse: fn(&str) -> Result<T, SemverError>,
) -> Result<T, SemverError> {
    table.with(|t| {
        if let Some(r) = t.borrow().get(key) {
            return r.clone();
        }
        let r = parse(key);
        let mut t = t.borrow_mut();
        if t.len() >= 256 {
            t.clear();
        }
        t.insert(key.to_string(), r.clone());
        r
    })
}

/// A `*semver.Version` (from `semver`) or a `semver.Version` value (from
/// its `Inc*`/`Set*` methods) in templates.
#[derive(Debug, Clone)]
pub struct VersionObject {
    /// The version.
    pub version: Version,
    /// Whether Go holds it as a pointer (`*semver.Version`).
    pub pointer: bool,
}

impl VersionObject {
    fn value(version: Version, pointer: bool) -> Value {
        Value::Object(Rc::new(VersionObject { version, pointer }))
    }
}

fn version_arg(args: &[Value], method: &str) -> Result<Version, String> {
    match args {
        [Value::Object(o)] => match o.as_any().downcast_ref::<VersionObject>() {
            Some(v) if v.pointer => Ok(v.version.clone()),
            _ => Err(format!(
                "wrong type for value; expected *semver.Version; got {}",
                o.type_name()
            )),
        },
        // A nil *Version: the comparison dereferences it.
        [Value::Nil] => {
            Err("runtime error: invalid memory address or nil pointer dereference".into())
        }
        [other] => Err(format!(
            "wrong type for value; expected *semver.Version; got {}",
            other.type_name()
        )),
        _ => Err(format!(
            "wrong number of args for {method}: want 1 got {}",
            args.len()
        )),
    }
}

impl GoObject for VersionObject {
    fn type_name(&self) -> &str {
        if self.pointer {
            "*semver.Version"
        } else {
            "semver.Version"
        }
    }

    fn field(&self, name: &str) -> Option<Value> {
        let v = &self.version;
        // Original has a pointer receiver: a semver.Version value lacks it.
        if name == "Original" && !self.pointer {
            return None;
        }
        Some(match name {
            "Major" => Value::Int64(v.major as i64),
            "Minor" => Value::Int64(v.minor as i64),
            "Patch" => Value::Int64(v.patch as i64),
            "Prerelease" => Value::str(v.pre.as_str()),
            "Metadata" => Value::str(v.metadata.as_str()),
            "Original" => Value::str(v.original.as_str()),
            "String" => Value::str(v.to_string()),
            "IncPatch" => VersionObject::value(v.inc_patch(), false),
            "IncMinor" => VersionObject::value(v.inc_minor(), false),
            "IncMajor" => VersionObject::value(v.inc_major(), false),
            _ => return None,
        })
    }

    fn method_params(&self, name: &str) -> Option<(&'static [super::Param], Option<super::Param>)> {
        // Go checks and converts a string argument before the call
        // ("expected string; found 1", "cannot assign nil to string").
        match name {
            "SetPrerelease" | "SetMetadata" => Some((&[super::Param::String], None)),
            _ => None,
        }
    }

    fn call(&self, name: &str, args: &[Value]) -> Option<FuncResult> {
        let v = &self.version;
        let pointer_method = matches!(
            name,
            "LessThan" | "LessThanEqual" | "GreaterThan" | "GreaterThanEqual" | "Equal" | "Compare"
        );
        if pointer_method && !self.pointer {
            return None;
        }
        let cmp = |args: &[Value]| version_arg(args, name).map(|o| v.compare(&o));
        let r = match name {
            "LessThan" => cmp(args).map(|o| Value::Bool(o == Ordering::Less)),
            "LessThanEqual" => cmp(args).map(|o| Value::Bool(o != Ordering::Greater)),
            "GreaterThan" => cmp(args).map(|o| Value::Bool(o == Ordering::Greater)),
            "GreaterThanEqual" => cmp(args).map(|o| Value::Bool(o != Ordering::Less)),
            "Equal" => cmp(args).map(|o| Value::Bool(o == Ordering::Equal)),
            "Compare" => cmp(args).map(|o| Value::Int(o as i64)),
            "SetPrerelease" | "SetMetadata" => match args {
                [Value::Str(s)] => {
                    let mut n = v.clone();
                    let res = if name == "SetPrerelease" {
                        n.pre = s.to_string();
                        if s.is_empty() {
                            Ok(())
                        } else {
                            validate_prerelease(s)
                        }
                    } else {
                        n.metadata = s.to_string();
                        if s.is_empty() {
                            Ok(())
                        } else {
                            validate_metadata(s)
                        }
                    };
                    res.map(|_| VersionObject::value(n.with_original(v.v_prefix()), false))
                        .map_err(|e| e.to_string())
                }
                [other] => Err(format!(
                    "wrong type for value; expected string; got {}",
                    other.type_name()
                )),
                _ => Err(format!(
                    "wrong number of args for {name}: want 1 got {}",
                    args.len()
                )),
            },
            _ => return self.field(name).map(Ok),
        };
        Some(r.map_err(super::FuncError::Msg))
    }

    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.version)
    }

    fn to_json_value(&self) -> Value {
        Value::str(self.version.to_string())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn semver_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    parse_version(&arg_str(a, 0))
        .map(|v| VersionObject::value(v, true))
        .map_err(|e| err(e.to_string()))
}

fn semver_compare(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    constraint_matches(&arg_str(a, 0), &arg_str(a, 1))
        .map(Value::Bool)
        .map_err(|e| err(e.to_string()))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("semver", params::S, None, semver_fn);
    r.add("semverCompare", params::SS, None, semver_compare);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Non-ASCII text never splits a character (no panic), whatever path
    /// it takes.
    #[test]
    fn scanners_take_any_text() {
        for t in [
            "≥1.2",
            "1.2.3-ä",
            "v١",
            "~>1.ü",
            "1.0 ,",
            "ä",
            "1.2.3+ß.1",
            "=1 || ö",
        ] {
            let _ = scan_version(t);
            let _ = scan_plain_alternative(t);
            let _ = Constraints::parse(t);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The hand-written version scanner gives the expression's groups.
        #[test]
        fn version_scanner_matches_the_expression(v in "[v0-9.+aZx|* -]{0,14}") {
            let re = compile(&format!("^{SV}$")).unwrap();
            let want = re.captures(&v).map(|c| {
                let g = |i: usize| c.get(i).map(|m| m.as_str());
                VersionGroups {
                    major: g(1).unwrap_or(""),
                    minor: g(2).map(|m| &m[1..]),
                    patch: g(3).map(|m| &m[1..]),
                    pre: g(5).unwrap_or(""),
                    meta: g(8).unwrap_or(""),
                }
            });
            prop_assert_eq!(scan_version(&v), want, "{:?}", v);
        }

        /// Whatever the plain-constraint scanner accepts, the expressions
        /// read the same way.
        #[test]
        fn plain_constraints_match_the_expressions(
            alt in "[ ,v0-9.x*<>=!~^+a-]{0,16}",
        ) {
            if let Some(plain) = scan_plain_alternative(&alt) {
                let fast: Result<Vec<Constraint>, SemverError> = plain
                    .into_iter()
                    .map(|(op, groups)| constraint_from_groups(op, groups))
                    .collect();
                let slow = parse_alternative(&alt);
                prop_assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{:?}", alt);
            }
        }

        /// Plain, well-formed constraints are taken by the scanner.
        #[test]
        fn plain_constraints_take_the_fast_path(
            parts in prop::collection::vec((
                prop::sample::select(vec!["", "=", "!=", ">", "<", ">=", "=>", "<=", "=<", "~", "~>", "^"]),
                "v?[0-9]{1,3}(\\.([0-9]{1,2}|x|\\*)){0,2}(-[a-z0-9]{1,3})?",
                prop::sample::select(vec![" ", ", ", ",", "  "]),
            ), 1..4),
        ) {
            let alt: String = parts
                .iter()
                .enumerate()
                .map(|(i, (op, v, sep))| if i == 0 { format!("{op}{v}") } else { format!("{sep}{op}{v}") })
                .collect();
            prop_assert!(scan_plain_alternative(&alt).is_some(), "{:?}", alt);
        }
    }

    fn m(c: &str, v: &str) -> bool {
        match constraint_matches(c, v) {
            Ok(b) => b,
            Err(e) => panic!("{c} {v}: {e}"),
        }
    }

    #[test]
    fn versions() {
        let v = parse_version("1.2.3-alpha.1+build.5").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
        assert_eq!(v.pre, "alpha.1");
        assert_eq!(v.metadata, "build.5");
        assert_eq!(parse_version("v1.2").unwrap().to_string(), "1.2.0");
        assert_eq!(parse_version("1").unwrap().to_string(), "1.0.0");
        assert_eq!(parse_version("abc"), Err(SemverError::InvalidSemVer));
        assert_eq!(parse_version("1.0.0.0"), Err(SemverError::InvalidSemVer));
        assert_eq!(
            parse_version("1.0.0-01"),
            Err(SemverError::SegmentStartsZero)
        );
        assert_eq!(parse_version("01.02.03").unwrap().to_string(), "1.2.3");
        assert_eq!(
            parse_version("1.2.3").unwrap().inc_minor().to_string(),
            "1.3.0"
        );
    }

    #[test]
    fn constraints() {
        assert!(m(">=1.20.0", "1.21.3"));
        assert!(!m("<1.20", "1.21.3"));
        assert!(m("~1.2.0", "1.2.9"));
        assert!(!m("~1.2.0", "1.3.0"));
        assert!(m("^1.2.0", "1.9.0"));
        assert!(!m("^1.2.0", "2.0.0"));
        assert!(m(">1.0, <2.0", "1.5.0"));
        assert!(m(">1.0 <2.0", "1.5.0"));
        assert!(m("1.x", "1.9.9"));
        assert!(!m("1.x", "2.0.0"));
        assert!(m("<1.0 || >=3.0", "3.1.0"));
        assert!(m("=1.2.3", "v1.2.3"));
        assert!(m("1.2 - 1.4.5", "1.4.5"));
        assert!(!m("1.2 - 1.4.5", "1.4.6"));
        assert!(!m(">=1.20.0", "v1.30.5-gke.1"));
        assert!(m(">=1.20.0-0", "v1.30.5-gke.1"));
        assert!(!m("~1.30", "1.31.0"));
        assert!(m("^0.2.3", "0.2.9"));
        assert!(!m("^0.2.3", "0.3.0"));
        assert!(m("*", "4.5.6"));
        assert!(m("^0.0", "0.0.5"));
        assert!(m("1.2.3 - 2", "2.5"));
        assert!(m("!=1.2.3", "1.2.4"));
        assert!(!m("!=1.2.x", "1.2.4"));
        assert_eq!(
            constraint_matches("!!!", "1.0.0"),
            Err(SemverError::ImproperConstraint("!!!".into()))
        );
        assert_eq!(
            constraint_matches(">=1.0", "abc"),
            Err(SemverError::InvalidSemVer)
        );
    }

    proptest::proptest! {
        #[test]
        fn version_display_roundtrip(
            a in 0u64..1000, b in 0u64..1000, c in 0u64..1000,
            pre in proptest::option::of("[a-z][a-z0-9]{0,5}(\\.[1-9][0-9]{0,2})?"),
            meta in proptest::option::of("[a-z0-9]{1,6}"),
        ) {
            let mut text = format!("{a}.{b}.{c}");
            if let Some(p) = &pre { text.push('-'); text.push_str(p); }
            if let Some(m) = &meta { text.push('+'); text.push_str(m); }
            let v = parse_version(&text).unwrap();
            proptest::prop_assert_eq!(v.to_string(), text.clone());
            // A version always satisfies the exact constraint on itself.
            let exact = format!("={}", text);
            proptest::prop_assert!(constraint_matches(&exact, &text).unwrap());
        }

        #[test]
        fn constraint_parser_never_panics(c in "[ <>=!~^|,.x*0-9v-]{0,16}") {
            let _ = constraint_matches(&c, "1.2.3");
        }
    }
}
