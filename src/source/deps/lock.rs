//! `Chart.lock` (`requirements.lock` for apiVersion v1): its digest and its
//! text, as Helm computes and writes them (`internal/resolver.HashReq`,
//! `downloader.writeLock`).
use crate::chart::model::{Dependency, Lock};

/// Why a digest could not be computed (a value Go's JSON cannot write).
#[derive(Debug, thiserror::Error)]
#[error("computing the dependencies' digest: {0}")]
pub struct DigestError(#[from] serde_json::Error);

/// `sha256:` and the hex SHA-256 of `bytes` (Helm's `provenance.Digest`).
fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    let sum = sha2::Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in sum {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Helm's `HashReq`: the SHA-256 of Go's
/// `json.Marshal([2][]*Dependency{req, lock})`, as `sha256:<hex>`.
/// `req` are the dependencies of Chart.yaml (with `@alias` repositories
/// already replaced by their URLs), `lock` the locked ones.
///
/// ```
/// use rudder::chart::Dependency;
/// let req = vec![Dependency { name: "child".into(), version: "^0.1.0".into(),
///     repository: "file://../child".into(), ..Default::default() }];
/// let lock = vec![Dependency { name: "child".into(), version: "0.1.0".into(),
///     repository: "file://../child".into(), ..Default::default() }];
/// let d = rudder::source::deps::hash_req(&req, &lock)?;
/// assert!(d.starts_with("sha256:") && d.len() == 71);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hash_req(req: &[Dependency], lock: &[Dependency]) -> Result<String, DigestError> {
    let text = crate::gostd::json::marshal(&(req, lock))?;
    Ok(sha256_digest(text.as_bytes()))
}

/// Helm's `HashV2Req`: the digest Helm 2 wrote into `requirements.lock`,
/// the SHA-256 of `{"dependencies": req}`, which Helm 3 still accepts for
/// an apiVersion v1 chart.
pub fn hash_v2_req(req: &[Dependency]) -> Result<String, DigestError> {
    #[derive(serde::Serialize)]
    struct V2<'a> {
        dependencies: &'a [Dependency],
    }
    let text = crate::gostd::json::marshal(&V2 { dependencies: req })?;
    Ok(sha256_digest(text.as_bytes()))
}

/// The current time as Go's `encoding/json` writes `time.Now()` (RFC 3339
/// with nanoseconds, trailing zeros cut, in the local zone): a new lock's
/// `generated`.
pub fn generated_now() -> String {
    crate::gostd::time::GoTime::now().rfc3339_nano()
}

/// The lock file's text as Helm writes it (`yaml.Marshal(lock)`: keys
/// sorted, `generated` quoted).
pub fn lock_text(lock: &Lock) -> String {
    crate::chart::metadata::lock_to_yaml(lock)
}

/// The lock file's name: `Chart.lock`, or `requirements.lock` for an
/// apiVersion v1 chart.
pub fn lock_file_name(api_version: &str) -> &'static str {
    if api_version == "v1" {
        "requirements.lock"
    } else {
        "Chart.lock"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Node;

    fn dep(name: &str, version: &str, repository: &str) -> Dependency {
        Dependency {
            name: name.into(),
            version: version.into(),
            repository: repository.into(),
            ..Default::default()
        }
    }

    /// Digests computed by helm v3.17.2 (`helm dependency update`) on the
    /// same Chart.yaml; see tests/dependency.rs for the live comparison.
    #[test]
    fn digest_matches_helm() {
        // Chart.yaml: child (">=0.1.0 <1", file://../child, condition
        // child.enabled, tags [a, b], import-values [{child: x, parent: y},
        // data]) and local (1.x, "", alias loc): helm 3.17.2 and 4.1.4
        // both wrote this digest into Chart.lock.
        let mut child = dep("child", ">=0.1.0 <1", "file://../child");
        child.condition = "child.enabled".into();
        child.tags = vec!["a".into(), "b".into()];
        child.import_values = vec![
            Node::Map(
                [
                    ("child".to_string(), Node::Str("x".into())),
                    // YAML 1.1: a bare `y` is true.
                    ("parent".to_string(), Node::Bool(true)),
                ]
                .into_iter()
                .collect(),
            ),
            Node::Str("data".into()),
        ];
        let mut local = dep("local", "1.x", "");
        local.alias = "loc".into();
        let req = vec![child, local];
        let locked = vec![
            dep("child", "0.1.2", "file://../child"),
            dep("local", "1.x", ""),
        ];
        assert_eq!(
            hash_req(&req, &locked).unwrap(),
            "sha256:70a0f005471e63a48de2c1949fc1a3047f918542f1e44a1607e3084c61a9fbad"
        );
    }

    /// apiVersion v1 (requirements.yaml): child (">0.2", file://../child,
    /// import-values [{child: x, parent: y}]) locked at 0.3.0; helm 3.17.2
    /// wrote this digest into requirements.lock.
    #[test]
    fn v1_digest_matches_helm() {
        let mut child = dep("child", ">0.2", "file://../child");
        child.import_values = vec![Node::Map(
            [
                ("child".to_string(), Node::Str("x".into())),
                ("parent".to_string(), Node::Bool(true)),
            ]
            .into_iter()
            .collect(),
        )];
        assert_eq!(
            hash_req(&[child], &[dep("child", "0.3.0", "file://../child")]).unwrap(),
            "sha256:500bf7526213e953d1f9b00a5c2ded2d398b71f25db91a8579822124023e8cb7"
        );
    }

    #[test]
    fn json_is_gos() {
        let req = [dep("a", ">=1.0.0 <2", "https://x/?a&b")];
        let text = crate::gostd::json::marshal(&(&req[..], &req[..0])).unwrap();
        assert_eq!(
            text,
            r#"[[{"name":"a","version":"\u003e=1.0.0 \u003c2","repository":"https://x/?a\u0026b"}],[]]"#
        );
    }

    #[test]
    fn lock_text_is_helms() {
        let lock = Lock {
            generated: "2026-12-06T02:26:47.41954906Z".into(),
            digest: "sha256:70a0".into(),
            dependencies: vec![
                dep("child", "0.1.2", "file://../child"),
                dep("local", "1.x", ""),
            ],
        };
        assert_eq!(
            lock_text(&lock),
            "dependencies:\n- name: child\n  repository: file://../child\n  version: 0.1.2\n\
             - name: local\n  repository: \"\"\n  version: 1.x\ndigest: sha256:70a0\n\
             generated: \"2026-12-06T02:26:47.41954906Z\"\n"
        );
    }
}
