//! Helm's `strvals`: the `--set` family's `a.b[0].c=v,x={1,2}` syntax.
//!
//! Values come out as [`Node`]s with Helm's typing: `--set` gives bools, nil,
//! int64 ([`Node::Int`]) for base-10 integers that do not start with `0`, and
//! strings otherwise; `--set-string` and `--set-file` always give strings;
//! `--set-json` gives JSON values (numbers are float64).
use crate::yaml::Node;
use std::collections::BTreeMap;

/// The deepest `a.b.c` nesting Helm accepts.
pub const MAX_NESTED_NAME_LEVEL: usize = 30;
/// The largest list index Helm accepts.
pub const MAX_INDEX: i64 = 65536;

/// A `--set*` expression that Helm would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StrvalsError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, StrvalsError> {
    Err(StrvalsError(m.into()))
}

/// How right-hand sides are turned into values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--set`: typed scalars.
    Typed,
    /// `--set-string`: always strings.
    String,
    /// `--set-json`: JSON values.
    Json,
    /// `--set-file`: the right-hand side names a file whose content is the value.
    File,
}

/// Reads `--set-file` paths.
pub type FileReader<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// Outcome of a read that stops at one of a set of runes.
enum Stop {
    Rune(char),
    Eof,
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    mode: Mode,
    files: Option<FileReader<'a>>,
}

/// Sentinel errors of the Go parser: end of input, or "this is not a `{}` list".
enum PErr {
    Eof,
    NotList,
    Err(StrvalsError),
}

impl From<StrvalsError> for PErr {
    fn from(e: StrvalsError) -> Self {
        PErr::Err(e)
    }
}

fn go_type(n: Option<&Node>) -> &'static str {
    match n {
        None | Some(Node::Null) => "nil",
        Some(Node::Bool(_)) => "bool",
        Some(Node::Int(_)) => "int64",
        Some(Node::Float(_)) => "float64",
        Some(Node::Str(_)) => "string",
        Some(Node::Seq(_)) => "[]interface {}",
        Some(Node::Map(_)) => "map[string]interface {}",
    }
}

fn typed_val(s: String, as_string: bool) -> Node {
    if as_string {
        return Node::Str(s);
    }
    if s.eq_ignore_ascii_case("true") {
        return Node::Bool(true);
    }
    if s.eq_ignore_ascii_case("false") {
        return Node::Bool(false);
    }
    if s.eq_ignore_ascii_case("null") {
        return Node::Null;
    }
    if s == "0" {
        return Node::Int(0);
    }
    if !s.is_empty() && !s.starts_with('0') {
        // strconv.ParseInt accepts a sign, digits only.
        let digits = s.strip_prefix(['+', '-']).unwrap_or(&s);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(i) = s.parse::<i64>() {
                return Node::Int(i);
            }
        }
    }
    Node::Str(s)
}

/// JSON numbers decode to float64 in Go.
fn json_numbers_to_float(n: Node) -> Node {
    match n {
        Node::Int(i) => Node::Float(i as f64),
        Node::Seq(v) => Node::Seq(v.into_iter().map(json_numbers_to_float).collect()),
        Node::Map(m) => Node::Map(
            m.into_iter()
                .map(|(k, v)| (k, json_numbers_to_float(v)))
                .collect(),
        ),
        other => other,
    }
}

impl<'a> Parser<'a> {
    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// Reads until a stop rune (consumed) with `\` escapes.
    fn runes_until(&mut self, stop: &[char]) -> (String, Stop) {
        let mut v = String::new();
        loop {
            match self.read() {
                None => return (v, Stop::Eof),
                Some(r) if stop.contains(&r) => return (v, Stop::Rune(r)),
                Some('\\') => match self.read() {
                    None => return (v, Stop::Eof),
                    Some(n) => v.push(n),
                },
                Some(r) => v.push(r),
            }
        }
    }

    fn reader(&self, rs: String) -> Result<Node, StrvalsError> {
        match self.mode {
            Mode::Typed => Ok(typed_val(rs, false)),
            Mode::String | Mode::Json => Ok(typed_val(rs, true)),
            Mode::File => match self.files {
                Some(f) => f(&rs).map(Node::Str).map_err(StrvalsError),
                None => Ok(Node::Str(rs)),
            },
        }
    }

