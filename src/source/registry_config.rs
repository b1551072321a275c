//! Helm's registry credentials: `config.json` in Docker's format, the file
//! `helm registry login` writes (`$HELM_REGISTRY_CONFIG`, by default
//! `~/.config/helm/registry/config.json`).
//!
//! ```json
//! {
//!     "auths": {
//!         "localhost:5000": {
//!             "auth": "dXNlcjpwYXNz"
//!         }
//!     }
//! }
//! ```
//!
//! (indented with tabs in the file, as Go's `json.MarshalIndent` does).
//!
//! `auth` is base64 of `user:password`. Helm 3.17 (oras-go v1, through
//! Docker's `configfile`) and Helm 4 (oras-go v2's file store) both write
//! this shape, tab-indented, and both read an entry under the bare
//! `host:port` or under a URL of that host (`https://host/v1/`), as
//! Docker's `ConvertToHostname` does. rudder reads and writes the same
//! file, so a login made by either tool serves the other. The file is
//! replaced atomically with mode 0600; keys rudder does not know are kept.
//!
//! A `credsStore` or a `credHelpers` entry for the host sends the
//! credential to an external Docker credential helper
//! (`docker-credential-NAME get|store|erase`, its JSON on stdin and
//! stdout), as Helm does: the file then holds no secret for that host.
use crate::fsutil::{atomic_write, Mode, WriteError};
use base64::Engine as _;
use serde_json::{Map, Value};
use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A registry login: what `helm registry login -u USER -p PASS` stores.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Credential {
    /// The user name (empty for an identity token).
    pub username: String,
    /// The password, or the identity token when `username` is empty.
    pub password: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret, not even in a debug trace.
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// What went wrong with the credentials file or a credential helper.
#[derive(Debug, thiserror::Error)]
pub enum RegistryConfigError {
    /// The file exists but cannot be read.
    #[error("reading registry config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON of Docker's shape.
    #[error("registry config {path} is not valid: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An `auth` entry that is not base64 of `user:password`.
    #[error("registry config {path}: the credential for {host} is not valid: {reason}")]
    BadAuth {
        /// The file.
        path: PathBuf,
        /// The registry host.
        host: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The file could not be written.
    #[error("writing registry config: {0}")]
    Write(#[from] WriteError),
    /// The directory of the file could not be created.
    #[error("creating directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A Docker credential helper failed.
    #[error("credential helper docker-credential-{helper} {action} for {host}: {message}")]
    Helper {
        /// The helper's name (`credsStore` or `credHelpers` value).
        helper: String,
        /// `get`, `store` or `erase`.
        action: &'static str,
        /// The registry host.
        host: String,
        /// What the helper said, or why it could not run.
        message: String,
    },
}

/// Helm's registry `config.json`, loaded: Docker's document, kept whole so
/// that writing it back loses nothing another tool put there.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryConfig {
    path: PathBuf,
    doc: Map<String, Value>,
}

/// Docker's `ConvertToHostname`: an `auths` key as a bare `host[:port]`
/// (`https://host:5000/v1/` → `host:5000`).
pub fn key_hostname(key: &str) -> &str {
    let s = key
        .strip_prefix("http://")
        .or_else(|| key.strip_prefix("https://"))
        .unwrap_or(key);
    s.split('/').next().unwrap_or(s)
}

/// The `auths` key Helm 4 writes for a registry host (oras-go's
/// `ServerAddressFromHostname`): Docker Hub's legacy address for
/// `docker.io`, the host itself otherwise.
pub fn server_address(host: &str) -> String {
    match host {
        "docker.io" | "registry-1.docker.io" | "index.docker.io" => {
            "https://index.docker.io/v1/".to_string()
        }
        h => h.to_string(),
    }
}

impl RegistryConfig {
    /// Loads `path`; a missing (or empty) file is an empty config.
    pub fn load(path: &Path) -> Result<RegistryConfig, RegistryConfigError> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(RegistryConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let doc = if text.iter().all(u8::is_ascii_whitespace) {
            Map::new()
        } else {
            match serde_json::from_slice::<Value>(&text) {
                Ok(Value::Object(m)) => m,
                Ok(_) => {
                    return Err(RegistryConfigError::Parse {
                        path: path.to_path_buf(),
                        reason: "the document is not a JSON object".into(),
                    })
                }
                Err(e) => {
                    return Err(RegistryConfigError::Parse {
                        path: path.to_path_buf(),
                        reason: e.to_string(),
                    })
                }
            }
        };
        if doc
            .get("auths")
            .is_some_and(|a| !a.is_object() && !a.is_null())
        {
            return Err(RegistryConfigError::Parse {
                path: path.to_path_buf(),
                reason: "\"auths\" is not an object".into(),
            });
        }
        Ok(RegistryConfig {
            path: path.to_path_buf(),
            doc,
        })
    }

    /// The file this config is read from and written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The credential helper for `host`: its `credHelpers` entry, else
    /// `credsStore`.
    pub fn helper_for(&self, host: &str) -> Option<String> {
        let by_host = self
            .doc
            .get("credHelpers")
            .and_then(Value::as_object)
            .and_then(|m| {
                m.iter()
                    .find(|(k, _)| k.as_str() == host || key_hostname(k) == host)
                    .and_then(|(_, v)| v.as_str())
            });
        by_host
            .or_else(|| self.doc.get("credsStore").and_then(Value::as_str))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    /// The `auths` key that holds `host`'s entry: the exact key first, else
    /// one that names the same host as a URL.
    fn auth_key(&self, host: &str) -> Option<String> {
        let auths = self.doc.get("auths")?.as_object()?;
        if auths.contains_key(host) {
            return Some(host.to_string());
        }
        let addr = server_address(host);
        if auths.contains_key(&addr) {
            return Some(addr);
        }
        auths
            .keys()
            .find(|k| key_hostname(k) == host || key_hostname(k) == key_hostname(&addr))
            .cloned()
    }

    /// The stored login for `host` (`host[:port]`), if any.
    pub fn credential(&self, host: &str) -> Result<Option<Credential>, RegistryConfigError> {
        if let Some(helper) = self.helper_for(host) {
            return helper_get(&helper, &server_address(host), host);
        }
        let Some(key) = self.auth_key(host) else {
            return Ok(None);
        };
        let entry = self
            .doc
            .get("auths")
            .and_then(|a| a.get(&key))
            .and_then(Value::as_object);
        let Some(entry) = entry else {
            return Ok(None);
        };
        let field = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
        let bad = |reason: String| RegistryConfigError::BadAuth {
            path: self.path.clone(),
            host: host.to_string(),
            reason,
        };
        if !field("identitytoken").is_empty() {
            // Docker keeps an identity token beside the user name; the
            // registry takes it in place of the user's password.
            return Ok(Some(Credential {
                username: String::new(),
                password: field("identitytoken").to_string(),
            }));
        }
        if !field("auth").is_empty() {
            let (username, password) = decode_auth(field("auth")).map_err(bad)?;
            return Ok(Some(Credential { username, password }));
        }
        if !field("username").is_empty() || !field("password").is_empty() {
            return Ok(Some(Credential {
                username: field("username").to_string(),
                password: field("password").to_string(),
            }));
        }
        Ok(None)
    }

    /// Records a login for `host`, as `helm registry login` does: in the
    /// host's credential helper if the file names one, else as an `auth`
    /// entry under the host (replacing any other entry for the same host).
    /// Call [`save`](Self::save) to write the file.
    pub fn set_credential(
        &mut self,
        host: &str,
        cred: &Credential,
    ) -> Result<(), RegistryConfigError> {
        if let Some(helper) = self.helper_for(host) {
            return helper_store(&helper, &server_address(host), host, cred);
        }
        while let Some(old) = self.auth_key(host) {
            if let Some(a) = self.doc.get_mut("auths").and_then(Value::as_object_mut) {
                a.remove(&old);
            }
        }
        let auths = self
            .doc
            .entry("auths")
            .or_insert_with(|| Value::Object(Map::new()));
        if !auths.is_object() {
            *auths = Value::Object(Map::new());
        }
        let encoded = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", cred.username, cred.password));
        let mut entry = Map::new();
        entry.insert("auth".into(), Value::String(encoded));
        if let Some(a) = auths.as_object_mut() {
            a.insert(server_address(host), Value::Object(entry));
        }
        Ok(())
    }

    /// Forgets the login for `host`; `false` when there was none (Helm then
    /// fails with `not logged in`). Call [`save`](Self::save) to write the
    /// file.
    pub fn remove_credential(&mut self, host: &str) -> Result<bool, RegistryConfigError> {
        if let Some(helper) = self.helper_for(host) {
            return helper_erase(&helper, &server_address(host), host);
        }
        let mut removed = false;
        while let Some(old) = self.auth_key(host) {
            if let Some(a) = self.doc.get_mut("auths").and_then(Value::as_object_mut) {
                a.remove(&old);
                removed = true;
            } else {
                break;
            }
        }
        Ok(removed)
    }

    /// The document as Go's `json.MarshalIndent(v, "", "\t")` prints it
    /// (Docker's and oras-go's layout).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut doc = self.doc.clone();
        doc.entry("auths")
            .or_insert_with(|| Value::Object(Map::new()));
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        // Serializing a map of JSON values cannot fail.
        let _ = serde::Serialize::serialize(&doc, &mut ser);
        out
    }

    /// Writes the file atomically, mode 0600, creating its directory.
    pub fn save(&self) -> Result<(), RegistryConfigError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Owner-only, as Helm creates it.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(crate::fsutil::PRIVATE_DIR)
                .create(dir)
                .map_err(|source| RegistryConfigError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        atomic_write(&self.path, &self.to_bytes(), Mode::PRIVATE)?;
        Ok(())
    }
}

/// `user:password` from Docker's `auth` value.
fn decode_auth(auth: &str) -> Result<(String, String), String> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .map_err(|e| format!("auth is not base64: {e}"))?;
    let text = String::from_utf8(raw).map_err(|_| "auth is not UTF-8 text".to_string())?;
    match text.split_once(':') {
        Some((u, p)) => Ok((u.to_string(), p.to_string())),
        None => Err("auth is not \"user:password\"".to_string()),
    }
}

/// Runs `docker-credential-NAME ACTION` with `input` on stdin.
fn run_helper(
    helper: &str,
    action: &'static str,
    host: &str,
    input: &[u8],
) -> Result<(bool, String, String), RegistryConfigError> {
    let err = |message: String| RegistryConfigError::Helper {
        helper: helper.to_string(),
        action,
        host: host.to_string(),
        message,
    };
    let mut child = Command::new(format!("docker-credential-{helper}"))
        .arg(action)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("cannot run it: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input)
            .map_err(|e| err(format!("cannot write to it: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| err(format!("cannot wait for it: {e}")))?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    ))
}

/// The message credential helpers print for a missing entry.
const HELPER_NOT_FOUND: &str = "credentials not found in native keychain";

fn helper_get(
    helper: &str,
    server: &str,
    host: &str,
) -> Result<Option<Credential>, RegistryConfigError> {
    let (ok, out, err) = run_helper(helper, "get", host, server.as_bytes())?;
    if !ok {
        if out.contains(HELPER_NOT_FOUND) || err.contains(HELPER_NOT_FOUND) {
            return Ok(None);
        }
        return Err(RegistryConfigError::Helper {
            helper: helper.to_string(),
            action: "get",
            host: host.to_string(),
            message: if out.is_empty() { err } else { out },
        });
    }
    let v: Value = serde_json::from_str(&out).map_err(|e| RegistryConfigError::Helper {
        helper: helper.to_string(),
        action: "get",
        host: host.to_string(),
        message: format!("its answer is not JSON: {e}"),
    })?;
    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (username, secret) = (field("Username"), field("Secret"));
    if username.is_empty() && secret.is_empty() {
        return Ok(None);
    }
    // Docker's convention: an identity token is stored under user `<token>`.
    let username = if username == "<token>" {
        String::new()
    } else {
        username
    };
    Ok(Some(Credential {
        username,
        password: secret,
    }))
}

fn helper_store(
    helper: &str,
    server: &str,
    host: &str,
    cred: &Credential,
) -> Result<(), RegistryConfigError> {
    let username = if cred.username.is_empty() {
        "<token>"
    } else {
        cred.username.as_str()
    };
    let input = serde_json::json!({
        "ServerURL": server,
        "Username": username,
        "Secret": cred.password,
    });
    let (ok, out, err) = run_helper(helper, "store", host, input.to_string().as_bytes())?;
    if ok {
        Ok(())
    } else {
        Err(RegistryConfigError::Helper {
            helper: helper.to_string(),
            action: "store",
            host: host.to_string(),
            message: if out.is_empty() { err } else { out },
        })
    }
}

fn helper_erase(helper: &str, server: &str, host: &str) -> Result<bool, RegistryConfigError> {
    let (ok, out, err) = run_helper(helper, "erase", host, server.as_bytes())?;
    if ok {
        return Ok(true);
    }
    if out.contains(HELPER_NOT_FOUND) || err.contains(HELPER_NOT_FOUND) {
        return Ok(false);
    }
    Err(RegistryConfigError::Helper {
        helper: helper.to_string(),
        action: "erase",
        host: host.to_string(),
        message: if out.is_empty() { err } else { out },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(u: &str, p: &str) -> Credential {
        Credential {
            username: u.into(),
            password: p.into(),
        }
    }

    #[test]
    fn a_login_round_trips_in_dockers_layout_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry/config.json");
        let mut c = RegistryConfig::load(&path).unwrap();
        assert_eq!(c.credential("localhost:5000").unwrap(), None);
        c.set_credential("localhost:5000", &cred("user", "pa:ss"))
            .unwrap();
        c.save().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\n\t\"auths\": {\n\t\t\"localhost:5000\": {\n\t\t\t\"auth\": \"dXNlcjpwYTpzcw==\"\n\t\t}\n\t}\n}"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let back = RegistryConfig::load(&path).unwrap();
        assert_eq!(
            back.credential("localhost:5000").unwrap(),
            Some(cred("user", "pa:ss"))
        );
    }

    #[test]
    fn entries_under_a_url_serve_their_host_and_unknown_keys_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"auths":{"https://reg.example:5000/v1/":{"auth":"YTpi"}},"psFormat":"x"}"#,
        )
        .unwrap();
        let mut c = RegistryConfig::load(&path).unwrap();
        assert_eq!(
            c.credential("reg.example:5000").unwrap(),
            Some(cred("a", "b"))
        );
        assert!(c.remove_credential("reg.example:5000").unwrap());
        assert!(!c.remove_credential("reg.example:5000").unwrap());
        c.save().unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["psFormat"], "x");
        assert_eq!(v["auths"], serde_json::json!({}));
    }

    #[test]
    fn bad_files_and_bad_entries_name_the_file_and_host() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, "[1]").unwrap();
        let e = RegistryConfig::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("config.json") && e.contains("not a JSON object"),
            "{e}"
        );
        std::fs::write(&path, r#"{"auths":{"h:1":{"auth":"!!"}}}"#).unwrap();
        let c = RegistryConfig::load(&path).unwrap();
        let e = c.credential("h:1").unwrap_err().to_string();
        assert!(e.contains("h:1") && e.contains("base64"), "{e}");
    }

    #[test]
    fn key_hostname_strips_scheme_and_path() {
        assert_eq!(key_hostname("https://a.b:5000/v1/"), "a.b:5000");
        assert_eq!(key_hostname("a.b"), "a.b");
        assert_eq!(server_address("docker.io"), "https://index.docker.io/v1/");
    }
}
