use super::*;
use crate::template::funcs::crypto_x509::rsa_bits;
use der::{Decode, Encode};
use rsa::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;

struct Ctx;
impl CallContext for Ctx {
    fn include(&mut self, _: &str, _: Value) -> FuncResult {
        Ok(Value::Nil)
    }
    fn tpl(&mut self, _: &str, _: Value) -> FuncResult {
        Ok(Value::Nil)
    }
    fn lookup(&mut self, _: &str, _: &str, _: &str, _: &str) -> FuncResult {
        Ok(Value::empty_map())
    }
}

fn call(name: &str, args: &[Value]) -> FuncResult {
    let mut r = Registry::new();
    register(&mut r);
    (r.get(name).expect("registered").f)(&mut Ctx, args)
}

fn st(v: &str) -> Value {
    Value::str(v)
}

fn text(name: &str, args: &[Value]) -> String {
    call(name, args).expect("ok").to_string()
}

fn err(name: &str, args: &[Value]) -> String {
    match call(name, args) {
        Err(FuncError::Msg(m)) => m,
        other => panic!("expected an error from {name}, got {other:?}"),
    }
}

fn cert_of(v: &Value) -> Certificate {
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Certificate>()
            .expect("a certificate")
            .clone(),
        other => panic!("not a certificate: {other:?}"),
    }
}

fn der_of(pem: &str, kind: &str) -> Vec<u8> {
    let (k, der) = pem_decode(pem.as_bytes()).expect("a PEM block");
    assert_eq!(k, kind);
    der
}

// ------------------------------------------------------------------ AES

#[test]
fn aes_round_trip() {
    for plain in [
        "plaintext",
        "x",
        "exactly sixteen!",
        "ünïcödé and more than one block",
    ] {
        let ct = text("encryptAES", &[st("k3y"), st(plain)]);
        assert_eq!(text("decryptAES", &[st("k3y"), st(&ct)]), plain);
        assert_ne!(ct, text("encryptAES", &[st("k3y"), st(plain)]), "random IV");
    }
    assert_eq!(text("encryptAES", &[st("k"), st("")]), "");
    assert_eq!(text("decryptAES", &[st("k"), st("")]), "");
}

#[test]
fn aes_decrypts_real_sprig_output() {
    // helm template '{{ encryptAES "secretkey" "plaintext" }}' (Helm v3.17.2)
    let ct = "kB5nl2ZMsWafidYM2HfhqOwpkY0P1OnEal77jFhvmIc=";
    assert_eq!(text("decryptAES", &[st("secretkey"), st(ct)]), "plaintext");
}

#[test]
fn aes_errors_match_go() {
    assert_eq!(
        err("decryptAES", &[st("k"), st("abc")]),
        "illegal base64 data at input byte 0"
    );
    assert_eq!(
        err("decryptAES", &[st("k"), st("YWJj")]),
        "runtime error: slice bounds out of range [:16] with capacity 3"
    );
    assert_eq!(
        err(
            "decryptAES",
            &[st("k"), st("kB5nl2ZMsWafidYM2HfhqOwpkY0P1OnEal77jFhvmIc=")]
        ),
        "runtime error: slice bounds out of range [:-230]"
    );
    assert_eq!(
        err(
            "decryptAES",
            &[st("k"), st("YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=")]
        ),
        "crypto/cipher: input not full blocks"
    );
}

#[test]
fn go_base64_offsets() {
    assert_eq!(go_base64_decode("YWJj"), Ok(b"abc".to_vec()));
    assert_eq!(go_base64_decode("YW\nJj\r\n"), Ok(b"abc".to_vec()));
    assert_eq!(go_base64_decode("YQ=="), Ok(b"a".to_vec()));
    assert_eq!(go_base64_decode("abc"), Err(0));
    assert_eq!(go_base64_decode("!!"), Err(0));
    assert_eq!(go_base64_decode("YWJj!"), Err(4));
    assert_eq!(go_base64_decode("YQ="), Err(3));
    assert_eq!(go_base64_decode("YQ==YQ=="), Err(4));
}

// ------------------------------------------------------------------ passwords

#[test]
fn derive_password_matches_helm() {
    // Outputs of Helm v3.17.2 for the same arguments.
    let cases = [
        (
            (1, "long", "password", "user", "example.com"),
            "ZedaFaxcZaso9*",
        ),
        (
            (3, "maximum", "pässword", "üser", "site.org"),
            "M8=9DiC1IjLY8(#jvag0",
        ),
        ((1, "pin", "x", "", ""), "5042"),
    ];
    for ((counter, kind, pass, user, site), want) in cases {
        let got = text(
            "derivePassword",
            &[Value::Int(counter), st(kind), st(pass), st(user), st(site)],
        );
        assert_eq!(got, want);
    }
    assert_eq!(
        text(
            "derivePassword",
            &[Value::Int(1), st("bogus"), st("x"), st(""), st("")]
        ),
        "cannot find password template bogus"
    );
}

#[test]
fn bcrypt_and_htpasswd() {
    let h = text("bcrypt", &[st("secret")]);
    assert!(h.starts_with("$2a$10$") && h.len() == 60, "{h}");
    assert!(bcrypt::verify("secret", &h).unwrap());
    let line = text("htpasswd", &[st("admin"), st("pw")]);
    let (user, hash) = line.split_once(':').unwrap();
    assert_eq!(user, "admin");
    assert!(hash.starts_with("$2a$10$"));
    assert!(bcrypt::verify("pw", hash).unwrap());
    assert_eq!(
        text("htpasswd", &[st("a:b"), st("c")]),
        "invalid username: a:b"
    );
    assert_eq!(
        text("bcrypt", &[st(&"a".repeat(73))]),
        "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
    );
}
