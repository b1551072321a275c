//! Sprig's crypto functions: `bcrypt`, `htpasswd`, `derivePassword`,
//! `genPrivateKey`, `buildCustomCert`, `genCA`, `genCAWithKey`,
//! `genSelfSignedCert`, `genSelfSignedCertWithKey`, `genSignedCert`,
//! `genSignedCertWithKey`, `encryptAES` and `decryptAES`.
//!
//! Formats are Sprig's: PEM block types as Go writes them, `encryptAES` as
//! base64 of IV + AES-256-CBC with PKCS#7 padding (the password zero-padded or
//! cut to 32 bytes), `derivePassword` as the Master Password algorithm.
//! Failures Sprig reports as text (`genPrivateKey "x"`, `bcrypt` of a long
//! password) are returned as text too.
use super::crypto_x509::{
    create_certificate, generate_rsa, parse_certificate, parse_private_key_pem, pem_decode,
    CertSpec, KeyError, PrivateKey,
};
use super::util::{go_bytes, go_string_from_bytes};
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::{GoObject, Value};
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use base64::Engine as _;
use hmac::Mac;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::rc::Rc;

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use Param::{Any, Int, List, String as S};
    r.add("bcrypt", &[S], None, bcrypt_fn);
    r.add("htpasswd", &[S, S], None, htpasswd);
    r.add("genPrivateKey", &[S], None, gen_private_key);
    r.add("derivePassword", &[Int, S, S, S, S], None, derive_password);
    r.add("buildCustomCert", &[S, S], None, build_custom_cert);
    r.add("genCA", &[S, Int], None, gen_ca);
    r.add("genCAWithKey", &[S, Int, S], None, gen_ca_with_key);
    r.add(
        "genSelfSignedCert",
        &[S, List, List, Int],
        None,
        gen_self_signed,
    );
    r.add(
        "genSelfSignedCertWithKey",
        &[S, List, List, Int, S],
        None,
        gen_self_signed_with_key,
    );
    r.add(
        "genSignedCert",
        &[S, List, List, Int, Any],
        None,
        gen_signed,
    );
    r.add(
        "genSignedCertWithKey",
        &[S, List, List, Int, Any, S],
        None,
        gen_signed_with_key,
    );
    r.add("encryptAES", &[S, S], None, encrypt_aes);
    r.add("decryptAES", &[S, S], None, decrypt_aes);
}

fn s(args: &[Value], i: usize) -> &str {
    match args.get(i) {
        Some(Value::Str(v)) => v,
        _ => "",
    }
}

fn int(args: &[Value], i: usize) -> i64 {
    match args.get(i) {
        Some(Value::Int(n) | Value::Int64(n)) => *n,
        _ => 0,
    }
}

// ---------------------------------------------------------------- certificate object

/// Sprig's `certificate` struct: PEM `Cert` and `Key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The PEM certificate.
    pub cert: String,
    /// The PEM private key.
    pub key: String,
}

impl GoObject for Certificate {
    fn type_name(&self) -> &str {
        "sprig.certificate"
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::str(self.cert.as_str())),
            "Key" => Some(Value::str(self.key.as_str())),
            _ => None,
        }
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{} {}}}", self.cert, self.key)
    }
    fn to_json_value(&self) -> Value {
        let mut m = BTreeMap::new();
        m.insert("Cert".to_string(), Value::str(self.cert.as_str()));
        m.insert("Key".to_string(), Value::str(self.key.as_str()));
        Value::map(m)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn cert_value(c: Certificate) -> Value {
    Value::Object(Rc::new(c))
}

// ---------------------------------------------------------------- bcrypt

/// Sprig's `bcrypt`: a `$2a$` hash with Go's default cost 10, or the error text.
fn bcrypt_hash(input: &str) -> String {
    let input = go_bytes(input);
    if input.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    match bcrypt::hash_with_result(&*input, 10) {
        Ok(parts) => parts.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn bcrypt_fn(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    Ok(Value::str(bcrypt_hash(s(args, 0))))
}

fn htpasswd(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let (user, pass) = (s(args, 0), s(args, 1));
    if user.contains(':') {
        return Ok(Value::str(format!("invalid username: {user}")));
    }
    Ok(Value::str(format!("{user}:{}", bcrypt_hash(pass))))
}

// ---------------------------------------------------------------- derivePassword

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_chars(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        b'x' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
        _ => b"",
    }
}

/// The Master Password algorithm as Sprig implements it.
fn master_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let (password, user, site) = (go_bytes(password), go_bytes(user), go_bytes(site));
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend((user.len() as u32).to_be_bytes());
    salt.extend(user.iter());
    let mut key = [0u8; 64];
    let derived = scrypt::Params::new(15, 8, 2, 64)
        .map_err(|e| e.to_string())
        .and_then(|p| scrypt::scrypt(&password, &salt, &p, &mut key).map_err(|e| e.to_string()));
    if let Err(e) = derived {
        return format!("failed to derive password: {e}");
    }
    let mut msg = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    msg.extend((site.len() as u32).to_be_bytes());
    msg.extend(site.iter());
    msg.extend(counter.to_be_bytes());
    let Ok(mut mac) = <hmac::Hmac<rsa::sha2::Sha256> as Mac>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&msg);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()].as_bytes();
    template
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let chars = template_chars(c);
            let pick = usize::from(seed.get(i + 1).copied().unwrap_or(0));
            char::from(chars[pick % chars.len()])
        })
        .collect()
}

