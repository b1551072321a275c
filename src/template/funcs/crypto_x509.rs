//! Keys, PEM and X.509 certificates laid out as Go's `crypto/x509` writes
//! them for Sprig's `genPrivateKey`, `genCA`, `genSelfSignedCert`,
//! `genSignedCert` and friends.
//!
//! Certificates are assembled here with a small DER writer so that their
//! structure follows Go 1.23 field for field (extension order, string types,
//! SHA-1 subject key ids for CAs, authority key ids for signed certificates);
//! the RustCrypto crates do the key generation and the signing.
use crate::gostd::time::GoTime;
use base64::Engine as _;
use der::{Decode, Encode};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey, EncodeRsaPublicKey};
use rsa::sha2::Sha256;
use rsa::signature::{SignatureEncoding, Signer};
use std::net::IpAddr;

// ---------------------------------------------------------------- DER writer

/// A DER tag-length-value.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|&b| b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A DER INTEGER from unsigned big-endian bytes.
pub fn uint(be: &[u8]) -> Vec<u8> {
    let trimmed: Vec<u8> = be.iter().copied().skip_while(|&b| b == 0).collect();
    let mut content = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.first().is_none_or(|&b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend(trimmed);
    if content.len() > 1 && content[0] == 0 && content[1] & 0x80 == 0 {
        content.remove(0);
    }
    tlv(0x02, &content)
}

fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut content = Vec::new();
    let mut push = |mut v: u64| {
        let mut tmp = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            tmp.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        tmp.reverse();
        content.extend(tmp);
    };
    push(arcs[0] * 40 + arcs[1]);
    for &a in &arcs[2..] {
        push(a);
    }
    tlv(0x06, &content)
}

fn bit_string(unused: u8, bytes: &[u8]) -> Vec<u8> {
    let mut c = vec![unused];
    c.extend_from_slice(bytes);
    tlv(0x03, &c)
}

fn octet_string(bytes: &[u8]) -> Vec<u8> {
    tlv(0x04, bytes)
}

const NULL: [u8; 2] = [0x05, 0x00];

const OID_RSA: &[u64] = &[1, 2, 840, 113_549, 1, 1, 1];
const OID_SHA256_RSA: &[u64] = &[1, 2, 840, 113_549, 1, 1, 11];
const OID_EC_PUBLIC_KEY: &[u64] = &[1, 2, 840, 10_045, 2, 1];
const OID_P256: &[u64] = &[1, 2, 840, 10_045, 3, 1, 7];
const OID_ECDSA_SHA256: &[u64] = &[1, 2, 840, 10_045, 4, 3, 2];
const OID_ED25519: &[u64] = &[1, 3, 101, 112];

