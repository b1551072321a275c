//! Chart provenance: Helm's `.prov` files, read and checked as `helm
//! verify` (v3.17.2, `pkg/provenance/sign.go`) checks them.
//!
//! A `.prov` file is an OpenPGP clear-signed document. Its body is the
//! chart's metadata (`Chart.yaml` as Helm marshals it), a line `...`, and a
//! YAML map of archive names to digests:
//!
//! ```text
//! -----BEGIN PGP SIGNED MESSAGE-----
//! Hash: SHA512
//!
//! apiVersion: v2
//! name: alpine
//! version: 0.1.0
//!
//! ...
//! files:
//!   alpine-0.1.0.tgz: sha256:2085444c...
//! -----BEGIN PGP SIGNATURE-----
//! ...
//! -----END PGP SIGNATURE-----
//! ```
//!
//! [`verify`] checks, in Helm's order: the signature against a keyring (a
//! binary OpenPGP keyring such as a legacy `pubring.gpg`, public or secret
//! keys), then the archive's sha256 against the entry for its file name.
//! Failures carry Helm's messages (`openpgp: signature made by unknown
//! entity`, `sha256 sum does not match for NAME: "sha256:..." !=
//! "sha256:..."`), so that `rudder verify` prints what `helm verify` prints.
//! [`verify_chart`] is `helm verify PATH --keyring FILE` on files, with
//! Helm's checks of the paths; [`default_keyring`] is Helm's default for
//! `--keyring`.
//!
//! Like Helm, the signed metadata is parsed but not compared with the
//! archive's `Chart.yaml`: the signature binds it to the archive's digest,
//! which is compared. [`Verification`] carries the signed name and version
//! for a caller that wants to compare them.
//!
//! Where Helm 3.17.2 and 4.1.4 differ, rudder gives Helm 3's verdict and
//! text (a changed body: `hash tag doesn't match`, not Helm 4's `RSA
//! verification failure`; an expired signing key is accepted, Helm 4
//! refuses it with `openpgp: key expired`), except for Ed25519 keys,
//! which Helm 3 cannot read and rudder verifies as Helm 4 does.
//!
//! For `--verify` on pull and install, Helm (`pkg/downloader`) fetches
//! `URL.prov` beside the archive, fails with `failed to fetch provenance
//! "URL.prov"` when it cannot, writes it next to the archive and runs the
//! same check ([`verify`] on the two downloads and the keyring's bytes);
//! `helm pull --verify` then prints [`Verification::helm_output`].
//!
//! The OpenPGP packets, keys and signature arithmetic are the `pgp` crate's
//! (rpgp); the clear-signed framing is parsed here ([`ClearSigned`]) by
//! Go's rules (`golang.org/x/crypto/openpgp/clearsign`), since the text a
//! signature covers depends on them (dash-unescaping, trailing blanks,
//! CRLF line ends).
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use pgp::composed::{PublicOrSecret, SignedKeyDetails, SignedPublicSubKey};
use pgp::packet::{Packet, PacketParser, PublicKey, PublicSubkey, Signature};
use pgp::types::{KeyDetails, KeyId, PublicKeyTrait, SignatureBytes};

/// What a successful verification found (what `helm verify` prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    /// The signer's identities (`Name (comment) <email>`), in keyring order.
    pub signed_by: Vec<String>,
    /// The signer's primary key fingerprint, upper-case hex without spaces.
    pub fingerprint: String,
    /// The verified archive digest, `sha256:<hex>`.
    pub file_hash: String,
    /// The archive name the digest was looked up under.
    pub file_name: String,
    /// `name:` of the signed chart metadata, if it has one.
    pub chart_name: Option<String>,
    /// `version:` of the signed chart metadata, if it has one.
    pub chart_version: Option<String>,
}

impl Verification {
    /// The lines `helm verify` prints on success.
    pub fn helm_output(&self) -> String {
        let mut out = String::new();
        for name in &self.signed_by {
            out.push_str("Signed by: ");
            out.push_str(name);
            out.push('\n');
        }
        out.push_str("Using Key With Fingerprint: ");
        out.push_str(&self.fingerprint);
        out.push('\n');
        out.push_str("Chart Hash Verified: ");
        out.push_str(&self.file_hash);
        out.push('\n');
        out
    }
}

