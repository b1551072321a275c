//! Kubernetes label selectors (`k8s.io/apimachinery/pkg/labels.Parse`), as
//! `helm list --selector` matches them against a release record's labels.
//!
//! Grammar: requirements separated by `,`, each one of `key`, `!key`,
//! `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
//! `key notin (a,b)`, `key>n`, `key<n`. `!=` and `notin` also match a
//! release without the label. The empty selector matches everything.
use std::collections::BTreeMap;

/// A selector that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Exists,
    NotExists,
    In(Vec<String>),
    NotIn(Vec<String>),
    Gt(i64),
    Lt(i64),
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    reqs: Vec<(String, Op)>,
}

fn valid_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    name_ok && prefix_ok
}

fn valid_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric())
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
}

/// A token of Kubernetes' selector lexer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `!`, `!=`, `=`, `==`, `>`, `<`, `,`, `(`, `)`.
    Sym(&'static str),
    End,
}

impl Tok {
    fn lit(&self) -> &str {
        match self {
            Tok::Ident(s) => s,
            Tok::Sym(s) => s,
            Tok::End => "",
        }
    }
}

fn lex(s: &str) -> Vec<Tok> {
    const SYMS: [&str; 9] = ["!=", "==", "!", "=", ">", "<", ",", "(", ")"];
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            out.push(Tok::End);
            return out;
        }
        if let Some(sym) = SYMS.iter().find(|x| rest.starts_with(**x)) {
            out.push(Tok::Sym(sym));
            rest = &rest[sym.len()..];
            continue;
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || "!=><,()".contains(c))
            .unwrap_or(rest.len());
        out.push(Tok::Ident(rest[..end].to_string()));
        rest = &rest[end..];
    }
}

struct P {
    toks: Vec<Tok>,
    i: usize,
}

impl P {
    fn peek(&self) -> &Tok {
        self.toks.get(self.i).unwrap_or(&Tok::End)
    }

    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        self.i += 1;
        t
    }

    fn requirement(&mut self) -> Result<(String, Op), String> {
        let negated = self.peek() == &Tok::Sym("!");
        if negated {
            self.i += 1;
        }
        let key = match self.next() {
            Tok::Ident(k) => k,
            t => return Err(format!("found '{}', expected: identifier", t.lit())),
        };
        if !valid_key(&key) {
            return Err(format!("invalid label key {key:?}"));
        }
        if negated {
            return Ok((key, Op::NotExists));
        }
        if matches!(self.peek(), Tok::End | Tok::Sym(",")) {
            return Ok((key, Op::Exists));
        }
        let op = self.next();
        let single = |p: &mut P| -> Result<String, String> {
            match p.peek().clone() {
                Tok::Ident(v) => {
                    p.i += 1;
                    Ok(v)
                }
                Tok::End | Tok::Sym(",") => Ok(String::new()),
                t => Err(format!(
                    "found '{}', expected: identifier for value",
                    t.lit()
                )),
            }
        };
        let value = |v: String| -> Result<String, String> {
            if valid_value(&v) {
                Ok(v)
            } else {
                Err(format!("invalid label value {v:?}"))
            }
        };
        let num = |v: String| -> Result<i64, String> {
            v.parse().map_err(|_| {
                format!("values[0]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer")
            })
        };
        Ok(match op {
            Tok::Sym("=") | Tok::Sym("==") => (key, Op::In(vec![value(single(self)?)?])),
            Tok::Sym("!=") => (key, Op::NotIn(vec![value(single(self)?)?])),
            Tok::Sym(">") => (key, Op::Gt(num(single(self)?)?)),
            Tok::Sym("<") => (key, Op::Lt(num(single(self)?)?)),
            Tok::Ident(w) if w == "in" || w == "notin" => {
                let set = self.set()?;
                let set = set.into_iter().map(value).collect::<Result<Vec<_>, _>>()?;
                (
                    key,
                    if w == "in" {
                        Op::In(set)
                    } else {
                        Op::NotIn(set)
                    },
                )
            }
            t => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    t.lit()
                ))
            }
        })
    }

    fn set(&mut self) -> Result<Vec<String>, String> {
        let t = self.next();
        if t != Tok::Sym("(") {
            return Err(format!("found '{}' expected: '('", t.lit()));
        }
        let mut out = Vec::new();
        loop {
            match self.next() {
                Tok::Ident(v) => {
                    out.push(v);
                    match self.next() {
                        Tok::Sym(",") => continue,
                        Tok::Sym(")") => return Ok(out),
                        t => return Err(format!("found '{}', expected: ',' or ')'", t.lit())),
                    }
                }
                Tok::Sym(")") => {
                    out.push(String::new());
                    return Ok(out);
                }
                Tok::Sym(",") => out.push(String::new()),
                t => {
                    return Err(format!(
                        "found '{}', expected: ',', ')' or identifier",
                        t.lit()
                    ))
                }
            }
        }
    }
}

impl Selector {
    /// Parses a selector (`""` selects everything), with Kubernetes' error
    /// messages for misplaced tokens.
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        let mut p = P { toks: lex(s), i: 0 };
        let mut reqs = Vec::new();
        loop {
            match p.peek().clone() {
                Tok::Ident(_) | Tok::Sym("!") => {
                    let r = p
                        .requirement()
                        .map_err(|e| SelectorError(format!("unable to parse requirement: {e}")))?;
                    reqs.push(r);
                    match p.next() {
                        Tok::End => return Ok(Selector { reqs }),
                        Tok::Sym(",") => match p.peek() {
                            Tok::Ident(_) | Tok::Sym("!") => {}
                            t => {
                                return Err(SelectorError(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.lit()
                                )))
                            }
                        },
                        t => {
                            return Err(SelectorError(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.lit()
                            )))
                        }
                    }
                }
                Tok::End => return Ok(Selector { reqs }),
                t => {
                    return Err(SelectorError(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.lit()
                    )))
                }
            }
        }
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.reqs.iter().all(|(k, op)| {
            let v = labels.get(k);
            match op {
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
                Op::In(set) => v.is_some_and(|v| set.contains(v)),
                Op::NotIn(set) => v.is_none_or(|v| !set.contains(v)),
                Op::Gt(n) => v
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|x| x > *n),
                Op::Lt(n) => v
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|x| x < *n),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn requirements() {
        let l = labels(&[("team", "a"), ("tier", "web"), ("n", "5")]);
        let yes = [
            "",
            "team=a",
            "team==a",
            "team!=b",
            "other!=x",
            "team in (a, b)",
            "team notin (b,c)",
            "team",
            "!other",
            "n>4",
            "n<6",
            "team=a,tier=web",
            " team = a , tier in (web) ",
        ];
        for s in yes {
            assert!(Selector::parse(s).unwrap().matches(&l), "{s}");
        }
        let no = [
            "team=b",
            "team!=a",
            "other",
            "!team",
            "n>5",
            "team=a,tier=db",
            "x in (a)",
        ];
        for s in no {
            assert!(!Selector::parse(s).unwrap().matches(&l), "{s}");
        }
        for bad in ["=a", "team in a", "n>x", "te am=a", "team=a b"] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }
}
