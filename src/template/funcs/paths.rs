//! Sprig path functions: `base dir ext clean isAbs` (Go's `path`, always `/`)
//! and `osBase osDir osExt osClean osIsAbs` (`path/filepath`, which on the
//! Linux builds of Helm behaves the same).
use super::util::{arg_str, params};
use super::{CallContext, FuncResult, Registry};
// Go's `path.Clean`, the one the chart loader cleans archive entry names with.
use crate::chart::loader::clean_path as clean;
use crate::template::value::Value;

/// Go's `path.Base`: the last element, trailing slashes removed.
pub fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    match t.rfind('/') {
        Some(i) => t[i + 1..].to_string(),
        None => t.to_string(),
    }
}

/// Go's `path.Dir`: everything but the last element, cleaned.
pub fn dir(p: &str) -> String {
    let d = match p.rfind('/') {
        Some(i) => &p[..i + 1],
        None => "",
    };
    clean(d)
}

/// Go's `path.Ext`: the suffix from the last dot of the last element.
pub fn ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

fn base_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(base(&arg_str(a, 0))))
}

fn dir_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(dir(&arg_str(a, 0))))
}

fn ext_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(ext(&arg_str(a, 0))))
}

fn clean_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(clean(&arg_str(a, 0))))
}

fn is_abs(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 0).starts_with('/')))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use params::S;
    r.add("base", S, None, base_fn);
    r.add("dir", S, None, dir_fn);
    r.add("clean", S, None, clean_fn);
    r.add("ext", S, None, ext_fn);
    r.add("isAbs", S, None, is_abs);
    r.add("osBase", S, None, base_fn);
    r.add("osClean", S, None, clean_fn);
    r.add("osDir", S, None, dir_fn);
    r.add("osExt", S, None, ext_fn);
    r.add("osIsAbs", S, None, is_abs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_rules() {
        assert_eq!(base("/a/b/c.tar.gz"), "c.tar.gz");
        assert_eq!(base(""), ".");
        assert_eq!(base("/a/b/"), "b");
        assert_eq!(base("///"), "/");
        assert_eq!(dir("/a/b/c.txt"), "/a/b");
        assert_eq!(dir("file"), ".");
        assert_eq!(dir("/"), "/");
        assert_eq!(ext("/a/b/c.tar.gz"), ".gz");
        assert_eq!(ext("noext"), "");
        assert_eq!(ext("a.b/c"), "");
        assert_eq!(clean("a//b"), "a/b");
        assert_eq!(clean("/../a/./b/.."), "/a");
        assert_eq!(clean("../../x"), "../../x");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean(""), ".");
    }
}