fn derive_password(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    Ok(Value::str(master_password(
        int(args, 0) as u32,
        s(args, 1),
        s(args, 2),
        s(args, 3),
        s(args, 4),
    )))
}

// ---------------------------------------------------------------- keys and certificates

fn gen_private_key(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let kind = s(args, 0);
    let text = match PrivateKey::generate(kind) {
        None => format!("Unknown type {kind}"),
        Some(Err(e)) => format!("failed to generate private key: {e}"),
        Some(Ok(k)) => k.to_pem().unwrap_or_default(),
    };
    Ok(Value::str(text))
}

fn msg(e: impl fmt::Display) -> FuncError {
    FuncError::msg(e.to_string())
}

/// Sprig's `getNetIPs`: every element must be a string holding an IP.
fn ip_list(v: Option<&Value>) -> Result<Vec<IpAddr>, FuncError> {
    let items = match v {
        Some(Value::List(l, _)) => l.as_slice(),
        _ => &[],
    };
    items
        .iter()
        .map(|item| match item {
            Value::Str(text) => {
                parse_go_ip(text).ok_or_else(|| FuncError::msg(format!("error parsing ip: {text}")))
            }
            other => Err(FuncError::msg(format!(
                "error parsing ip: {other} is not a string"
            ))),
        })
        .collect()
}

/// Go's `net.ParseIP`: dotted IPv4 without leading zeros, or IPv6.
fn parse_go_ip(s: &str) -> Option<IpAddr> {
    if s.contains('%') {
        return None;
    }
    s.parse().ok()
}

/// Sprig's `getAlternateDNSStrs`.
fn dns_list(v: Option<&Value>) -> Result<Vec<String>, FuncError> {
    let items = match v {
        Some(Value::List(l, _)) => l.as_slice(),
        _ => &[],
    };
    items
        .iter()
        .map(|item| match item {
            Value::Str(text) => Ok(text.to_string()),
            other => Err(FuncError::msg(format!(
                "error processing alternate dns name: {other} is not a string"
            ))),
        })
        .collect()
}

fn rsa_2048() -> Result<PrivateKey, FuncError> {
    generate_rsa(2048).map_err(|e| msg(format!("error generating rsa key: {e}")))
}

fn pem_key(text: &str) -> Result<PrivateKey, FuncError> {
    parse_private_key_pem(text).map_err(|e| msg(format!("parsing private key: {e}")))
}

/// Builds a self-signed certificate and returns Sprig's struct, key PEM included.
fn issue(spec: CertSpec, key: &PrivateKey) -> FuncResult {
    let cert = create_certificate(&spec, key, None, key).map_err(msg)?;
    let key_pem = key
        .to_pem()
        .map_err(|e: KeyError| msg(format!("error pem-encoding key: {e}")))?;
    Ok(cert_value(Certificate { cert, key: key_pem }))
}

fn parse_parent(ca: &Certificate) -> Result<super::crypto_x509::ParentCert, FuncError> {
    let (_, der) =
        pem_decode(ca.cert.as_bytes()).ok_or_else(|| msg("unable to decode certificate"))?;
    parse_certificate(&der).map_err(|e| {
        msg(format!(
            "error parsing certificate: decodedSignerCert.Bytes: {e}"
        ))
    })
}

fn ca_spec(args: &[Value]) -> CertSpec {
    CertSpec {
        cn: s(args, 0).to_string(),
        ips: Vec::new(),
        dns: Vec::new(),
        days: int(args, 1),
        is_ca: true,
    }
}

fn gen_ca(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = rsa_2048()?;
    issue(ca_spec(args), &key)
}

fn gen_ca_with_key(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = pem_key(s(args, 2))?;
    issue(ca_spec(args), &key)
}

fn leaf_spec(args: &[Value]) -> Result<CertSpec, FuncError> {
    Ok(CertSpec {
        cn: s(args, 0).to_string(),
        ips: ip_list(args.get(1))?,
        dns: dns_list(args.get(2))?,
        days: int(args, 3),
        is_ca: false,
    })
}

fn gen_self_signed(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = rsa_2048()?;
    issue(leaf_spec(args)?, &key)
}

fn gen_self_signed_with_key(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = pem_key(s(args, 4))?;
    issue(leaf_spec(args)?, &key)
}

