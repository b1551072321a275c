//! A chart's dependencies, as `helm dependency update|build|list` manage
//! them (Helm v3.17.2 `pkg/downloader/manager.go`,
//! `internal/resolver/resolver.go`, `pkg/action/dependency.go`), writing
//! the files Helm writes: `Chart.lock` (or `requirements.lock` for an
//! apiVersion v1 chart) and `charts/<name>-<version>.tgz`.
//!
//! - [`Manager::update`]: resolves each dependency of Chart.yaml (or
//!   requirements.yaml) to a version, fetches it into `charts/`, and
//!   writes the lock when its digest changed.
//! - [`Manager::build`]: fetches the versions of the lock; refuses a lock
//!   whose digest no longer matches Chart.yaml, with Helm's message.
//! - [`list`](mod@list): `helm dependency list`'s table and warnings.
//!
//! A dependency's `repository:` is read as Helm reads it: `""` (already in
//! `charts/<name>/`), `file://PATH` (a chart directory, relative to the
//! chart; packaged into `charts/` as Helm's `chartutil.Save` packages it,
//! see [`archive`]), `@NAME` or `alias:NAME` (a repository of
//! `repositories.yaml`, replaced by its URL), a URL (a repository of
//! `repositories.yaml` with that URL, or one Helm was not told about, which
//! it caches as `helm-manager-<sha256 of the URL>`), or `oci://`.
//!
//! Everything remote goes through a [`Fetcher`]: repository indexes, OCI
//! tags and downloads. `fetch::RepoFetcher` (feature `remote`) fetches
//! from chart repositories with Helm's files and rudder's content cache,
//! downloads in parallel; [`LocalFetcher`] reads `repositories.yaml` and
//! fetches nothing.
//!
//! Downloads and packages land in `tmpcharts-<pid>` next to `charts/` and
//! are moved into `charts/` only when every dependency succeeded, so a
//! failure leaves `charts/` as it was (Helm's rule); outdated chart
//! archives in `charts/` are then deleted, except those of dependencies
//! without a repository. `condition`, `tags`, `import-values` and `alias`
//! are never touched.
//!
//! ```
//! use rudder::source::deps::{LocalFetcher, Manager};
//! let dir = tempfile::tempdir()?;
//! let write = |p: &str, t: &str| -> std::io::Result<()> {
//!     let p = dir.path().join(p);
//!     std::fs::create_dir_all(p.parent().unwrap())?;
//!     std::fs::write(p, t)
//! };
//! write("child/Chart.yaml", "apiVersion: v2\nname: child\nversion: 0.2.0\n")?;
//! write(
//!     "web/Chart.yaml",
//!     "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n\
//!      - name: child\n  version: ^0.2.0\n  repository: file://../child\n",
//! )?;
//! let fetcher = LocalFetcher { repository_config: dir.path().join("repositories.yaml") };
//! let mut out = Vec::new();
//! let done = Manager {
//!     chart_path: dir.path().join("web").display().to_string(),
//!     skip_update: false,
//!     debug: false,
//!     fetcher: &fetcher,
//!     out: &mut out,
//! }
//! .update()?;
//! assert!(done.lock_written);
//! assert!(dir.path().join("web/charts/child-0.2.0.tgz").is_file());
//! let lock = std::fs::read_to_string(dir.path().join("web/Chart.lock"))?;
//! assert!(lock.starts_with("dependencies:\n- name: child\n  repository: file://../child\n  version: 0.2.0\n"));
//! assert_eq!(String::from_utf8(out)?, "Saving 1 charts\nDeleting outdated charts\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
pub mod archive;
#[cfg(feature = "remote")]
pub mod fetch;
pub mod list;
pub mod lock;
pub mod verify;

pub use archive::{helm_archive, ArchiveError, ModTimes};
pub use list::{list, ListError};
pub use lock::{generated_now, hash_req, hash_v2_req, lock_file_name, lock_text, DigestError};

use crate::chart::model::{Chart, Dependency, Lock};
use crate::chart::LoadError;
use crate::gostd::strconv::quote;
use crate::template::funcs::semver::{parse_version, Constraints};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An error a [`Fetcher`] returns; its text is printed after Helm's own
/// words (`could not download URL: ...`).
pub type FetchError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A repository of `repositories.yaml`: the name `@NAME` references use
/// and its URL.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepoRef {
    /// The repository's name.
    pub name: String,
    /// The repository's URL.
    pub url: String,
}

/// A repository whose index a [`Fetcher`] refreshes into the cache.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RefreshTarget {
    /// The name its index is cached under (`<cache>/<name>-index.yaml`):
    /// the repository's name, or `helm-manager-<sha256 of the URL>` for a
    /// URL that is not in `repositories.yaml`.
    pub cache_name: String,
    /// The repository's URL.
    pub url: String,
    /// Whether the repository is in `repositories.yaml` (its credentials
    /// and TLS settings apply).
    pub managed: bool,
}

/// One version of a chart in a repository index, in the index's order
/// (Helm sorts each chart's versions newest first when it loads an index).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexVersion {
    /// The version, as the index spells it.
    pub version: String,
    /// Whether the entry has at least one download URL (entries without
    /// one are skipped, as Helm skips them).
    pub has_urls: bool,
}

/// Where a remote dependency comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteSource<'a> {
    /// A chart repository: its URL and the name its index is cached under
    /// (see [`RefreshTarget::cache_name`]); `managed` when it is in
    /// `repositories.yaml`.
    Repo {
        /// The repository URL.
        url: &'a str,
        /// The cache name of its index.
        cache_name: &'a str,
        /// Whether it is in `repositories.yaml`.
        managed: bool,
    },
    /// An OCI repository, `oci://HOST/PATH` (the chart name is appended).
    Oci(&'a str),
}

/// A downloaded chart archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The file name Helm saves it under: the last path segment of the
    /// download URL (usually `<name>-<version>.tgz`; always that for OCI).
    pub file_name: String,
    /// The archive's bytes, already checked against the digest of the
    /// index or manifest.
    pub archive: Vec<u8>,
}

/// Everything [`Manager`] needs from repositories and registries.
pub trait Fetcher {
    /// The repositories of `repositories.yaml`, in file order; `Ok(None)`
    /// when the file does not exist (Helm treats that as none).
    fn repositories(&self) -> Result<Option<Vec<RepoRef>>, FetchError>;

    /// Refreshes the cached index of each target (Helm's
    /// `parallelRepoUpdate`), one result per target in the same order. A
    /// failure is reported and is not fatal, as in Helm.
    fn refresh(&self, targets: &[RefreshTarget]) -> Vec<Result<(), FetchError>>;

