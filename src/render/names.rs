//! Release names as `helm template` and `helm install` choose and check
//! them: `--name-template` (Helm's `action.TemplateName`) and
//! `chartutil.ValidateReleaseName`, with Helm's messages.
use crate::template::funcs::sprig_registry;
use crate::template::{Engine, EngineOptions, TemplateError, Value};

/// The most bytes a release name may have (Helm's `maxReleaseNameLen`).
pub const MAX_RELEASE_NAME_LEN: usize = 53;

/// Why a name template gave no name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The template did not parse or failed. It prints Go's own text
    /// (`template: name-template:1: function "x" not defined`, the
    /// error's [`TemplateError::go`]), as Helm does for this template.
    #[error("{}", .0.go)]
    Template(TemplateError),
    /// The release name is not valid (Helm's `availableName` wording).
    #[error("release name {name:?}: {reason}")]
    Invalid {
        /// The name.
        name: String,
        /// Helm's reason (`no name provided`, or the regex rule).
        reason: &'static str,
    },
}

/// Helm's `errInvalidName`.
const INVALID: &str = "invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53";

/// Evaluates a `--name-template` as Helm does: Go's `text/template`
/// named `name-template`, Sprig's function map only, `nil` data (so a
/// field prints `<no value>`). An empty template is no name (`None`).
pub fn template_name(text: &str) -> Result<Option<String>, NameError> {
    if text.is_empty() {
        return Ok(None);
    }
    let mut engine = Engine::with_registry(EngineOptions::default(), sprig_registry());
    engine
        .add_template("name-template", text)
        .map_err(NameError::Template)?;
    engine
        .execute_plain("name-template", &Value::Nil)
        .map(Some)
        .map_err(NameError::Template)
}

/// Helm's `ValidateReleaseName` as `availableName` reports it: not empty,
/// at most 53 bytes, DNS-label segments of `[a-z0-9-]` joined by dots.
pub fn validate_release_name(name: &str) -> Result<(), NameError> {
    let invalid = |reason| {
        Err(NameError::Invalid {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return invalid("no name provided");
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    if name.len() > MAX_RELEASE_NAME_LEN || !name.split('.').all(label_ok) {
        return invalid(INVALID);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_helm_checks_them() {
        for ok in ["a", "release-name", "a.b-c.d1", &"a".repeat(53)] {
            assert!(validate_release_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "A",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a_b",
            "<no value>",
            &"a".repeat(54),
        ] {
            assert!(validate_release_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            validate_release_name("").unwrap_err().to_string(),
            "release name \"\": no name provided"
        );
    }

    #[test]
    fn name_templates_as_helm_evaluates_them() {
        assert_eq!(template_name("").unwrap(), None);
        assert_eq!(
            template_name("r-{{ \"x\" | upper | lower }}").unwrap(),
            Some("r-x".into())
        );
        assert_eq!(
            template_name("{{ .Foo }}").unwrap(),
            Some("<no value>".into())
        );
        let err = template_name("{{ toYaml . }}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "template: name-template:1: function \"toYaml\" not defined"
        );
        let NameError::Template(t) = err else {
            panic!("not a template error: {err:?}");
        };
        assert_eq!(
            (t.template.as_str(), t.line, t.column),
            ("name-template", Some(1), Some(3))
        );
    }
}