/// Why a chart did not verify. The texts are Helm's (v3.17.2).
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    /// The chart path cannot be read (`stat PATH: no such file or directory`).
    #[error("stat {path}: {message}")]
    ChartStat {
        /// The chart path as given.
        path: String,
        /// The OS error, Go style.
        message: String,
    },
    /// The chart path is a directory.
    #[error("unpacked charts cannot be verified")]
    Unpacked {
        /// The directory.
        path: String,
    },
    /// The chart path does not end in `.tgz`.
    #[error("chart must be a tgz file")]
    NotTgz {
        /// The path.
        path: String,
    },
    /// The `.prov` file next to the chart is missing or unreadable.
    #[error("could not load provenance file {path}: {op} {path}: {message}")]
    ProvenanceFile {
        /// The `.prov` path.
        path: String,
        /// `stat` or `open`.
        op: &'static str,
        /// The OS error, Go style.
        message: String,
    },
    /// The `.prov` path is a directory.
    #[error("{path} cannot be a directory")]
    ProvenanceIsDirectory {
        /// The `.prov` path.
        path: String,
    },
    /// A file could not be read (`open PATH: permission denied`).
    #[error("open {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The OS error, Go style.
        message: String,
    },
    /// The keyring file could not be opened.
    #[error("failed to load keyring: open {path}: {message}")]
    KeyringFile {
        /// The keyring path.
        path: String,
        /// The OS error, Go style.
        message: String,
    },
    /// The keyring holds no usable key and could not be parsed.
    #[error("failed to load keyring: openpgp: invalid data: {message}")]
    Keyring {
        /// What the OpenPGP parser said.
        message: String,
    },
    /// No clear-signed block in the `.prov` data.
    #[error("failed to decode signature: signature block not found")]
    NoSignatureBlock,
    /// The armored signature is not a signature packet the parser reads.
    #[error("openpgp: invalid data: {message}")]
    InvalidSignatureData {
        /// What was wrong.
        message: String,
    },
    /// No key of the keyring made the signature.
    #[error("openpgp: signature made by unknown entity")]
    UnknownSigner,
    /// The signed text was changed after signing (the hash's first two
    /// bytes differ from the ones the signature records).
    #[error("openpgp: invalid signature: hash tag doesn't match")]
    HashTagMismatch,
    /// The signature arithmetic failed for the signer's key.
    #[error("openpgp: invalid signature: {algorithm} verification failure")]
    BadSignature {
        /// `RSA`, `DSA`, `ECDSA`, `EdDSA`.
        algorithm: String,
    },
    /// A signature or key feature the verifier does not support.
    #[error("openpgp: unsupported feature: {message}")]
    Unsupported {
        /// What is not supported.
        message: String,
    },
    /// The signed body has no `...` line between metadata and digests.
    #[error("message block must have at least two parts")]
    MessageBlock,
    /// The signed metadata or digest map is not the YAML Helm expects.
    #[error("{message}")]
    MessageYaml {
        /// Helm's (Go's) text for it.
        message: String,
    },
    /// The signed digests name no file of that name.
    #[error("provenance does not contain a SHA for a file named {}", go_quote(.name))]
    NoDigest {
        /// The archive name.
        name: String,
    },
    /// The archive's sha256 is not the signed one.
    #[error("sha256 sum does not match for {name}: {} != {}", go_quote(.signed), go_quote(.actual))]
    DigestMismatch {
        /// The archive name.
        name: String,
        /// The signed digest (`sha256:...`).
        signed: String,
        /// The archive's digest (`sha256:...`).
        actual: String,
    },
}

/// Go's `%q` (`strconv.Quote`), as Helm's messages quote.
fn go_quote(s: &str) -> String {
    crate::gostd::strconv::quote(s)
}

/// Helm's default for `--keyring`: `$GNUPGHOME/pubring.gpg` when
/// `GNUPGHOME` is set (even empty), else `$HOME/.gnupg/pubring.gpg`.
pub fn default_keyring() -> PathBuf {
    default_keyring_from(|k| std::env::var(k).ok())
}

/// [`default_keyring`] with the environment read through `lookup`.
pub fn default_keyring_from(lookup: impl Fn(&str) -> Option<String>) -> PathBuf {
    match lookup("GNUPGHOME") {
        Some(g) => Path::new(&g).join("pubring.gpg"),
        None => Path::new(&lookup("HOME").unwrap_or_default())
            .join(".gnupg")
            .join("pubring.gpg"),
    }
}

/// A clear-signed message, split by Go's `clearsign.Decode` rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClearSigned {
    /// The values of the `Hash:` armor headers (not checked against the
    /// signature, as in Go).
    pub hash_headers: Vec<String>,
    /// The text the signature covers: dash-unescaped lines, trailing spaces
    /// and tabs removed, joined by CRLF, without a final line end.
    pub signed_text: Vec<u8>,
    /// The same lines, each ended by `\n` (what the YAML is read from).
    pub plaintext: Vec<u8>,
    /// The armored signature block, `-----BEGIN PGP SIGNATURE-----` through
    /// `-----END PGP SIGNATURE-----` and the line ends after it.
    pub armored_signature: Vec<u8>,
}

const START: &[u8] = b"\n-----BEGIN PGP SIGNED MESSAGE-----";
const END_TEXT: &[u8] = b"-----BEGIN PGP SIGNATURE-----";
const END: &[u8] = b"\n-----END PGP SIGNATURE-----";

