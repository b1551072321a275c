//! Helm's storage encoding: keys, bodies, labels and the Kubernetes objects
//! its Secrets and ConfigMaps drivers write.
//!
//! A body is `base64(gzip(json(release)))` with the standard alphabet and
//! padding; gzip at best compression with Go's header (no name, mtime 0,
//! OS 255). On read the gzip magic `1f 8b 08` is recognised and anything
//! else is taken as raw JSON, as Helm's `decodeRelease` does for records from
//! before compression. Decoding never panics, whatever the input.
use super::model::Release;
use base64::Engine;
use flate2::Compression;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write as _};

/// The record type Helm writes (`type` of the Secret, `type` column of SQL).
pub const RELEASE_TYPE: &str = "helm.sh/release.v1";
/// The owner label value.
pub const OWNER: &str = "helm";
/// The largest object Kubernetes stores (etcd's default request limit, 1 MiB).
pub const MAX_OBJECT_BYTES: usize = 1024 * 1024;
/// Labels Helm manages itself; user labels may not use these names.
pub const SYSTEM_LABELS: [&str; 6] = [
    "name",
    "owner",
    "status",
    "version",
    "createdAt",
    "modifiedAt",
];
/// Decompressed bodies larger than this are refused (a guard against gzip bombs).
const MAX_JSON_BYTES: u64 = 256 * 1024 * 1024;

/// Why a record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The body is not valid base64.
    #[error("release body is not valid base64: {0}")]
    Base64(base64::DecodeError),
    /// The body has the gzip magic but does not decompress.
    #[error("release body is not valid gzip: {0}")]
    Gzip(std::io::Error),
    /// The decompressed body is larger than rudder accepts.
    #[error("release body decompresses to more than {MAX_JSON_BYTES} bytes")]
    TooLarge,
    /// The JSON does not describe a release.
    #[error("release body is not a Helm release: {0}")]
    Json(serde_json::Error),
    /// An encoded object is over the Kubernetes object size limit.
    #[error(
        "release {name} revision {version}: the encoded {kind} is {size} bytes, over the {limit} byte \
         Kubernetes object limit (the chart, values or manifest is too large to store in a {kind})"
    )]
    ObjectTooLarge {
        /// The release name.
        name: String,
        /// The revision.
        version: u64,
        /// `Secret` or `ConfigMap`.
        kind: &'static str,
        /// The object's size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A user label uses a name Helm reserves.
    #[error("user supplied labels contains system reserved label name. System labels: [name owner status version createdAt modifiedAt]")]
    ReservedLabel,
}

// The causes' texts end the messages, so they are not `source()`s (which
// `#[from]` would make them); `?` still converts.
impl From<base64::DecodeError> for CodecError {
    fn from(e: base64::DecodeError) -> Self {
        CodecError::Base64(e)
    }
}

impl From<serde_json::Error> for CodecError {
    fn from(e: serde_json::Error) -> Self {
        CodecError::Json(e)
    }
}

/// The storage key of a revision: `sh.helm.release.v1.<name>.v<version>`.
pub fn key(name: &str, version: u64) -> String {
    format!("{}{version}", key_prefix(name))
}

/// What every storage key of release `name` starts with (`sh.helm.release.v1.NAME.v`).
pub fn key_prefix(name: &str) -> String {
    format!("sh.helm.release.v1.{name}.v")
}

/// Splits a storage key back into (name, version).
pub fn parse_key(key: &str) -> Option<(&str, u64)> {
    let rest = key.strip_prefix("sh.helm.release.v1.")?;
    let (name, v) = rest.rsplit_once(".v")?;
    if name.is_empty() || v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((name, v.parse().ok()?))
}

/// Encodes a release as Helm does: JSON, gzip (best compression), base64.
pub fn encode(rel: &Release) -> Result<String, CodecError> {
    let json = crate::gostd::json::marshal(rel)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(gzip(json.as_bytes())))
}

/// gzip with Go's `compress/gzip` header at best compression.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::GzBuilder::new()
        .operating_system(255)
        .mtime(0)
        .write(Vec::new(), Compression::best());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

/// Decodes a body written by Helm (or rudder): base64, then gunzip when the
/// gzip magic is present, then JSON.
pub fn decode(body: &str) -> Result<Release, CodecError> {
    let raw = base64::engine::general_purpose::STANDARD.decode(body.trim().as_bytes())?;
    decode_bytes(&raw)
}

