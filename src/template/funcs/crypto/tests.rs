use super::*;
use crate::template::funcs::crypto_x509::{read_tlv, rsa_bits};
use der::{Decode, Encode};
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;

use crate::template::funcs::util::testctx::TestCtx as Ctx;

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

// ------------------------------------------------------------------ keys

#[test]
fn private_keys_have_sprigs_pem_types() {
    let ec = text("genPrivateKey", &[st("ecdsa")]);
    let der = der_of(&ec, "EC PRIVATE KEY");
    // Go's MarshalECPrivateKey for P-256 (named curve + public key) is 121 bytes.
    assert_eq!(der.len(), 121);
    assert!(matches!(
        parse_private_key_pem(&ec),
        Ok(PrivateKey::Ecdsa(_))
    ));

    let ed = text("genPrivateKey", &[st("ed25519")]);
    let der = der_of(&ed, "PRIVATE KEY");
    assert_eq!(der.len(), 48);
    assert!(rsa::pkcs8::PrivateKeyInfo::try_from(der.as_slice()).is_ok());
    assert!(matches!(
        parse_private_key_pem(&ed),
        Ok(PrivateKey::Ed25519(_))
    ));
    assert_ne!(ed, text("genPrivateKey", &[st("ed25519")]));

    assert_eq!(text("genPrivateKey", &[st("foo")]), "Unknown type foo");
}

#[test]
fn dsa_key_is_openssl_format() {
    let pem = text("genPrivateKey", &[st("dsa")]);
    let der = der_of(&pem, "DSA PRIVATE KEY");
    let (tag, body, rest) = read_tlv(&der).expect("DER");
    assert_eq!(tag, 0x30);
    assert!(rest.is_empty());
    // version, p, q, g, y, x
    let mut rest = body;
    let mut ints = Vec::new();
    while !rest.is_empty() {
        let (tag, value, r) = read_tlv(rest).expect("DER");
        assert_eq!(tag, 0x02);
        ints.push(value.to_vec());
        rest = r;
    }
    assert_eq!(ints.len(), 6);
    assert_eq!(ints[0], vec![0]);
    let p_bits = (ints[1].len() - usize::from(ints[1][0] == 0)) * 8;
    assert_eq!(p_bits, 2048);
    assert!(matches!(
        parse_private_key_pem(&pem),
        Ok(PrivateKey::Dsa(_))
    ));
    // Go cannot sign certificates with DSA keys.
    assert_eq!(
        err("genCAWithKey", &[st("x"), Value::Int(1), st(&pem)]),
        "error creating certificate: x509: certificate private key does not implement crypto.Signer"
    );
}

#[test]
fn rsa_private_key_is_4096_bit_pkcs1() {
    let pem = text("genPrivateKey", &[st("rsa")]);
    let der = der_of(&pem, "RSA PRIVATE KEY");
    assert!(rsa::RsaPrivateKey::from_pkcs1_der(&der).is_ok());
    let key = parse_private_key_pem(&pem).unwrap();
    assert_eq!(rsa_bits(&key), Some(4096));
}

#[test]
fn key_parse_errors_match_sprig() {
    let bad = |pem: &str| err("genCAWithKey", &[st("x"), Value::Int(1), st(pem)]);
    assert_eq!(bad("junk"), "parsing private key: no PEM data in input");
    assert_eq!(
        bad("-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n"),
        "parsing private key: no private key data in PEM block of type FOO"
    );
    assert_eq!(
        bad("-----BEGIN X PRIVATE KEY-----\nAAAA\n-----END X PRIVATE KEY-----\n"),
        "parsing private key: invalid private key type X PRIVATE KEY"
    );
    assert!(
        bad("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
            .starts_with("parsing private key: parsing RSA private key from PEM: ")
    );
}

// ------------------------------------------------------------------ certificates

struct Parsed {
    cert: x509_cert::Certificate,
    tbs_der: Vec<u8>,
}

fn parse_cert(pem: &str) -> Parsed {
    let der = der_of(pem, "CERTIFICATE");
    let cert = x509_cert::Certificate::from_der(&der).expect("a valid certificate");
    let tbs_der = cert.tbs_certificate.to_der().unwrap();
    Parsed { cert, tbs_der }
}

fn ext<'a>(p: &'a Parsed, id: &str) -> Option<&'a x509_cert::ext::Extension> {
    let id = der::asn1::ObjectIdentifier::new_unwrap(id);
    p.cert
        .tbs_certificate
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == id)
}