/// The first line of `data` (without `\n` or `\r\n`) and what follows it.
fn get_line(data: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memchr(b'\n', data) {
        None => (data, &data[data.len()..]),
        Some(i) => {
            let end = if i > 0 && data[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            (&data[..end], &data[i + 1..])
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

impl ClearSigned {
    /// Finds the first clear-signed message in `data`, as Go's
    /// `clearsign.Decode` does: text before it is skipped; `None` when there
    /// is none or it is malformed (a header other than `Hash`, a header with
    /// control or non-ASCII characters, no signature block, no end line).
    /// The armored signature itself is not decoded here.
    pub fn parse(data: &[u8]) -> Option<ClearSigned> {
        let mut rest = if data.starts_with(&START[1..]) {
            &data[START.len() - 1..]
        } else {
            let i = find(data, START)?;
            &data[i + START.len()..]
        };
        let (suffix, r) = get_line(rest);
        if !suffix.is_empty() {
            return None;
        }
        rest = r;
        let mut hash_headers = Vec::new();
        loop {
            if rest.is_empty() {
                return None;
            }
            let (line, r) = get_line(rest);
            rest = r;
            if line.is_empty() {
                break;
            }
            if line.iter().any(|&b| !(0x20..=0x7e).contains(&b)) {
                return None;
            }
            let colon = memchr::memchr(b':', line)?;
            // ASCII-only by the check above.
            let key = String::from_utf8_lossy(&line[..colon]);
            if key.trim() != "Hash" {
                return None;
            }
            hash_headers.push(
                String::from_utf8_lossy(&line[colon + 1..])
                    .trim()
                    .to_string(),
            );
        }
        let mut signed_text = Vec::new();
        let mut plaintext = Vec::new();
        let mut first = true;
        loop {
            let start = rest;
            let (line, r) = get_line(rest);
            rest = r;
            if line.is_empty() && rest.is_empty() {
                return None;
            }
            if line == END_TEXT {
                rest = start;
                break;
            }
            if first {
                first = false;
            } else {
                signed_text.extend_from_slice(b"\r\n");
            }
            let line = line.strip_prefix(b"- ").unwrap_or(line);
            let keep = line
                .iter()
                .rposition(|&b| b != b' ' && b != b'\t')
                .map_or(0, |i| i + 1);
            let line = &line[..keep];
            signed_text.extend_from_slice(line);
            plaintext.extend_from_slice(line);
            plaintext.push(b'\n');
        }
        let mut i = find(rest, END)? + END.len();
        while i < rest.len() && (rest[i] == b'\r' || rest[i] == b'\n') {
            i += 1;
        }
        Some(ClearSigned {
            hash_headers,
            signed_text,
            plaintext,
            armored_signature: rest[..i].to_vec(),
        })
    }
}

/// A key that can have made a signature: a primary key or a subkey.
#[derive(Debug, Clone)]
enum SigningKey {
    Primary(PublicKey),
    Sub(PublicSubkey),
}

impl SigningKey {
    fn key_id(&self) -> KeyId {
        match self {
            SigningKey::Primary(k) => k.key_id(),
            SigningKey::Sub(k) => k.key_id(),
        }
    }

    fn verify(
        &self,
        hash: pgp::crypto::hash::HashAlgorithm,
        digest: &[u8],
        sig: &SignatureBytes,
    ) -> pgp::errors::Result<()> {
        match self {
            SigningKey::Primary(k) => k.verify_signature(hash, digest, sig),
            SigningKey::Sub(k) => k.verify_signature(hash, digest, sig),
        }
    }

    fn algorithm_name(&self) -> String {
        use pgp::crypto::public_key::PublicKeyAlgorithm as A;
        let alg = match self {
            SigningKey::Primary(k) => k.algorithm(),
            SigningKey::Sub(k) => k.algorithm(),
        };
        match alg {
            A::RSA | A::RSASign | A::RSAEncrypt => "RSA".into(),
            A::DSA => "DSA".into(),
            A::ECDSA => "ECDSA".into(),
            A::EdDSALegacy | A::Ed25519 | A::Ed448 => "EdDSA".into(),
            other => format!("{other:?}"),
        }
    }
}

/// One key of a keyring, as Go's `openpgp.Entity`: its primary key, its
/// identities and the keys that may sign.
#[derive(Debug, Clone)]
struct Entity {
    fingerprint: String,
    identities: Vec<String>,
    signers: Vec<SigningKey>,
}

/// A parsed keyring: the keys a `.prov` signature is checked against.
/// Parse it once to check many charts.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    entities: Vec<Entity>,
}

/// Whether a key's self-signature allows signing: Go skips a key whose
/// flags are given and lack "sign".
fn may_sign(sigs: &[Signature]) -> bool {
    match sigs.last() {
        Some(s) => {
            let f = s.key_flags();
            f == Default::default() || f.sign()
        }
        None => true,
    }
}

fn entity(
    primary: &PublicKey,
    details: &SignedKeyDetails,
    subkeys: impl Iterator<Item = (PublicSubkey, Vec<Signature>)>,
) -> Entity {
    let identities: Vec<String> = details
        .users
        .iter()
        .map(|u| String::from_utf8_lossy(u.id.id()).into_owned())
        .collect();
    // Go reads the primary key's flags from its primary identity's
    // self-signature.
    let primary_sigs: &[Signature] = details
        .users
        .iter()
        .find(|u| u.signatures.iter().any(|s| s.is_primary()))
        .or_else(|| details.users.first())
        .map(|u| u.signatures.as_slice())
        .unwrap_or(&[]);
    let mut signers = Vec::new();
    if may_sign(primary_sigs) {
        signers.push(SigningKey::Primary(primary.clone()));
    }
    for (k, sigs) in subkeys {
        if may_sign(&sigs) {
            signers.push(SigningKey::Sub(k));
        }
    }
    Entity {
        fingerprint: format!("{:X}", primary.fingerprint()),
        identities,
        signers,
    }
}

fn public_subkeys(
    s: &[SignedPublicSubKey],
) -> impl Iterator<Item = (PublicSubkey, Vec<Signature>)> + '_ {
    s.iter().map(|k| (k.key.clone(), k.signatures.clone()))
}

/// The packets of `data` without GnuPG's trust packets (a legacy
/// `pubring.gpg` has one after each key, user ID and signature; Go skips
/// them, rpgp's key parser stops at them), re-encoded; and the last packet
/// that failed to parse, if any.
fn without_trust_packets(data: &[u8]) -> (Vec<u8>, Option<String>) {
    use pgp::ser::Serialize as _;
    let mut out = Vec::with_capacity(data.len());
    let mut last_error = None;
    for p in PacketParser::new(data) {
        match p {
            Ok(Packet::Trust(_)) => {}
            Ok(p) => {
                if let Err(e) = p.to_writer(&mut out) {
                    last_error = Some(e.to_string());
                }
            }
            Err(e) => last_error = Some(e.to_string()),
        }
    }
    (out, last_error)
}

impl Keyring {
    /// Reads a binary keyring (concatenated transferable public or secret
    /// keys, as `gpg --export` and a legacy `pubring.gpg` hold them), as
    /// Go's `openpgp.ReadKeyRing` does: a key that does not parse or whose
    /// self-signatures do not verify is skipped; an error only when no key
    /// was read and something failed. Empty input is an empty keyring.
    pub fn parse(data: &[u8]) -> Result<Keyring, ProvenanceError> {
        if data.first().is_some_and(|b| b & 0x80 == 0) {
            // Not binary OpenPGP (an armored key, a text file): Go's packet
            // reader fails on the first byte.
            return Err(ProvenanceError::Keyring {
                message: "tag byte does not have MSB set".into(),
            });
        }
        let mut entities = Vec::new();
        let (clean, mut last_error) = without_trust_packets(data);
        let keys = match PublicOrSecret::from_bytes_many(clean.as_slice()) {
            Ok(k) => k,
            Err(e) => {
                return Err(ProvenanceError::Keyring {
                    message: e.to_string(),
                })
            }
        };
        for key in keys {
            let key = match key {
                Ok(k) => k,
                Err(e) => {
                    last_error = Some(e.to_string());
                    continue;
                }
            };
            if let Err(e) = key.verify() {
                last_error = Some(e.to_string());
                continue;
            }
            let e = match &key {
                PublicOrSecret::Public(k) => entity(
                    &k.primary_key,
                    &k.details,
                    public_subkeys(&k.public_subkeys),
                ),
                PublicOrSecret::Secret(k) => entity(
                    k.primary_key.public_key(),
                    &k.details,
                    public_subkeys(&k.public_subkeys).chain(
                        k.secret_subkeys
                            .iter()
                            .map(|s| (s.key.public_key().clone(), s.signatures.clone())),
                    ),
                ),
            };
            entities.push(e);
        }
        match (entities.is_empty(), last_error) {
            (true, Some(message)) => Err(ProvenanceError::Keyring { message }),
            _ => Ok(Keyring { entities }),
        }
    }

    /// How many keys (entities) the keyring holds.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether the keyring holds no key.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Checks a detached signature (armored) over `text`, as Go's
    /// `openpgp.CheckDetachedSignature`: the first signature packet whose
    /// issuer is in the keyring is checked with each matching key; the
    /// signer is returned.
    fn check_detached(&self, text: &[u8], armored: &[u8]) -> Result<&Entity, ProvenanceError> {
        let invalid = |message: String| ProvenanceError::InvalidSignatureData { message };
        let mut dearmor = pgp::armor::Dearmor::new(armored);
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut dearmor, &mut raw)
            .map_err(|e| invalid(format!("armor: {e}")))?;
        for packet in PacketParser::new(raw.as_slice()) {
            let sig = match packet {
                Ok(Packet::Signature(s)) => s,
                Ok(_) => return Err(invalid("non signature packet found".into())),
                Err(e) => return Err(invalid(e.to_string())),
            };
            let mut issuers: Vec<KeyId> = sig.issuer().into_iter().copied().collect();
            for fp in sig.issuer_fingerprint() {
                let b = fp.as_bytes();
                if b.len() >= 8 {
                    let mut id = [0u8; 8];
                    id.copy_from_slice(&b[b.len() - 8..]);
                    issuers.push(KeyId::from(id));
                }
            }
            if issuers.is_empty() {
                return Err(invalid("signature doesn't have an issuer".into()));
            }
            let candidates: Vec<(&Entity, &SigningKey)> = self
                .entities
                .iter()
                .flat_map(|e| e.signers.iter().map(move |k| (e, k)))
                .filter(|(_, k)| issuers.contains(&k.key_id()))
                .collect();
            if candidates.is_empty() {
                continue;
            }
            let mut last = ProvenanceError::UnknownSigner;
            for (e, k) in candidates {
                match check_one(&sig, k, text) {
                    Ok(()) => return Ok(e),
                    Err(err) => last = err,
                }
            }
            return Err(last);
        }
        Err(ProvenanceError::UnknownSigner)
    }
}

/// Go's canonical text hashing: a `\n` not preceded by `\r` becomes CRLF.
fn canonical_text(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 32);
    let mut after_cr = false;
    for &b in text {
        if !after_cr && b == b'\n' {
            out.extend_from_slice(b"\r\n");
        } else {
            out.push(b);
        }
        after_cr = !after_cr && b == b'\r';
    }
    out
}