fn oid_string(arcs: &[u64]) -> String {
    arcs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

// ---------------------------------------------------------------- PEM

/// Go's `pem.EncodeToMemory` for a block without headers.
pub fn pem_encode(kind: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {kind}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {kind}-----\n"));
    out
}

/// Go's `pem.Decode`: the first well-formed PEM block in the input (type and
/// bytes), skipping anything before it.
pub fn pem_decode(input: &[u8]) -> Option<(String, Vec<u8>)> {
    let text = String::from_utf8_lossy(input);
    let mut rest: &str = &text;
    loop {
        let start = rest.find("-----BEGIN ")?;
        if start > 0 && !rest[..start].ends_with('\n') {
            rest = &rest[start + 11..];
            continue;
        }
        let after = &rest[start + 11..];
        let line_end = after.find('\n')?;
        let type_line = after[..line_end].trim_end_matches('\r').trim_end();
        let Some(kind) = type_line.strip_suffix("-----") else {
            rest = after;
            continue;
        };
        let body = &after[line_end + 1..];
        let end_marker = format!("-----END {kind}-----");
        let Some(end) = body.find(&end_marker) else {
            rest = after;
            continue;
        };
        let block = &body[..end];
        // Headers ("Key: value" lines) end at the first blank line.
        let data = if block.lines().next().is_some_and(|l| l.contains(':')) {
            match block.find("\n\n") {
                Some(i) => &block[i + 2..],
                None => block,
            }
        } else {
            block
        };
        let cleaned: String = data.chars().filter(|c| *c != ' ' && *c != '\t').collect();
        match super::crypto::go_base64_decode(&cleaned) {
            Ok(bytes) => return Some((kind.to_string(), bytes)),
            Err(_) => {
                rest = after;
                continue;
            }
        }
    }
}

// ---------------------------------------------------------------- keys

/// A private key of one of the kinds Sprig generates and reads.
#[derive(Debug, Clone)]
pub enum PrivateKey {
    /// `*rsa.PrivateKey`
    Rsa(Box<rsa::RsaPrivateKey>),
    /// `*ecdsa.PrivateKey` on P-256
    Ecdsa(p256::SecretKey),
    /// `ed25519.PrivateKey`
    Ed25519(ed25519_dalek::SigningKey),
    /// `*dsa.PrivateKey`
    Dsa(Box<dsa::SigningKey>),
}

/// Why a key could not be generated, parsed or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

fn kerr(m: impl Into<String>) -> KeyError {
    KeyError(m.into())
}

fn rng() -> rand::rngs::OsRng {
    rand::rngs::OsRng
}

/// Generates an RSA key of `bits` bits (public exponent 65537).
///
/// As the `rsa` crate (and Go) do for two primes: each prime has half the
/// bits with its top two set, the primes differ, the modulus has exactly
/// `bits` bits and 65537 is invertible modulo the totient, else new primes
/// are drawn. The two primes are searched on two threads: prime search is
/// nearly all of the time, and a chart that makes a CA and a certificate
/// draws two 2048-bit keys.
pub fn generate_rsa(bits: usize) -> Result<PrivateKey, KeyError> {
    use num_bigint_dig::RandPrime;
    if bits < 64 || bits % 2 != 0 {
        return rsa::RsaPrivateKey::new(&mut rng(), bits)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|e| kerr(e.to_string()));
    }
    let e = rsa::BigUint::from(65_537u32);
    loop {
        let (p, q) = std::thread::scope(|s| {
            let other = s.spawn(|| rng().gen_prime(bits / 2));
            let p = rng().gen_prime(bits / 2);
            match other.join() {
                Ok(q) => (p, q),
                Err(payload) => std::panic::resume_unwind(payload),
            }
        });
        if p == q || (&p * &q).bits() != bits {
            continue;
        }
        if let Ok(key) = rsa::RsaPrivateKey::from_primes(vec![p, q], e.clone()) {
            return Ok(PrivateKey::Rsa(Box::new(key)));
        }
    }
}

impl PrivateKey {
    /// A new key of Sprig's kind name (`rsa` 4096 bits, `ecdsa` P-256,
    /// `ed25519`, `dsa` L2048N256). `None` for an unknown kind.
    pub fn generate(kind: &str) -> Option<Result<PrivateKey, KeyError>> {
        Some(match kind {
            "" | "rsa" => generate_rsa(4096),
            "ecdsa" => Ok(PrivateKey::Ecdsa(p256::SecretKey::random(&mut rng()))),
            "ed25519" => Ok(PrivateKey::Ed25519(ed25519_dalek::SigningKey::generate(
                &mut rng(),
            ))),
            "dsa" => {
                let components = dsa::Components::generate(&mut rng(), dsa::KeySize::DSA_2048_256);
                Ok(PrivateKey::Dsa(Box::new(dsa::SigningKey::generate(
                    &mut rng(),
                    components,
                ))))
            }
            _ => return None,
        })
    }

    /// The PEM block Sprig writes for the key (`pemBlockForKey`).
    pub fn to_pem(&self) -> Result<String, KeyError> {
        let (kind, der) = match self {
            PrivateKey::Rsa(k) => (
                "RSA PRIVATE KEY",
                k.to_pkcs1_der()
                    .map_err(|e| kerr(e.to_string()))?
                    .as_bytes()
                    .to_vec(),
            ),
            PrivateKey::Ecdsa(k) => ("EC PRIVATE KEY", ec_private_key_der(k)),
            PrivateKey::Ed25519(k) => ("PRIVATE KEY", ed25519_pkcs8(k)),
            PrivateKey::Dsa(k) => {
                let c = k.verifying_key().components();
                let der = seq(&[
                    &uint(&[0]),
                    &uint(&c.p().to_bytes_be()),
                    &uint(&c.q().to_bytes_be()),
                    &uint(&c.g().to_bytes_be()),
                    &uint(&k.verifying_key().y().to_bytes_be()),
                    &uint(&k.x().to_bytes_be()),
                ]);
                ("DSA PRIVATE KEY", der)
            }
        };
        Ok(pem_encode(kind, &der))
    }

