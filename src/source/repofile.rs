//! `repositories.yaml`: the chart repositories `repo add` made, in Helm's
//! own file (`pkg/repo/repo.go`), so that a repository added by rudder is
//! listed by `helm repo list`, and the other way round.
//!
//! Helm writes it with `yaml.Marshal` (keys sorted, every field present),
//! mode 0600, under an advisory lock on `repositories.lock` next to it;
//! rudder writes the same bytes the same way.
//!
//! ```
//! use rudder::source::repofile::{RepoEntry, RepoFile};
//! let mut f = RepoFile::default();
//! f.update(RepoEntry { name: "jetstack".into(), url: "https://charts.jetstack.io".into(), ..Default::default() });
//! let text = f.to_yaml();
//! assert!(text.starts_with("apiVersion: \"\"\ngenerated: \"0001-01-01T00:00:00Z\"\nrepositories:\n- caFile: \"\"\n"));
//! assert_eq!(RepoFile::parse(text.as_bytes(), "repositories.yaml").unwrap(), f);
//! ```
use crate::yaml::Node;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One repository (Helm's `repo.Entry`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoEntry {
    /// The name `REPO/CHART` references use.
    pub name: String,
    /// The repository's URL (its `index.yaml` is under it).
    pub url: String,
    /// Basic-auth user.
    pub username: String,
    /// Basic-auth password (Helm keeps it in clear, in a 0600 file).
    pub password: String,
    /// Client certificate (PEM) for mutual TLS.
    pub cert_file: String,
    /// The client certificate's key (PEM).
    pub key_file: String,
    /// CA bundle (PEM) that verifies the server.
    pub ca_file: String,
    /// Skip the server certificate's verification.
    pub insecure_skip_tls_verify: bool,
    /// Send the credentials to every host, not only the repository's.
    pub pass_credentials_all: bool,
}

/// The whole file (Helm's `repo.File`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoFile {
    /// `apiVersion` (Helm writes `""`).
    pub api_version: String,
    /// `generated`, as written (Helm writes Go's zero time).
    pub generated: String,
    /// The repositories, in the order they were added.
    pub repositories: Vec<RepoEntry>,
}

impl Default for RepoFile {
    fn default() -> Self {
        RepoFile {
            api_version: String::new(),
            generated: ZERO_TIME.to_string(),
            repositories: Vec::new(),
        }
    }
}

/// Go's zero `time.Time`, as `yaml.Marshal` writes it.
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// Why `repositories.yaml` could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RepoFileError {
    /// The file could not be read.
    #[error("couldn't load repositories file ({path}): {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not Helm's format.
    #[error("couldn't load repositories file ({path}): {message}")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong, with line:col where the parser has one.
        message: String,
    },
    /// Writing (or locking) failed.
    #[error("writing repositories file {path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        message: String,
    },
}

impl RepoFile {
    /// Parses `repositories.yaml` text; `source` names it in errors.
    pub fn parse(bytes: &[u8], source: &str) -> Result<RepoFile, RepoFileError> {
        let err = |message: String| RepoFileError::Parse {
            path: source.to_string(),
            message,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| err(e.to_string()))?;
        let node = crate::yaml::parse_yaml_to_json(text).map_err(|e| err(e.to_string()))?;
        let mut f = RepoFile::default();
        let map = match node {
            Node::Map(m) => m,
            Node::Null => return Ok(f),
            other => {
                return Err(err(format!(
                    "cannot unmarshal {} into a repository file",
                    other.json_kind()
                )))
            }
        };
        f.api_version = str_field(&map, "apiVersion");
        if let Some(g) = map.get("generated") {
            f.generated = scalar(g);
        }
        match map.get("repositories") {
            None | Some(Node::Null) => {}
            Some(Node::Seq(items)) => {
                for item in items {
                    match item {
                        Node::Map(m) => f.repositories.push(entry_from(m)),
                        Node::Null => {}
                        other => {
                            return Err(err(format!(
                                "cannot unmarshal {} into a repository entry",
                                other.json_kind()
                            )))
                        }
                    }
                }
            }
            Some(other) => {
                return Err(err(format!(
                    "repositories: cannot unmarshal {} into a list",
                    other.json_kind()
                )))
            }
        }
        Ok(f)
    }

