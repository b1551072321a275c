//! Helm's `releaseutil.SplitManifests`: one rendered file -> its documents.
//!
//! Helm splits with the regular expression `(?:^|\s*\n)---\s*` on the
//! whole-file text trimmed of surrounding whitespace, drops empty pieces and
//! trims each document. This is not a YAML-aware split: `---` must start a
//! line, and whatever follows it on that line begins the next document
//! (`--- # c` gives a document starting with `# c`).
//!
//! The expression is matched by hand ([`split_manifests`]): compiling it
//! with the `regex` crate cost about 2% of a small chart's whole render.
//! A property test checks the hand-written matcher against the expression.

use crate::gostd::unicode::is_regexp_space;

/// Where a run of separator blanks starting at `i` ends.
fn skip_sep_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_regexp_space(b[i]) {
        i += 1;
    }
    i
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
    let s = go_trim_space(text);
    let b = s.as_bytes();
    let mut pieces = Vec::new();
    // Leftmost-first matches of `(?:^|\s*\n)---\s*`: a match either is
    // `---` at the very start, or begins where the run of blanks that ends
    // in the newline before a `---` begins (never before the previous
    // match's end), and takes every blank after the `---`.
    let (mut piece_start, mut search) = (0, 0);
    if b.starts_with(b"---") {
        piece_start = skip_sep_space(b, 3);
        search = piece_start;
    }
    while let Some(found) = memchr::memmem::find(&b[search..], b"\n---") {
        let newline = search + found;
        let mut start = newline;
        while start > search && is_regexp_space(b[start - 1]) {
            start -= 1;
        }
        pieces.push(&s[piece_start..start]);
        piece_start = skip_sep_space(b, newline + 4);
        search = piece_start;
    }
    pieces.push(&s[piece_start..]);
    pieces
        .into_iter()
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

    /// Helm's way, with the expression itself.
    fn split_with_regex(text: &str) -> Vec<&str> {
        let sep = regex::Regex::new(r"(?:^|[\t\n\x0C\r ]*\n)---[\t\n\x0C\r ]*").unwrap();
        sep.split(go_trim_space(text))
            .filter(|d| !d.is_empty())
            .map(go_trim_space)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn hand_matcher_splits_like_the_expression(
            s in proptest::collection::vec(proptest::sample::select(vec![
                "---", "-", "\n", " ", "\t", "\r", "\u{0C}", "\u{0B}", "\u{A0}", "a", "#", ":",
            ]), 0..24).prop_map(|t| t.concat()),
        ) {
            prop_assert_eq!(split_manifests(&s), split_with_regex(&s), "{:?}", s);
        }

        #[test]
        fn never_panics_and_docs_are_trimmed(s in "[-a-z \n:#\t]{0,80}") {
            for d in split_manifests(&s) {
                prop_assert!(!d.is_empty());
                prop_assert_eq!(d, go_trim_space(d));
            }
        }
    }
}