fn check_one(sig: &Signature, key: &SigningKey, text: &[u8]) -> Result<(), ProvenanceError> {
    use pgp::packet::SignatureType;
    let unsupported = |message: String| ProvenanceError::Unsupported { message };
    let (Some(config), Some(tag), Some(bytes)) =
        (sig.config(), sig.signed_hash_value(), sig.signature())
    else {
        return Err(unsupported(format!(
            "signature version {:?}",
            sig.version()
        )));
    };
    if !matches!(
        config.version(),
        pgp::packet::SignatureVersion::V3 | pgp::packet::SignatureVersion::V4
    ) {
        return Err(unsupported(format!(
            "signature version {:?}",
            config.version()
        )));
    }
    let data = match sig.typ() {
        Some(SignatureType::Text) => canonical_text(text),
        Some(SignatureType::Binary) => text.to_vec(),
        other => return Err(unsupported(format!("signature type {other:?}"))),
    };
    let mut hasher = config
        .hash_alg
        .new_hasher()
        .map_err(|e| unsupported(format!("hash function {:?}: {e}", config.hash_alg)))?;
    let bad = |e: pgp::errors::Error| ProvenanceError::InvalidSignatureData {
        message: e.to_string(),
    };
    config
        .hash_data_to_sign(&mut hasher, data.as_slice())
        .map_err(bad)?;
    let len = config.hash_signature_data(&mut hasher).map_err(bad)?;
    hasher.update(&config.trailer(len).map_err(bad)?);
    let digest = hasher.finalize();
    if digest.len() < 2 || digest[..2] != tag {
        return Err(ProvenanceError::HashTagMismatch);
    }
    key.verify(config.hash_alg, &digest, bytes)
        .map_err(|_| ProvenanceError::BadSignature {
            algorithm: key.algorithm_name(),
        })
}