/// Checks `child`'s signature with `issuer`'s public key (RSA, P-256 or Ed25519).
fn verify(child: &Parsed, issuer: &Parsed) {
    let spki = issuer
        .cert
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .unwrap();
    let sig = child.cert.signature.raw_bytes();
    let alg = child.cert.signature_algorithm.oid.to_string();
    match alg.as_str() {
        "1.2.840.113549.1.1.11" => {
            let pk = rsa::RsaPublicKey::from_public_key_der(&spki).unwrap();
            let vk = rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(pk);
            let sig = rsa::pkcs1v15::Signature::try_from(sig).unwrap();
            vk.verify(&child.tbs_der, &sig)
                .expect("RSA signature verifies");
        }
        "1.2.840.10045.4.3.2" => {
            let pk = p256::PublicKey::from_public_key_der(&spki).unwrap();
            let vk = p256::ecdsa::VerifyingKey::from(pk);
            let sig = p256::ecdsa::Signature::from_der(sig).unwrap();
            vk.verify(&child.tbs_der, &sig)
                .expect("ECDSA signature verifies");
        }
        "1.3.101.112" => {
            let raw = issuer
                .cert
                .tbs_certificate
                .subject_public_key_info
                .subject_public_key
                .raw_bytes();
            let vk = ed25519_dalek::VerifyingKey::from_bytes(raw.try_into().unwrap()).unwrap();
            let sig = ed25519_dalek::Signature::from_slice(sig).unwrap();
            vk.verify(&child.tbs_der, &sig)
                .expect("Ed25519 signature verifies");
        }
        other => panic!("unexpected signature algorithm {other}"),
    }
    assert_eq!(
        child.cert.tbs_certificate.issuer.to_der().unwrap(),
        issuer.cert.tbs_certificate.subject.to_der().unwrap()
    );
}

/// The certificate's public key is the one of the returned private key.
fn key_matches(c: &Certificate) {
    let key = parse_private_key_pem(&c.key).expect("key parses");
    let (spki, _) = key.public_key_info().unwrap();
    let parsed = parse_cert(&c.cert);
    assert_eq!(
        parsed
            .cert
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .unwrap(),
        spki
    );
}

