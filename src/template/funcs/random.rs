//! Sprig's random functions: `randAlphaNum`, `randAlpha`, `randNumeric`,
//! `randAscii`, `randBytes`, `randInt`, `shuffle` and `uuidv4`.
//!
//! The output is random for real (a cryptographically seeded generator), with
//! the alphabets and edge cases of Sprig (goutils' `CryptoRandom*`): a count of
//! zero or below gives an empty string.
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::Value;
use base64::Engine as _;
use rand::{Rng, RngCore};

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use Param::{Int, String as S};
    r.add("randAlphaNum", &[Int], None, rand_alpha_num);
    r.add("randAlpha", &[Int], None, rand_alpha);
    r.add("randAscii", &[Int], None, rand_ascii);
    r.add("randNumeric", &[Int], None, rand_numeric);
    r.add("randBytes", &[Int], None, rand_bytes);
    r.add("randInt", &[Int, Int], None, rand_int);
    r.add("shuffle", &[S], None, shuffle);
    r.add("uuidv4", &[], None, uuidv4);
}

const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const DIGITS: &[u8] = b"0123456789";

fn int_arg(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(n) | Value::Int64(n)) => *n,
        _ => 0,
    }
}

/// `count` characters drawn uniformly from `alphabet`; empty when count <= 0.
/// (goutils draws from ' '..='z' and rejects what is not in the class, which
/// is uniform over the class too.)
fn random_string(count: i64, alphabet: &[u8]) -> Result<String, FuncError> {
    let Ok(count) = usize::try_from(count) else {
        return Ok(String::new());
    };
    if count > MAX_LEN {
        return Err(FuncError::msg("runtime error: makeslice: len out of range"));
    }
    let mut rng = rand::thread_rng();
    Ok((0..count)
        .map(|_| char::from(alphabet[rng.gen_range(0..alphabet.len())]))
        .collect())
}

/// The largest random string or byte count served; Go would exhaust memory
/// beyond this, we report its allocation error instead.
const MAX_LEN: usize = 1 << 30;

fn rand_alpha_num(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_size(ctx, int_arg(args, 0).max(0) as u128)?;
    let alphabet: Vec<u8> = [DIGITS, LETTERS].concat();
    random_string(int_arg(args, 0), &alphabet).map(Value::str)
}

fn rand_alpha(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_size(ctx, int_arg(args, 0).max(0) as u128)?;
    random_string(int_arg(args, 0), LETTERS).map(Value::str)
}

fn rand_numeric(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_size(ctx, int_arg(args, 0).max(0) as u128)?;
    random_string(int_arg(args, 0), DIGITS).map(Value::str)
}

fn rand_ascii(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_size(ctx, int_arg(args, 0).max(0) as u128)?;
    let printable: Vec<u8> = (32u8..=126).collect();
    random_string(int_arg(args, 0), &printable).map(Value::str)
}

/// Base64 of `count` random bytes. A negative count is Go's `make` panic.
fn rand_bytes(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let n = int_arg(args, 0);
    // The raw bytes and their base64 text are both held at the end.
    super::check_size(ctx, n.max(0) as u128 * 7 / 3)?;
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_LEN)
        .ok_or_else(|| FuncError::msg("runtime error: makeslice: len out of range"))?;
    let mut buf = vec![0u8; n];
    rand::thread_rng().fill_bytes(&mut buf);
    Ok(Value::str(
        base64::engine::general_purpose::STANDARD.encode(buf),
    ))
}

/// A random int in `[min, max)`; Go's `rand.Intn` panics when the range is empty.
fn rand_int(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let (min, max) = (int_arg(args, 0), int_arg(args, 1));
    let span = max.wrapping_sub(min);
    if span <= 0 {
        return Err(FuncError::msg("invalid argument to Intn"));
    }
    let v = rand::thread_rng().gen_range(0..span);
    Ok(Value::Int(v.wrapping_add(min)))
}

/// The string's characters in random order (a Fisher-Yates shuffle of runes).
fn shuffle(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let s = match args.first() {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    // Go's []rune(s) turns every byte that is not UTF-8 into U+FFFD.
    let mut runes: Vec<char> = s
        .chars()
        .map(|c| match super::util::raw_byte_of(c) {
            Some(_) => char::REPLACEMENT_CHARACTER,
            None => c,
        })
        .collect();
    let mut rng = rand::thread_rng();
    for i in (1..runes.len()).rev() {
        let j = rng.gen_range(0..=i);
        runes.swap(i, j);
    }
    Ok(Value::str(runes.into_iter().collect::<String>()))
}

fn uuidv4(_: &mut dyn CallContext, _: &[Value]) -> FuncResult {
    Ok(Value::str(uuid::Uuid::new_v4().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::template::funcs::util::testctx::TestCtx as Ctx;

    fn call(name: &str, args: &[Value]) -> FuncResult {
        let mut r = Registry::new();
        register(&mut r);
        (r.get(name).expect("registered").f)(&mut Ctx, args)
    }

    fn out(name: &str, args: &[Value]) -> String {
        call(name, args).expect("ok").to_string()
    }

    #[test]
    fn strings_keep_length_and_alphabet_and_differ() {
        type Class = fn(char) -> bool;
        let cases: [(&str, Class); 4] = [
            ("randAlphaNum", |c| c.is_ascii_alphanumeric()),
            ("randAlpha", |c| c.is_ascii_alphabetic()),
            ("randNumeric", |c| c.is_ascii_digit()),
            ("randAscii", |c| (' '..='~').contains(&c)),
        ];
        for (name, class) in cases {
            let a = out(name, &[Value::Int(64)]);
            let b = out(name, &[Value::Int(64)]);
            assert_eq!(a.len(), 64, "{name}");
            assert!(a.chars().all(class), "{name}: {a}");
            assert_ne!(a, b, "{name} repeated itself");
            assert_eq!(out(name, &[Value::Int(0)]), "");
            assert_eq!(out(name, &[Value::Int(-3)]), "");
        }
    }

    #[test]
    fn rand_bytes_is_base64_of_n_bytes() {
        let b64 = out("randBytes", &[Value::Int(24)]);
        assert_eq!(b64.len(), 32);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&b64)
            .unwrap();
        assert_eq!(raw.len(), 24);
        assert_ne!(b64, out("randBytes", &[Value::Int(24)]));
        assert!(call("randBytes", &[Value::Int(-1)]).is_err());
    }

    #[test]
    fn rand_int_stays_in_range() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            match call("randInt", &[Value::Int(-2), Value::Int(3)]).unwrap() {
                Value::Int(v) => {
                    assert!((-2..3).contains(&v));
                    seen.insert(v);
                }
                other => panic!("not an int: {other:?}"),
            }
        }
        assert_eq!(seen.len(), 5);
        assert_eq!(
            call("randInt", &[Value::Int(3), Value::Int(3)]).unwrap_err(),
            FuncError::msg("invalid argument to Intn")
        );
    }

    #[test]
    fn shuffle_permutes_runes() {
        let src = "héllo wörld 0123456789";
        let mut a: Vec<char> = out("shuffle", &[Value::str(src)]).chars().collect();
        let mut b: Vec<char> = src.chars().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(out("shuffle", &[Value::str("")]), "");
    }

    #[test]
    fn uuidv4_format() {
        let re = regex::Regex::new(
            "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .unwrap();
        let a = out("uuidv4", &[]);
        assert!(re.is_match(&a), "{a}");
        assert_ne!(a, out("uuidv4", &[]));
    }
}
