//! Object names that the Kubernetes API server accepts, per kind.
//!
//! Kubernetes validates `metadata.name` with one of four rules depending on
//! the kind. The messages are the API server's (and `helm lint`'s), so a user
//! sees the same text either way.

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// The naming rule Kubernetes applies to a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain: lower-case alphanumerics, `-`, `.`; at most 253.
    Dns1123Subdomain,
    /// RFC 1123 label: lower-case alphanumerics and `-`; at most 63.
    Dns1123Label,
    /// RFC 1035 label: like a 1123 label but starting with a letter.
    Dns1035Label,
    /// A URL path segment: anything but `.`, `..`, `/` and `%` (RBAC kinds,
    /// so `system:metrics-server` is fine).
    PathSegment,
}

/// The rule for a kind (case-insensitive, group-independent, as the API
/// server and `helm lint` apply it). Unknown kinds, custom resources
/// included, use [`NameRule::Dns1123Subdomain`].
pub fn rule_for_kind(kind: &str) -> NameRule {
    match kind.to_ascii_lowercase().as_str() {
        "service" => NameRule::Dns1035Label,
        "namespace" => NameRule::Dns1123Label,
        "role"
        | "clusterrole"
        | "rolebinding"
        | "clusterrolebinding"
        | "certificatesigningrequest" => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

fn is_alnum_lower(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_label(s: &str, first_alpha: bool) -> bool {
    let b = s.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    let first_ok = if first_alpha {
        first.is_ascii_lowercase()
    } else {
        is_alnum_lower(first)
    };
    first_ok && is_alnum_lower(last) && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
}

/// A name Kubernetes would refuse: every requirement it fails, in
/// Kubernetes' words. It prints them joined with `, `, as the API server
/// and `helm lint` do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join(", "))]
pub struct InvalidName {
    /// The name.
    pub name: String,
    /// One message per failed requirement (`name is required` for an
    /// empty name).
    pub problems: Vec<String>,
}

/// Checks `name` against a rule; the error lists every failed requirement.
pub fn check_name(rule: NameRule, name: &str) -> Result<(), InvalidName> {
    let problems = name_errors(rule, name);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(InvalidName {
            name: name.to_string(),
            problems,
        })
    }
}

/// Every requirement `name` fails under a rule, one Kubernetes message each.
pub fn name_errors(rule: NameRule, name: &str) -> Vec<String> {
    let mut errs: Vec<String> = Vec::new();
    match rule {
        NameRule::Dns1123Subdomain => {
            if name.len() > 253 {
                errs.push("must be no more than 253 characters".into());
            }
            if !name.split('.').all(|p| is_label(p, false)) {
                errs.push(DNS1123_SUBDOMAIN_MSG.into());
            }
        }
        NameRule::Dns1123Label => {
            if name.len() > 63 {
                errs.push("must be no more than 63 characters".into());
            }
            if !is_label(name, false) {
                errs.push(DNS1123_LABEL_MSG.into());
            }
        }
        NameRule::Dns1035Label => {
            if name.len() > 63 {
                errs.push("must be no more than 63 characters".into());
            }
            if !is_label(name, true) {
                errs.push(DNS1035_LABEL_MSG.into());
            }
        }
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                errs.push(format!("may not be '{name}'"));
            } else {
                if name.contains('/') {
                    errs.push("may not contain '/'".into());
                }
                if name.contains('%') {
                    errs.push("may not contain '%'".into());
                }
            }
        }
    }
    errs
}

/// Validates an object name for its kind, returning Kubernetes' message.
///
/// ```
/// use rudder::manifest::validate_name;
/// assert!(validate_name("ClusterRole", "system:metrics-server").is_ok());
/// assert!(validate_name("Deployment", "system:metrics-server").is_err());
/// assert!(validate_name("Service", "1abc").is_err());
/// ```
pub fn validate_name(kind: &str, name: &str) -> Result<(), InvalidName> {
    if name.is_empty() {
        return Err(InvalidName {
            name: String::new(),
            problems: vec!["name is required".into()],
        });
    }
    check_name(rule_for_kind(kind), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_by_kind() {
        assert!(validate_name("Deployment", "metrics-server").is_ok());
        assert!(validate_name("Deployment", "a.b.c").is_ok());
        assert!(validate_name("Deployment", "A").is_err());
        assert!(validate_name("Deployment", "").is_err());
        assert!(validate_name("Deployment", "-a").is_err());
        assert!(validate_name("Namespace", "a.b").is_err());
        assert!(validate_name("Service", "a-1").is_ok());
        assert!(validate_name("service", "1a").is_err());
        assert!(validate_name("RoleBinding", "Weird Name:x").is_ok());
        assert!(validate_name("Role", "..").is_err());
        assert!(validate_name("Role", "a/b").is_err());
        assert!(validate_name("Role", "").is_err());
        assert!(validate_name("ConfigMap", &"a".repeat(254)).is_err());
        assert!(validate_name("ConfigMap", &"a".repeat(253)).is_ok());
        assert!(validate_name("Namespace", &"a".repeat(64)).is_err());
    }

    #[test]
    fn messages_match_kubernetes() {
        let e = validate_name("Deployment", "Bad").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a lowercase RFC 1123 subdomain must consist of"),
            "{e}"
        );
        let e = validate_name("Role", "a/b%").unwrap_err();
        assert_eq!(e.name, "a/b%");
        assert_eq!(e.problems, ["may not contain '/'", "may not contain '%'"]);
        assert_eq!(e.to_string(), "may not contain '/', may not contain '%'");
        assert_eq!(
            validate_name("Role", "").unwrap_err().to_string(),
            "name is required"
        );
    }
}