    /// The SubjectPublicKeyInfo DER and the raw public key bits (what Go
    /// hashes for a subject key id). DSA keys are refused as by Go's x509.
    pub fn public_key_info(&self) -> Result<(Vec<u8>, Vec<u8>), KeyError> {
        let (alg, bits) = match self {
            PrivateKey::Rsa(k) => {
                let pubk = k.to_public_key();
                let bits = pubk
                    .to_pkcs1_der()
                    .map_err(|e| kerr(e.to_string()))?
                    .as_bytes()
                    .to_vec();
                (seq(&[&oid(OID_RSA), &NULL]), bits)
            }
            PrivateKey::Ecdsa(k) => {
                use p256::elliptic_curve::sec1::ToEncodedPoint;
                let point = k.public_key().to_encoded_point(false);
                (
                    seq(&[&oid(OID_EC_PUBLIC_KEY), &oid(OID_P256)]),
                    point.as_bytes().to_vec(),
                )
            }
            PrivateKey::Ed25519(k) => (
                seq(&[&oid(OID_ED25519)]),
                k.verifying_key().to_bytes().to_vec(),
            ),
            PrivateKey::Dsa(_) => {
                return Err(kerr("x509: unsupported public key type: *dsa.PublicKey"))
            }
        };
        Ok((seq(&[&alg, &bit_string(0, &bits)]), bits))
    }

    /// The signature AlgorithmIdentifier Go picks for the key type.
    fn signature_algorithm(&self) -> Result<Vec<u8>, KeyError> {
        match self {
            PrivateKey::Rsa(_) => Ok(seq(&[&oid(OID_SHA256_RSA), &NULL])),
            PrivateKey::Ecdsa(_) => Ok(seq(&[&oid(OID_ECDSA_SHA256)])),
            PrivateKey::Ed25519(_) => Ok(seq(&[&oid(OID_ED25519)])),
            PrivateKey::Dsa(_) => Err(kerr(
                "x509: certificate private key does not implement crypto.Signer",
            )),
        }
    }

    /// Signs `tbs` as Go's x509 does for the key type.
    fn sign(&self, tbs: &[u8]) -> Result<Vec<u8>, KeyError> {
        match self {
            PrivateKey::Rsa(k) => {
                let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(k.as_ref().clone());
                let sig = signer
                    .try_sign(tbs)
                    .map_err(|e| kerr(format!("x509: {e}")))?;
                Ok(sig.to_vec())
            }
            PrivateKey::Ecdsa(k) => {
                let signer = p256::ecdsa::SigningKey::from(k);
                let sig: p256::ecdsa::Signature = signer
                    .try_sign(tbs)
                    .map_err(|e| kerr(format!("x509: {e}")))?;
                Ok(sig.to_der().as_bytes().to_vec())
            }
            PrivateKey::Ed25519(k) => Ok(k.sign(tbs).to_bytes().to_vec()),
            PrivateKey::Dsa(_) => Err(kerr(
                "x509: certificate private key does not implement crypto.Signer",
            )),
        }
    }
}

/// SEC1 `ECPrivateKey` with the named curve and public key, as Go's
/// `x509.MarshalECPrivateKey` writes it.
fn ec_private_key_der(k: &p256::SecretKey) -> Vec<u8> {
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    let point = k.public_key().to_encoded_point(false);
    seq(&[
        &uint(&[1]),
        &octet_string(k.to_bytes().as_slice()),
        &tlv(0xa0, &oid(OID_P256)),
        &tlv(0xa1, &bit_string(0, point.as_bytes())),
    ])
}

/// PKCS#8 v1 of an Ed25519 seed, as Go's `x509.MarshalPKCS8PrivateKey`.
fn ed25519_pkcs8(k: &ed25519_dalek::SigningKey) -> Vec<u8> {
    seq(&[
        &uint(&[0]),
        &seq(&[&oid(OID_ED25519)]),
        &octet_string(&octet_string(&k.to_bytes())),
    ])
}

