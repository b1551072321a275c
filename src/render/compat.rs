//! Seams to modules that other helpers are still writing. Each function
//! forwards to the real implementation once it lands; until then it uses the
//! closest available stand-in so the render stage compiles and tests.
use crate::yaml::Node;

/// sigs.k8s.io/yaml `Marshal` of a node (keys sorted, trailing newline).
pub fn to_yaml(node: &Node) -> String {
    crate::yaml::to_yaml(node)
}

/// Parses one manifest document as sigs.k8s.io/yaml does, with Go's error
/// text (`error converting YAML to JSON: yaml: line N: ...`).
pub fn parse_yaml_document(text: &str) -> Result<Node, String> {
    crate::yaml::parse_yaml_to_json(text).map_err(|e| e.to_string())
}

/// Parses a values file (a map; empty -> empty map).
pub fn parse_values(text: &str) -> Result<Node, String> {
    crate::yaml::parse_values(text).map_err(|e| e.to_string())
}

/// A lenient Masterminds version: (major, minor, patch, prerelease).
type Ver = (u64, u64, u64, String);

fn parse_ver(s: &str) -> Option<Ver> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let s = s.split('+').next()?;
    let (core, pre) = match s.split_once('-') {
        Some((c, p)) => (c, p.to_string()),
        None => (s, String::new()),
    };
    let mut it = core.split('.');
    let mut n = [0u64; 3];
    for (i, slot) in n.iter_mut().enumerate() {
        match it.next() {
            Some(p) => *slot = p.parse().ok()?,
            None if i > 0 => break,
            None => return None,
        }
    }
    if it.next().is_some() {
        return None;
    }
    Some((n[0], n[1], n[2], pre))
}

fn cmp_ver(a: &Ver, b: &Ver) -> std::cmp::Ordering {
    (a.0, a.1, a.2)
        .cmp(&(b.0, b.1, b.2))
        .then_with(|| match (a.3.is_empty(), b.3.is_empty()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => a.3.cmp(&b.3),
        })
}

/// One `op version` term; wildcards give the number of fixed parts.
fn term_matches(term: &str, v: &Ver) -> Option<bool> {
    use std::cmp::Ordering::*;
    let ops = [">=", "<=", "!=", "=>", "=<", ">", "<", "=", "~>", "~", "^"];
    let t = term.trim();
    let (op, rest) = ops
        .iter()
        .find_map(|o| t.strip_prefix(o).map(|r| (*o, r.trim())))
        .unwrap_or(("", t));
    let rest_nv = rest.strip_prefix('v').unwrap_or(rest);
    let parts: Vec<&str> = rest_nv.split(['-', '+']).next()?.split('.').collect();
    let fixed = parts
        .iter()
        .take_while(|p| !matches!(**p, "x" | "X" | "*"))
        .count();
    let mut base = rest_nv.to_string();
    if fixed < parts.len() || parts.len() < 3 {
        let mut nums: Vec<&str> = parts[..fixed].to_vec();
        while nums.len() < 3 {
            nums.push("0");
        }
        base = nums.join(".");
    }
    let c = parse_ver(&base)?;
    let ord = cmp_ver(v, &c);
    let wildcard = fixed < 3 && (fixed < parts.len() || parts.len() < 3);
    let upper = |level: usize| -> Ver {
        match level {
            0 => (u64::MAX, 0, 0, String::new()),
            1 => (c.0 + 1, 0, 0, String::new()),
            _ => (c.0, c.1 + 1, 0, String::new()),
        }
    };
    Some(match op {
        "" | "=" => {
            if wildcard {
                ord != Less && cmp_ver(v, &upper(fixed)) == Less
            } else {
                ord == Equal
            }
        }
        "!=" => {
            if wildcard {
                !(ord != Less && cmp_ver(v, &upper(fixed)) == Less)
            } else {
                ord != Equal
            }
        }
        ">" => {
            if wildcard {
                cmp_ver(v, &upper(fixed)) != Less
            } else {
                ord == Greater
            }
        }
        ">=" | "=>" => ord != Less,
        "<" => ord == Less,
        "<=" | "=<" => {
            if wildcard {
                cmp_ver(v, &upper(fixed)) == Less
            } else {
                ord != Greater
            }
        }
        "~" | "~>" => {
            let level = if fixed <= 1 { 1 } else { 2 };
            ord != Less && cmp_ver(v, &upper(level)) == Less
        }
        _ => {
            // ^: up to the next change of the left-most non-zero part.
            let up = if c.0 > 0 || fixed <= 1 {
                upper(1)
            } else if c.1 > 0 || fixed == 2 {
                upper(2)
            } else {
                (c.0, c.1, c.2 + 1, String::new())
            };
            ord != Less && cmp_ver(v, &up) == Less
        }
    })
}

/// Masterminds `IsCompatibleRange(constraint, version)`. Versions with a
/// pre-release only match constraints that mention one.
pub fn is_compatible_range(constraint: &str, version: &str) -> bool {
    let Some(v) = parse_ver(version) else {
        return false;
    };
    if constraint.trim().is_empty() {
        return false;
    }
    constraint.split("||").any(|group| {
        let group = group.trim();
        // Hyphen ranges: "a - b".
        let terms: Vec<String> = if let Some((lo, hi)) = group.split_once(" - ") {
            vec![format!(">={}", lo.trim()), format!("<={}", hi.trim())]
        } else {
            let mut out: Vec<String> = Vec::new();
            let mut pending_op = String::new();
            for tok in group.split([',', ' ']).filter(|t| !t.is_empty()) {
                if tok.chars().all(|c| "<>=!~^".contains(c)) {
                    pending_op = tok.to_string();
                } else {
                    out.push(format!("{pending_op}{tok}"));
                    pending_op.clear();
                }
            }
            out
        };
        if terms.is_empty() {
            return false;
        }
        if !v.3.is_empty() && !terms.iter().any(|t| t.contains('-')) {
            return false;
        }
        terms.iter().all(|t| term_matches(t, &v).unwrap_or(false))
    })
}

#[cfg(test)]
mod tests {
    use super::is_compatible_range as ok;

    #[test]
    fn masterminds_ranges() {
        assert!(ok(">=1.20.0", "v1.31.0"));
        assert!(!ok(">=1.33.0", "v1.32.0"));
        assert!(!ok(">=1.20.0", "v1.30.5-gke.1"));
        assert!(ok(">=1.20.0-0", "v1.30.5-gke.1"));
        assert!(!ok("~1.30", "v1.31.0"));
        assert!(ok("~1.30", "v1.30.4"));
        assert!(ok(">= 1.19.0-0, < 2.0.0", "v1.31.0"));
        assert!(ok("^1.2.3", "1.9.0"));
        assert!(!ok("^1.2.3", "2.0.0"));
        assert!(ok("1.x", "1.4.0"));
        assert!(ok("*", "1.4.0"));
        assert!(ok("<1.0.0 || >=1.20", "1.25.0"));
        assert!(!ok("", "1.0.0"));
    }
}