    /// Loads the cached index of every repository of `repositories.yaml`
    /// (Helm's `loadChartRepositories`, run before any download, which
    /// fails when one of them is not cached). The default does nothing.
    fn load_indexes(&self, _repos: &[RepoRef]) -> Result<(), FetchError> {
        Ok(())
    }

    /// The versions of `chart` in the cached index `cache_name`; `Ok(None)`
    /// when the index has no such chart; an error when the index is not
    /// cached or does not load.
    fn index_versions(
        &self,
        cache_name: &str,
        chart: &str,
    ) -> Result<Option<Vec<IndexVersion>>, FetchError>;

    /// The tags of `oci://.../chart` (for a version constraint that is not
    /// an exact version), as Helm's registry client lists them.
    fn oci_tags(&self, repository: &str, chart: &str) -> Result<Vec<String>, FetchError>;

    /// Where `chart` at exactly `version` is downloaded from (Helm's
    /// `findChartURL`): the chart's URL, or why it cannot be found (no such
    /// chart or version in the index). The URL names the download in
    /// messages and deduplicates dependencies that are the same chart.
    fn chart_url(
        &self,
        source: RemoteSource<'_>,
        chart: &str,
        version: &str,
    ) -> Result<String, FetchError>;

    /// Downloads every request at once (in parallel where the fetcher can);
    /// one answer per request, in order. The default downloads one after
    /// the other with [`Fetcher::download`].
    fn download_all(&self, requests: &[DownloadRequest<'_>]) -> Vec<Result<Fetched, FetchError>> {
        requests.iter().map(|r| self.download(r)).collect()
    }

    /// Downloads one chart archive.
    fn download(&self, request: &DownloadRequest<'_>) -> Result<Fetched, FetchError>;

    /// With `--verify`: fetches the provenance of the chart of `request`
    /// just saved at `saved`, writes it beside it and checks it
    /// ([`verify::check`]); warnings go to `out`. The default checks
    /// nothing.
    fn verify_download(
        &self,
        _request: &DownloadRequest<'_>,
        _saved: &Path,
        _out: &mut dyn Write,
    ) -> Result<(), FetchError> {
        Ok(())
    }

    /// Told that a downloaded archive was saved whole to `saved` (a file
    /// of `tmpcharts-*`, moved into `charts/` later): a fetcher with a
    /// content cache that it has not put the archive into yet keeps it now
    /// (the repository fetcher links the file into its cache); an error
    /// fails the download, as a failed cache write would have. The default
    /// does nothing.
    fn keep(&self, _saved: &Path, _fetched: &Fetched) -> Result<(), FetchError> {
        Ok(())
    }

    /// What the cached indexes resolve the dependencies to, just before
    /// [`Fetcher::refresh`]: a fetcher may download these charts while it
    /// refreshes the indexes, and use such a download only where the
    /// refreshed index gives the same chart URL and the download matches
    /// its digest (anything else is downloaded again, after the refresh).
    /// The default ignores it.
    fn prefetch(&self, _requests: &[DownloadRequest<'_>]) {}
}

/// One download: a chart at an exact version, and the URL
/// [`Fetcher::chart_url`] gave for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadRequest<'a> {
    /// Where the chart comes from.
    pub source: RemoteSource<'a>,
    /// The chart's name.
    pub chart: &'a str,
    /// The exact version.
    pub version: &'a str,
    /// The chart URL ([`Fetcher::chart_url`]).
    pub url: &'a str,
}

/// A [`Fetcher`] that reads `repositories.yaml` (names and URLs) and
/// fetches nothing: `file://` and `charts/` dependencies work, and remote
/// ones fail with a clear error.
#[derive(Debug, Clone)]
pub struct LocalFetcher {
    /// `repositories.yaml`.
    pub repository_config: PathBuf,
}

/// Why [`LocalFetcher`] could not do something.
#[derive(Debug, thiserror::Error)]
pub enum LocalFetchError {
    /// `repositories.yaml` could not be read or parsed.
    #[error("couldn't load repositories file ({path}): {message}")]
    RepoFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A remote operation in a build that only reads local charts.
    #[error("{what}: this rudder reads local dependencies only (file://, charts/)")]
    Remote {
        /// What was asked.
        what: String,
    },
}

impl Fetcher for LocalFetcher {
    fn repositories(&self) -> Result<Option<Vec<RepoRef>>, FetchError> {
        let err = |message: String| LocalFetchError::RepoFile {
            path: self.repository_config.clone(),
            message,
        };
        let bytes = match std::fs::read(&self.repository_config) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Box::new(err(e.to_string()))),
        };
        let text = String::from_utf8_lossy(&bytes);
        let node = crate::yaml::parse_yaml_to_json(&text).map_err(|e| err(e.to_string()))?;
        let mut out = Vec::new();
        if let crate::yaml::Node::Map(m) = node {
            if let Some(crate::yaml::Node::Seq(items)) = m.get("repositories") {
                for i in items {
                    if let crate::yaml::Node::Map(e) = i {
                        let s = |k: &str| match e.get(k) {
                            Some(crate::yaml::Node::Str(s)) => s.clone(),
                            _ => String::new(),
                        };
                        out.push(RepoRef {
                            name: s("name"),
                            url: s("url"),
                        });
                    }
                }
            }
        }
        Ok(Some(out))
    }

    fn refresh(&self, targets: &[RefreshTarget]) -> Vec<Result<(), FetchError>> {
        targets
            .iter()
            .map(|t| {
                Err(Box::new(LocalFetchError::Remote {
                    what: format!("refreshing the index of {}", t.url),
                }) as FetchError)
            })
            .collect()
    }

    fn index_versions(
        &self,
        cache_name: &str,
        _chart: &str,
    ) -> Result<Option<Vec<IndexVersion>>, FetchError> {
        Err(Box::new(LocalFetchError::Remote {
            what: format!("reading the index {cache_name}"),
        }))
    }

    fn oci_tags(&self, repository: &str, chart: &str) -> Result<Vec<String>, FetchError> {
        Err(Box::new(LocalFetchError::Remote {
            what: format!("listing the tags of {repository}/{chart}"),
        }))
    }

    fn chart_url(
        &self,
        source: RemoteSource<'_>,
        chart: &str,
        version: &str,
    ) -> Result<String, FetchError> {
        Ok(match source {
            RemoteSource::Oci(repo) => format!("{repo}/{chart}:{version}"),
            RemoteSource::Repo { url, .. } => format!("{url}/{chart}-{version}.tgz"),
        })
    }

    fn download(&self, request: &DownloadRequest<'_>) -> Result<Fetched, FetchError> {
        Err(Box::new(LocalFetchError::Remote {
            what: format!("downloading {}", request.url),
        }))
    }
}

/// Why a dependency command failed; each message is Helm's.
#[derive(Debug, thiserror::Error)]
pub enum DepsError {
    /// The chart path does not exist (`could not find PATH: stat PATH: ...`).
    #[error("could not find {path}: stat {path}: {message}")]
    ChartNotFound {
        /// The chart path.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The chart path is a file: only directories are updated.
    #[error("only unpacked charts can be updated")]
    NotUnpacked,
    /// The chart (or a dependency) does not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A `file://` path or `charts/<name>` that does not exist.
    #[error("directory {0} not found")]
    LocalPathNotFound(String),
    /// A version constraint that does not parse.
    #[error("dependency {name:?} has an invalid version/constraint format: {message}")]
    InvalidConstraint {
        /// The dependency.
        name: String,
        /// Masterminds' message.
        message: String,
    },
    /// A version constraint that does not parse, as `downloadAll` words it.
    #[error("dependency {name} has an invalid version/constraint format: {message}")]
    InvalidConstraintUnquoted {
        /// The dependency.
        name: String,
        /// Masterminds' message.
        message: String,
    },
    /// Repositories that are neither URLs nor known names.
    #[error("no repository definition for {}. Please add them via 'helm repo add'{}", .missing.join(", "), if *.note { NON_URL_NOTE } else { "" })]
    NoRepositoryDefinition {
        /// The repositories, as Chart.yaml gives them.
        missing: Vec<String>,
        /// Whether one of them looks like a bare name (Helm adds a hint).
        note: bool,
    },
    /// `dependency build`: lock repositories not in `repositories.yaml`
    /// (Helm's `ErrRepoNotFound`; the CLI adds `. Please add the missing
    /// repos via 'helm repo add'`).
    #[error("no repository definition for {}", .0.join(", "))]
    RepoNotFound(Vec<String>),
    /// Dependencies no version of which satisfies the constraint.
    #[error("can't get a valid version for {} subchart(s): {}. Make sure a matching chart version exists in the repo, or change the version constraint in Chart.yaml", .0.len(), .0.join(", "))]
    NoValidVersion(Vec<String>),
    /// A `file://` chart whose version does not satisfy the constraint.
    #[error("can't get a valid version for dependency {0}")]
    NoValidLocalVersion(String),
    /// A chart of `charts/` whose version does not satisfy the constraint.
    #[error("dependency {name} at version {version} does not satisfy the constraint {constraint}")]
    Unsatisfied {
        /// The dependency.
        name: String,
        /// The version found.
        version: String,
        /// The constraint.
        constraint: String,
    },
    /// A chart of `charts/<name>` whose version does not parse.
    #[error("invalid version {version} for dependency {name}: {message}")]
    InvalidVersion {
        /// The constraint.
        version: String,
        /// The dependency.
        name: String,
        /// Masterminds' message.
        message: String,
    },
    /// A `file://` chart whose version does not parse (Masterminds' message).
    #[error("{0}")]
    Semver(String),
    /// A chart of `charts/<name>` that does not load.
    #[error("unable to load chart '{path}': {error}")]
    LocalChart {
        /// The directory.
        path: String,
        /// The loader's error.
        error: LoadError,
    },
    /// `dependency build` with a lock that no longer matches Chart.yaml.
    #[error("the lock file ({lock}) is out of sync with the dependencies file ({deps}). Please update the dependencies")]
    OutOfSync {
        /// `Chart.lock` or `requirements.lock`.
        lock: &'static str,
        /// `Chart.yaml` or `requirements.yaml`.
        deps: &'static str,
    },
    /// The repository's index is not cached.
    #[error("no cached repository for {repo} found. (try 'helm repo update'): {error}")]
    NoCachedRepository {
        /// The cache name.
        repo: String,
        /// The fetcher's error.
        error: FetchError,
    },
    /// The index has no chart of that name.
    #[error("{name} chart not found in repo {repo}")]
    ChartNotInRepo {
        /// The chart.
        name: String,
        /// The repository.
        repo: String,
    },
    /// OCI tags could not be listed.
    #[error("could not retrieve list of tags for repository {repo}: {error}")]
    Tags {
        /// The repository.
        repo: String,
        /// The fetcher's error.
        error: FetchError,
    },
    /// The chart's URL could not be found (no such chart or version).
    #[error("could not find {url}: {error}")]
    Find {
        /// The chart URL (empty when not found, as in Helm).
        url: String,
        /// The fetcher's error.
        error: FetchError,
    },
    /// A download failed.
    #[error("could not download {url}: {error}")]
    Download {
        /// The chart URL.
        url: String,
        /// The fetcher's error.
        error: FetchError,
    },
    /// The fetcher could not read `repositories.yaml` or an index.
    #[error("{0}")]
    Repositories(FetchError),
    /// `charts` exists and is not a directory.
    #[error("{} is not a directory", quote(.0))]
    ChartsNotADirectory(String),
    /// The lock file is a symbolic link (Helm 4 refuses to write through it).
    #[error("the {file} file is a symlink to {}", quote(.target))]
    LockIsSymlink {
        /// The lock file's name.
        file: &'static str,
        /// Where it points.
        target: String,
    },
    /// A `file://` dependency could not be packaged.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The digest could not be computed.
    #[error(transparent)]
    Digest(#[from] DigestError),
    /// A file operation failed.
    #[error("{op} {path}: {message}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
}

const NON_URL_NOTE: &str = "\nNote that repositories must be URLs or aliases. For example, to refer to the \"example\"\nrepository, use \"https://charts.example.com/\" or \"@example\" instead of\n\"example\". Don't forget to add the repo, too ('helm repo add').";

fn io_err<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> DepsError + 'p {
    move |e| DepsError::Io {
        op,
        path: path.display().to_string(),
        message: os_message(&e),
    }
}

/// Go's text of an OS error (`no such file or directory`).
fn os_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}

/// Go's `filepath.Join` of a chart path and a relative path, cleaned.
fn join(base: &str, rel: &str) -> String {
    clean(&format!("{base}/{rel}"))
}

/// Go's `filepath.Clean`.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Helm's `resolver.GetLocalPath`: a `file://` repository (or
/// `charts/<name>`) as a path: absolute when it starts with `/`, else
/// relative to the chart.
pub fn local_path(repo: &str, chart_path: &str) -> Result<String, DepsError> {
    let p = repo.strip_prefix("file://").unwrap_or(repo);
    let dep_path = if p.starts_with('/') {
        clean(p)
    } else {
        join(chart_path, p)
    };
    match std::fs::metadata(&dep_path) {
        Ok(_) => Ok(dep_path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(DepsError::LocalPathNotFound(dep_path))
        }
        Err(e) => Err(DepsError::Io {
            op: "stat",
            path: dep_path,
            message: os_message(&e),
        }),
    }
}

/// Whether `repo` is an OCI reference (`oci://`).
pub fn is_oci(repo: &str) -> bool {
    repo.starts_with("oci://")
}

/// Helm's `urlutil.Equal`: two URLs are the same once their paths are
/// cleaned (an empty path is `/`, a trailing slash does not count).
pub fn url_equal(a: &str, b: &str) -> bool {
    fn norm(u: &str) -> Option<String> {
        let (scheme, rest) = match u.split_once("://") {
            Some((s, r)) if !s.is_empty() => (Some(s), r),
            _ => (None, u),
        };
        let (auth, tail) = match scheme {
            Some(_) => match rest.find(['/', '?', '#']) {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            },
            None => ("", rest),
        };
        let (path, query) = match tail.find(['?', '#']) {
            Some(i) => (&tail[..i], &tail[i..]),
            None => (tail, ""),
        };
        if path.contains(' ') || auth.contains(' ') {
            return None;
        }
        let path = if path.is_empty() { "/" } else { path };
        Some(format!(
            "{}{auth}{}{query}",
            scheme
                .map(|s| format!("{}://", s.to_lowercase()))
                .unwrap_or_default(),
            clean(path)
        ))
    }
    match (norm(a), norm(b)) {
        (Some(x), Some(y)) => x == y,
        _ => clean(a) == clean(b),
    }
}

/// Go's `url.ParseRequestURI(s)` succeeds: an absolute URI (a scheme) or
/// an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.starts_with('/') {
        return true;
    }
    let Some(i) = s.find(':') else { return false };
    let scheme = &s[..i];
    let mut chars = scheme.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !s.contains(' ')
}

