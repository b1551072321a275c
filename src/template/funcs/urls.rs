//! Sprig URL functions (urlParse, urlJoin) on a port of Go's `net/url`
//! parsing and formatting rules.
use super::util::{arg_str, err, NIL_DEREF};
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::gostd::strconv::quote;
use crate::template::value::Value;
use std::collections::BTreeMap;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    Fragment,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Mode::Host
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Mode::Path => c == b'?',
                Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::Fragment => false,
                Mode::Host => true,
            }
        }
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `url` escaping for one component.
fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if should_escape(b, mode) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

/// Go's `url` unescaping; the error is Go's message.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let bad = String::from_utf8_lossy(&b[i..(i + 3).min(b.len())]).into_owned();
                    return Err(format!("invalid URL escape {}", quote(&bad)));
                }
                let v = u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(0);
                if mode == Mode::Host && v < 0x80 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", quote(&s[i..i + 3])));
                }
                out.push(v);
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        quote(&s[i..i + 1])
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn valid_optional_port(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    match p.strip_prefix(':') {
        Some(d) => d.bytes().all(|c| c.is_ascii_digit()),
        None => false,
    }
}

/// The parts of a URL that Sprig exposes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GoUrl {
    /// Lower-cased scheme.
    pub scheme: String,
    /// Opaque part (`mailto:x`).
    pub opaque: String,
    /// `user[:password]` as `Userinfo.String()` prints it, if present.
    pub userinfo: Option<String>,
    /// Host with port.
    pub host: String,
    /// Unescaped path.
    pub path: String,
    /// Raw query (without `?`).
    pub raw_query: String,
    /// Whether the URL ended in a bare `?`.
    pub force_query: bool,
    /// Unescaped fragment.
    pub fragment: String,
}

impl GoUrl {
    /// `URL.Hostname()`: the host without port and IPv6 brackets.
    pub fn hostname(&self) -> String {
        let mut host = self.host.as_str();
        if let Some(c) = host.rfind(':') {
            if valid_optional_port(&host[c..]) {
                host = &host[..c];
            }
        }
        if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
            host = &host[1..host.len() - 1];
        }
        host.to_string()
    }
}

fn get_scheme(raw: &str) -> Result<(String, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok((String::new(), raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((raw[..i].to_string(), &raw[i + 1..]));
            }
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let i = host.rfind(']').ok_or("missing ']' in host")?;
        let port = &host[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", quote(port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", quote(port)));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

fn user_string(user: &str, pass: Option<&str>) -> String {
    let mut s = escape(user, Mode::UserPassword);
    if let Some(p) = pass {
        s.push(':');
        s.push_str(&escape(p, Mode::UserPassword));
    }
    s
}

fn parse_userinfo(ui: &str) -> Result<String, String> {
    if !valid_userinfo(ui) {
        return Err("net/url: invalid userinfo".into());
    }
    match ui.split_once(':') {
        None => Ok(user_string(&unescape(ui, Mode::UserPassword)?, None)),
        Some((u, p)) => Ok(user_string(
            &unescape(u, Mode::UserPassword)?,
            Some(&unescape(p, Mode::UserPassword)?),
        )),
    }
}

fn parse_inner(raw: &str) -> Result<GoUrl, String> {
    if raw.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut u = GoUrl::default();
    if raw == "*" {
        u.path = "*".into();
        return Ok(u);
    }
    let (scheme, rest) = get_scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest.to_string();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        u.force_query = true;
        rest.pop();
    } else if let Some((r, q)) = rest.clone().split_once('?') {
        u.raw_query = q.to_string();
        rest = r.to_string();
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest;
            return Ok(u);
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let mut authority = rest[2..].to_string();
        let mut path = String::new();
        if let Some(i) = authority.find('/') {
            path = authority[i..].to_string();
            authority.truncate(i);
        }
        match authority.rfind('@') {
            None => u.host = parse_host(&authority)?,
            Some(i) => {
                u.host = parse_host(&authority[i + 1..])?;
                u.userinfo = Some(parse_userinfo(&authority[..i])?);
            }
        }
        rest = path;
    }
    u.path = unescape(&rest, Mode::Path)?;
    Ok(u)
}

/// Go's `url.Parse`; the error is Go's `*url.Error` text.
pub fn parse(raw: &str) -> Result<GoUrl, String> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_inner(u).map_err(|e| format!("parse {}: {e}", quote(u)))?;
    if let Some(f) = frag {
        url.fragment =
            unescape(f, Mode::Fragment).map_err(|e| format!("parse {}: {e}", quote(raw)))?;
    }
    Ok(url)
}