/// The `sprig.certificate` argument of `genSignedCert*`.
fn ca_arg(args: &[Value], i: usize) -> Result<Certificate, FuncError> {
    match args.get(i) {
        Some(Value::Object(o)) => o
            .as_any()
            .downcast_ref::<Certificate>()
            .cloned()
            .ok_or_else(|| {
                msg(format!(
                    "wrong type for value; expected sprig.certificate; got {}",
                    o.type_name()
                ))
            }),
        Some(Value::Str(v)) => Err(msg(format!(
            "can't handle {v:?} for arg of type sprig.certificate"
        ))),
        Some(other) => Err(msg(format!(
            "wrong type for value; expected sprig.certificate; got {}",
            other.type_name()
        ))),
        None => Err(msg("invalid value; expected sprig.certificate")),
    }
}

fn signed(args: &[Value], key: PrivateKey) -> FuncResult {
    let ca = ca_arg(args, 4)?;
    let parent = parse_parent(&ca)?;
    let signer = parse_private_key_pem(&ca.key)
        .map_err(|e| msg(format!("error parsing private key: {e}")))?;
    let spec = leaf_spec(args)?;
    let cert = create_certificate(&spec, &key, Some(&parent), &signer).map_err(msg)?;
    let key_pem = key
        .to_pem()
        .map_err(|e| msg(format!("error pem-encoding key: {e}")))?;
    Ok(cert_value(Certificate { cert, key: key_pem }))
}

fn gen_signed(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    ca_arg(args, 4)?;
    let key = rsa_2048()?;
    signed(args, key)
}

fn gen_signed_with_key(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    ca_arg(args, 4)?;
    let key = pem_key(s(args, 5))?;
    signed(args, key)
}

fn build_custom_cert(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let cert =
        go_base64_decode(s(args, 0)).map_err(|_| msg("unable to decode base64 certificate"))?;
    let key =
        go_base64_decode(s(args, 1)).map_err(|_| msg("unable to decode base64 private key"))?;
    let (_, der) = pem_decode(&cert).ok_or_else(|| msg("unable to decode certificate"))?;
    parse_certificate(&der)
        .map_err(|e| msg(format!("error parsing certificate: decodedCert.Bytes: {e}")))?;
    let key_text = go_string_from_bytes(&key);
    parse_private_key_pem(&key_text).map_err(|e| msg(format!("error parsing private key: {e}")))?;
    Ok(cert_value(Certificate {
        cert: go_string_from_bytes(&cert),
        key: key_text,
    }))
}

// ---------------------------------------------------------------- AES

/// Go's `base64.StdEncoding.DecodeString` of a template string (raw bytes
/// kept); the error is the offset Go reports ("illegal base64 data at input
/// byte N").
pub fn go_base64_decode(src: &str) -> Result<Vec<u8>, usize> {
    crate::gostd::base64::decode_std(&go_bytes(src)).map_err(|e| e.0)
}

fn aes_key(password: &str) -> aes::Aes256 {
    let mut key = [0u8; 32];
    let p = go_bytes(password);
    let n = p.len().min(32);
    key[..n].copy_from_slice(&p[..n]);
    aes::Aes256::new(&key.into())
}

fn encrypt_aes(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let plain = s(args, 1);
    if plain.is_empty() {
        return Ok(Value::str(""));
    }
    let cipher = aes_key(s(args, 0));
    let mut content = go_bytes(plain).into_owned();
    let pad = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(pad as u8, pad));
    let mut iv = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut iv);
    let mut out = iv.to_vec();
    let mut prev = iv;
    for chunk in content.chunks(16) {
        let mut block = [0u8; 16];
        for (i, b) in block.iter_mut().enumerate() {
            *b = chunk[i] ^ prev[i];
        }
        let mut ga = block.into();
        cipher.encrypt_block(&mut ga);
        prev = ga.into();
        out.extend_from_slice(&prev);
    }
    Ok(Value::str(
        base64::engine::general_purpose::STANDARD.encode(out),
    ))
}

fn decrypt_aes(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let crypt64 = s(args, 1);
    if crypt64.is_empty() {
        return Ok(Value::str(""));
    }
    let cipher = aes_key(s(args, 0));
    let crypt = go_base64_decode(crypt64)
        .map_err(|at| msg(format!("illegal base64 data at input byte {at}")))?;
    if crypt.len() < 16 {
        return Err(msg(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt.len()
        )));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return Err(msg("crypto/cipher: input not full blocks"));
    }
    let mut prev: [u8; 16] = iv.try_into().unwrap_or([0; 16]);
    let mut plain = Vec::with_capacity(body.len());
    for chunk in body.chunks(16) {
        let mut ga = aes::Block::clone_from_slice(chunk);
        cipher.decrypt_block(&mut ga);
        for (i, b) in ga.iter().enumerate() {
            plain.push(b ^ prev[i]);
        }
        prev.copy_from_slice(chunk);
    }
    let Some(&last) = plain.last() else {
        return Err(msg("runtime error: index out of range [-1]"));
    };
    let keep = plain.len() as i64 - i64::from(last);
    if keep < 0 {
        return Err(msg(format!(
            "runtime error: slice bounds out of range [:{keep}]"
        )));
    }
    plain.truncate(keep as usize);
    Ok(Value::str(go_string_from_bytes(&plain)))
}

#[cfg(test)]
mod tests;