#[test]
fn ca_and_signed_cert_verify() {
    let ca_v = call("genCA", &[st("my-ca"), Value::Int(365)]).unwrap();
    assert_eq!(ca_v.type_name(), "sprig.certificate");
    let ca = cert_of(&ca_v);
    assert!(ca.key.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    key_matches(&ca);
    let ca_p = parse_cert(&ca.cert);
    verify(&ca_p, &ca_p);
    let bc = ext(&ca_p, "2.5.29.19").expect("basic constraints");
    assert!(bc.critical);
    assert_eq!(bc.extn_value.as_bytes(), [0x30, 0x03, 0x01, 0x01, 0xff]);
    let ku = ext(&ca_p, "2.5.29.15").expect("key usage");
    assert_eq!(ku.extn_value.as_bytes(), [0x03, 0x02, 0x02, 0xa4]);
    let ski = ext(&ca_p, "2.5.29.14").expect("subject key id");
    let validity = &ca_p.cert.tbs_certificate.validity;
    let days = (validity.not_after.to_unix_duration() - validity.not_before.to_unix_duration())
        .as_secs()
        / 86_400;
    assert_eq!(days, 365);

    let leaf_v = call(
        "genSignedCert",
        &[
            st("leaf.example"),
            Value::list(vec![st("10.0.0.1"), st("::1")]),
            Value::list(vec![st("leaf.example"), st("*.leaf.example")]),
            Value::Int(30),
            ca_v.clone(),
        ],
    )
    .unwrap();
    let leaf = cert_of(&leaf_v);
    key_matches(&leaf);
    let leaf_p = parse_cert(&leaf.cert);
    verify(&leaf_p, &ca_p);
    let aki = ext(&leaf_p, "2.5.29.35").expect("authority key id");
    // SEQUENCE { [0] keyIdentifier } holding the CA's subject key id.
    assert_eq!(
        &aki.extn_value.as_bytes()[4..],
        &ski.extn_value.as_bytes()[2..]
    );
    let san = ext(&leaf_p, "2.5.29.17").expect("subject alt names");
    assert!(!san.critical);
    let mut want = vec![0x82, 12];
    want.extend(b"leaf.example");
    want.extend([0x82, 14]);
    want.extend(b"*.leaf.example");
    want.extend([0x87, 4, 10, 0, 0, 1, 0x87, 16]);
    want.extend(std::net::Ipv6Addr::LOCALHOST.octets());
    assert_eq!(&san.extn_value.as_bytes()[2..], want.as_slice());
    assert!(ext(&leaf_p, "2.5.29.14").is_none(), "no SKI on a leaf");
    let bc = ext(&leaf_p, "2.5.29.19").unwrap();
    assert_eq!(bc.extn_value.as_bytes(), [0x30, 0x00]);

    // Printing and JSON of Sprig's certificate struct.
    assert_eq!(
        leaf_v.to_string(),
        format!("{{{} {}}}", leaf.cert, leaf.key)
    );
    match leaf_v.clone() {
        Value::Object(o) => {
            let j = o.to_json_value();
            assert_eq!(
                j.to_string(),
                format!("map[Cert:{} Key:{}]", leaf.cert, leaf.key)
            );
        }
        _ => unreachable!(),
    }

    // A CA whose key does not match its certificate cannot sign.
    let other = cert_of(&call("genCA", &[st("other"), Value::Int(1)]).unwrap());
    let mismatched = call(
        "buildCustomCert",
        &[
            st(&base64::engine::general_purpose::STANDARD.encode(&ca.cert)),
            st(&base64::engine::general_purpose::STANDARD.encode(&other.key)),
        ],
    )
    .unwrap();
    assert_eq!(
        err(
            "genSignedCert",
            &[st("x"), Value::Nil, Value::Nil, Value::Int(1), mismatched]
        ),
        "error creating certificate: x509: provided PrivateKey doesn't match parent's PublicKey"
    );
}

#[test]
fn certs_with_ecdsa_and_ed25519_keys() {
    for kind in ["ecdsa", "ed25519"] {
        let key = text("genPrivateKey", &[st(kind)]);
        let ca_v = call("genCAWithKey", &[st("ca"), Value::Int(2), st(&key)]).unwrap();
        let ca = cert_of(&ca_v);
        assert_eq!(ca.key, key, "the given key is returned as is");
        let ca_p = parse_cert(&ca.cert);
        verify(&ca_p, &ca_p);

        let self_signed = cert_of(
            &call(
                "genSelfSignedCertWithKey",
                &[
                    st(""),
                    Value::list(vec![st("1.2.3.4")]),
                    Value::Nil,
                    Value::Int(1),
                    st(&key),
                ],
            )
            .unwrap(),
        );
        let ss = parse_cert(&self_signed.cert);
        verify(&ss, &ss);
        // An empty subject makes the SAN extension critical, as in Go.
        assert!(ext(&ss, "2.5.29.17").unwrap().critical);

        let leaf_key = text("genPrivateKey", &[st(kind)]);
        let leaf = cert_of(
            &call(
                "genSignedCertWithKey",
                &[
                    st("leaf"),
                    Value::Nil,
                    Value::Nil,
                    Value::Int(1),
                    ca_v,
                    st(&leaf_key),
                ],
            )
            .unwrap(),
        );
        key_matches(&leaf);
        verify(&parse_cert(&leaf.cert), &ca_p);
    }
}

#[test]
fn self_signed_and_custom_cert() {
    let v = call(
        "genSelfSignedCert",
        &[
            st("self"),
            Value::Nil,
            Value::list(vec![st("a.b")]),
            Value::Int(10),
        ],
    )
    .unwrap();
    let c = cert_of(&v);
    key_matches(&c);
    let p = parse_cert(&c.cert);
    verify(&p, &p);
    assert!(ext(&p, "2.5.29.14").is_none());
    assert!(ext(&p, "2.5.29.35").is_none());

    let b64 = |s: &str| st(&base64::engine::general_purpose::STANDARD.encode(s));
    let rebuilt = cert_of(&call("buildCustomCert", &[b64(&c.cert), b64(&c.key)]).unwrap());
    assert_eq!(rebuilt, c);

    assert_eq!(
        err("buildCustomCert", &[st("!!"), st("x")]),
        "unable to decode base64 certificate"
    );
    assert_eq!(
        err("buildCustomCert", &[st("eA=="), st("eA==")]),
        "unable to decode certificate"
    );
    assert_eq!(
        err(
            "buildCustomCert",
            &[
                b64("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
                st("eA==")
            ]
        ),
        "error parsing certificate: decodedCert.Bytes: x509: malformed certificate"
    );
    assert_eq!(
        err(
            "genSelfSignedCert",
            &[
                st("x"),
                Value::list(vec![Value::Int(1)]),
                Value::Nil,
                Value::Int(1)
            ]
        ),
        "error parsing ip: 1 is not a string"
    );
    assert_eq!(
        err(
            "genSelfSignedCert",
            &[
                st("x"),
                Value::list(vec![st("bad")]),
                Value::Nil,
                Value::Int(1)
            ]
        ),
        "error parsing ip: bad"
    );
    assert_eq!(
        err(
            "genSelfSignedCert",
            &[
                st("x"),
                Value::Nil,
                Value::list(vec![Value::Int(1)]),
                Value::Int(1)
            ]
        ),
        "error processing alternate dns name: 1 is not a string"
    );
}

proptest::proptest! {
    #[test]
    fn go_base64_agrees_on_canonical_input(data in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
        let enc = base64::engine::general_purpose::STANDARD.encode(&data);
        proptest::prop_assert_eq!(go_base64_decode(&enc), Ok(data));
    }

    #[test]
    fn aes_round_trips(key in "\\PC{0,40}", plain in "\\PC{1,40}") {
        let ct = text("encryptAES", &[st(&key), st(&plain)]);
        proptest::prop_assert_eq!(text("decryptAES", &[st(&key), st(&ct)]), plain);
    }
}

#[test]
fn non_utf8_go_strings_keep_their_bytes() {
    use crate::template::funcs::util::{go_bytes, go_string_from_bytes};
    let plain = go_string_from_bytes(&[0xff, b'a', 0xc3, b'z']);
    let key = go_string_from_bytes(&[0x80, b'k']);
    let ct = text("encryptAES", &[st(&key), st(&plain)]);
    let back = text("decryptAES", &[st(&key), st(&ct)]);
    assert_eq!(go_bytes(&back).as_ref(), &[0xff, b'a', 0xc3, b'z']);
    // The key is the password's bytes: a different byte is a different key.
    let other = go_string_from_bytes(&[0x81, b'k']);
    let wrong = call("decryptAES", &[st(&other), st(&ct)]).map(|v| v.to_string());
    assert_ne!(wrong.ok().as_deref(), Some(back.as_str()));
}