    /// Reads the file at `path`; a missing file is an empty list (as
    /// `repo add` treats it).
    pub fn load_or_default(path: &Path) -> Result<RepoFile, RepoFileError> {
        match crate::input::read(path) {
            Ok(b) => RepoFile::parse(&b, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(RepoFile::default()),
            Err(source) => Err(RepoFileError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&RepoEntry> {
        self.repositories.iter().find(|r| r.name == name)
    }

    /// The first entry whose URL is `url` (trailing slashes ignored, as
    /// Helm's dependency resolution compares them).
    pub fn find_by_url(&self, url: &str) -> Option<&RepoEntry> {
        let want = url.trim_end_matches('/');
        self.repositories
            .iter()
            .find(|r| r.url.trim_end_matches('/') == want)
    }

    /// Replaces the entry of the same name, or appends it.
    pub fn update(&mut self, e: RepoEntry) {
        match self.repositories.iter_mut().find(|r| r.name == e.name) {
            Some(slot) => *slot = e,
            None => self.repositories.push(e),
        }
    }

    /// Removes the entry named `name`; false when there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.repositories.len();
        self.repositories.retain(|r| r.name != name);
        self.repositories.len() != before
    }

    /// The file's text as Helm writes it.
    pub fn to_yaml(&self) -> String {
        let repos = self.repositories.iter().map(entry_node).collect();
        let mut m = BTreeMap::new();
        m.insert("apiVersion".into(), Node::Str(self.api_version.clone()));
        m.insert("generated".into(), Node::Str(self.generated.clone()));
        m.insert("repositories".into(), Node::Seq(repos));
        crate::yaml::to_yaml(&Node::Map(m))
    }

    /// Writes the file atomically, mode 0600, creating its directory.
    pub fn write(&self, path: &Path) -> Result<(), RepoFileError> {
        let werr = |message: String| RepoFileError::Write {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| werr(e.to_string()))?;
        }
        crate::fsutil::atomic_write(
            path,
            self.to_yaml().as_bytes(),
            crate::fsutil::Mode::PRIVATE,
        )
        .map_err(|e| werr(e.to_string()))
    }
}

/// Holds Helm's advisory lock on `repositories.lock` (next to the
/// repositories file) while it lives, as `repo add` and `repo remove` do,
/// so that concurrent helm and rudder processes do not lose each other's
/// entries.
pub struct RepoLock {
    _file: std::fs::File,
}

impl RepoLock {
    /// Takes the lock for the repositories file at `config`, waiting for
    /// another holder.
    #[allow(clippy::incompatible_msrv)]
    pub fn acquire(config: &Path) -> Result<RepoLock, RepoFileError> {
        let path = crate::source::paths::lock_path(config);
        let werr = |message: String| RepoFileError::Write {
            path: path.clone(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| werr(e.to_string()))?;
        }
        let file = crate::fsutil::open_private(
            &path,
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true),
        )
        .map_err(|e| werr(e.to_string()))?;
        file.lock().map_err(|e| werr(e.to_string()))?;
        Ok(RepoLock { _file: file })
    }
}

fn scalar(n: &Node) -> String {
    match n {
        Node::Str(s) => s.clone(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Float(f) => crate::yaml::format_go_float(*f),
        _ => String::new(),
    }
}

fn str_field(m: &BTreeMap<String, Node>, k: &str) -> String {
    m.get(k).map(scalar).unwrap_or_default()
}

fn bool_field(m: &BTreeMap<String, Node>, k: &str) -> bool {
    matches!(m.get(k), Some(Node::Bool(true)))
}

fn entry_from(m: &BTreeMap<String, Node>) -> RepoEntry {
    RepoEntry {
        name: str_field(m, "name"),
        url: str_field(m, "url"),
        username: str_field(m, "username"),
        password: str_field(m, "password"),
        cert_file: str_field(m, "certFile"),
        key_file: str_field(m, "keyFile"),
        ca_file: str_field(m, "caFile"),
        insecure_skip_tls_verify: bool_field(m, "insecure_skip_tls_verify"),
        pass_credentials_all: bool_field(m, "pass_credentials_all"),
    }
}

fn entry_node(e: &RepoEntry) -> Node {
    let s = |v: &str| Node::Str(v.to_string());
    let m: BTreeMap<String, Node> = [
        ("name", s(&e.name)),
        ("url", s(&e.url)),
        ("username", s(&e.username)),
        ("password", s(&e.password)),
        ("certFile", s(&e.cert_file)),
        ("keyFile", s(&e.key_file)),
        ("caFile", s(&e.ca_file)),
        (
            "insecure_skip_tls_verify",
            Node::Bool(e.insecure_skip_tls_verify),
        ),
        ("pass_credentials_all", Node::Bool(e.pass_credentials_all)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Node::Map(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `helm repo add` (v3.17.2) wrote for two repositories.
    const HELM: &str = r#"apiVersion: ""
generated: "0001-01-01T00:00:00Z"
repositories:
- caFile: ""
  certFile: ""
  insecure_skip_tls_verify: false
  keyFile: ""
  name: myrepo
  pass_credentials_all: false
  password: p
  url: http://127.0.0.1:18080
  username: u
- caFile: ""
  certFile: ""
  insecure_skip_tls_verify: false
  keyFile: ""
  name: other
  pass_credentials_all: false
  password: ""
  url: http://127.0.0.1:18080/
  username: ""
"#;

    #[test]
    fn reads_and_writes_helms_bytes() {
        let f = RepoFile::parse(HELM.as_bytes(), "r").unwrap();
        assert_eq!(f.repositories.len(), 2);
        assert_eq!(f.get("myrepo").unwrap().password, "p");
        assert_eq!(
            f.find_by_url("http://127.0.0.1:18080/").unwrap().name,
            "myrepo"
        );
        assert_eq!(f.to_yaml(), HELM);
    }

    #[test]
    fn update_replaces_and_remove_says_whether_it_did() {
        let mut f = RepoFile::parse(HELM.as_bytes(), "r").unwrap();
        f.update(RepoEntry {
            name: "other".into(),
            url: "https://x".into(),
            ..Default::default()
        });
        assert_eq!(f.repositories.len(), 2);
        assert_eq!(f.get("other").unwrap().url, "https://x");
        assert!(f.remove("other"));
        assert!(!f.remove("other"));
        assert_eq!(f.repositories.len(), 1);
    }

    #[test]
    fn bad_files_name_the_file() {
        let e = RepoFile::parse(b"repositories: 3\n", "/x/repositories.yaml").unwrap_err();
        assert!(e.to_string().contains("/x/repositories.yaml"), "{e}");
        let e = RepoFile::parse(b"a: &a [*a]\n: :\n", "/x/r.yaml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("couldn't load repositories file (/x/r.yaml)"),
            "{e}"
        );
        assert_eq!(RepoFile::parse(b"", "r").unwrap(), RepoFile::default());
    }
}