/// The signed metadata and digests of a `.prov` body.
struct MessageBlock {
    chart_name: Option<String>,
    chart_version: Option<String>,
    files: Vec<(String, serde_yaml::Value)>,
}

fn go_json_kind(v: &serde_yaml::Value) -> &'static str {
    use serde_yaml::Value as V;
    match v {
        V::Null => "null",
        V::Bool(_) => "bool",
        V::Number(_) => "number",
        V::String(_) => "string",
        V::Sequence(_) => "array",
        V::Mapping(_) | V::Tagged(_) => "object",
    }
}

fn yaml_key(k: &serde_yaml::Value) -> Option<String> {
    use serde_yaml::Value as V;
    match k {
        V::String(s) => Some(s.clone()),
        V::Number(n) => Some(n.to_string()),
        V::Bool(b) => Some(b.to_string()),
        V::Null => Some("null".into()),
        _ => None,
    }
}

fn yaml_doc(part: &[u8]) -> Result<serde_yaml::Value, ProvenanceError> {
    if part.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(serde_yaml::Value::Null);
    }
    serde_yaml::from_slice(part).map_err(|e| ProvenanceError::MessageYaml {
        message: format!("error converting YAML to JSON: yaml: {e}"),
    })
}

/// Helm 3's `parseMessageBlock`: split at `\n...\n`, the metadata must be
/// an object (or empty), the digests an object with a `files` map.
fn parse_message_block(plaintext: &[u8]) -> Result<MessageBlock, ProvenanceError> {
    let sep: &[u8] = b"\n...\n";
    let i = find(plaintext, sep).ok_or(ProvenanceError::MessageBlock)?;
    let meta = &plaintext[..i];
    let after = &plaintext[i + sep.len()..];
    let sums = match find(after, sep) {
        Some(j) => &after[..j],
        None => after,
    };
    let unmarshal = |kind: &str, target: &str| {
        ProvenanceError::MessageYaml {
        message: format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {kind} into Go value of type {target}"
        ),
    }
    };
    let meta = yaml_doc(meta)?;
    let (mut chart_name, mut chart_version) = (None, None);
    match &meta {
        serde_yaml::Value::Null => {}
        serde_yaml::Value::Mapping(m) => {
            let text = |k: &str| match m.get(k) {
                Some(serde_yaml::Value::String(s)) => Some(s.clone()),
                _ => None,
            };
            chart_name = text("name");
            chart_version = text("version");
        }
        other => return Err(unmarshal(go_json_kind(other), "chart.Metadata")),
    }
    let sums = yaml_doc(sums)?;
    let mut files = Vec::new();
    match &sums {
        serde_yaml::Value::Null => {}
        serde_yaml::Value::Mapping(m) => match m.get("files") {
            None | Some(serde_yaml::Value::Null) => {}
            Some(serde_yaml::Value::Mapping(f)) => {
                for (k, v) in f {
                    if let Some(k) = yaml_key(k) {
                        files.push((k, v.clone()));
                    }
                }
            }
            Some(other) => {
                return Err(ProvenanceError::MessageYaml {
                    message: format!(
                        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SumCollection.files of type map[string]string",
                        go_json_kind(other)
                    ),
                })
            }
        },
        other => return Err(unmarshal(go_json_kind(other), "provenance.SumCollection")),
    }
    Ok(MessageBlock {
        chart_name,
        chart_version,
        files,
    })
}

