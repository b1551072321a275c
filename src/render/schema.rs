//! `values.schema.json` validation of every chart that has one (Helm's
//! `ValidateAgainstSchema`): the root chart against the coalesced values,
//! then each subchart against its part of them.
//!
//! Validation uses the `jsonschema` crate (draft 7 unless the schema names
//! another draft, as gojsonschema defaults to). Messages are phrased like
//! Helm v3.17's gojsonschema (`- policy: Invalid type. Expected: string,
//! given: null`) for the common keywords; the rest use the crate's wording.
use super::values::Map;
use crate::chart::Chart;
use crate::yaml::Node;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::Draft;
use serde_json::Value as Json;

/// Validates `vals` against the schemas of `chart` and its subcharts.
/// Returns Helm's per-chart report (`<chart>:\n- <error>\n...`) on failure.
pub(crate) fn validate(chart: &Chart, vals: &Map) -> Result<(), String> {
    let mut report = String::new();
    validate_into(chart, vals, &mut report);
    if report.is_empty() {
        Ok(())
    } else {
        Err(report)
    }
}

fn validate_into(chart: &Chart, vals: &Map, report: &mut String) {
    if let Some(schema) = &chart.schema {
        if let Err(e) = validate_single(vals, schema) {
            report.push_str(&chart.metadata.name);
            report.push_str(":\n");
            report.push_str(&e);
        }
    }
    for sub in &chart.dependencies {
        let empty = Map::new();
        let sub_vals = match vals.get(&sub.metadata.name) {
            Some(Node::Map(m)) => m,
            _ => &empty,
        };
        validate_into(sub, sub_vals, report);
    }
}

/// gojsonschema's field name: `(root)` or the dotted instance path.
fn field(pointer: &str) -> String {
    if pointer.is_empty() || pointer == "/" {
        return "(root)".to_string();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) => {
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                "integer"
            } else {
                "number"
            }
        }
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn describe(kind: &ValidationErrorKind, instance: &Json, fallback: String) -> (bool, String) {
    // The bool says whether the message already names its field.
    match kind {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            (
                false,
                format!(
                    "Invalid type. Expected: {expected}, given: {}",
                    json_type(instance)
                ),
            )
        }
        ValidationErrorKind::Required { property } => {
            let p = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            (false, format!("{p} is required"))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => (
            false,
            format!(
                "Additional property {} is not allowed",
                unexpected.join(", ")
            ),
        ),
        ValidationErrorKind::Enum { options } => {
            let opts = match options.as_ref() {
                Json::Array(a) => a
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            (true, format!("must be one of the following: {opts}"))
        }
        ValidationErrorKind::Minimum { limit } => {
            (false, format!("Must be greater than or equal to {limit}"))
        }
        ValidationErrorKind::Maximum { limit } => {
            (false, format!("Must be less than or equal to {limit}"))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            (false, format!("Must be greater than {limit}"))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            (false, format!("Must be less than {limit}"))
        }
        ValidationErrorKind::MinLength { limit } => (
            false,
            format!("String length must be greater than or equal to {limit}"),
        ),
        ValidationErrorKind::MaxLength { limit } => (
            false,
            format!("String length must be less than or equal to {limit}"),
        ),
        ValidationErrorKind::Pattern { pattern } => {
            (false, format!("Does not match pattern '{pattern}'"))
        }
        ValidationErrorKind::Format { format } => {
            (false, format!("Does not match format '{format}'"))
        }
        ValidationErrorKind::MinItems { limit } => {
            (false, format!("Array must have at least {limit} items"))
        }
        ValidationErrorKind::MaxItems { limit } => {
            (false, format!("Array must have at most {limit} items"))
        }
        ValidationErrorKind::AnyOf { .. } => (
            false,
            "Must validate at least one schema (anyOf)".to_string(),
        ),
        ValidationErrorKind::OneOfNotValid { .. }
        | ValidationErrorKind::OneOfMultipleValid { .. } => (
            false,
            "Must validate one and only one schema (oneOf)".to_string(),
        ),
        ValidationErrorKind::Not { .. } => {
            (false, "Must not validate the schema (not)".to_string())
        }
        ValidationErrorKind::Constant { expected_value } => {
            (true, format!("does not match: {expected_value}"))
        }
        _ => (false, fallback),
    }
}

/// One step of an instance path, for [`error_order`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Index(u64),
    Key(String),
    /// After every child: an array's own errors.
    Last,
}