/// Reads one DER element: (tag, content, rest).
pub(crate) fn read_tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *b.first()?;
    let first = *b.get(1)?;
    let (len, hdr) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | usize::from(*b.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let end = hdr.checked_add(len)?;
    Some((tag, b.get(hdr..end)?, &b[end..]))
}

fn big(bytes: &[u8]) -> dsa::BigUint {
    dsa::BigUint::from_bytes_be(bytes)
}

/// Sprig's `parsePrivateKeyPEM`, with its error texts.
pub fn parse_private_key_pem(pem: &str) -> Result<PrivateKey, KeyError> {
    let bytes = super::util::go_bytes(pem);
    let (kind, der) = pem_decode(&bytes).ok_or_else(|| kerr("no PEM data in input"))?;
    if kind == "PRIVATE KEY" {
        return parse_pkcs8(&der).map_err(|e| kerr(format!("decoding PEM as PKCS#8: {e}")));
    }
    let Some(prefix) = kind.strip_suffix(" PRIVATE KEY") else {
        return Err(kerr(format!(
            "no private key data in PEM block of type {kind}"
        )));
    };
    match prefix {
        "RSA" => rsa::RsaPrivateKey::from_pkcs1_der(&der)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|e| {
                kerr(format!(
                    "parsing RSA private key from PEM: asn1: structure error: {e}"
                ))
            }),
        "EC" => p256::SecretKey::from_sec1_der(&der)
            .map(PrivateKey::Ecdsa)
            .map_err(|e| {
                kerr(format!(
                    "parsing EC private key from PEM: x509: failed to parse EC private key: {e}"
                ))
            }),
        "DSA" => parse_dsa(&der).ok_or_else(|| {
            kerr("parsing DSA private key from PEM: asn1: structure error: malformed DSA key")
        }),
        _ => Err(kerr(format!("invalid private key type {kind}"))),
    }
}

fn parse_dsa(der: &[u8]) -> Option<PrivateKey> {
    let (tag, body, _) = read_tlv(der)?;
    if tag != 0x30 {
        return None;
    }
    let mut ints = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (t, c, r) = read_tlv(rest)?;
        if t != 0x02 {
            return None;
        }
        ints.push(c);
        rest = r;
    }
    if ints.len() != 6 {
        return None;
    }
    let components =
        dsa::Components::from_components(big(ints[1]), big(ints[2]), big(ints[3])).ok()?;
    let vk = dsa::VerifyingKey::from_components(components, big(ints[4])).ok()?;
    let sk = dsa::SigningKey::from_components(vk, big(ints[5])).ok()?;
    Some(PrivateKey::Dsa(Box::new(sk)))
}

fn parse_pkcs8(der: &[u8]) -> Result<PrivateKey, String> {
    let info = rsa::pkcs8::PrivateKeyInfo::try_from(der)
        .map_err(|e| format!("asn1: structure error: {e}"))?;
    let alg = info.algorithm.oid.to_string();
    if alg == oid_string(OID_RSA) {
        rsa::RsaPrivateKey::from_pkcs1_der(info.private_key)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|e| format!("x509: failed to parse RSA private key embedded in PKCS#8: {e}"))
    } else if alg == oid_string(OID_EC_PUBLIC_KEY) {
        p256::SecretKey::from_sec1_der(info.private_key)
            .map(PrivateKey::Ecdsa)
            .map_err(|e| format!("x509: failed to parse EC private key embedded in PKCS#8: {e}"))
    } else if alg == oid_string(OID_ED25519) {
        match read_tlv(info.private_key) {
            Some((0x04, seed, _)) if seed.len() == 32 => {
                let mut s = [0u8; 32];
                s.copy_from_slice(seed);
                Ok(PrivateKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(
                    &s,
                )))
            }
            _ => Err("x509: invalid Ed25519 private key".into()),
        }
    } else {
        Err(format!(
            "x509: PKCS#8 wrapping contained private key with unknown algorithm: {alg}"
        ))
    }
}

// ---------------------------------------------------------------- certificates

/// What Sprig puts in a certificate template.
#[derive(Debug, Clone)]
pub struct CertSpec {
    /// Subject common name.
    pub cn: String,
    /// Subject alternative IP addresses.
    pub ips: Vec<IpAddr>,
    /// Subject alternative DNS names.
    pub dns: Vec<String>,
    /// Validity in days from now.
    pub days: i64,
    /// A CA certificate (`IsCA`, cert-sign key usage, subject key id).
    pub is_ca: bool,
}