/// `sha256:<hex>` of `data`.
pub fn digest(data: &[u8]) -> String {
    let sum = Sha256::digest(data);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in sum {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Verifies a chart archive against its `.prov` data with a parsed
/// keyring, as Helm's `Signatory.Verify`: the signature first, then the
/// archive's sha256 against the signed entry for `archive_name` (the
/// archive's file name, e.g. `alpine-0.1.0.tgz`).
pub fn verify_with(
    archive: &[u8],
    archive_name: &str,
    prov: &[u8],
    keyring: &Keyring,
) -> Result<Verification, ProvenanceError> {
    let block = ClearSigned::parse(prov).ok_or(ProvenanceError::NoSignatureBlock)?;
    let signer = keyring.check_detached(&block.signed_text, &block.armored_signature)?;
    let actual = digest(archive);
    let message = parse_message_block(&block.plaintext)?;
    let signed = match message.files.iter().find(|(k, _)| k == archive_name) {
        None => {
            return Err(ProvenanceError::NoDigest {
                name: archive_name.to_string(),
            })
        }
        Some((_, serde_yaml::Value::String(s))) => s.clone(),
        Some((_, other)) => {
            return Err(ProvenanceError::MessageYaml {
                message: format!(
                    "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SumCollection.files of type string",
                    go_json_kind(other)
                ),
            })
        }
    };
    if signed != actual {
        return Err(ProvenanceError::DigestMismatch {
            name: archive_name.to_string(),
            signed,
            actual,
        });
    }
    Ok(Verification {
        signed_by: signer.identities.clone(),
        fingerprint: signer.fingerprint.clone(),
        file_hash: actual,
        file_name: archive_name.to_string(),
        chart_name: message.chart_name,
        chart_version: message.chart_version,
    })
}

/// [`verify_with`] on the bytes of a keyring file (see [`Keyring::parse`]).
/// This is what `--verify` on pull and install calls with the downloaded
/// archive and `.prov`.
pub fn verify(
    archive: &[u8],
    archive_name: &str,
    prov: &[u8],
    keyring: &[u8],
) -> Result<Verification, ProvenanceError> {
    let ring = Keyring::parse(keyring)?;
    verify_with(archive, archive_name, prov, &ring)
}

/// Reads a keyring file (Helm's `--keyring`), with Helm's messages.
pub fn load_keyring(path: &Path) -> Result<Keyring, ProvenanceError> {
    let data = std::fs::read(path).map_err(|e| ProvenanceError::KeyringFile {
        path: path.display().to_string(),
        message: crate::chart::loader::io_message(&e),
    })?;
    Keyring::parse(&data)
}

/// `helm verify PATH --keyring KEYRING`: checks that `chart` is a `.tgz`
/// file with a `.prov` file beside it (`PATH.prov`), then verifies it.
pub fn verify_chart(chart: &Path, keyring: &Path) -> Result<Verification, ProvenanceError> {
    let shown = chart.display().to_string();
    let meta = std::fs::metadata(chart).map_err(|e| ProvenanceError::ChartStat {
        path: shown.clone(),
        message: crate::chart::loader::io_message(&e),
    })?;
    if meta.is_dir() {
        return Err(ProvenanceError::Unpacked { path: shown });
    }
    let is_tgz = chart
        .extension()
        .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case("tgz"));
    if !is_tgz {
        return Err(ProvenanceError::NotTgz { path: shown });
    }
    let mut prov_path = chart.as_os_str().to_owned();
    prov_path.push(".prov");
    let prov_path = PathBuf::from(prov_path);
    let prov_err = |op: &'static str, e: std::io::Error| ProvenanceError::ProvenanceFile {
        path: prov_path.display().to_string(),
        op,
        message: crate::chart::loader::io_message(&e),
    };
    let prov_meta = std::fs::metadata(&prov_path).map_err(|e| prov_err("stat", e))?;
    let ring = load_keyring(keyring)?;
    if prov_meta.is_dir() {
        return Err(ProvenanceError::ProvenanceIsDirectory {
            path: prov_path.display().to_string(),
        });
    }
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| ProvenanceError::Read {
            path: p.display().to_string(),
            message: crate::chart::loader::io_message(&e),
        })
    };
    let archive = read(chart)?;
    let prov = read(&prov_path)?;
    let name = chart
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    verify_with(&archive, &name, &prov, &ring)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNED: &str = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nname: a\n- -dash\ntrail  \t\n\n...\nfiles:\n  a.tgz: sha256:00\n-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n\ntail";

    #[test]
    fn clearsign_splits_like_go() {
        let b = ClearSigned::parse(SIGNED.as_bytes()).unwrap();
        assert_eq!(b.hash_headers, vec!["SHA512".to_string()]);
        assert_eq!(
            String::from_utf8(b.signed_text).unwrap(),
            "name: a\r\n-dash\r\ntrail\r\n\r\n...\r\nfiles:\r\n  a.tgz: sha256:00"
        );
        assert_eq!(
            String::from_utf8(b.plaintext).unwrap(),
            "name: a\n-dash\ntrail\n\n...\nfiles:\n  a.tgz: sha256:00\n"
        );
        assert_eq!(
            String::from_utf8(b.armored_signature).unwrap(),
            "-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n\n"
        );
    }

    #[test]
    fn clearsign_after_leading_text_and_crlf() {
        let crlf = format!("junk\n{}", SIGNED.replace('\n', "\r\n"));
        let b = ClearSigned::parse(crlf.as_bytes()).unwrap();
        assert!(b.signed_text.starts_with(b"name: a\r\n-dash\r\ntrail\r\n"));
        assert!(b.plaintext.starts_with(b"name: a\n"));
    }

    #[test]
    fn clearsign_rejects_what_go_rejects() {
        for bad in [
            SIGNED.replace("Hash: SHA512", "Comment: x"),
            SIGNED.replace("Hash: SHA512", "Hash SHA512"),
            SIGNED.replace("-----END PGP SIGNATURE-----", "-----END-----"),
            SIGNED.replace("-----BEGIN PGP SIGNATURE-----", "-----BEGIN PGP SIG-----"),
            SIGNED.replace("MESSAGE-----\n", "MESSAGE----- x\n"),
            "no signature here".to_string(),
            String::new(),
        ] {
            assert!(ClearSigned::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn message_block_needs_two_parts() {
        assert!(matches!(
            parse_message_block(b"name: a\nfiles: {}\n"),
            Err(ProvenanceError::MessageBlock)
        ));
        let m =
            parse_message_block(b"name: a\nversion: 1.2.3\n\n...\nfiles:\n  a.tgz: sha256:00\n")
                .unwrap();
        assert_eq!(m.chart_name.as_deref(), Some("a"));
        assert_eq!(m.chart_version.as_deref(), Some("1.2.3"));
        assert_eq!(m.files.len(), 1);
        assert!(parse_message_block(b"- a\n...\nfiles: {}\n").is_err());
        assert!(parse_message_block(b"name: a\n...\nfiles: [1]\n").is_err());
    }

    #[test]
    fn canonical_text_is_gos() {
        assert_eq!(canonical_text(b"a\nb\r\nc\rd"), b"a\r\nb\r\nc\rd".to_vec());
    }

    #[test]
    fn default_keyring_is_helms() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            default_keyring_from(env(&[("HOME", "/h")])),
            PathBuf::from("/h/.gnupg/pubring.gpg")
        );
        assert_eq!(
            default_keyring_from(env(&[("HOME", "/h"), ("GNUPGHOME", "/g")])),
            PathBuf::from("/g/pubring.gpg")
        );
    }

    #[test]
    fn messages_are_helms() {
        let e = ProvenanceError::DigestMismatch {
            name: "a.tgz".into(),
            signed: "sha256:00".into(),
            actual: "sha256:11".into(),
        };
        assert_eq!(
            e.to_string(),
            "sha256 sum does not match for a.tgz: \"sha256:00\" != \"sha256:11\""
        );
        let e = ProvenanceError::NoDigest {
            name: "a\"b.tgz".into(),
        };
        assert_eq!(
            e.to_string(),
            "provenance does not contain a SHA for a file named \"a\\\"b.tgz\""
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let ring = Keyring::parse(&[]).unwrap();
        assert!(ring.is_empty());
        assert!(matches!(
            verify(b"x", "a.tgz", b"nothing", &[]),
            Err(ProvenanceError::NoSignatureBlock)
        ));
        assert!(matches!(
            verify(b"x", "a.tgz", SIGNED.as_bytes(), &[]),
            Err(ProvenanceError::InvalidSignatureData { .. } | ProvenanceError::UnknownSigner)
        ));
        let _ = Keyring::parse(b"\x99\x00\x01garbage");
        let _ = Keyring::parse(SIGNED.as_bytes());
    }

    /// An Ed25519 key (fast to make), its public keyring and a `.prov`
    /// for `archive` named `a.tgz`, clear-signed by rpgp.
    fn signed_fixture(archive: &[u8]) -> (Vec<u8>, String) {
        use pgp::composed::{
            CleartextSignedMessage, KeyType, SecretKeyParamsBuilder, SignedPublicKey,
        };
        use pgp::ser::Serialize as _;
        use pgp::types::Password;
        use std::sync::OnceLock;
        static KEY: OnceLock<pgp::composed::SignedSecretKey> = OnceLock::new();
        let key = KEY.get_or_init(|| {
            let mut rng = rand::thread_rng();
            SecretKeyParamsBuilder::default()
                .key_type(KeyType::Ed25519Legacy)
                .can_certify(true)
                .can_sign(true)
                .primary_user_id("Unit Test <unit@example.com>".into())
                .build()
                .unwrap()
                .generate(&mut rng)
                .unwrap()
                .sign(&mut rng, &Password::empty())
                .unwrap()
        });
        let ring = SignedPublicKey::from(key.clone()).to_bytes().unwrap();
        let body = format!(
            "name: a\nversion: 1.0.0\n\n...\nfiles:\n  a.tgz: {}\n",
            digest(archive)
        );
        let msg = CleartextSignedMessage::sign(
            rand::thread_rng(),
            &body,
            &key.primary_key,
            &Password::empty(),
        )
        .unwrap();
        (ring, msg.to_armored_string(Default::default()).unwrap())
    }

    #[test]
    fn verifies_and_refuses_rpgp_signed() {
        let (ring, prov) = signed_fixture(b"archive");
        let v = verify(b"archive", "a.tgz", prov.as_bytes(), &ring).unwrap();
        assert_eq!(
            v.signed_by,
            vec!["Unit Test <unit@example.com>".to_string()]
        );
        assert_eq!(v.chart_name.as_deref(), Some("a"));
        assert_eq!(v.file_hash, digest(b"archive"));
        assert!(matches!(
            verify(b"archivE", "a.tgz", prov.as_bytes(), &ring),
            Err(ProvenanceError::DigestMismatch { .. })
        ));
        assert!(matches!(
            verify(b"archive", "b.tgz", prov.as_bytes(), &ring),
            Err(ProvenanceError::NoDigest { .. })
        ));
        let changed = prov.replace("version: 1.0.0", "version: 1.0.1");
        assert!(matches!(
            verify(b"archive", "a.tgz", changed.as_bytes(), &ring),
            Err(ProvenanceError::HashTagMismatch | ProvenanceError::BadSignature { .. })
        ));
        // Trailing blanks and CRLF line ends are not part of what is signed.
        let crlf = prov
            .replace("version: 1.0.0\n", "version: 1.0.0  \n")
            .replace('\n', "\r\n");
        assert!(verify(b"archive", "a.tgz", crlf.as_bytes(), &ring).is_ok());
        assert!(matches!(
            verify(b"archive", "a.tgz", prov.as_bytes(), &[]),
            Err(ProvenanceError::UnknownSigner)
        ));
    }

    proptest::proptest! {
        #[test]
        fn verify_never_panics_on_a_damaged_prov(at in 0usize..2000, byte in proptest::prelude::any::<u8>(), cut in proptest::prelude::any::<bool>()) {
            let (ring, prov) = signed_fixture(b"archive");
            let mut data = prov.into_bytes();
            let i = at % data.len();
            if cut { data.truncate(i); } else { data[i] = byte; }
            let _ = verify(b"archive", "a.tgz", &data, &ring);
            let mut bad_ring = ring.clone();
            let j = at % bad_ring.len();
            bad_ring[j] = byte;
            let _ = verify(b"archive", "a.tgz", &data, &bad_ring);
        }

        #[test]
        fn clearsign_parser_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = ClearSigned::parse(&data);
        }

        #[test]
        fn clearsign_parser_never_panics_near_valid(prefix in "[ -~\n\r]{0,40}", body in "[ -~\n\r\t-]{0,200}", tail in "[A-Za-z0-9+/=\n-]{0,120}") {
            let doc = format!("{prefix}\n-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n{body}\n-----BEGIN PGP SIGNATURE-----\n{tail}\n-----END PGP SIGNATURE-----\n");
            let _ = ClearSigned::parse(doc.as_bytes());
            let _ = verify(b"", "a.tgz", doc.as_bytes(), &[]);
        }

        #[test]
        fn keyring_parser_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = Keyring::parse(&data);
        }
    }
}
