//! Thin seams between the render stage and the modules it builds on (YAML
//! parsing/emitting, Masterminds constraints), so the Go-compatible
//! behaviour it relies on is named in one place.
use crate::yaml::Node;

/// sigs.k8s.io/yaml `Marshal` of a node (keys sorted, trailing newline).
pub fn to_yaml(node: &Node) -> String {
    crate::yaml::to_yaml(node)
}

/// Parses one manifest document as sigs.k8s.io/yaml does, with Go's error
/// text (`error converting YAML to JSON: yaml: line N: ...`), keeping only
/// the top-level fields a head is read from (`apiVersion`, `kind`,
/// `metadata`): the rest of the document is checked but not built.
pub fn parse_manifest_head(text: &str) -> Result<Node, String> {
    crate::yaml::parse_yaml_to_json_keys(text, &["apiVersion", "kind", "metadata"])
        .map_err(|e| e.to_string())
}

/// Parses a values file (a map; empty -> empty map).
pub fn parse_values(text: &str) -> Result<Node, String> {
    crate::yaml::parse_values(text).map_err(|e| e.to_string())
}

/// Masterminds `IsCompatibleRange(constraint, version)`. Versions with a
/// pre-release only match constraints that mention one.
pub fn is_compatible_range(constraint: &str, version: &str) -> bool {
    crate::template::funcs::semver::constraint_matches(constraint, version).unwrap_or(false)
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
