//! Sprig encodings and hashes (b64*, b32*, sha*sum, adler32sum).
//!
//! The decoders follow Go's `encoding/base64` ([`crate::gostd::base64`])
//! and `encoding/base32` `StdEncoding` exactly, including which input byte
//! an error names: Sprig returns that error text as the result.
use super::util::{arg_str, go_bytes, go_string_from_bytes, params};
use super::{CallContext, FuncResult, Registry};
use crate::gostd::base64;
use crate::template::value::Value;
use sha1::Digest;

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Standard base32 with padding.
pub fn b32_encode(src: &[u8]) -> String {
    let mut out = String::with_capacity(src.len().div_ceil(5) * 8);
    for chunk in src.chunks(5) {
        let mut b = [0u8; 5];
        b[..chunk.len()].copy_from_slice(chunk);
        let n = b.iter().fold(0u64, |acc, &x| acc << 8 | x as u64);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for k in 0..8 {
            if k < chars {
                out.push(B32[((n >> (35 - 5 * k)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's `base32.StdEncoding.DecodeString` (newlines are dropped first); the
/// error is Go's message.
pub fn b32_decode(input: &[u8]) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal base32 data at input byte {at}");
    let src: Vec<u8> = input
        .iter()
        .copied()
        .filter(|&c| c != b'\n' && c != b'\r')
        .collect();
    let olen = src.len();
    let mut rest: &[u8] = &src;
    let mut out = Vec::new();
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            if rest.is_empty() {
                return Err(corrupt(olen - rest.len() - j));
            }
            let c = rest[0];
            rest = &rest[1..];
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 7 {
                    return Err(corrupt(olen));
                }
                for k in 0..(7 - j) {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(corrupt(olen - rest.len() + k - 1));
                    }
                }
                dlen = j;
                end = true;
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(corrupt(olen - rest.len() - 1));
                }
                break;
            }
            match B32.iter().position(|&x| x == c) {
                Some(v) => dbuf[j] = v as u8,
                None => return Err(corrupt(olen - rest.len() - 1)),
            }
            j += 1;
        }
        let n = dbuf.iter().fold(0u64, |acc, &x| acc << 5 | x as u64);
        let bytes = [
            (n >> 32) as u8,
            (n >> 24) as u8,
            (n >> 16) as u8,
            (n >> 8) as u8,
            n as u8,
        ];
        let take = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&bytes[..take]);
    }
    Ok(out)
}

/// Adler-32 (`hash/adler32`).
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    b << 16 | a
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn b64enc(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(base64::encode_std(&go_bytes(&arg_str(a, 0)))))
}

fn b64dec(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(match base64::decode_std(&go_bytes(&arg_str(a, 0))) {
        Ok(b) => Value::str(go_string_from_bytes(&b)),
        Err(e) => Value::str(e.to_string()),
    })
}

fn b32enc(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(b32_encode(&go_bytes(&arg_str(a, 0)))))
}

fn b32dec(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(match b32_decode(&go_bytes(&arg_str(a, 0))) {
        Ok(b) => Value::str(go_string_from_bytes(&b)),
        Err(e) => Value::str(e),
    })
}

fn sha1sum(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(hex(&sha1::Sha1::digest(go_bytes(&arg_str(
        a, 0,
    ))))))
}

fn sha256sum(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(hex(&sha2::Sha256::digest(go_bytes(&arg_str(
        a, 0,
    ))))))
}

fn sha512sum(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(hex(&sha2::Sha512::digest(go_bytes(&arg_str(
        a, 0,
    ))))))
}

fn adler32sum(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(adler32(&go_bytes(&arg_str(a, 0))).to_string()))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use params::S;
    r.add("sha1sum", S, None, sha1sum);
    r.add("sha256sum", S, None, sha256sum);
    r.add("sha512sum", S, None, sha512sum);
    r.add("adler32sum", S, None, adler32sum);
    r.add("b64enc", S, None, b64enc);
    r.add("b64dec", S, None, b64dec);
    r.add("b32enc", S, None, b32enc);
    r.add("b32dec", S, None, b32dec);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn base64_like_go() {
        assert_eq!(show("b64enc", &[s("hello world")]), "aGVsbG8gd29ybGQ=");
        assert_eq!(show("b64enc", &[s("é✓")]), "w6ninJM=");
        assert_eq!(show("b64enc", &[s("")]), "");
        assert_eq!(show("b64dec", &[s("aGVsbG8gd29ybGQ=")]), "hello world");
        assert_eq!(
            show("b64dec", &[s("!!!")]),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            show("b64dec", &[s("QQ")]),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(show("b64dec", &[s("QQ==")]), "A");
        assert_eq!(
            show("b64dec", &[s("QQ=")]),
            "illegal base64 data at input byte 3"
        );
        assert_eq!(
            show("b64dec", &[s("QQ==x")]),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(show("b64dec", &[s("aGVs\nbG8=")]), "hello");
    }

    #[test]
    fn base32_like_go() {
        assert_eq!(show("b32enc", &[s("hello")]), "NBSWY3DP");
        assert_eq!(show("b32enc", &[s("a")]), "ME======");
        assert_eq!(show("b32dec", &[s("NBSWY3DP")]), "hello");
        assert_eq!(show("b32dec", &[s("ME======")]), "a");
        assert_eq!(
            show("b32dec", &[s("ME=====A")]),
            "illegal base32 data at input byte 6"
        );
        assert_eq!(
            show("b32dec", &[s("???")]),
            "illegal base32 data at input byte 0"
        );
        assert_eq!(
            show("b32dec", &[s("NBSW")]),
            "illegal base32 data at input byte 0"
        );
    }

    #[test]
    fn hashes() {
        assert_eq!(
            show("sha1sum", &[s("hello")]),
            "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
        );
        assert_eq!(
            show("sha256sum", &[s("hello")]),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(show("adler32sum", &[s("hello")]), "103547413");
        assert!(show("sha512sum", &[s("hello")]).starts_with("9b71d224bd62f378"));
    }

    proptest::proptest! {
        #[test]
        fn base32_roundtrip(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            proptest::prop_assert_eq!(b32_decode(b32_encode(&data).as_bytes()), Ok(data));
        }

        #[test]
        fn decoders_never_panic(text in "[A-Za-z0-9+/=\\n!]{0,24}") {
            let _ = b32_decode(text.as_bytes());
        }
    }
}