/// The cache name Helm gives a repository URL that is not in
/// `repositories.yaml`: `helm-manager-` and the SHA-256 of the URL.
pub fn manager_cache_name(url: &str) -> String {
    use sha2::Digest;
    let sum = sha2::Sha256::digest(url.as_bytes());
    let mut s = String::from("helm-manager-");
    for b in sum {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn constraint(d: &Dependency) -> Result<Constraints, String> {
    Constraints::parse(&d.version).map_err(|e| e.to_string())
}

/// A load error that names the file as `safeMoveDeps` names it (the path
/// as joined, not made absolute as the chart loader names it), e.g. a
/// `.prov` that `--verify` left in `tmpcharts-<pid>`.
fn named_as_given(e: LoadError, path: &str) -> LoadError {
    match e {
        LoadError::NotGzip { content_type, .. } => LoadError::NotGzip {
            path: path.to_string(),
            content_type,
        },
        LoadError::YamlNotArchive(_) => LoadError::YamlNotArchive(path.to_string()),
        e => e,
    }
}

/// How Helm names a download in `could not download URL`: the chart URL;
/// for a registry, without its tag (Helm's `parseOCIRef`).
fn download_name(oci: bool, churl: String) -> String {
    match verify::split_oci_tag(&churl) {
        Some((reference, _)) if oci => reference.to_string(),
        _ => churl,
    }
}

/// A remote dependency's source and chart URL, owned.
#[derive(Debug)]
struct PlannedDownload {
    oci: bool,
    repo_url: String,
    cache_name: String,
    managed: bool,
    url: Result<String, FetchError>,
}

impl PlannedDownload {
    fn source(&self) -> RemoteSource<'_> {
        if self.oci {
            RemoteSource::Oci(&self.repo_url)
        } else {
            RemoteSource::Repo {
                url: &self.repo_url,
                cache_name: &self.cache_name,
                managed: self.managed,
            }
        }
    }
}

/// `helm dependency update` and `build` on one chart directory.
pub struct Manager<'a> {
    /// The chart directory, cleaned as Helm cleans its argument.
    pub chart_path: String,
    /// Do not refresh repository indexes first (`--skip-refresh`).
    pub skip_update: bool,
    /// Print what Helm prints with `--debug`.
    pub debug: bool,
    /// Repositories, indexes and downloads.
    pub fetcher: &'a dyn Fetcher,
    /// Where progress lines go (Helm prints them on stdout).
    pub out: &'a mut dyn Write,
}

