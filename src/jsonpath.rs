//! Kubernetes JSONPath templates (`k8s.io/client-go/util/jsonpath`), as
//! `helm show values --jsonpath` runs them over a chart's values.
//!
//! Supported: text outside `{...}`, string literals (`{"\n"}`), `$`/`@`,
//! fields (`.a.b`, `['a']`), `.*`, recursive descent (`..name`), indexes and
//! slices (`[0]`, `[-1]`, `[1:3]`, `[::2]`, `[*]`), index unions (`[0,2]`),
//! filters (`[?(@.port == 80)]`, `[?(@.name)]`) and `{range ...}{end}`.
//!
//! As in Kubernetes, every action is evaluated before anything is printed,
//! and an evaluation error (a missing key, an index out of range) gives an
//! error rather than partial output; Helm ignores that error and prints
//! nothing. Each action's results are printed space-separated: maps and
//! lists as Go's compact JSON, scalars as Go's `fmt.Print` (every number
//! is a float64: `1234567` prints `1.234567e+06`). Map keys are visited in
//! sorted order where Go's order is random (`.*`, `..`).
use crate::gostd::fmt::unicode_sharp;
use crate::yaml::Node;

/// A template that did not parse; the text is Kubernetes' message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// An evaluation error (Kubernetes' message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Literal text (outside actions, or a quoted string inside one).
    Text(String),
    /// `$` or `@`: the current value.
    Current,
    /// `.name` (empty name: an error on evaluation, as `{.}`).
    Field(String),
    /// `.*`.
    Wildcard,
    /// `..`: the value and all its descendants.
    Recursive,
    /// `[start:end:step]`; `single` for `[n]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
        single: bool,
    },
    /// `[a,b]` of indexes.
    Union(Vec<Step>),
    /// `[?(left op right)]` (`op` "exists" when there is no right side).
    Filter {
        left: Vec<Step>,
        op: String,
        right: Vec<Step>,
    },
    /// A number or boolean literal in a filter.
    Literal(Node),
    /// `range`.
    Range,
    /// `end`.
    End,
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    /// Each element: one text piece or one action (a chain of steps).
    nodes: Vec<Vec<Step>>,
}