/// Go's `URL.String()` for the parts `urlJoin` sets.
pub fn format(u: &GoUrl) -> String {
    let mut buf = String::new();
    if !u.scheme.is_empty() {
        buf.push_str(&u.scheme);
        buf.push(':');
    }
    if !u.opaque.is_empty() {
        buf.push_str(&u.opaque);
    } else {
        if !u.scheme.is_empty() || !u.host.is_empty() || u.userinfo.is_some() {
            if !u.host.is_empty() || !u.path.is_empty() || u.userinfo.is_some() {
                buf.push_str("//");
            }
            if let Some(ui) = &u.userinfo {
                buf.push_str(ui);
                buf.push('@');
            }
            if !u.host.is_empty() {
                buf.push_str(&escape(&u.host, Mode::Host));
            }
        }
        let path = escape(&u.path, Mode::Path);
        if !path.is_empty() && !path.starts_with('/') && !u.host.is_empty() {
            buf.push('/');
        }
        if buf.is_empty() && path.split('/').next().unwrap_or("").contains(':') {
            buf.push_str("./");
        }
        buf.push_str(&path);
    }
    if u.force_query || !u.raw_query.is_empty() {
        buf.push('?');
        buf.push_str(&u.raw_query);
    }
    if !u.fragment.is_empty() {
        buf.push('#');
        buf.push_str(&escape(&u.fragment, Mode::Fragment));
    }
    buf
}

fn url_parse(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let u = parse(&arg_str(a, 0)).map_err(|e| err(format!("unable to parse url: {e}")))?;
    let mut m = BTreeMap::new();
    let hostname = u.hostname();
    m.insert("scheme".to_string(), Value::str(u.scheme));
    m.insert("host".to_string(), Value::str(u.host));
    m.insert("hostname".to_string(), Value::str(hostname));
    m.insert("path".to_string(), Value::str(u.path));
    m.insert("query".to_string(), Value::str(u.raw_query));
    m.insert("opaque".to_string(), Value::str(u.opaque));
    m.insert("fragment".to_string(), Value::str(u.fragment));
    m.insert(
        "userinfo".to_string(),
        Value::str(u.userinfo.unwrap_or_default()),
    );
    Ok(Value::map(m))
}

fn dict_get_or_empty(d: &Value, key: &str) -> Result<String, FuncError> {
    let v = match d {
        Value::Map(m, _) => m.borrow().get(key).cloned(),
        _ => None,
    };
    match v {
        None => Ok(String::new()),
        Some(Value::Str(s)) => Ok(s.to_string()),
        Some(Value::Nil) => Err(err(NIL_DEREF)),
        Some(other) => Err(err(format!(
            "unable to parse {key} key, must be of type string, but {} found",
            other.kind_name()
        ))),
    }
}

fn url_join(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let d = a.first().cloned().unwrap_or(Value::Nil);
    let mut u = GoUrl {
        scheme: dict_get_or_empty(&d, "scheme")?,
        host: dict_get_or_empty(&d, "host")?,
        path: dict_get_or_empty(&d, "path")?,
        raw_query: dict_get_or_empty(&d, "query")?,
        opaque: dict_get_or_empty(&d, "opaque")?,
        fragment: dict_get_or_empty(&d, "fragment")?,
        ..GoUrl::default()
    };
    let userinfo = dict_get_or_empty(&d, "userinfo")?;
    if !userinfo.is_empty() {
        let tmp = parse(&format!("proto://{userinfo}@host"))
            .map_err(|e| err(format!("unable to parse userinfo in dict: {e}")))?;
        u.userinfo = tmp.userinfo;
    }
    Ok(Value::str(format(&u)))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("urlParse", &[Param::String], None, url_parse);
    r.add("urlJoin", &[Param::Map], None, url_join);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn parse_like_go() {
        assert_eq!(
            show("urlParse", &[s("http://example.com/x?y=1")]),
            "map[fragment: host:example.com hostname:example.com opaque: path:/x query:y=1 scheme:http userinfo:]"
        );
        assert_eq!(
            show("urlParse", &[s("https://user:pw@example.com:8443/p/a?q=1&r=2#frag")]),
            "map[fragment:frag host:example.com:8443 hostname:example.com opaque: path:/p/a query:q=1&r=2 scheme:https userinfo:user:pw]"
        );
        assert_eq!(
            show("urlParse", &[s("/just/a/path?x")]),
            "map[fragment: host: hostname: opaque: path:/just/a/path query:x scheme: userinfo:]"
        );
        assert_eq!(
            show("urlParse", &[s("http://[::1")]),
            "ERR: unable to parse url: parse \"http://[::1\": missing ']' in host"
        );
        assert!(show("urlParse", &[s("http://h/%€")]).contains("invalid URL escape"));
        assert_eq!(
            show("urlParse", &[s("mailto:a@b.c")]),
            "map[fragment: host: hostname: opaque:a@b.c path: query: scheme:mailto userinfo:]"
        );
    }

    #[test]
    fn join_like_go() {
        let d = Value::map(
            [
                ("scheme", "https"),
                ("host", "example.com:8080"),
                ("path", "/a b"),
                ("query", "x=1"),
                ("fragment", "f"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), Value::str(*v)))
            .collect(),
        );
        assert_eq!(
            show("urlJoin", &[d]),
            "https://example.com:8080/a%20b?x=1#f"
        );
        let parsed = call(register, "urlParse", &[s("https://a.b/c?d=e#f")]).unwrap();
        assert_eq!(show("urlJoin", &[parsed]), "https://a.b/c?d=e#f");
    }
}