/// The parts of a parsed signer certificate that signing needs.
#[derive(Debug, Clone)]
pub struct ParentCert {
    raw_subject: Vec<u8>,
    subject_key_id: Option<Vec<u8>>,
    spki: Vec<u8>,
}

/// Parses a DER certificate as Go's `x509.ParseCertificate` would accept it.
pub fn parse_certificate(der: &[u8]) -> Result<ParentCert, KeyError> {
    let cert =
        x509_cert::Certificate::from_der(der).map_err(|_| kerr("x509: malformed certificate"))?;
    let tbs = &cert.tbs_certificate;
    let raw_subject = tbs
        .subject
        .to_der()
        .map_err(|_| kerr("x509: malformed certificate"))?;
    let spki = tbs
        .subject_public_key_info
        .to_der()
        .map_err(|_| kerr("x509: malformed certificate"))?;
    let ski_oid = der::asn1::ObjectIdentifier::new_unwrap("2.5.29.14");
    let subject_key_id = tbs
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == ski_oid)
        .and_then(|e| match read_tlv(e.extn_value.as_bytes()) {
            Some((0x04, id, _)) => Some(id.to_vec()),
            _ => None,
        });
    Ok(ParentCert {
        raw_subject,
        subject_key_id,
        spki,
    })
}

/// Go's ASN.1 PrintableString alphabet (without `*` and `&`).
fn is_printable(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&b))
}

fn subject_name(cn: &str) -> Vec<u8> {
    if cn.is_empty() {
        return seq(&[]);
    }
    let tag = if is_printable(cn) { 0x13 } else { 0x0c };
    let atv = seq(&[&oid(&[2, 5, 4, 3]), &tlv(tag, cn.as_bytes())]);
    seq(&[&tlv(0x31, &atv)])
}

/// UTCTime for 1950..2049, GeneralizedTime otherwise, in UTC.
fn asn1_time(t: &GoTime) -> Vec<u8> {
    let utc = t.in_loc(crate::gostd::time::Location::Utc);
    let year = utc.year();
    if (1950..2050).contains(&year) {
        tlv(0x17, utc.format("060102150405Z").as_bytes())
    } else {
        tlv(0x18, utc.format("20060102150405Z").as_bytes())
    }
}

fn extension(id: &[u64], critical: bool, value: &[u8]) -> Vec<u8> {
    if critical {
        seq(&[&oid(id), &[0x01, 0x01, 0xff], &octet_string(value)])
    } else {
        seq(&[&oid(id), &octet_string(value)])
    }
}

/// Go's `marshalKeyUsage`: bits reversed per byte, shortest BIT STRING.
fn key_usage(ku: u16) -> Vec<u8> {
    let a = [(ku as u8).reverse_bits(), ((ku >> 8) as u8).reverse_bits()];
    let bytes: &[u8] = if a[1] != 0 { &a } else { &a[..1] };
    let last = bytes[bytes.len() - 1];
    let unused = if last == 0 {
        0
    } else {
        last.trailing_zeros() as u8
    };
    bit_string(unused, bytes)
}

