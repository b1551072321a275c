//! Helm's `releaseutil.SplitManifests`: one rendered file -> its documents.
//!
//! Helm splits with the regular expression `(?:^|\s*\n)---\s*` on the
//! whole-file text trimmed of surrounding whitespace, drops empty pieces and
//! trims each document. This is not a YAML-aware split: `---` must start a
//! line, and whatever follows it on that line begins the next document
//! (`--- # c` gives a document starting with `# c`).
use regex::Regex;
use std::sync::OnceLock;

fn separator() -> Option<&'static Regex> {
    static SEP: OnceLock<Option<Regex>> = OnceLock::new();
    SEP.get_or_init(|| {
        // Go's `\s` is ASCII-only: [\t\n\f\r ].
        Regex::new(r"(?:^|[\t\n\x0C\r ]*\n)---[\t\n\x0C\r ]*").ok()
    })
    .as_ref()
}

/// Go's `strings.TrimSpace` (Unicode white space, as Go's `unicode.IsSpace`).
pub fn go_trim_space(s: &str) -> &str {
    s.trim_matches(is_go_space)
}

/// Go's `unicode.IsSpace`.
pub fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{85}' | '\u{A0}'
    ) || (c > '\u{FF}' && c.is_whitespace())
}

/// Splits a rendered file into its trimmed documents, in file order (Helm's
/// `manifest-0`, `manifest-1`, ...). Blank input gives no documents.
pub fn split_manifests(text: &str) -> Vec<&str> {
    let trimmed = go_trim_space(text);
    let Some(sep) = separator() else {
        return if trimmed.is_empty() {
            Vec::new()
        } else {
            vec![trimmed]
        };
    };
    sep.split(trimmed)
        .filter(|d| !d.is_empty())
        .map(go_trim_space)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_like_helm() {
        assert_eq!(split_manifests("a: 1\n---\nb: 2\n"), ["a: 1", "b: 2"]);
        assert_eq!(split_manifests("---\na: 1"), ["a: 1"]);
        assert_eq!(
            split_manifests("a: 1\n--- # c\nb: 2"),
            ["a: 1", "# c\nb: 2"]
        );
        assert_eq!(split_manifests("a: 1\n---foo: 1"), ["a: 1", "foo: 1"]);
        // `---` inside a line is not a separator.
        assert_eq!(split_manifests("a: x---y"), ["a: x---y"]);
        assert!(split_manifests(" \n\t").is_empty());
        // The quirk: an empty document swallows the next separator.
        assert_eq!(split_manifests("# a\n---\n\n---\n# b"), ["# a", "---\n# b"]);
    }

    proptest! {
        #[test]
        fn never_panics_and_docs_are_trimmed(s in "[-a-z \n:#\t]{0,80}") {
            for d in split_manifests(&s) {
                prop_assert!(!d.is_empty());
                prop_assert_eq!(d, go_trim_space(d));
            }
        }
    }
}
