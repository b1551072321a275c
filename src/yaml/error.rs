//! The YAML error type. Display texts are Helm's (sigs.k8s.io/yaml wrapping
//! gopkg.in/yaml.v2 and encoding/json), so callers can print them as Helm does.

/// Why a YAML text could not be read. The `Display` text is exactly what Helm
/// prints after its own prefix (e.g. after `cannot load values.yaml: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The text is not well-formed YAML (a scanner or parser error).
    #[error("error converting YAML to JSON: yaml: {}{problem}", line_prefix(*.go_line))]
    Syntax {
        /// The problem, in libyaml's words (`mapping values are not allowed in this context`).
        problem: String,
        /// 1-based line of the problem in the whole text.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// The line number yaml.v2 prints (0 = none): libyaml's parser errors
        /// report the 0-based line, scanner errors the 1-based one.
        go_line: usize,
        /// 0-based index of the document in the stream.
        document: usize,
    },
    /// yaml.v2 refused the document while building values: an explicit tag that
    /// does not fit (`cannot decode !!str `x` as a !!int`), an unknown alias,
    /// a bad merge, a collection used as a key, excessive aliasing.
    #[error("error converting YAML to JSON: yaml: {message}")]
    Decode {
        /// yaml.v2's message.
        message: String,
        /// 1-based line of the node, when known (0 = unknown).
        line: usize,
        /// 1-based column of the node, when known (0 = unknown).
        column: usize,
        /// 0-based index of the document in the stream.
        document: usize,
    },
    /// The text holds bytes that are not UTF-8 (see [`crate::gostd::gostr`]):
    /// go-yaml's reader refuses the whole stream.
    #[error("error converting YAML to JSON: yaml: {problem}")]
    Encoding {
        /// go-yaml's words: `invalid leading UTF-8 octet`, `invalid
        /// trailing UTF-8 octet`, `incomplete UTF-8 octet sequence`, ...
        problem: &'static str,
    },
    /// A mapping key JSON cannot hold (`null`, or an unsigned integer beyond int64).
    #[error("error converting YAML to JSON: {message}")]
    Key {
        /// sigs.k8s.io/yaml's message (`unsupported map key of type: ...`).
        message: String,
        /// 0-based index of the document in the stream.
        document: usize,
    },
    /// A value JSON cannot hold: `.inf`, `-.inf`, `.nan`.
    #[error("error converting YAML to JSON: json: unsupported value: {value}")]
    UnsupportedValue {
        /// Go's text of the value (`+Inf`, `-Inf`, `NaN`).
        value: String,
        /// 0-based index of the document in the stream.
        document: usize,
    },
    /// The document is well-formed but has the wrong shape for the target
    /// (a list where a map is required, ...).
    #[error("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {found} into Go value of type {target}")]
    Type {
        /// The JSON kind found: `array`, `object`, `string`, `number`, `bool`.
        found: String,
        /// The Go type wanted, e.g. `map[string]interface {}`.
        target: String,
    },
}

fn line_prefix(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!("line {line}: ")
    }
}

impl YamlError {
    /// The 1-based line and column of the error, when the error has a position.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            YamlError::Syntax { line, column, .. } => Some((*line, *column)),
            YamlError::Decode { line, column, .. } if *line > 0 => Some((*line, *column)),
            _ => None,
        }
    }

    /// The 0-based index of the document the error is in, when known.
    pub fn document(&self) -> Option<usize> {
        match self {
            YamlError::Syntax { document, .. }
            | YamlError::Decode { document, .. }
            | YamlError::Key { document, .. }
            | YamlError::UnsupportedValue { document, .. } => Some(*document),
            YamlError::Type { .. } | YamlError::Encoding { .. } => None,
        }
    }

    /// The message without sigs.k8s.io/yaml's `error converting YAML to JSON: `
    /// prefix, as yaml.v2 alone would print it (`yaml: line 2: ...`).
    pub fn yaml_v2_message(&self) -> String {
        let full = self.to_string();
        match full.strip_prefix("error converting YAML to JSON: ") {
            Some(rest) => rest.to_string(),
            None => full,
        }
    }
}