/// Creates a PEM certificate for `key` from `spec`, signed by `signer`
/// (self-signed when `parent` is `None`).
pub fn create_certificate(
    spec: &CertSpec,
    key: &PrivateKey,
    parent: Option<&ParentCert>,
    signer: &PrivateKey,
) -> Result<String, KeyError> {
    let cert_err = |e: KeyError| kerr(format!("error creating certificate: {}", e.0));
    if let PrivateKey::Dsa(_) = signer {
        return Err(cert_err(kerr(
            "x509: certificate private key does not implement crypto.Signer",
        )));
    }
    let (spki, pub_bits) = key.public_key_info().map_err(cert_err)?;
    if let Some(p) = parent {
        let (signer_spki, _) = signer.public_key_info().map_err(cert_err)?;
        if signer_spki != p.spki {
            return Err(cert_err(kerr(
                "x509: provided PrivateKey doesn't match parent's PublicKey",
            )));
        }
    }
    for name in &spec.dns {
        if !name.is_ascii() {
            return Err(cert_err(kerr(format!(
                "x509: {name:?} cannot be encoded as an IA5String"
            ))));
        }
    }

    let mut serial = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rng(), &mut serial);
    let now = GoTime::now();
    let not_after = now.add(spec.days.wrapping_mul(24 * 3_600_000_000_000));
    let subject = subject_name(&spec.cn);
    let issuer = parent.map_or_else(|| subject.clone(), |p| p.raw_subject.clone());

    let mut exts: Vec<Vec<u8>> = Vec::new();
    // KeyUsage: digitalSignature | keyEncipherment (| certSign for a CA).
    let ku: u16 = if spec.is_ca { 1 | 4 | 32 } else { 1 | 4 };
    exts.push(extension(&[2, 5, 29, 15], true, &key_usage(ku)));
    exts.push(extension(
        &[2, 5, 29, 37],
        false,
        &seq(&[
            &oid(&[1, 3, 6, 1, 5, 5, 7, 3, 1]),
            &oid(&[1, 3, 6, 1, 5, 5, 7, 3, 2]),
        ]),
    ));
    let bc = if spec.is_ca {
        seq(&[&[0x01, 0x01, 0xff]])
    } else {
        seq(&[])
    };
    exts.push(extension(&[2, 5, 29, 19], true, &bc));
    if spec.is_ca {
        use sha1::Digest as _;
        let id = sha1::Sha1::digest(&pub_bits);
        exts.push(extension(&[2, 5, 29, 14], false, &octet_string(&id)));
    }
    if let Some(p) = parent {
        if p.raw_subject != subject {
            if let Some(id) = &p.subject_key_id {
                exts.push(extension(&[2, 5, 29, 35], false, &seq(&[&tlv(0x80, id)])));
            }
        }
    }
    if !spec.dns.is_empty() || !spec.ips.is_empty() {
        let mut names: Vec<u8> = Vec::new();
        for d in &spec.dns {
            names.extend(tlv(0x82, d.as_bytes()));
        }
        for ip in &spec.ips {
            let bytes = match ip {
                IpAddr::V4(v4) => v4.octets().to_vec(),
                IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                    Some(v4) => v4.octets().to_vec(),
                    None => v6.octets().to_vec(),
                },
            };
            names.extend(tlv(0x87, &bytes));
        }
        let critical = spec.cn.is_empty();
        exts.push(extension(&[2, 5, 29, 17], critical, &tlv(0x30, &names)));
    }

    let sig_alg = signer.signature_algorithm().map_err(cert_err)?;
    let tbs = seq(&[
        &tlv(0xa0, &uint(&[2])),
        &uint(&serial),
        &sig_alg,
        &issuer,
        &seq(&[&asn1_time(&now), &asn1_time(&not_after)]),
        &subject,
        &spki,
        &tlv(0xa3, &tlv(0x30, &exts.concat())),
    ]);
    let sig = signer.sign(&tbs).map_err(cert_err)?;
    let cert = seq(&[&tbs, &sig_alg, &bit_string(0, &sig)]);
    Ok(pem_encode("CERTIFICATE", &cert))
}

/// The RSA modulus size in bits (`None` for other key kinds).
#[cfg(test)]
pub fn rsa_bits(key: &PrivateKey) -> Option<usize> {
    use rsa::traits::PublicKeyParts;
    match key {
        PrivateKey::Rsa(k) => Some(k.n().bits()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::traits::{PrivateKeyParts, PublicKeyParts};

    #[test]
    fn rsa_keys_have_the_asked_size_and_are_valid() {
        for bits in [512, 1024, 2048] {
            let Ok(PrivateKey::Rsa(k)) = generate_rsa(bits) else {
                panic!("no RSA key of {bits} bits");
            };
            assert_eq!(k.n().bits(), bits);
            assert_eq!(k.primes().len(), 2);
            assert!(k.primes().iter().all(|p| p.bits() == bits / 2));
            assert_eq!(k.e(), &rsa::BigUint::from(65_537u32));
            assert!(k.validate().is_ok());
        }
        // Odd sizes take the crate's own generator.
        let Ok(PrivateKey::Rsa(k)) = generate_rsa(1023) else {
            panic!("no 1023-bit key");
        };
        assert_eq!(k.n().bits(), 1023);
    }
}