/// Decodes the bytes under the base64 layer (gzip or raw JSON).
pub fn decode_bytes(raw: &[u8]) -> Result<Release, CodecError> {
    let json = if raw.len() > 3 && raw[..3] == [0x1f, 0x8b, 0x08] {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw)
            .take(MAX_JSON_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(CodecError::Gzip)?;
        if out.len() as u64 > MAX_JSON_BYTES {
            return Err(CodecError::TooLarge);
        }
        out
    } else {
        raw.to_vec()
    };
    // Values as deep as Helm reads (10,000 levels), not serde_json's 128.
    Ok(crate::yaml::json_from_slice(&json)?)
}

/// Rejects user labels that use Helm's system label names.
pub fn check_user_labels(labels: &BTreeMap<String, String>) -> Result<(), CodecError> {
    if labels.keys().any(|k| SYSTEM_LABELS.contains(&k.as_str())) {
        return Err(CodecError::ReservedLabel);
    }
    Ok(())
}

/// Drops Helm's system labels, leaving the user's.
pub fn user_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| !SYSTEM_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Which write produced the labels: Helm stamps `createdAt` on create and
/// `modifiedAt` on update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A new record (`createdAt=<unix seconds>`).
    Create,
    /// A rewrite of an existing record (`modifiedAt=<unix seconds>`).
    Update,
}

/// The labels Helm's Kubernetes drivers put on a record object: the
/// release's own labels, then `createdAt`/`modifiedAt` *under* them (a label
/// carried on the release wins, as in Helm), then the system labels on top.
pub fn storage_labels(rel: &Release, write: Write, now_unix: i64) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    match write {
        Write::Create => out.insert("createdAt".to_string(), now_unix.to_string()),
        Write::Update => out.insert("modifiedAt".to_string(), now_unix.to_string()),
    };
    for (k, v) in &rel.labels {
        out.insert(k.clone(), v.clone());
    }
    out.insert("name".into(), rel.name.clone());
    out.insert("owner".into(), OWNER.into());
    out.insert("status".into(), rel.info.status.as_str().into());
    out.insert("version".into(), rel.version.to_string());
    out
}

/// Object metadata of a record object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectMeta {
    /// The storage key.
    pub name: String,
    /// The release namespace.
    pub namespace: String,
    /// Storage labels.
    pub labels: BTreeMap<String, String>,
}

/// A Kubernetes Secret as Helm's Secrets driver writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretObject {
    /// `v1`.
    pub api_version: String,
    /// `Secret`.
    pub kind: String,
    /// Name, namespace, labels.
    pub metadata: ObjectMeta,
    /// `helm.sh/release.v1`.
    #[serde(rename = "type")]
    pub secret_type: String,
    /// `release`: base64 of the encoded body (the body is itself base64,
    /// so the value is base64 twice over the JSON API).
    pub data: BTreeMap<String, String>,
}

/// A Kubernetes ConfigMap as Helm's ConfigMaps driver writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapObject {
    /// `v1`.
    pub api_version: String,
    /// `ConfigMap`.
    pub kind: String,
    /// Name, namespace, labels.
    pub metadata: ObjectMeta,
    /// `release`: the encoded body.
    pub data: BTreeMap<String, String>,
}

fn size_check(rel: &Release, kind: &'static str, size: usize) -> Result<(), CodecError> {
    if size > MAX_OBJECT_BYTES {
        return Err(CodecError::ObjectTooLarge {
            name: rel.name.clone(),
            version: rel.version,
            kind,
            size,
            limit: MAX_OBJECT_BYTES,
        });
    }
    Ok(())
}

/// The Secret Helm's Secrets driver writes for this revision.
pub fn to_secret(rel: &Release, write: Write, now_unix: i64) -> Result<SecretObject, CodecError> {
    let body = encode(rel)?;
    let data = base64::engine::general_purpose::STANDARD.encode(body.as_bytes());
    let obj = SecretObject {
        api_version: "v1".into(),
        kind: "Secret".into(),
        metadata: ObjectMeta {
            name: key(&rel.name, rel.version),
            namespace: rel.namespace.clone(),
            labels: storage_labels(rel, write, now_unix),
        },
        secret_type: RELEASE_TYPE.into(),
        data: BTreeMap::from([("release".to_string(), data)]),
    };
    // The API server limits the stored object; the body dominates it.
    size_check(rel, "Secret", serde_json::to_vec(&obj)?.len())?;
    Ok(obj)
}