/// The order gojsonschema reports an error in: by instance path, a value's
/// own errors before its children's, except an array's own after its items'.
fn error_order(pointer: &str, kind: &ValidationErrorKind) -> Vec<Step> {
    let mut steps: Vec<Step> = pointer
        .split('/')
        .skip(1)
        .map(|seg| match seg.parse() {
            Ok(i) => Step::Index(i),
            Err(_) => Step::Key(seg.replace("~1", "/").replace("~0", "~")),
        })
        .collect();
    if matches!(
        kind,
        ValidationErrorKind::MinItems { .. }
            | ValidationErrorKind::MaxItems { .. }
            | ValidationErrorKind::UniqueItems
            | ValidationErrorKind::Contains
    ) {
        steps.push(Step::Last);
    }
    steps
}

/// Validates `vals` against one chart's schema (Helm's
/// `ValidateAgainstSingleSchema`); the error lists one `- path: problem`
/// line per violation.
pub(crate) fn validate_single(vals: &Map, schema_bytes: &[u8]) -> Result<(), String> {
    let mut schema: Json = match serde_json::from_slice(schema_bytes) {
        Ok(s) => s,
        Err(e) => return Err(format!("- (root): invalid schema: {e}\n")),
    };
    let instance = match serde_json::to_value(vals) {
        Ok(Json::Null) => Json::Object(Default::default()),
        Ok(v) => v,
        Err(e) => return Err(format!("- (root): {e}\n")),
    };
    // gojsonschema knows drafts 4, 6 and 7 and treats any other `$schema`
    // (e.g. `http://json-schema.org/schema#`) as draft 7.
    let declared = match &mut schema {
        Json::Object(m) => m.remove("$schema"),
        _ => None,
    };
    let draft = match declared.as_ref().and_then(|d| d.as_str()) {
        Some(d) if d.contains("draft-04") => Draft::Draft4,
        Some(d) if d.contains("draft-06") => Draft::Draft6,
        _ => Draft::Draft7,
    };
    // Go's regexp (RE2) is what gojsonschema matches `pattern` with; the
    // `regex` crate has the same dialect and compiles far faster than the
    // backtracking default.
    let validator = match jsonschema::options()
        .with_draft(draft)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(&schema)
    {
        Ok(v) => v,
        Err(e) => return Err(format!("- (root): {e}\n")),
    };
    let mut errors: Vec<_> = validator.iter_errors(&instance).collect();
    // gojsonschema reports an object's own errors (required, additional
    // properties) before those of its properties, and an array's items'
    // errors before the array's own (length, uniqueness).
    errors.sort_by_cached_key(|e| error_order(e.instance_path().as_str(), e.kind()));
    // gojsonschema stops at a type mismatch: no other errors for that value.
    let type_errors: std::collections::BTreeSet<String> = errors
        .iter()
        .filter(|e| matches!(e.kind(), ValidationErrorKind::Type { .. }))
        .map(|e| e.instance_path().as_str().to_string())
        .collect();
    let mut out = String::new();
    for err in errors {
        let pointer = err.instance_path().as_str().to_string();
        if type_errors.contains(&pointer) && !matches!(err.kind(), ValidationErrorKind::Type { .. })
        {
            continue;
        }
        let f = field(&pointer);
        let (named, desc) = describe(err.kind(), err.instance(), err.to_string());
        if named {
            out.push_str(&format!("- {f}: {f} {desc}\n"));
        } else {
            out.push_str(&format!("- {f}: {desc}\n"));
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;

    fn chart(schema: &str) -> Chart {
        Chart {
            metadata: Metadata {
                name: "c".into(),
                ..Default::default()
            },
            schema: Some(schema.as_bytes().to_vec()),
            ..Default::default()
        }
    }

    #[test]
    fn type_and_required_messages() {
        let c = chart(
            r#"{"type":"object","required":["name"],"properties":{"policy":{"type":"string"},"port":{"type":"integer"}}}"#,
        );
        let mut vals = Map::new();
        vals.insert("policy".into(), Node::Null);
        vals.insert("port".into(), Node::Float(8.5));
        let e = validate(&c, &vals).unwrap_err();
        assert!(e.starts_with("c:\n"), "{e}");
        assert!(
            e.contains("- policy: Invalid type. Expected: string, given: null\n"),
            "{e}"
        );
        assert!(e.contains("- (root): name is required\n"), "{e}");
        assert!(
            e.contains("- port: Invalid type. Expected: integer, given: number\n"),
            "{e}"
        );
        vals.insert("name".into(), Node::Str("x".into()));
        vals.insert("policy".into(), Node::Str("p".into()));
        vals.insert("port".into(), Node::Float(8.0));
        assert!(validate(&c, &vals).is_ok());
    }
}