fn is_terminator(c: char) -> bool {
    c.is_whitespace() || ".,[]$@{}()=!<>".contains(c)
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn quoted(&mut self, q: char) -> Result<String, ParseError> {
        // At the opening quote.
        self.i += 1;
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == '\\' {
                let n = self
                    .peek()
                    .ok_or_else(|| ParseError("unterminated quoted string".into()))?;
                self.i += 1;
                out.push(match n {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    other => other,
                });
            } else if c == q {
                return Ok(out);
            } else {
                out.push(c);
            }
        }
        Err(ParseError("unterminated quoted string".into()))
    }

    fn name(&mut self) -> String {
        let start = self.i;
        while self.peek().is_some_and(|c| !is_terminator(c)) {
            self.i += 1;
        }
        self.s[start..self.i].iter().collect()
    }

    /// Steps until `}` (inside an action) or `)`/an operator (in a filter).
    fn steps(&mut self, in_filter: bool) -> Result<Vec<Step>, ParseError> {
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError("unclosed action".into()));
            };
            match c {
                '}' if !in_filter => return Ok(out),
                ')' | '=' | '!' | '<' | '>' if in_filter => return Ok(out),
                c if c.is_whitespace() => {
                    self.i += 1;
                    if in_filter {
                        return Ok(out);
                    }
                }
                '$' | '@' => {
                    self.i += 1;
                    out.push(Step::Current);
                }
                '"' | '\'' => out.push(Step::Text(self.quoted(c)?)),
                '.' => {
                    self.i += 1;
                    match self.peek() {
                        Some('.') => out.push(Step::Recursive),
                        Some('*') => {
                            self.i += 1;
                            out.push(Step::Wildcard);
                        }
                        _ => out.push(Step::Field(self.name())),
                    }
                }
                '[' => {
                    self.i += 1;
                    out.push(self.bracket()?);
                }
                c if c.is_ascii_digit() || c == '-' => {
                    let start = self.i;
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_digit() || "-+.eE".contains(c))
                    {
                        self.i += 1;
                    }
                    let t: String = self.s[start..self.i].iter().collect();
                    let n = if let Ok(i) = t.parse::<i64>() {
                        Node::Int(i)
                    } else {
                        Node::Float(
                            t.parse()
                                .map_err(|_| ParseError(format!("cannot parse number {t:?}")))?,
                        )
                    };
                    out.push(Step::Literal(n));
                }
                _ => {
                    let t = self.name();
                    match t.as_str() {
                        "range" => out.push(Step::Range),
                        "end" => out.push(Step::End),
                        "true" => out.push(Step::Literal(Node::Bool(true))),
                        "false" => out.push(Step::Literal(Node::Bool(false))),
                        "" => {
                            return Err(ParseError(format!(
                                "unrecognized character in action: {}",
                                unicode_sharp(c)
                            )))
                        }
                        other => {
                            return Err(ParseError(format!("unrecognized identifier {other}")))
                        }
                    }
                }
            }
        }
    }

    fn bracket(&mut self) -> Result<Step, ParseError> {
        // After `[`.
        match self.peek() {
            Some('?') => {
                self.i += 1;
                if self.peek() != Some('(') {
                    return Err(ParseError("unrecognized filter".into()));
                }
                self.i += 1;
                let left = self.steps(true)?;
                while self.peek().is_some_and(char::is_whitespace) {
                    self.i += 1;
                }
                let mut op = String::new();
                while self.peek().is_some_and(|c| "=!<>".contains(c)) {
                    op.push(self.s[self.i]);
                    self.i += 1;
                }
                while self.peek().is_some_and(char::is_whitespace) {
                    self.i += 1;
                }
                let right = if op.is_empty() {
                    op = "exists".into();
                    Vec::new()
                } else {
                    self.steps(true)?
                };
                while self.peek().is_some_and(char::is_whitespace) {
                    self.i += 1;
                }
                if self.peek() != Some(')') || self.s.get(self.i + 1) != Some(&']') {
                    return Err(ParseError("unclosed filter".into()));
                }
                self.i += 2;
                Ok(Step::Filter { left, op, right })
            }
            Some(q @ ('\'' | '"')) => {
                let name = self.quoted(q)?;
                if self.peek() != Some(']') {
                    return Err(ParseError("unclosed array expect ]".into()));
                }
                self.i += 1;
                Ok(Step::Field(name))
            }
            _ => {
                let start = self.i;
                while self.peek().is_some_and(|c| c != ']') {
                    self.i += 1;
                }
                if self.peek() != Some(']') {
                    return Err(ParseError("unclosed array expect ]".into()));
                }
                let text: String = self.s[start..self.i].iter().collect();
                self.i += 1;
                let text = if text == "*" { ":".to_string() } else { text };
                let parts: Vec<&str> = text.split(',').collect();
                let mut each = Vec::new();
                for p in &parts {
                    each.push(slice_of(p.trim())?);
                }
                Ok(if each.len() == 1 {
                    each.remove(0)
                } else {
                    Step::Union(each)
                })
            }
        }
    }
}

fn slice_of(text: &str) -> Result<Step, ParseError> {
    let bad = || ParseError(format!("invalid array index {text:?}"));
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return Err(bad());
    }
    let num = |s: &str| -> Result<Option<i64>, ParseError> {
        let s = s.trim();
        if s.is_empty() {
            Ok(None)
        } else {
            s.parse().map(Some).map_err(|_| bad())
        }
    };
    let start = num(parts[0])?;
    if parts.len() == 1 {
        let n = start.ok_or_else(bad)?;
        return Ok(Step::Slice {
            start: Some(n),
            end: Some(n + 1),
            step: None,
            single: true,
        });
    }
    Ok(Step::Slice {
        start,
        end: num(parts[1])?,
        step: match parts.get(2) {
            Some(s) => num(s)?,
            None => None,
        },
        single: false,
    })
}