/// The ConfigMap Helm's ConfigMaps driver writes for this revision.
pub fn to_configmap(
    rel: &Release,
    write: Write,
    now_unix: i64,
) -> Result<ConfigMapObject, CodecError> {
    let obj = ConfigMapObject {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        metadata: ObjectMeta {
            name: key(&rel.name, rel.version),
            namespace: rel.namespace.clone(),
            labels: storage_labels(rel, write, now_unix),
        },
        data: BTreeMap::from([("release".to_string(), encode(rel)?)]),
    };
    size_check(rel, "ConfigMap", serde_json::to_vec(&obj)?.len())?;
    Ok(obj)
}

/// Reads a release back from a Secret (labels from the object, system labels kept).
pub fn from_secret(obj: &SecretObject) -> Result<Release, CodecError> {
    let data = obj.data.get("release").map(String::as_str).unwrap_or("");
    let body = base64::engine::general_purpose::STANDARD.decode(data.as_bytes())?;
    let body = String::from_utf8_lossy(&body);
    let mut rel = decode(&body)?;
    rel.labels = obj.metadata.labels.clone();
    Ok(rel)
}

/// Reads a release back from a ConfigMap.
pub fn from_configmap(obj: &ConfigMapObject) -> Result<Release, CodecError> {
    let data = obj.data.get("release").map(String::as_str).unwrap_or("");
    let mut rel = decode(data)?;
    rel.labels = obj.metadata.labels.clone();
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::model::Status;

    #[test]
    fn helm_record_of_a_chart_without_templates() {
        // Written by helm v3.17.2 for a chart with only Chart.yaml.
        let json = r#"{"name":"empty","info":{"first_deployed":"2026-11-30T00:43:41.283240785Z","last_deployed":"2026-11-30T00:43:41.283240785Z","deleted":"","description":"Install complete","status":"deployed"},"chart":{"metadata":{"name":"empty","version":"0.1.0","apiVersion":"v2"},"lock":null,"templates":null,"values":null,"schema":null,"files":null},"version":1,"namespace":"default"}"#;
        let r = decode_bytes(json.as_bytes()).unwrap();
        assert_eq!(r.chart_label(), "empty-0.1.0");
        assert_eq!(crate::gostd::json::marshal(&r).unwrap(), json);
    }

    #[test]
    fn keys() {
        assert_eq!(key("my.rel", 12), "sh.helm.release.v1.my.rel.v12");
        assert_eq!(
            parse_key("sh.helm.release.v1.my.rel.v12"),
            Some(("my.rel", 12))
        );
        assert_eq!(parse_key("sh.helm.release.v1.x.vv"), None);
    }

    #[test]
    fn gzip_header_is_gos() {
        let r = Release {
            name: "a".into(),
            version: 1,
            ..Release::default()
        };
        let body = encode(&r).unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        assert_eq!(&raw[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
        assert_eq!(decode(&encode(&r).unwrap()).unwrap(), r);
    }

    #[test]
    fn raw_json_bodies_are_read() {
        let json = r#"{"name":"x","info":{"status":"failed"},"version":3}"#;
        let body = base64::engine::general_purpose::STANDARD.encode(json);
        let r = decode(&body).unwrap();
        assert_eq!(
            (r.name.as_str(), r.version, r.info.status),
            ("x", 3, Status::Failed)
        );
    }

    #[test]
    fn labels_as_helm_writes_them() {
        let mut r = Release {
            name: "a".into(),
            version: 2,
            ..Release::default()
        };
        r.labels.insert("modifiedAt".into(), "5".into());
        r.labels.insert("team".into(), "x".into());
        let l = storage_labels(&r, Write::Create, 9);
        assert_eq!(l["createdAt"], "9");
        assert_eq!(l["modifiedAt"], "5");
        assert_eq!(l["owner"], "helm");
        assert_eq!(l["status"], "unknown");
        assert_eq!(l["team"], "x");
        let s = to_secret(&r, Write::Update, 10).unwrap();
        assert_eq!(s.metadata.name, "sh.helm.release.v1.a.v2");
        assert_eq!(from_secret(&s).unwrap().name, "a");
        let c = to_configmap(&r, Write::Update, 10).unwrap();
        assert_eq!(from_configmap(&c).unwrap().version, 2);
    }

    #[test]
    fn oversized_objects_are_refused() {
        let mut r = Release {
            name: "big".into(),
            version: 1,
            ..Release::default()
        };
        // Incompressible: a pseudo-random manifest.
        let mut x: u64 = 1;
        r.manifest = (0..1_200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'!' + (x % 90) as u8)
            })
            .collect();
        let e = to_configmap(&r, Write::Create, 0).unwrap_err();
        assert!(
            e.to_string()
                .contains("over the 1048576 byte Kubernetes object limit"),
            "{e}"
        );
    }
}
