//! Sprig's date, random, crypto and network functions run through the
//! template engine: the properties a fixed expected output cannot check
//! (randomness, certificate signatures), and fixed vectors from real Helm.
use der::{Decode, Encode};
use rsa::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;
use rudder::template::{Engine, EngineOptions, Value};

/// Renders `text` with `.ips` and `.dns` lists as data (so the test needs no
/// other function family than the ones under test).
fn render_with(options: EngineOptions, text: &str) -> Result<String, String> {
    // Helm's expectations were captured with TZ=UTC; the local zone is read
    // once per process, on first use.
    std::env::set_var("TZ", "UTC");
    let mut engine = Engine::new(options);
    engine
        .add_template("t.txt", text)
        .map_err(|e| e.to_string())?;
    let mut data = std::collections::BTreeMap::new();
    data.insert("ips".to_string(), Value::list(vec![Value::str("10.0.0.1")]));
    data.insert(
        "dns".to_string(),
        Value::list(vec![Value::str("svc.local")]),
    );
    engine
        .execute("t.txt", &Value::map(data))
        .map_err(|e| e.to_string())
}

fn render(text: &str) -> String {
    render_with(EngineOptions::default(), text).expect("renders")
}

fn pem_der(pem: &str) -> Vec<u8> {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("PEM body is base64")
}

#[test]
fn signed_certificate_verifies_against_its_ca() {
    let out = render(
        r#"{{ $ca := genCA "my-ca" 30 }}{{ $c := genSignedCert "svc" .ips .dns 30 $ca }}{{ $ca.Cert }}@@{{ $c.Cert }}@@{{ $c.Key }}@@{{ printf "%T" $c }}"#,
    );
    let parts: Vec<&str> = out.split("@@").collect();
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[3], "sprig.certificate");
    assert!(parts[2].starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    let ca = x509_cert::Certificate::from_der(&pem_der(parts[0])).expect("CA parses");
    let leaf = x509_cert::Certificate::from_der(&pem_der(parts[1])).expect("leaf parses");
    assert_eq!(
        leaf.tbs_certificate.issuer.to_der().unwrap(),
        ca.tbs_certificate.subject.to_der().unwrap()
    );
    let ca_key = rsa::RsaPublicKey::from_public_key_der(
        &ca.tbs_certificate.subject_public_key_info.to_der().unwrap(),
    )
    .unwrap();
    let sig = rsa::pkcs1v15::Signature::try_from(leaf.signature.raw_bytes()).unwrap();
    rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(ca_key)
        .verify(&leaf.tbs_certificate.to_der().unwrap(), &sig)
        .expect("leaf is signed by the CA");
    // The returned key is the certificate's key.
    use rsa::pkcs1::DecodeRsaPrivateKey;
    let key = rsa::RsaPrivateKey::from_pkcs1_der(&pem_der(parts[2])).unwrap();
    let leaf_pub = rsa::RsaPublicKey::from_public_key_der(
        &leaf
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(key.to_public_key(), leaf_pub);
}

#[test]
fn aes_interoperates_with_sprig() {
    // helm template '{{ encryptAES "secretkey" "plaintext" }}' with Helm v3.17.2.
    assert_eq!(
        render(r#"{{ decryptAES "secretkey" "kB5nl2ZMsWafidYM2HfhqOwpkY0P1OnEal77jFhvmIc=" }}"#),
        "plaintext"
    );
    assert_eq!(
        render(r#"{{ encryptAES "k" "round trip" | decryptAES "k" }}"#),
        "round trip"
    );
}

#[test]
fn derive_password_matches_helm() {
    assert_eq!(
        render(r#"{{ derivePassword 1 "long" "password" "user" "example.com" }}"#),
        "ZedaFaxcZaso9*"
    );
}

#[test]
fn random_values_differ_and_keep_their_shape() {
    let out = render(
        r#"{{ randAlphaNum 24 }} {{ randAlphaNum 24 }} {{ randNumeric 8 }} {{ randAscii 8 | len }} {{ uuidv4 }} {{ uuidv4 }} {{ randInt 3 4 }}"#,
    );
    let f: Vec<&str> = out.split(' ').collect();
    assert_eq!(f.len(), 7, "{out}");
    assert_ne!(f[0], f[1]);
    assert!(f[0].len() == 24 && f[0].chars().all(|c| c.is_ascii_alphanumeric()));
    assert!(f[2].len() == 8 && f[2].chars().all(|c| c.is_ascii_digit()));
    assert_eq!(f[3], "8");
    assert_ne!(f[4], f[5]);
    assert_eq!(f[4].len(), 36);
    assert_eq!(f[6], "3");
}

#[test]
fn dates_through_the_engine() {
    assert_eq!(
        render(
            r#"{{ toDate "2006-01-02" "2024-03-05" | dateModify "+36h" | date "2006-01-02 15:04" }}|{{ dateInZone "2006-01-02 15:04 MST" 1700000000 "UTC" }}|{{ duration 95 }}|{{ printf "%T" now }}"#
        ),
        "2024-03-06 12:00|2023-11-14 22:13 UTC|0s|time.Time"
    );
    let year = render(r#"{{ now | date "2006" }}"#);
    assert!(year.len() == 4 && year.as_str() >= "2024", "{year}");
}

#[test]
fn time_methods_convert_arguments_as_go() {
    assert_eq!(
        render(r#"{{ $t := toDate "2006-01-02 15:04:05.000" "2024-03-05 10:30:45.678" }}{{ $t.Add 1500000000 }}|{{ $t.AddDate 0 -3 0 }}|{{ $t.Truncate 3600000000000 }}|{{ $t.Sub (toDate "2006" "2024") }}|{{ $t.Format "Jan 2" }}|{{ $t.Month }}|{{ $t.UnixMilli }}"#),
        "2024-03-05 10:30:47.178 +0000 UTC|2023-12-05 10:30:45.678 +0000 UTC|2024-03-05 10:00:00 +0000 UTC|1546h30m45.678s|Mar 5|March|1709634645678"
    );
    let err = render_with(
        EngineOptions::default(),
        r#"{{ (toDate "2006" "2024").Format 5 }}"#,
    )
    .unwrap_err();
    assert!(err.ends_with("at <5>: expected string; found 5"), "{err}");
}

#[test]
fn get_host_by_name_needs_dns_enabled() {
    assert_eq!(render(r#"[{{ getHostByName "localhost" }}]"#), "[]");
    let options = EngineOptions {
        enable_dns: true,
        ..EngineOptions::default()
    };
    let ip = render_with(options, r#"{{ getHostByName "localhost" }}"#).unwrap();
    let ip: std::net::IpAddr = ip.parse().expect("an IP address");
    assert!(ip.is_loopback());
}