impl JsonPath {
    /// Parses a template.
    pub fn parse(template: &str) -> Result<JsonPath, ParseError> {
        let chars: Vec<char> = template.chars().collect();
        let mut p = Parser { s: &chars, i: 0 };
        let mut nodes = Vec::new();
        let mut text = String::new();
        while let Some(c) = p.peek() {
            if c != '{' {
                text.push(c);
                p.i += 1;
                continue;
            }
            if !text.is_empty() {
                nodes.push(vec![Step::Text(std::mem::take(&mut text))]);
            }
            p.i += 1;
            let steps = p.steps(false)?;
            p.i += 1;
            nodes.push(steps);
        }
        if !text.is_empty() {
            nodes.push(vec![Step::Text(text)]);
        }
        Ok(JsonPath { nodes })
    }

    /// Evaluates the template on `data` and returns the printed text.
    pub fn execute(&self, data: &Node) -> Result<String, EvalError> {
        let groups = find(&self.nodes, data, data, 0)?.0;
        let mut out = String::new();
        for g in groups {
            for (i, v) in g.iter().enumerate() {
                out.push_str(&print(v)?);
                if i + 1 != g.len() {
                    out.push(' ');
                }
            }
        }
        Ok(out)
    }
}

/// Kubernetes' `FindResults`: the result groups, and how many nodes it used
/// (a range body stops at its `end`).
fn find(
    nodes: &[Vec<Step>],
    data: &Node,
    root: &Node,
    depth: usize,
) -> Result<(Vec<Vec<Node>>, usize), EvalError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let steps = &nodes[i];
        if steps.first() == Some(&Step::End) {
            if depth == 0 {
                return Err(EvalError("not in range, nothing to end".into()));
            }
            return Ok((out, i + 1));
        }
        if steps.first() == Some(&Step::Range) {
            let items = walk(&steps[1..], vec![data.clone()], root)?;
            let body = &nodes[i + 1..];
            let mut used = 0;
            if items.is_empty() {
                used = find(body, &Node::Null, root, depth + 1)?.1;
            }
            for item in &items {
                let (groups, n) = find(body, item, root, depth + 1)?;
                out.extend(groups);
                used = n;
            }
            i += 1 + used;
            continue;
        }
        out.push(walk(steps, vec![data.clone()], root)?);
        i += 1;
    }
    Ok((out, nodes.len()))
}

fn walk(steps: &[Step], mut cur: Vec<Node>, root: &Node) -> Result<Vec<Node>, EvalError> {
    for step in steps {
        cur = eval(step, cur, root)?;
    }
    Ok(cur)
}

fn sorted_values(m: &std::collections::BTreeMap<String, Node>) -> Vec<Node> {
    m.values().cloned().collect()
}

fn recursive(input: Vec<Node>, out: &mut Vec<Node>) {
    for v in input {
        let children = match &v {
            Node::Map(m) => sorted_values(m),
            Node::Seq(s) => s.clone(),
            // Go indexes a string's bytes (uint8s, which have no children).
            Node::Str(s) => s.bytes().map(|b| Node::Int(i64::from(b))).collect(),
            _ => Vec::new(),
        };
        if !children.is_empty() {
            out.push(v);
            recursive(children, out);
        }
    }
}

