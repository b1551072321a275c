//! Go's `encoding/base64` `StdEncoding`: decoding with the `base64` crate,
//! and the error Go reports (`illegal base64 data at input byte N`), which
//! Sprig's `b64dec` prints as its result.
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use std::borrow::Cow;

/// Go's `StdEncoding`: padding required, non-zero trailing bits accepted
/// (Go checks them only in `Strict` mode).
const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Go's `base64.CorruptInputError`: the offset of the first bad input byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal base64 data at input byte {0}")]
pub struct CorruptInputError(pub usize);

/// Go's `base64.StdEncoding.EncodeToString`.
pub fn encode_std(src: &[u8]) -> String {
    GO_STD.encode(src)
}

/// Go's `base64.StdEncoding.DecodeString`: `\r` and `\n` are skipped
/// anywhere, padding is required, and the error names the byte Go names.
pub fn decode_std(src: &[u8]) -> Result<Vec<u8>, CorruptInputError> {
    let newline = |b: &u8| *b == b'\n' || *b == b'\r';
    let text: Cow<'_, [u8]> = if src.iter().any(newline) {
        Cow::Owned(src.iter().copied().filter(|b| !newline(b)).collect())
    } else {
        Cow::Borrowed(src)
    };
    // The crate accepts exactly what Go accepts; only the offset of an
    // error is Go's own (`first_error` follows Go's `decodeQuantum`).
    GO_STD
        .decode(&text)
        .map_err(|_| CorruptInputError(first_error(src).unwrap_or(0)))
}

/// Where Go's `decodeQuantum` stops on `src`, or `None` when it accepts it.
fn first_error(src: &[u8]) -> Option<usize> {
    let newline = |b: u8| b == b'\n' || b == b'\r';
    let skip_newlines = |mut si: usize| {
        while src.get(si).is_some_and(|&b| newline(b)) {
            si += 1;
        }
        si
    };
    let mut si = 0;
    loop {
        let mut j = 0;
        while j < 4 {
            let Some(&c) = src.get(si) else {
                // The end: fine between quanta, short inside one.
                return (j > 0).then(|| si - j);
            };
            si += 1;
            if c.is_ascii_alphanumeric() || c == b'+' || c == b'/' {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                // `==` expected: the second `=` after any newlines.
                si = skip_newlines(si);
                match src.get(si) {
                    None => return Some(src.len()),
                    Some(b'=') => si += 1,
                    Some(_) => return Some(si - 1),
                }
            }
            // Padding ends the text; anything but newlines after it is garbage.
            si = skip_newlines(si);
            return (si < src.len()).then_some(si);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `encoding/base64` documentation example and the offsets Go
    /// reports (checked with Go 1.22's `StdEncoding.DecodeString`).
    #[test]
    fn go_offsets_and_examples() {
        let msg = "Hello, 世界";
        let enc = encode_std(msg.as_bytes());
        assert_eq!(enc, "SGVsbG8sIOS4lueVjA==");
        assert_eq!(decode_std(enc.as_bytes()).unwrap(), msg.as_bytes());
        for (text, want) in [
            ("YWJj", &b"abc"[..]),
            ("YW\nJj\r\n", b"abc"),
            ("YQ==", b"a"),
            ("YR==", b"a"),
            ("", b""),
        ] {
            assert_eq!(decode_std(text.as_bytes()).as_deref(), Ok(want), "{text:?}");
        }
        let offsets = [
            ("abc", 0),
            ("!!", 0),
            ("YWJj!", 4),
            ("YQ=", 3),
            ("YQ==YQ==", 4),
            ("QQ=x", 2),
            ("Q===", 1),
            ("YW\nJ", 1),
        ];
        for (text, at) in offsets {
            assert_eq!(
                decode_std(text.as_bytes()),
                Err(CorruptInputError(at)),
                "{text:?}"
            );
        }
        assert_eq!(
            decode_std(b"!").unwrap_err().to_string(),
            "illegal base64 data at input byte 0"
        );
    }

    proptest::proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            proptest::prop_assert_eq!(decode_std(encode_std(&data).as_bytes()), Ok(data));
        }

        /// The crate and Go's quantum rules agree on what is valid, so every
        /// error has Go's offset.
        #[test]
        fn crate_and_go_agree_on_validity(text in "[A-Da-d0-3+/=\\n\\r!]{0,24}") {
            let crate_ok = decode_std(text.as_bytes()).is_ok();
            proptest::prop_assert_eq!(crate_ok, first_error(text.as_bytes()).is_none(), "{:?}", text);
        }
    }
}