impl std::fmt::Debug for Manager<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("chart_path", &self.chart_path)
            .field("skip_update", &self.skip_update)
            .field("debug", &self.debug)
            .finish_non_exhaustive()
    }
}

/// What [`Manager::update`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateOutcome {
    /// The lock, as resolved (written or not).
    pub lock: Option<Lock>,
    /// Whether the lock file was written (it is not when its digest did
    /// not change, as in Helm).
    pub lock_written: bool,
}

use serde::{Deserialize, Serialize};

impl Manager<'_> {
    fn say(&mut self, line: &str) {
        let _ = self.out.write_all(line.as_bytes());
    }

    fn load_chart_dir(&self) -> Result<Chart, DepsError> {
        let p = Path::new(&self.chart_path);
        match std::fs::metadata(p) {
            Err(e) => Err(DepsError::ChartNotFound {
                path: self.chart_path.clone(),
                message: os_message(&e),
            }),
            Ok(m) if !m.is_dir() => Err(DepsError::NotUnpacked),
            Ok(_) => Ok(crate::chart::load_dir(p)?),
        }
    }

    fn repositories(&self) -> Result<Vec<RepoRef>, DepsError> {
        Ok(self
            .fetcher
            .repositories()
            .map_err(DepsError::Repositories)?
            .unwrap_or_default())
    }

    /// Helm's `Update`: resolve, fetch into `charts/`, write the lock when
    /// its digest changed. A chart without dependencies is left alone.
    pub fn update(&mut self) -> Result<UpdateOutcome, DepsError> {
        let c = self.load_chart_dir()?;
        let mut req = c.metadata.dependencies.clone();
        if req.is_empty() {
            return Ok(UpdateOutcome {
                lock: None,
                lock_written: false,
            });
        }
        let repos = self.repositories()?;
        let mut repo_names = self.resolve_repo_names(&mut req, &repos)?;
        self.ensure_missing_repos(&mut repo_names, &req);
        if !self.skip_update {
            self.prefetch(&req, &repo_names, &repos);
            self.update_repositories(&repos);
        }
        let mut lock = self.resolve(&req, &repo_names)?;
        self.download_all(&mut lock.dependencies, &repos)?;
        lock.digest = hash_req(&req, &lock.dependencies)?;
        if c.lock.as_ref().is_some_and(|old| old.digest == lock.digest) {
            return Ok(UpdateOutcome {
                lock: Some(lock),
                lock_written: false,
            });
        }
        self.write_lock(&lock, &c.metadata.api_version)?;
        Ok(UpdateOutcome {
            lock: Some(lock),
            lock_written: true,
        })
    }

    /// Helm's `Build`: fetch the versions of the lock into `charts/`; with
    /// no lock, [`Manager::update`]. A lock whose digest does not match
    /// the dependencies is refused.
    pub fn build(&mut self) -> Result<(), DepsError> {
        let c = self.load_chart_dir()?;
        let Some(lock) = c.lock.clone() else {
            return self.update().map(|_| ());
        };
        let mut req = c.metadata.dependencies.clone();
        let v1 = c.metadata.api_version == "v1";
        let out_of_sync = DepsError::OutOfSync {
            lock: lock_file_name(&c.metadata.api_version),
            deps: if v1 {
                "requirements.yaml"
            } else {
                "Chart.yaml"
            },
        };
        let v2_sum = if v1 { Some(hash_v2_req(&req)?) } else { None };
        let repos = self.repositories()?;
        self.resolve_repo_names(&mut req, &repos)?;
        let sum = hash_req(&req, &lock.dependencies)?;
        if sum != lock.digest {
            match v2_sum {
                Some(v2) => {
                    // Helm 3 logs it with `log.Lshortfile`.
                    eprintln!(
                        "manager.go:122: warning: a valid Helm v3 hash was not found. Checking against Helm v2 hash..."
                    );
                    if v2 != lock.digest {
                        return Err(out_of_sync);
                    }
                }
                None => return Err(out_of_sync),
            }
        }
        self.has_all_repos(&lock.dependencies, &repos)?;
        if !self.skip_update {
            self.update_repositories(&repos);
        }
        let mut deps = lock.dependencies.clone();
        self.download_all(&mut deps, &repos)
    }

    /// Helm's `resolveRepoNames`: the cache name of each dependency's
    /// repository, by dependency name (or by URL for a URL that is not in
    /// `repositories.yaml`); `@NAME`/`alias:NAME` repositories are
    /// replaced by their URLs in `deps`.
    fn resolve_repo_names(
        &mut self,
        deps: &mut [Dependency],
        repos: &[RepoRef],
    ) -> Result<BTreeMap<String, String>, DepsError> {
        let mut names = BTreeMap::new();
        let mut missing = Vec::new();
        for dd in deps.iter_mut() {
            if dd.repository.is_empty() {
                continue;
            }
            if dd.repository.starts_with("file://") {
                local_path(&dd.repository, &self.chart_path)?;
                if self.debug {
                    self.say(&format!("Repository from local path: {}\n", dd.repository));
                }
                names.insert(dd.name.clone(), dd.repository.clone());
                continue;
            }
            if is_oci(&dd.repository) {
                names.insert(dd.name.clone(), dd.repository.clone());
                continue;
            }
            let alias = dd
                .repository
                .strip_prefix('@')
                .or_else(|| dd.repository.strip_prefix("alias:"));
            let mut found = false;
            for r in repos {
                if alias.is_some_and(|a| a == r.name) {
                    dd.repository = r.url.clone();
                    names.insert(dd.name.clone(), r.name.clone());
                    found = true;
                    break;
                } else if url_equal(&r.url, &dd.repository) {
                    names.insert(dd.name.clone(), r.name.clone());
                    found = true;
                    break;
                }
            }
            if !found {
                if is_request_uri(&dd.repository) {
                    names.insert(dd.repository.clone(), dd.repository.clone());
                    continue;
                }
                missing.push(dd.repository.clone());
            }
        }
        if !missing.is_empty() {
            let note = missing
                .iter()
                .any(|r| !r.contains("//") && !r.starts_with('@') && !r.starts_with("alias:"));
            return Err(DepsError::NoRepositoryDefinition { missing, note });
        }
        Ok(names)
    }

    /// Helm's `ensureMissingRepos`: a URL not in `repositories.yaml` gets
    /// the cache name `helm-manager-<sha256>`, and its index is refreshed.
    fn ensure_missing_repos(&mut self, names: &mut BTreeMap<String, String>, deps: &[Dependency]) {
        let mut targets = Vec::new();
        for dd in deps {
            if dd.repository.is_empty() || names.contains_key(&dd.name) {
                continue;
            }
            let rn = manager_cache_name(&dd.repository);
            names.insert(dd.name.clone(), rn.clone());
            targets.push(RefreshTarget {
                cache_name: rn,
                url: dd.repository.clone(),
                managed: false,
            });
        }
        if !self.skip_update && !targets.is_empty() {
            self.say("Getting updates for unmanaged Helm repositories...\n");
            self.refresh(&targets, &[]);
        }
    }

    fn refresh(&mut self, targets: &[RefreshTarget], repos: &[RepoRef]) {
        let results = self.fetcher.refresh(targets);
        for (t, r) in targets.iter().zip(results) {
            let name = repos
                .iter()
                .find(|r| r.name == t.cache_name)
                .map(|r| r.name.as_str());
            let line = match (r, name.filter(|_| t.managed)) {
                (Ok(()), Some(n)) => format!(
                    "...Successfully got an update from the {} chart repository\n",
                    quote(n)
                ),
                (Ok(()), None) => format!(
                    "...Successfully got an update from the {} chart repository\n",
                    quote(&t.url)
                ),
                (Err(e), Some(n)) => format!(
                    "...Unable to get an update from the {} chart repository ({}):\n\t{e}\n",
                    quote(n),
                    t.url
                ),
                (Err(e), None) => format!(
                    "...Unable to get an update from the {} chart repository:\n\t{e}\n",
                    quote(&t.url)
                ),
            };
            self.say(&line);
        }
    }

    /// Tells the fetcher what the dependencies from repositories of
    /// `repositories.yaml` resolve to in the cached indexes, so that it can
    /// download them while it refreshes those indexes
    /// ([`Fetcher::prefetch`]; it keeps a download only if the refreshed
    /// index agrees). Nothing is printed and nothing fails here: the
    /// resolution that counts is made after the refresh.
    fn prefetch(
        &mut self,
        req: &[Dependency],
        names: &BTreeMap<String, String>,
        repos: &[RepoRef],
    ) {
        let remote: Vec<Dependency> = req
            .iter()
            .filter(|d| {
                !d.repository.is_empty()
                    && !d.repository.starts_with("file://")
                    && !is_oci(&d.repository)
                    && repos.iter().any(|r| url_equal(&d.repository, &r.url))
            })
            .cloned()
            .collect();
        if remote.is_empty() {
            return;
        }
        let Ok(lock) = self.resolve(&remote, names) else {
            return;
        };
        let plans: Vec<(&Dependency, PlannedDownload)> = lock
            .dependencies
            .iter()
            .filter_map(|d| {
                let r = repos.iter().find(|r| url_equal(&d.repository, &r.url))?;
                let mut p = PlannedDownload {
                    oci: false,
                    repo_url: d.repository.clone(),
                    cache_name: r.name.clone(),
                    managed: true,
                    url: Ok(String::new()),
                };
                p.url = self.fetcher.chart_url(p.source(), &d.name, &d.version);
                Some((d, p))
            })
            .collect();
        let requests: Vec<DownloadRequest<'_>> = plans
            .iter()
            .filter_map(|(d, p)| {
                Some(DownloadRequest {
                    source: p.source(),
                    chart: &d.name,
                    version: &d.version,
                    url: p.url.as_deref().ok()?,
                })
            })
            .collect();
        self.fetcher.prefetch(&requests);
    }

    /// Helm's `UpdateRepositories`: refresh every repository of
    /// `repositories.yaml`.
    fn update_repositories(&mut self, repos: &[RepoRef]) {
        if repos.is_empty() {
            return;
        }
        self.say("Hang tight while we grab the latest from your chart repositories...\n");
        let targets: Vec<RefreshTarget> = repos
            .iter()
            .map(|r| RefreshTarget {
                cache_name: r.name.clone(),
                url: r.url.clone(),
                managed: true,
            })
            .collect();
        self.refresh(&targets, repos);
        self.say("Update Complete. \u{2388}Happy Helming!\u{2388}\n");
    }

    /// Helm's `hasAllRepos` (`dependency build`): every repository of the
    /// lock must be in `repositories.yaml` (URLs compared as Helm does).
    fn has_all_repos(&self, deps: &[Dependency], repos: &[RepoRef]) -> Result<(), DepsError> {
        let missing: Vec<String> = deps
            .iter()
            .filter(|d| {
                !(d.repository.is_empty()
                    || d.repository.starts_with("file://")
                    || is_oci(&d.repository))
            })
            .filter(|d| {
                let want = d.repository.strip_suffix('/').unwrap_or(&d.repository);
                !repos.iter().any(|r| url_equal(&r.url, want))
            })
            .map(|d| d.repository.clone())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(DepsError::RepoNotFound(missing))
        }
    }

    /// Helm's `Resolver.Resolve`: a lock with each dependency at the first
    /// version (newest first) that satisfies its constraint.
    fn resolve(
        &mut self,
        reqs: &[Dependency],
        names: &BTreeMap<String, String>,
    ) -> Result<Lock, DepsError> {
        let mut locked: Vec<Dependency> = Vec::with_capacity(reqs.len());
        let mut missing = Vec::new();
        let missing_text = |d: &Dependency| {
            format!(
                "{} (repository {}, version {})",
                quote(&d.name),
                quote(&d.repository),
                quote(&d.version)
            )
        };
        let lock_dep = |d: &Dependency, version: String| Dependency {
            name: d.name.clone(),
            repository: d.repository.clone(),
            version,
            ..Default::default()
        };
        for d in reqs {
            let c = constraint(d).map_err(|message| DepsError::InvalidConstraint {
                name: d.name.clone(),
                message,
            })?;
            if d.repository.is_empty() {
                local_path(&format!("charts/{}", d.name), &self.chart_path)?;
                locked.push(lock_dep(d, d.version.clone()));
                continue;
            }
            if d.repository.starts_with("file://") {
                let path = local_path(&d.repository, &self.chart_path)?;
                let ch = crate::chart::load_dir(&path)?;
                match parse_version(&ch.metadata.version) {
                    Ok(v) if c.check(&v) => {
                        locked.push(lock_dep(d, ch.metadata.version.clone()));
                    }
                    _ => {
                        missing.push(missing_text(d));
                        locked.push(lock_dep(d, String::new()));
                    }
                }
                continue;
            }
            let repo_name = names.get(&d.name).cloned().unwrap_or_default();
            if repo_name.is_empty() {
                locked.push(lock_dep(d, d.version.clone()));
                continue;
            }
            let oci = is_oci(&d.repository);
            let versions: Vec<IndexVersion> = if !oci {
                match self.fetcher.index_versions(&repo_name, &d.name) {
                    Err(error) => {
                        return Err(DepsError::NoCachedRepository {
                            repo: repo_name,
                            error,
                        })
                    }
                    Ok(None) => {
                        return Err(DepsError::ChartNotInRepo {
                            name: d.name.clone(),
                            repo: d.repository.clone(),
                        })
                    }
                    Ok(Some(v)) => v,
                }
            } else if parse_version(&d.version).is_ok() {
                vec![IndexVersion {
                    version: d.version.clone(),
                    has_urls: true,
                }]
            } else {
                let repo = d.repository.trim_start_matches("oci://");
                let tags = self
                    .fetcher
                    .oci_tags(&d.repository, &d.name)
                    .map_err(|error| DepsError::Tags {
                        repo: format!("{repo}/{}", d.name),
                        error,
                    })?;
                tags.into_iter()
                    .map(|t| IndexVersion {
                        version: t,
                        has_urls: true,
                    })
                    .collect()
            };
            let found = versions
                .iter()
                .find_map(|iv| match parse_version(&iv.version) {
                    Ok(v) if (oci || iv.has_urls) && c.check(&v) => Some(v.original.clone()),
                    _ => None,
                });
            match found {
                Some(v) => locked.push(lock_dep(d, v)),
                None => {
                    missing.push(missing_text(d));
                    locked.push(lock_dep(d, String::new()));
                }
            }
        }
        if !missing.is_empty() {
            return Err(DepsError::NoValidVersion(missing));
        }
        let digest = hash_req(reqs, &locked)?;
        Ok(Lock {
            generated: generated_now(),
            digest,
            dependencies: locked,
        })
    }

    /// Helm's `downloadAll`: every dependency into `tmpcharts-<pid>`, then
    /// moved into `charts/` when all succeeded (outdated archives deleted);
    /// on failure `charts/` is left as it was.
    fn download_all(
        &mut self,
        deps: &mut [Dependency],
        repos: &[RepoRef],
    ) -> Result<(), DepsError> {
        self.fetcher
            .load_indexes(repos)
            .map_err(DepsError::Repositories)?;
        let dest = join(&self.chart_path, "charts");
        let tmp = join(
            &self.chart_path,
            &format!("tmpcharts-{}", std::process::id()),
        );
        match std::fs::metadata(&dest) {
            Ok(m) if !m.is_dir() => return Err(DepsError::ChartsNotADirectory(dest)),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&dest).map_err(io_err("mkdir", Path::new(&dest)))?;
            }
            Err(e) => {
                return Err(DepsError::Io {
                    op: "unable to retrieve file info for",
                    path: dest,
                    message: os_message(&e),
                })
            }
        }
        std::fs::create_dir_all(&tmp).map_err(io_err("mkdir", Path::new(&tmp)))?;
        let r = self.download_into(deps, &dest, &tmp);
        let _ = std::fs::remove_dir_all(&tmp);
        r
    }

    fn download_into(
        &mut self,
        deps: &mut [Dependency],
        dest: &str,
        tmp: &str,
    ) -> Result<(), DepsError> {
        let (mut plans, mut fetched) = self.plan_downloads(deps)?;
        self.say(&format!("Saving {} charts\n", deps.len()));
        let mut save_error: Option<DepsError> = None;
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for (dep_index, dep) in deps.iter_mut().enumerate() {
            if dep.repository.is_empty() {
                self.say(&format!(
                    "Dependency {} did not declare a repository. Assuming it exists in the charts directory\n",
                    dep.name
                ));
                let path = join(dest, &dep.name);
                let ch = crate::chart::load_dir(&path).map_err(|error| DepsError::LocalChart {
                    path: path.clone(),
                    error,
                })?;
                let c =
                    constraint(dep).map_err(|message| DepsError::InvalidConstraintUnquoted {
                        name: dep.name.clone(),
                        message,
                    })?;
                let v =
                    parse_version(&ch.metadata.version).map_err(|e| DepsError::InvalidVersion {
                        version: dep.version.clone(),
                        name: dep.name.clone(),
                        message: e.to_string(),
                    })?;
                if !c.check(&v) {
                    save_error = Some(DepsError::Unsatisfied {
                        name: dep.name.clone(),
                        version: ch.metadata.version.clone(),
                        constraint: dep.version.clone(),
                    });
                    break;
                }
                continue;
            }
            if dep.repository.starts_with("file://") {
                if self.debug {
                    self.say(&format!(
                        "Archiving {} from repo {}\n",
                        dep.name, dep.repository
                    ));
                }
                match self.tar_from_local_dir(dep, tmp) {
                    Ok(v) => dep.version = v,
                    Err(e) => {
                        save_error = Some(e);
                        break;
                    }
                }
                continue;
            }
            let Some(plan) = plans.get_mut(&dep_index) else {
                continue;
            };
            let churl = match std::mem::replace(&mut plan.url, Ok(String::new())) {
                Ok(u) => u,
                Err(error) => {
                    save_error = Some(DepsError::Find {
                        url: String::new(),
                        error,
                    });
                    break;
                }
            };
            if !seen.insert(churl.clone()) {
                self.say(&format!(
                    "Already downloaded {} from repo {}\n",
                    dep.name, dep.repository
                ));
                continue;
            }
            self.say(&format!(
                "Downloading {} from repo {}\n",
                dep.name, dep.repository
            ));
            let got = fetched
                .remove(&churl)
                .unwrap_or_else(|| Err("the download was not planned".into()));
            match got {
                Ok(f) => {
                    let name = Path::new(&f.file_name)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| format!("{}-{}.tgz", dep.name, dep.version));
                    let path = Path::new(tmp).join(name);
                    crate::fsutil::replace_file(&path, &f.archive, crate::fsutil::Mode::SHARED)
                        .map_err(|e| DepsError::Io {
                            op: e.op,
                            path: e.path.display().to_string(),
                            message: os_message(&e.error),
                        })?;
                    let request = DownloadRequest {
                        source: plan.source(),
                        chart: &dep.name,
                        version: &dep.version,
                        url: &churl,
                    };
                    let kept = self
                        .fetcher
                        .verify_download(&request, &path, self.out)
                        .and_then(|()| self.fetcher.keep(&path, &f));
                    if let Err(error) = kept {
                        save_error = Some(DepsError::Download {
                            url: download_name(plan.oci, churl),
                            error,
                        });
                        break;
                    }
                }
                Err(error) => {
                    save_error = Some(DepsError::Download {
                        url: download_name(plan.oci, churl),
                        error,
                    });
                    break;
                }
            }
        }
        if let Some(e) = save_error {
            self.say(&format!("Save error occurred:  {e}\n"));
            return Err(e);
        }
        self.safe_move_deps(deps, tmp, dest)
    }

    /// Where each remote dependency comes from and its chart URL (Helm's
    /// `findChartURL`), then every distinct chart downloaded at once, so
    /// that the downloads run in parallel; the loop of
    /// [`Manager::download_into`] then reports them in Helm's order.
    #[allow(clippy::type_complexity)]
    fn plan_downloads(
        &mut self,
        deps: &[Dependency],
    ) -> Result<
        (
            BTreeMap<usize, PlannedDownload>,
            BTreeMap<String, Result<Fetched, FetchError>>,
        ),
        DepsError,
    > {
        let mut plans = BTreeMap::new();
        let remote: Vec<usize> = deps
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.repository.is_empty() && !d.repository.starts_with("file://"))
            .map(|(i, _)| i)
            .collect();
        if remote.is_empty() {
            return Ok((plans, BTreeMap::new()));
        }
        let repos = self.repositories()?;
        for i in remote {
            let d = &deps[i];
            let known = repos.iter().find(|r| url_equal(&d.repository, &r.url));
            let mut p = PlannedDownload {
                oci: is_oci(&d.repository),
                repo_url: d.repository.clone(),
                cache_name: match known {
                    Some(r) => r.name.clone(),
                    None => manager_cache_name(&d.repository),
                },
                managed: known.is_some(),
                url: Ok(String::new()),
            };
            p.url = self.fetcher.chart_url(p.source(), &d.name, &d.version);
            plans.insert(i, p);
        }
        let mut wanted: Vec<(usize, String)> = Vec::new();
        for (i, p) in &plans {
            if let Ok(u) = &p.url {
                if !wanted.iter().any(|(_, w)| w == u) {
                    wanted.push((*i, u.clone()));
                }
            }
        }
        let requests: Vec<DownloadRequest<'_>> = wanted
            .iter()
            .filter_map(|(i, u)| {
                let p = plans.get(i)?;
                Some(DownloadRequest {
                    source: p.source(),
                    chart: &deps[*i].name,
                    version: &deps[*i].version,
                    url: u,
                })
            })
            .collect();
        let answers = self.fetcher.download_all(&requests);
        let fetched = wanted.into_iter().map(|(_, u)| u).zip(answers).collect();
        Ok((plans, fetched))
    }

    /// Helm's `tarFromLocalDir`: package a `file://` chart into `dest` if
    /// its version satisfies the constraint; returns the version.
    fn tar_from_local_dir(&mut self, dep: &Dependency, dest: &str) -> Result<String, DepsError> {
        let orig = local_path(&dep.repository, &self.chart_path)?;
        let ch = crate::chart::load_dir(&orig)?;
        let c = constraint(dep).map_err(|message| DepsError::InvalidConstraintUnquoted {
            name: dep.name.clone(),
            message,
        })?;
        let v =
            parse_version(&ch.metadata.version).map_err(|e| DepsError::Semver(e.to_string()))?;
        if !c.check(&v) {
            return Err(DepsError::NoValidLocalVersion(dep.name.clone()));
        }
        let times = ModTimes::from_dir(&ch, Path::new(&orig));
        let bytes = helm_archive(&ch, &times)?;
        let path =
            Path::new(dest).join(format!("{}-{}.tgz", ch.metadata.name, ch.metadata.version));
        crate::fsutil::replace_file(&path, &bytes, crate::fsutil::Mode::SHARED).map_err(|e| {
            DepsError::Io {
                op: e.op,
                path: e.path.display().to_string(),
                message: os_message(&e.error),
            }
        })?;
        Ok(ch.metadata.version)
    }

    /// Helm's `safeMoveDeps`: each chart archive of `source` moved into
    /// `dest`, then every other chart archive of `dest` deleted, except
    /// those of dependencies without a repository.
    fn safe_move_deps(
        &mut self,
        deps: &[Dependency],
        source: &str,
        dest: &str,
    ) -> Result<(), DepsError> {
        let files = |dir: &str| -> Result<Vec<String>, DepsError> {
            let mut v = Vec::new();
            for e in std::fs::read_dir(dir).map_err(io_err("open", Path::new(dir)))? {
                let e = e.map_err(io_err("readdirent", Path::new(dir)))?;
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    continue;
                }
                v.push(e.file_name().to_string_lossy().into_owned());
            }
            v.sort();
            Ok(v)
        };
        let source_files = files(source)?;
        let dest_files = files(dest)?;
        let local: BTreeSet<&str> = deps
            .iter()
            .filter(|d| d.repository.is_empty())
            .map(|d| d.name.as_str())
            .collect();
        // Every archive is loaded (Helm's check before a move, and to learn
        // the name of one it may delete) on a few threads at once; what is
        // done with each answer stays in Helm's order.
        let outdated: Vec<&String> = dest_files
            .iter()
            .filter(|f| !source_files.contains(f))
            .collect();
        let loaded = |path: &String| {
            crate::chart::load_file(path)
                .map(|c| c.metadata.name)
                .map_err(|e| named_as_given(e, path))
        };
        let paths: Vec<String> = source_files
            .iter()
            .map(|f| join(source, f))
            .chain(outdated.iter().map(|f| join(dest, f)))
            .collect();
        let mut names = crate::par::map_claimed(&paths, 2, loaded).into_iter();
        let mut in_source = BTreeSet::new();
        for f in &source_files {
            let from = join(source, f);
            let to = join(dest, f);
            in_source.insert(f.clone());
            let name = names.next().unwrap_or_else(|| loaded(&from));
            if let Err(e) = name {
                self.say(&format!(
                    "Could not verify {from} for moving: {e} (Skipping)"
                ));
                continue;
            }
            if let Err(e) = std::fs::rename(&from, &to) {
                self.say(&format!(
                    "Unable to move {from} to charts dir {} (Skipping)",
                    os_message(&e)
                ));
                continue;
            }
        }
        self.say("Deleting outdated charts\n");
        for f in outdated {
            let path = join(dest, f);
            let name = match names.next().unwrap_or_else(|| loaded(&path)) {
                Ok(n) => n,
                Err(e) => {
                    self.say(&format!(
                        "Could not verify {path} for deletion: {e} (Skipping)\n"
                    ));
                    continue;
                }
            };
            if local.contains(name.as_str()) {
                continue;
            }
            if let Err(e) = std::fs::remove_file(&path) {
                self.say(&format!(
                    "Could not delete {path}: {} (Skipping)",
                    os_message(&e)
                ));
            }
        }
        Ok(())
    }

    /// Helm's `writeLock` (with Helm 4's refusal of a symlinked lock file):
    /// the lock's YAML, mode 0644, written atomically.
    fn write_lock(&mut self, lock: &Lock, api_version: &str) -> Result<(), DepsError> {
        let name = lock_file_name(api_version);
        let path = PathBuf::from(join(&self.chart_path, name));
        if let Ok(m) = std::fs::symlink_metadata(&path) {
            if m.file_type().is_symlink() {
                let target = std::fs::read_link(&path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                return Err(DepsError::LockIsSymlink { file: name, target });
            }
        }
        crate::fsutil::atomic_write(
            &path,
            lock_text(lock).as_bytes(),
            crate::fsutil::Mode::Umask(0o644),
        )
        .map_err(|e| DepsError::Io {
            op: e.op,
            path: e.path.display().to_string(),
            message: os_message(&e.error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_compare_as_helm() {
        assert!(url_equal("https://a/charts", "https://a/charts/"));
        assert!(url_equal("https://a", "https://a/"));
        assert!(!url_equal("https://a/x", "https://b/x"));
        assert!(is_request_uri("https://x"));
        assert!(is_request_uri("/abs"));
        assert!(!is_request_uri("stable"));
        assert!(!is_request_uri("1http://x"));
    }

    #[test]
    fn paths_clean_as_go() {
        assert_eq!(clean("./a/../b/"), "b");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean("/../x"), "/x");
        assert_eq!(join(".", "charts"), "charts");
    }
}