fn eval(step: &Step, input: Vec<Node>, root: &Node) -> Result<Vec<Node>, EvalError> {
    match step {
        Step::Text(t) => Ok(vec![Node::Str(t.clone())]),
        Step::Literal(n) => Ok(vec![n.clone()]),
        Step::Current => Ok(input),
        Step::Range | Step::End => Err(EvalError("unexpected range or end".into())),
        Step::Field(name) => {
            let mut out = Vec::new();
            for v in &input {
                if let Node::Map(m) = v {
                    if let Some(x) = m.get(name) {
                        out.push(x.clone());
                    }
                }
            }
            if out.is_empty() {
                return Err(EvalError(format!("{name} is not found")));
            }
            Ok(out)
        }
        Step::Wildcard => {
            let mut out = Vec::new();
            for v in &input {
                match v {
                    Node::Map(m) => out.extend(sorted_values(m)),
                    Node::Seq(s) => out.extend(s.iter().cloned()),
                    _ => {}
                }
            }
            Ok(out)
        }
        Step::Recursive => {
            let mut out = Vec::new();
            recursive(input, &mut out);
            Ok(out)
        }
        Step::Slice {
            start,
            end,
            step,
            single,
        } => {
            let mut out = Vec::new();
            for v in &input {
                let Node::Seq(s) = v else {
                    return Err(EvalError(format!("{} is not array or slice", show(v))));
                };
                let len = s.len() as i64;
                let mut a = start.unwrap_or(0);
                if a < 0 {
                    a += len;
                }
                let mut b = end.unwrap_or(len);
                if b < 0 || (b == 0 && *single) {
                    b += len;
                }
                if a == b {
                    continue;
                }
                if a >= len || a < 0 {
                    return Err(EvalError(format!(
                        "array index out of bounds: index {a}, length {len}"
                    )));
                }
                if b > len || b < 0 {
                    return Err(EvalError(format!(
                        "array index out of bounds: index {}, length {len}",
                        b - 1
                    )));
                }
                if a > b {
                    return Err(EvalError(format!(
                        "starting index {a} is greater than ending index {b}"
                    )));
                }
                let st = match step {
                    Some(st) if *st <= 0 => return Err(EvalError("step must be > 0".into())),
                    Some(st) => *st as usize,
                    None => 1,
                };
                out.extend(s[a as usize..b as usize].iter().step_by(st).cloned());
            }
            Ok(out)
        }
        Step::Union(parts) => {
            let mut out = Vec::new();
            for p in parts {
                out.extend(eval(p, input.clone(), root)?);
            }
            Ok(out)
        }
        Step::Filter { left, op, right } => {
            let mut out = Vec::new();
            for v in &input {
                let Node::Seq(items) = v else {
                    return Err(EvalError(format!("{} is not array or slice", show(v))));
                };
                for item in items {
                    let lefts = walk(left, vec![item.clone()], root);
                    if op == "exists" {
                        if lefts.is_ok_and(|l| !l.is_empty()) {
                            out.push(item.clone());
                        }
                        continue;
                    }
                    let lefts = lefts?;
                    let l = match lefts.as_slice() {
                        [] => continue,
                        [l] => l,
                        _ => {
                            return Err(EvalError("can only compare one element at a time".into()))
                        }
                    };
                    let rights = walk(right, vec![item.clone()], root)?;
                    let r = match rights.as_slice() {
                        [] => continue,
                        [r] => r,
                        _ => {
                            return Err(EvalError("can only compare one element at a time".into()))
                        }
                    };
                    if compare(l, op, r)? {
                        out.push(item.clone());
                    }
                }
            }
            Ok(out)
        }
    }
}

/// Go template's `eq`/`lt` rules: values of different basic kinds (a
/// float64 value against an integer literal) cannot be compared.
fn compare(l: &Node, op: &str, r: &Node) -> Result<bool, EvalError> {
    use std::cmp::Ordering;
    let bad = || EvalError("incompatible types for comparison".into());
    // Values are float64 (as Helm decodes them); literals keep their kind.
    let ord = match (l, r) {
        (Node::Float(a), Node::Float(b)) => a.partial_cmp(b).ok_or_else(bad)?,
        (Node::Int(a), Node::Int(b)) => a.cmp(b),
        (Node::Str(a), Node::Str(b)) => a.cmp(b),
        (Node::Bool(a), Node::Bool(b)) => {
            if !matches!(op, "==" | "!=") {
                return Err(bad());
            }
            a.cmp(b)
        }
        _ => return Err(bad()),
    };
    Ok(match op {
        "==" => ord == Ordering::Equal,
        "!=" => ord != Ordering::Equal,
        "<" => ord == Ordering::Less,
        ">" => ord == Ordering::Greater,
        "<=" => ord != Ordering::Greater,
        ">=" => ord != Ordering::Less,
        other => return Err(EvalError(format!("unrecognized filter operator {other}"))),
    })
}

/// Helm's values hold numbers as float64: integers become floats.
fn as_go(v: &Node) -> Node {
    match v {
        Node::Int(i) => Node::Float(*i as f64),
        Node::Seq(s) => Node::Seq(s.iter().map(as_go).collect()),
        Node::Map(m) => Node::Map(m.iter().map(|(k, v)| (k.clone(), as_go(v))).collect()),
        other => other.clone(),
    }
}