    fn parse(&mut self, data: &mut BTreeMap<String, Node>) -> Result<(), StrvalsError> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(PErr::Eof) => return Ok(()),
                Err(PErr::NotList) => return err("not a list"),
                Err(PErr::Err(e)) => return Err(e),
            }
        }
    }

    /// Consumes blanks up to a comma or the end (true), or stops before
    /// anything else (false).
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None | Some(',') => return true,
                Some(r) if crate::manifest::split::is_go_space(r) => continue,
                Some(_) => {
                    self.unread();
                    return false;
                }
            }
        }
    }

    fn json_value(&mut self) -> Result<Node, PErr> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<Node>();
        let v = match stream.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(PErr::Err(StrvalsError(e.to_string()))),
            None => return Err(PErr::Err(StrvalsError("unexpected EOF".into()))),
        };
        let consumed = rest[..stream.byte_offset()].chars().count();
        self.pos += consumed;
        Ok(json_numbers_to_float(v))
    }

    fn key(&mut self, data: &mut BTreeMap<String, Node>, level: usize) -> Result<(), PErr> {
        let (k, last) = self.runes_until(&['=', '[', ',', '.']);
        match last {
            Stop::Eof => {
                if k.is_empty() {
                    Err(PErr::Eof)
                } else {
                    Err(PErr::Err(StrvalsError(format!("key {k:?} has no value"))))
                }
            }
            Stop::Rune('[') => {
                let i = self.key_index()?;
                let list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Node::Seq(l)) => l.clone(),
                    Some(other) => {
                        return Err(PErr::Err(StrvalsError(format!(
                            "unable to parse key: interface conversion: interface {{}} is {}, not []interface {{}}",
                            go_type(Some(other))
                        ))))
                    }
                };
                let (list, res) = self.list_item(list, i, level);
                set(data, &k, Node::Seq(list));
                res
            }
            Stop::Rune('=') => {
                if self.mode == Mode::Json {
                    if self.empty_val() {
                        set(data, &k, Node::Null);
                        return Ok(());
                    }
                    let v = self.json_value()?;
                    set(data, &k, v);
                    self.empty_val();
                    return Ok(());
                }
                match self.val_list() {
                    Ok(vl) => {
                        set(data, &k, Node::Seq(vl));
                        Ok(())
                    }
                    Err(PErr::Eof) => {
                        set(data, &k, Node::Str(String::new()));
                        Err(PErr::Eof)
                    }
                    Err(PErr::NotList) => {
                        let (rs, _) = self.runes_until(&[',']);
                        let v = self.reader(rs)?;
                        set(data, &k, v);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Stop::Rune(',') => {
                set(data, &k, Node::Str(String::new()));
                Err(PErr::Err(StrvalsError(format!(
                    "key {k:?} has no value (cannot end with ,)"
                ))))
            }
            Stop::Rune(_) => {
                // '.'
                let level = level + 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return Err(PErr::Err(StrvalsError(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    ))));
                }
                let mut inner = match data.get(&k) {
                    None => BTreeMap::new(),
                    Some(Node::Map(m)) => m.clone(),
                    Some(other) => {
                        return Err(PErr::Err(StrvalsError(format!(
                            "unable to parse key: interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                            go_type(Some(other))
                        ))))
                    }
                };
                let e = self.key(&mut inner, level);
                if e.is_ok() && inner.is_empty() {
                    return Err(PErr::Err(StrvalsError(format!(
                        "key map {k:?} has no value"
                    ))));
                }
                if !inner.is_empty() {
                    set(data, &k, Node::Map(inner));
                }
                e
            }
        }
    }

    fn key_index(&mut self) -> Result<i64, PErr> {
        let (v, stop) = self.runes_until(&[']']);
        if let Stop::Eof = stop {
            return Err(PErr::Eof);
        }
        v.parse::<i64>().map_err(|_| {
            PErr::Err(StrvalsError(format!(
                "error parsing index: strconv.Atoi: parsing {v:?}: invalid syntax"
            )))
        })
    }

    fn list_item(
        &mut self,
        mut list: Vec<Node>,
        i: i64,
        level: usize,
    ) -> (Vec<Node>, Result<(), PErr>) {
        if i < 0 {
            return (
                list,
                Err(PErr::Err(StrvalsError(format!(
                    "negative {i} index not allowed"
                )))),
            );
        }
        let (k, last) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            return (
                list,
                Err(PErr::Err(StrvalsError(format!(
                    "unexpected data at end of array index: {k:?}"
                )))),
            );
        }
        match last {
            Stop::Eof => (list, Err(PErr::Eof)),
            Stop::Rune('=') => {
                if self.mode == Mode::Json {
                    if self.empty_val() {
                        return set_index(list, i, Node::Null);
                    }
                    let v = match self.json_value() {
                        Ok(v) => v,
                        Err(e) => return (list, Err(e)),
                    };
                    let (list, r) = set_index(list, i, v);
                    if r.is_err() {
                        return (list, r);
                    }
                    self.empty_val();
                    return (list, Ok(()));
                }
                match self.val_list() {
                    Ok(vl) => set_index(list, i, Node::Seq(vl)),
                    Err(PErr::Eof) => set_index(list, i, Node::Str(String::new())),
                    Err(PErr::NotList) => {
                        let (rs, _) = self.runes_until(&[',']);
                        match self.reader(rs) {
                            Ok(v) => set_index(list, i, v),
                            Err(e) => (list, Err(e.into())),
                        }
                    }
                    Err(e) => (list, Err(e)),
                }
            }
            Stop::Rune('[') => {
                let next = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => return (list, Err(e)),
                };
                let cur = match list.get(i as usize) {
                    Some(Node::Seq(l)) => l.clone(),
                    _ => Vec::new(),
                };
                let (l2, r) = self.list_item(cur, next, level);
                if r.is_err() {
                    return (list, r);
                }
                set_index(list, i, Node::Seq(l2))
            }
            Stop::Rune('.') => {
                let mut inner = match list.get(i as usize) {
                    Some(Node::Map(m)) => m.clone(),
                    _ => BTreeMap::new(),
                };
                if let Err(e) = self.key(&mut inner, level) {
                    return (list, Err(e));
                }
                let (l, r) = set_index(std::mem::take(&mut list), i, Node::Map(inner));
                (l, r)
            }
            Stop::Rune(r) => (
                Vec::new(),
                Err(PErr::Err(StrvalsError(format!(
                    "parse error: unexpected token {}",
                    r as u32
                )))),
            ),
        }
    }

    fn val_list(&mut self) -> Result<Vec<Node>, PErr> {
        match self.read() {
            None => return Err(PErr::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread();
                return Err(PErr::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.runes_until(&[',', '}']);
            match last {
                Stop::Eof => {
                    return Err(PErr::Err(StrvalsError(
                        "list must terminate with '}'".into(),
                    )))
                }
                Stop::Rune('}') => {
                    if let Some(r) = self.read() {
                        if r != ',' {
                            self.unread();
                        }
                    }
                    list.push(self.reader(rs)?);
                    return Ok(list);
                }
                Stop::Rune(_) => list.push(self.reader(rs)?),
            }
        }
    }
}

fn set(data: &mut BTreeMap<String, Node>, key: &str, val: Node) {
    if !key.is_empty() {
        data.insert(key.to_string(), val);
    }
}

fn set_index(mut list: Vec<Node>, i: i64, val: Node) -> (Vec<Node>, Result<(), PErr>) {
    if i < 0 {
        return (
            list,
            Err(PErr::Err(StrvalsError(format!(
                "negative {i} index not allowed"
            )))),
        );
    }
    if i > MAX_INDEX {
        return (
            list,
            Err(PErr::Err(StrvalsError(format!(
                "index of {i} is greater than maximum supported index of {MAX_INDEX}"
            )))),
        );
    }
    let i = i as usize;
    if list.len() <= i {
        list.resize(i + 1, Node::Null);
    }
    list[i] = val;
    (list, Ok(()))
}

/// Parses one `--set*` argument into `base` (Helm's `strvals.ParseInto` and
/// friends).
pub fn parse_into(
    s: &str,
    base: &mut BTreeMap<String, Node>,
    mode: Mode,
    files: Option<FileReader<'_>>,
) -> Result<(), StrvalsError> {
    let mut p = Parser {
        chars: s.chars().collect(),
        pos: 0,
        mode,
        files,
    };
    p.parse(base)
}

/// `--set-literal`: the whole right-hand side is one string.
pub fn parse_literal_into(s: &str, base: &mut BTreeMap<String, Node>) -> Result<(), StrvalsError> {
    let Some((key, value)) = s.split_once('=') else {
        return err(format!("key {s:?} has no value"));
    };
    let parts: Vec<&str> = key.split('.').collect();
    if parts.len() > MAX_NESTED_NAME_LEVEL + 1 {
        return err(format!(
            "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
        ));
    }
    let mut cur = base;
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            cur.insert(part.to_string(), Node::Str(value.to_string()));
            break;
        }
        let entry = cur
            .entry(part.to_string())
            .or_insert_with(|| Node::Map(BTreeMap::new()));
        if !matches!(entry, Node::Map(_)) {
            *entry = Node::Map(BTreeMap::new());
        }
        let Node::Map(m) = entry else {
            return err("unreachable");
        };
        cur = m;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> Node {
        let mut m = BTreeMap::new();
        parse_into(s, &mut m, Mode::Typed, None).unwrap();
        Node::Map(m)
    }

    fn yaml(n: &Node) -> String {
        serde_json::to_string(n).unwrap()
    }

    #[test]
    fn typing() {
        assert_eq!(
            yaml(&set(
                "a=true,b=null,c=0,d=12,e=1.5,f=007,g=0x10,h=-3,i=FALSE"
            )),
            r#"{"a":true,"b":null,"c":0,"d":12,"e":"1.5","f":"007","g":"0x10","h":-3,"i":false}"#
        );
        assert_eq!(set("d=12"), Node::Map([("d".into(), Node::Int(12))].into()));
    }

    #[test]
    fn nesting_lists_escapes() {
        assert_eq!(yaml(&set("a.b.c=x")), r#"{"a":{"b":{"c":"x"}}}"#);
        assert_eq!(yaml(&set("a[2]=x")), r#"{"a":[null,null,"x"]}"#);
        assert_eq!(yaml(&set("a={x,y},b=z")), r#"{"a":["x","y"],"b":"z"}"#);
        assert_eq!(yaml(&set(r"a=x\,y")), r#"{"a":"x,y"}"#);
        assert_eq!(yaml(&set("a[0].b=1,a[0].c=2")), r#"{"a":[{"b":1,"c":2}]}"#);
        assert_eq!(yaml(&set("a=")), r#"{"a":""}"#);
    }

    #[test]
    fn existing_list_is_updated() {
        let mut m = BTreeMap::new();
        m.insert(
            "a".to_string(),
            Node::Seq(vec![Node::Int(1), Node::Int(2), Node::Int(3)]),
        );
        parse_into("a[1]=x", &mut m, Mode::Typed, None).unwrap();
        assert_eq!(yaml(&Node::Map(m)), r#"{"a":[1,"x",3]}"#);
    }

    #[test]
    fn json_mode() {
        let mut m = BTreeMap::new();
        parse_into(r#"a={"x":1000000},b=,c=[1,"2"]"#, &mut m, Mode::Json, None).unwrap();
        assert_eq!(m["a"], Node::Map([("x".into(), Node::Float(1e6))].into()));
        assert_eq!(m["b"], Node::Null);
        assert_eq!(
            m["c"],
            Node::Seq(vec![Node::Float(1.0), Node::Str("2".into())])
        );
    }

    #[test]
    fn errors() {
        let mut m = BTreeMap::new();
        assert_eq!(
            parse_into("a", &mut m, Mode::Typed, None).unwrap_err().0,
            "key \"a\" has no value"
        );
        let deep = (0..32)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(".")
            + "=1";
        assert!(parse_into(&deep, &mut BTreeMap::new(), Mode::Typed, None)
            .unwrap_err()
            .0
            .contains("nested level"));
        assert!(parse_into("a={x", &mut BTreeMap::new(), Mode::Typed, None).is_err());
    }

    #[test]
    fn string_mode() {
        let mut m = BTreeMap::new();
        parse_into("a=12,b=true", &mut m, Mode::String, None).unwrap();
        assert_eq!(m["a"], Node::Str("12".into()));
        assert_eq!(m["b"], Node::Str("true".into()));
    }
}