fn show(v: &Node) -> String {
    print(v).unwrap_or_default()
}

/// Kubernetes' `PrintResults` of one value: JSON for maps and lists, Go's
/// `fmt.Print` for the rest.
fn print(v: &Node) -> Result<String, EvalError> {
    Ok(match v {
        Node::Map(_) | Node::Seq(_) => {
            crate::gostd::json::marshal(v).map_err(|e| EvalError(e.to_string()))?
        }
        Node::Null => "null".into(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => crate::gostd::float::format_float(*i as f64, 'g', None),
        Node::Float(f) => crate::gostd::float::format_float(*f, 'g', None),
        Node::Str(s) => s.clone(),
    })
}

/// Parses `template` and runs it on `values` the way `helm show values
/// --jsonpath` does: numbers as float64, and an evaluation error printing
/// nothing (`Ok("")`). Only a parse error is an error.
pub fn show_values(template: &str, values: &Node) -> Result<String, ParseError> {
    let jp = JsonPath::parse(template)?;
    Ok(jp.execute(&as_go(values)).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Node {
        crate::yaml::parse_values(
            "a: 1\nbig: 1234567\nf: 0.5\ns: \"x<y>&z\"\nb: true\nm:\n  k2: v\n  k1: [1, \"two\", {z: 1}]\nl:\n  - name: one\n    port: 80\n  - name: two\n    port: 81\n",
        )
        .unwrap()
    }

    fn run(t: &str) -> String {
        show_values(t, &values()).unwrap()
    }

    /// Outputs of `helm show values --jsonpath` (Helm v3.17.2) on the same values.
    #[test]
    fn matches_helm() {
        let cases = [
            ("{.a}", "1"),
            ("{.big}", "1.234567e+06"),
            ("{.f}", "0.5"),
            ("{.s}", "x<y>&z"),
            ("{.b}", "true"),
            ("{.m}", r#"{"k1":[1,"two",{"z":1}],"k2":"v"}"#),
            ("{.m.k1[0]}", "1"),
            ("{.m.k1[-1]}", r#"{"z":1}"#),
            ("{.l[*].name}", "one two"),
            ("{.l[0:2].port}", "80 81"),
            (
                "{range .l[*]}{.name}={.port}{\"\\n\"}{end}",
                "one=80\ntwo=81\n",
            ),
            ("{.missing}", ""),
            ("x{.a}y{.missing}z", ""),
            (".a", ".a"),
            ("{..name}", "one two"),
            ("{.l[?(@.port==81)].name}", ""),
            ("{.l[?(@.port==81.0)].name}", "two"),
            ("{.l[?(@.name==\"two\")].port}", "81"),
            ("{.l[?(@.name)].port}", "80 81"),
            ("{.l[0,1].name}", "one two"),
            ("{$.a}", "1"),
            ("{.m['k2']}", "v"),
            (
                "{.l[*]}",
                r#"{"name":"one","port":80} {"name":"two","port":81}"#,
            ),
            ("{.m.*}", r#"[1,"two",{"z":1}] v"#),
            ("{.a}{.f}", "10.5"),
            ("{.l[5]}", ""),
            ("{.l[-1:].name}", "two"),
            ("{.l[:1].name}", "one"),
            ("{.l[0:5].name}", ""),
            ("{.l[::-1].name}", ""),
            ("{range .l[*]}[{.name}]{end}", "[one][two]"),
            ("{range .m.k1}<{@}>{end}", r#"<[1,"two",{"z":1}]>"#),
            ("{.a}{end}", ""),
            ("{.l.name}", ""),
            ("{ .a }", "1"),
            ("{.f}{\" \"}{.big}", "0.5 1.234567e+06"),
        ];
        for (t, want) in cases {
            assert_eq!(run(t), want, "{t}");
        }
        assert_eq!(
            show_values("{.a", &values()).unwrap_err().to_string(),
            "unclosed action"
        );
    }
}
