//! From a chart argument to a chart: Helm's `LocateChart` and
//! `ChartDownloader`, with rudder's content-addressed cache.
//!
//! A directory or archive on disk is loaded where it is. `REPO/CHART` is
//! looked up in the repository's cached index (what `repo update` last
//! fetched), `CHART --repo URL` in that URL's index, fetched for the call;
//! `https://` URLs are downloaded as they are, and `oci://` references are
//! pulled from their registry. A version constraint picks the version as
//! Helm's `IndexFile.Get` does; a download is checked against its index's
//! digest, and a chart whose digest is already cached is not downloaded.
//! Many references resolve at once ([`fetch_all`]): their downloads run in
//! parallel.
//!
//! ```no_run
//! use rudder::source::resolve::{load_chart, LocateOptions};
//! let opts = LocateOptions { version: "1.16.x".into(), ..LocateOptions::from_env() };
//! let chart = load_chart("jetstack/cert-manager", &opts)?;
//! println!("{} {}", chart.metadata.name, chart.metadata.version);
//! # Ok::<(), rudder::source::resolve::SourceError>(())
//! ```
use crate::chart::{Chart, LoadError};
#[cfg(feature = "remote")]
use crate::source::cache::check_digest;
use crate::source::cache::{ContentCache, DigestMismatch};
use crate::source::index::{IndexError, IndexFile};
use crate::source::paths::HelmPaths;
use crate::source::reference::{parse_arg, ChartRef, RefError};
use crate::source::repofile::{RepoFile, RepoFileError};
use std::path::PathBuf;

#[cfg(feature = "remote")]
use crate::source::http::{self, Getter, HttpError, HttpOptions};

/// How to find a chart: Helm's chart-path flags.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocateOptions {
    /// A version or Masterminds constraint (`1.2.3`, `~1.2`, `>=1, <2`);
    /// empty: the newest version that is not a pre-release.
    pub version: String,
    /// Count pre-releases when `version` is empty (`--devel`).
    pub devel: bool,
    /// Look the chart up in the repository at this URL (`--repo`).
    pub repo_url: Option<String>,
    /// Credentials and TLS for `--repo` and chart URLs (a named
    /// repository uses its `repositories.yaml` entry's).
    #[cfg(feature = "remote")]
    pub http: HttpOptions,
    /// Talk to OCI registries over plain HTTP (`--plain-http`).
    pub plain_http: bool,
    /// Check the chart's provenance file against [`Self::keyring`]
    /// (`--verify`); a chart without one is refused.
    pub verify: bool,
    /// Fetch the provenance file without verifying it (`pull --prov`).
    pub prov: bool,
    /// The keyring `--verify` uses (`--keyring`; default Helm's,
    /// `~/.gnupg/pubring.gpg`).
    pub keyring: Option<PathBuf>,
    /// Helm's file locations.
    pub paths: HelmPaths,
}

impl LocateOptions {
    /// Defaults, with Helm's files where the environment says they are.
    pub fn from_env() -> LocateOptions {
        LocateOptions {
            version: String::new(),
            devel: false,
            repo_url: None,
            #[cfg(feature = "remote")]
            http: HttpOptions::default(),
            plain_http: false,
            verify: false,
            prov: false,
            keyring: None,
            paths: HelmPaths::from_env(),
        }
    }

    /// The constraint Helm passes to `IndexFile.Get`: `--devel` with no
    /// version is `>0.0.0-0`.
    pub fn constraint(&self) -> String {
        let v = self.version.trim();
        if v.is_empty() && self.devel {
            ">0.0.0-0".to_string()
        } else {
            v.to_string()
        }
    }
}

/// Why a chart could not be found or fetched. Each names what it was
/// looking for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The argument names no chart.
    #[error(transparent)]
    Ref(#[from] RefError),
    /// `repositories.yaml` could not be read.
    #[error(transparent)]
    RepoFile(#[from] RepoFileError),
    /// `REPO/CHART` names a repository that `repo add` did not add.
    #[error("repo {0} not found")]
    RepoNotFound(String),
    /// The repository's index is not in the cache.
    #[error("no cached repo found. (try 'rudder repo update'): {path}: {message}")]
    NoCachedIndex {
        /// The index file looked for.
        path: PathBuf,
        /// The cause.
        message: String,
    },
    /// The index could not be read.
    #[error(transparent)]
    Index(Box<IndexError>),
    /// The chart or version is not in a named repository's index.
    #[error("chart {chart:?} matching {version} not found in {repo} index. (try 'rudder repo update'): {source}")]
    NotInRepo {
        /// The chart.
        chart: String,
        /// The version or constraint.
        version: String,
        /// The repository.
        repo: String,
        /// The index's answer.
        source: Box<IndexError>,
    },
    /// The chart or version is not in a `--repo` URL's index.
    #[error("chart {chart:?}{version} not found in {url} repository")]
    NotInRepoUrl {
        /// The chart.
        chart: String,
        /// ` version "X"` when one was asked for.
        version: String,
        /// The repository URL.
        url: String,
    },
    /// The index entry has no URL to download.
    #[error("chart {0:?} has no downloadable URLs")]
    NoUrls(String),
    /// A repository's index could not be fetched.
    #[cfg(feature = "remote")]
    #[error("looks like {url:?} is not a valid chart repository or cannot be reached: {source}")]
    Repository {
        /// The repository URL.
        url: String,
        /// The cause.
        source: Box<SourceError>,
    },
    /// A download failed.
    #[cfg(feature = "remote")]
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A registry pull failed.
    #[cfg(feature = "remote")]
    #[error(transparent)]
    Oci(#[from] crate::source::oci::OciError),
    /// A download did not match its digest.
    #[error(transparent)]
    Digest(#[from] DigestMismatch),
    /// The cache could not be written.
    #[error("chart cache {path}: {message}")]
    Cache {
        /// The cache directory.
        path: PathBuf,
        /// The cause.
        message: String,
    },
    /// The chart did not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The provenance file could not be fetched (Helm's message).
    #[error("failed to fetch provenance {0:?}")]
    NoProvenance(String),
    /// The chart's provenance does not verify.
    #[cfg(feature = "provenance")]
    #[error(transparent)]
    Provenance(#[from] crate::source::provenance::ProvenanceError),
    /// `--verify` in a build without feature `provenance`.
    #[error("--verify: this rudder was built without feature \"provenance\"")]
    NoVerify,
    /// A remote reference in a build without feature `remote`.
    #[error("{0}: charts from repositories and registries need rudder's feature \"remote\"")]
    NoRemote(String),
    /// The failure of an index that an earlier reference of the same
    /// [`fetch_each`] call needed too (fetched once): its message.
    #[error("{0}")]
    Again(String),
}

impl From<IndexError> for SourceError {
    fn from(e: IndexError) -> Self {
        SourceError::Index(Box::new(e))
    }
}

/// A chart archive fetched from a repository, a URL or a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The archive's bytes.
    pub archive: Vec<u8>,
    /// The file name `pull` saves it as (the URL's last segment, or
    /// `NAME-VERSION.tgz` for OCI).
    pub file_name: String,
    /// Where it came from.
    pub url: String,
    /// Its sha256, hex.
    pub digest: String,
    /// Whether it came from the cache rather than the network.
    pub cached: bool,
    /// The provenance file (`.prov`), when it was fetched (`--verify`, or
    /// a registry that had one).
    pub prov: Option<Vec<u8>>,
    /// With `--verify`: what `helm verify` prints of the signature (signer,
    /// fingerprint, hash).
    pub verified: Option<String>,
    /// For a chart from a registry: what `helm pull` prints of it.
    pub oci: Option<OciPulled>,
    /// Downloaded by [`fetch_all_deferred`] and not in the content cache
    /// yet: [`keep`] puts it there.
    pub uncached: bool,
}

/// What `helm pull oci://...` prints of a pulled chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciPulled {
    /// `host/path/name:tag` (after `Pulled:`).
    pub reference: String,
    /// The manifest's digest (after `Digest:`).
    pub manifest_digest: String,
}

/// Loads the chart `arg` names: a path as [`crate::chart::load`] does,
/// anything else fetched first.
pub fn load_chart(arg: &str, opts: &LocateOptions) -> Result<Chart, SourceError> {
    let r = parse_arg(arg, opts.repo_url.as_deref())?;
    if let ChartRef::Local { path } = &r {
        verify_local(path, opts)?;
        return Ok(crate::chart::load(path)?);
    }
    let f = fetch(&r, opts)?;
    Ok(crate::chart::load_archive(&f.archive)?)
}

/// Helm's `LocateChart`: the path of the chart `arg` names. A path is
/// returned as given; anything else is fetched (or found in the cache)
/// and the cached archive's path returned.
pub fn locate(arg: &str, opts: &LocateOptions) -> Result<PathBuf, SourceError> {
    let r = parse_arg(arg, opts.repo_url.as_deref())?;
    if let ChartRef::Local { path } = r {
        verify_local(&path, opts)?;
        return Ok(path);
    }
    let f = fetch(&r, opts)?;
    Ok(ContentCache::new(opts.paths.content_cache()).path(&f.digest))
}

/// Fetches one remote reference (a local one is read from disk).
pub fn fetch(r: &ChartRef, opts: &LocateOptions) -> Result<Fetched, SourceError> {
    fetch_all(std::slice::from_ref(r), opts)
        .pop()
        .unwrap_or_else(|| Err(SourceError::NoUrls(String::new())))
}

/// Fetches every reference, downloads in parallel; answers in order.
pub fn fetch_all(refs: &[ChartRef], opts: &LocateOptions) -> Vec<Result<Fetched, SourceError>> {
    fetch_pairs(refs.iter().map(|r| (r, opts)).collect(), true)
}

/// [`fetch_all`] for a caller that saves the archives itself (`pull -d`):
/// every download is checked (digest, the loader's limits) as by
/// [`fetch_all`], but a chart that was downloaded comes back with
/// [`Fetched::uncached`] set, not yet in the content cache; [`keep`] puts
/// it there, as a hard link to the file it was saved to.
pub fn fetch_all_deferred(
    refs: &[ChartRef],
    opts: &LocateOptions,
) -> Vec<Result<Fetched, SourceError>> {
    fetch_pairs(refs.iter().map(|r| (r, opts)).collect(), false)
}

/// Puts a chart of [`fetch_all_deferred`] into the content cache (nothing
/// to do for one that is there already): a hard link to `saved`, the file
/// the caller has just written the archive to whole, when the cache allows
/// it ([`ContentCache::put_linked`]); a copy otherwise.
pub fn keep(
    f: &Fetched,
    opts: &LocateOptions,
    saved: Option<&std::path::Path>,
) -> Result<(), SourceError> {
    if !f.uncached {
        return Ok(());
    }
    let cache = ContentCache::new(opts.paths.content_cache());
    let put = match saved {
        Some(path) => cache.put_linked_hashed(path, f.digest.clone(), &f.archive),
        None => cache.put(&f.archive),
    };
    put.map(|_| ()).map_err(|e| SourceError::Cache {
        path: cache.path(""),
        message: e.to_string(),
    })
}

/// [`fetch_all`] with options of each reference's own (its version, its
/// repository's credentials), as a releases file needs: the downloads of
/// all run in parallel, and a `--repo`-style repository's index is fetched
/// once for all the references that use it with the same options, the
/// indexes in parallel too. Answers in order.
pub fn fetch_each(reqs: &[(ChartRef, LocateOptions)]) -> Vec<Result<Fetched, SourceError>> {
    fetch_pairs(reqs.iter().map(|(r, o)| (r, o)).collect(), true)
}

/// `cache`: downloads go into the content cache (else the caller [`keep`]s
/// them).
fn fetch_pairs(
    reqs: Vec<(&ChartRef, &LocateOptions)>,
    cache: bool,
) -> Vec<Result<Fetched, SourceError>> {
    #[cfg(feature = "remote")]
    {
        remote::fetch_all(reqs, cache)
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = cache;
        reqs.into_iter()
            .map(|(r, _)| match r {
                ChartRef::Local { path } => read_local(path),
                other => Err(SourceError::NoRemote(describe(other))),
            })
            .collect()
    }
}

fn read_local(path: &std::path::Path) -> Result<Fetched, SourceError> {
    let archive = crate::input::read(path).map_err(|e| {
        SourceError::Load(LoadError::Io {
            op: "open",
            path: path.display().to_string(),
            message: crate::chart::loader::io_message(&e),
        })
    })?;
    Ok(Fetched {
        digest: crate::source::cache::sha256_hex(&archive),
        archive,
        file_name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        url: path.display().to_string(),
        cached: false,
        prov: None,
        verified: None,
        oci: None,
        uncached: false,
    })
}

/// Checks `f` against its provenance with the options' keyring.
#[cfg(feature = "remote")]
fn verify_fetched(f: &mut Fetched, opts: &LocateOptions) -> Result<(), SourceError> {
    #[cfg(feature = "provenance")]
    {
        use crate::source::provenance as p;
        let prov = f
            .prov
            .as_deref()
            .ok_or_else(|| SourceError::NoProvenance(format!("{}.prov", f.url)))?;
        let ring_path = opts.keyring.clone().unwrap_or_else(p::default_keyring);
        let ring = p::load_keyring(&ring_path)?;
        let v = p::verify_with(&f.archive, &f.file_name, prov, &ring)?;
        f.verified = Some(v.helm_output());
        Ok(())
    }
    #[cfg(not(feature = "provenance"))]
    {
        let _ = (f, opts);
        Err(SourceError::NoVerify)
    }
}

/// With `--verify`, a local chart archive is checked against the `.prov`
/// beside it, as Helm's `LocateChart` does.
fn verify_local(path: &std::path::Path, opts: &LocateOptions) -> Result<(), SourceError> {
    if !opts.verify {
        return Ok(());
    }
    #[cfg(feature = "provenance")]
    {
        use crate::source::provenance as p;
        let ring = opts.keyring.clone().unwrap_or_else(p::default_keyring);
        p::verify_chart(path, &ring)?;
        Ok(())
    }
    #[cfg(not(feature = "provenance"))]
    {
        let _ = path;
        Err(SourceError::NoVerify)
    }
}

/// A reference as the user wrote it.
pub fn describe(r: &ChartRef) -> String {
    match r {
        ChartRef::Local { path } => path.display().to_string(),
        ChartRef::Oci { reference } => reference.clone(),
        ChartRef::Repo { repo, chart } => format!("{repo}/{chart}"),
        ChartRef::RepoUrl { url, chart } => format!("{chart} (--repo {url})"),
        ChartRef::Url { url } => url.clone(),
    }
}

/// Reads repository `name`'s cached index.
pub fn cached_index(paths: &HelmPaths, name: &str) -> Result<IndexFile, SourceError> {
    let p = paths.index_file(name);
    let bytes = crate::input::read(&p).map_err(|e| SourceError::NoCachedIndex {
        path: p.clone(),
        message: e.to_string(),
    })?;
    Ok(crate::source::index::parse(
        &bytes,
        &p.display().to_string(),
    )?)
}

/// Stores a downloaded index in the repository cache as Helm's
/// `DownloadIndexFile` does, after checking it is one: the bytes as they
/// came in `NAME-index.yaml`, the chart names in `NAME-charts.txt` (both
/// 0644, written whole). `url` names the index in errors.
pub fn cache_index(
    paths: &HelmPaths,
    name: &str,
    url: &str,
    bytes: &[u8],
) -> Result<IndexFile, SourceError> {
    let index = crate::source::index::parse(bytes, url)?;
    let mut charts = String::new();
    for n in index.entries.keys() {
        charts.push_str(n);
        charts.push('\n');
    }
    let dir = &paths.repository_cache;
    let cerr = |message: String| SourceError::Cache {
        path: dir.clone(),
        message,
    };
    std::fs::create_dir_all(dir).map_err(|e| cerr(e.to_string()))?;
    let mode = crate::fsutil::Mode::Umask(0o644);
    crate::fsutil::replace_file(&paths.charts_file(name), charts.as_bytes(), mode)
        .map_err(|e| cerr(e.to_string()))?;
    crate::fsutil::replace_file(&paths.index_file(name), bytes, mode)
        .map_err(|e| cerr(e.to_string()))?;
    Ok(index)
}

/// Reads `repositories.yaml` (a missing file has no repositories).
pub fn repo_file(paths: &HelmPaths) -> Result<RepoFile, SourceError> {
    Ok(RepoFile::load_or_default(&paths.repository_config)?)
}

/// Why an archive could not be expanded (`pull --untar`).
#[derive(Debug, thiserror::Error)]
pub enum ExpandError {
    /// The archive is not a chart archive.
    #[error("unable to extract tarball: {0}")]
    Archive(#[from] LoadError),
    /// Chart.yaml names no chart.
    #[error("chart name not specified")]
    NoName,
    /// The target exists.
    #[error("failed to untar: a file or directory with the name {0} already exists")]
    Exists(String),
    /// Writing failed.
    #[error("failed to untar: {path}: {message}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        message: String,
    },
}

/// Expands a chart archive into `dest/<chart name>`, as Helm's
/// `chartutil.Expand` (`pull --untar`): every file verbatim, mode 0644,
/// with the archive's paths sanitised as the loader sanitises them (no
/// absolute paths, nothing outside the chart). Returns the directory.
pub fn expand(archive: &[u8], dest: &std::path::Path) -> Result<PathBuf, ExpandError> {
    let files = crate::chart::loader::load_archive_files(archive)?;
    let name = files
        .iter()
        .find(|f| f.name == "Chart.yaml")
        .and_then(|f| crate::chart::metadata::decode_metadata(&f.data.text()).ok())
        .map(|(m, _)| m.name)
        .filter(|n| !n.is_empty() && !n.contains('/') && n != "." && n != "..")
        .ok_or(ExpandError::NoName)?;
    let root = dest.join(&name);
    if root.exists() {
        return Err(ExpandError::Exists(root.display().to_string()));
    }
    let werr = |p: &std::path::Path, e: std::io::Error| ExpandError::Write {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    for f in &files {
        let target = root.join(&f.name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| werr(parent, e))?;
        }
        crate::fsutil::replace_file(&target, &f.data, crate::fsutil::Mode::Umask(0o644))
            .map_err(|e| werr(&target, std::io::Error::other(e.to_string())))?;
    }
    Ok(root)
}

#[cfg(feature = "remote")]
mod remote {
    use super::*;

    /// Where one reference's archive is to come from.
    struct Plan {
        getter: Getter,
        url: String,
        digest: String,
        file_name: String,
    }

    /// `--repo`-style indexes of one call: (URL, options, the index or
    /// the failure, whether the failure was handed out already).
    type Indexes = Vec<(String, HttpOptions, Result<IndexFile, SourceError>, bool)>;

    /// Named repositories' cached indexes of one call, by index file.
    type CachedIndexes = std::collections::HashMap<PathBuf, std::sync::Arc<IndexFile>>;

    /// Fetches the index of every `ChartRef::RepoUrl` once per URL and
    /// options, all at once.
    fn fetch_indexes(reqs: &[(&ChartRef, &LocateOptions)]) -> Indexes {
        let mut keys: Vec<(String, HttpOptions)> = Vec::new();
        for (r, o) in reqs {
            if let ChartRef::RepoUrl { url, .. } = r {
                if !keys.iter().any(|(u, h)| u == url && *h == o.http) {
                    keys.push((url.clone(), o.http.clone()));
                }
            }
        }
        let wrap = |url: &str, e: SourceError| SourceError::Repository {
            url: url.to_string(),
            source: Box::new(e),
        };
        let mut jobs = Vec::new();
        let mut slots: Vec<Result<(usize, String), SourceError>> = Vec::new();
        for (url, h) in &keys {
            let job = Getter::new(h, Some(url))
                .map_err(SourceError::from)
                .and_then(|g| Ok((g, http::index_url(url).map_err(|e| wrap(url, e.into()))?)));
            slots.push(job.map(|(g, iu)| {
                jobs.push((g, iu.clone()));
                (jobs.len() - 1, iu)
            }));
        }
        let mut answers: Vec<Option<Result<Vec<u8>, HttpError>>> =
            http::get_all(jobs).into_iter().map(Some).collect();
        keys.into_iter()
            .zip(slots)
            .map(|((url, h), slot)| {
                let index = slot.and_then(|(j, iu)| {
                    let got = answers
                        .get_mut(j)
                        .and_then(Option::take)
                        .unwrap_or_else(|| {
                            Err(HttpError::Connect {
                                url: iu.clone(),
                                message: "a download task failed".into(),
                            })
                        });
                    let bytes = got.map_err(|e| wrap(&url, e.into()))?;
                    crate::source::index::parse(&bytes, &iu).map_err(|e| wrap(&url, e.into()))
                });
                (url, h, index, false)
            })
            .collect()
    }

    pub(super) fn fetch_all(
        reqs: Vec<(&ChartRef, &LocateOptions)>,
        put: bool,
    ) -> Vec<Result<Fetched, SourceError>> {
        let mut indexes = fetch_indexes(&reqs);
        let mut repos: Option<RepoFile> = None;
        // Each repository's cached index is read and parsed once per call,
        // however many of its charts are asked for.
        let mut cached: CachedIndexes = std::collections::HashMap::new();
        let mut out: Vec<Option<Result<Fetched, SourceError>>> = Vec::new();
        let mut jobs = Vec::new();
        let mut plans = Vec::new();
        // The client of each reference fetched over HTTP, for its `.prov`.
        let mut getters: Vec<Option<Getter>> = vec![None; reqs.len()];
        let all_opts: Vec<&LocateOptions> = reqs.iter().map(|(_, o)| *o).collect();
        let mut oci_jobs: Vec<(usize, String, &LocateOptions)> = Vec::new();
        let mut clients = http::GetterCache::default();
        for (i, (r, opts)) in reqs.into_iter().enumerate() {
            let cache = ContentCache::new(opts.paths.content_cache());
            let planned = match r {
                ChartRef::Local { path } => Err(read_local(path)),
                ChartRef::Oci { reference } => {
                    // Registry pulls run below, all at once.
                    oci_jobs.push((i, reference.clone(), opts));
                    out.push(None);
                    continue;
                }
                _ => {
                    plan(r, opts, &mut repos, &mut indexes, &mut cached, &mut clients).map_err(Err)
                }
            };
            match planned {
                Err(done) => out.push(Some(done)),
                Ok(p) => {
                    getters[i] = Some(p.getter.clone());
                    if let Some(archive) = cache.get(&p.digest) {
                        out.push(Some(Ok(Fetched {
                            archive,
                            file_name: p.file_name,
                            url: p.url,
                            digest: p.digest,
                            cached: true,
                            prov: None,
                            verified: None,
                            oci: None,
                            uncached: false,
                        })));
                        continue;
                    }
                    out.push(None);
                    jobs.push((p.getter.clone(), p.url.clone()));
                    plans.push((i, p, cache));
                }
            }
        }
        // Registry pulls (each on a runtime of its own) run on threads of
        // their own while the HTTP downloads run.
        let pulled: Vec<(usize, Result<Fetched, SourceError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = oci_jobs
                .iter()
                .map(|(i, reference, opts)| {
                    let (i, reference, opts) = (*i, reference.clone(), *opts);
                    scope.spawn(move || (i, pull_oci(&reference, opts)))
                })
                .collect();
            let expected: Vec<(String, String)> = plans
                .iter()
                .map(|(_, p, _)| (p.url.clone(), p.digest.clone()))
                .collect();
            let answers = http::get_all_checked(jobs, move |i, archive| {
                let (url, digest) = expected
                    .get(i)
                    .map_or(("", ""), |(u, d)| (u.as_str(), d.as_str()));
                check(url, digest, archive)
            });
            for ((i, p, cache), got) in plans.into_iter().zip(answers) {
                out[i] = Some(finish(&cache, p, got, put));
            }
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        for (i, r) in pulled {
            out[i] = Some(r);
        }
        let mut out: Vec<Result<Fetched, SourceError>> = out
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err(SourceError::NoUrls(String::new()))))
            .collect();
        if all_opts.iter().any(|o| o.verify || o.prov) {
            add_provenance(&mut out, &getters, &all_opts);
        }
        out
    }

    /// Pulls `reference` from its registry, as `helm pull oci://...` does,
    /// through the content cache: a chart layer whose digest is cached is
    /// not downloaded.
    fn pull_oci(reference: &str, opts: &LocateOptions) -> Result<Fetched, SourceError> {
        use crate::source::oci;
        let cache = ContentCache::new(opts.paths.content_cache());
        let lookup = cache.clone();
        let blobs: oci::BlobCache = std::sync::Arc::new(move |d: &str| lookup.get(d));
        let o = oci::OciOptions {
            plain_http: opts.plain_http,
            insecure_skip_tls_verify: opts.http.insecure_skip_tls_verify,
            ca_file: opts.http.ca_file.clone(),
            cert_file: opts.http.cert_file.clone(),
            key_file: opts.http.key_file.clone(),
            username: Some(opts.http.username.clone()).filter(|u| !u.is_empty()),
            password: Some(opts.http.password.clone()).filter(|p| !p.is_empty()),
            registry_config: Some(opts.paths.registry_config.clone()),
            ..oci::OciOptions::default()
        };
        let constraint = opts.constraint();
        let version = Some(constraint.as_str()).filter(|v| !v.is_empty());
        let c = oci::pull_with_cache(reference, version, &o, blobs)?;
        let digest = cache.put(&c.archive).map_err(|e| SourceError::Cache {
            path: cache.path(""),
            message: e.to_string(),
        })?;
        Ok(Fetched {
            file_name: format!("{}-{}.tgz", c.name, c.version),
            url: reference.to_string(),
            digest,
            cached: c.cached,
            prov: c.prov,
            verified: None,
            oci: Some(OciPulled {
                reference: c.reference,
                manifest_digest: c.manifest_digest,
            }),
            archive: c.archive,
            uncached: false,
        })
    }

    /// Fetches `URL.prov` of every chart downloaded over HTTP (at once),
    /// then verifies each chart whose options say `--verify`.
    fn add_provenance(
        out: &mut [Result<Fetched, SourceError>],
        getters: &[Option<Getter>],
        opts: &[&LocateOptions],
    ) {
        let wanted = |i: usize| opts.get(i).is_some_and(|o| o.verify || o.prov);
        let mut jobs = Vec::new();
        let mut idx = Vec::new();
        for (i, f) in out.iter().enumerate() {
            if let (true, Ok(f), Some(Some(g))) = (wanted(i), f, getters.get(i)) {
                if f.prov.is_none() {
                    jobs.push((g.clone(), format!("{}.prov", f.url)));
                    idx.push(i);
                }
            }
        }
        for (i, got) in idx.into_iter().zip(http::get_all(jobs)) {
            if let (Ok(f), Ok(prov)) = (&mut out[i], got) {
                f.prov = Some(prov);
            }
        }
        for (r, o) in out.iter_mut().zip(opts) {
            if let (true, Ok(f)) = (o.verify, &mut *r) {
                if let Err(e) = verify_fetched(f, o) {
                    *r = Err(e);
                }
            }
        }
    }

    /// Checks a downloaded archive against the digest its index gives and
    /// the loader's limits; its sha256 with it.
    fn check(url: &str, digest: &str, archive: Vec<u8>) -> Result<(Vec<u8>, String), SourceError> {
        let hex = check_digest(url, digest, &archive)?;
        // Only a chart archive rudder would load enters the cache: the
        // loader's limits (entry and total sizes, paths) apply to what was
        // downloaded exactly as to a local archive.
        crate::chart::loader::check_archive(&archive)?;
        Ok((archive, hex))
    }

    /// A checked download ([`check`]), cached with `put`.
    fn finish(
        cache: &ContentCache,
        p: Plan,
        got: Result<Result<(Vec<u8>, String), SourceError>, HttpError>,
        put: bool,
    ) -> Result<Fetched, SourceError> {
        let (archive, digest) = got??;
        if put {
            cache.put(&archive).map_err(|e| SourceError::Cache {
                path: cache.path(""),
                message: e.to_string(),
            })?;
        }
        Ok(Fetched {
            archive,
            file_name: p.file_name,
            url: p.url,
            digest,
            cached: false,
            prov: None,
            verified: None,
            oci: None,
            uncached: !put,
        })
    }

    fn file_name_of(url: &str) -> String {
        let path = url.split(['?', '#']).next().unwrap_or(url);
        path.rsplit('/').next().unwrap_or(path).to_string()
    }

    fn plan(
        r: &ChartRef,
        opts: &LocateOptions,
        repos: &mut Option<RepoFile>,
        indexes: &mut Indexes,
        cached: &mut CachedIndexes,
        clients: &mut http::GetterCache,
    ) -> Result<Plan, SourceError> {
        let constraint = opts.constraint();
        match r {
            ChartRef::Repo { repo, chart } => {
                if repos.is_none() {
                    *repos = Some(repo_file(&opts.paths)?);
                }
                let entry = repos
                    .as_ref()
                    .and_then(|f| f.get(repo))
                    .cloned()
                    .ok_or_else(|| SourceError::RepoNotFound(repo.clone()))?;
                let path = opts.paths.index_file(repo);
                let index = match cached.get(&path) {
                    Some(index) => index.clone(),
                    None => {
                        let index = std::sync::Arc::new(cached_index(&opts.paths, repo)?);
                        cached.insert(path, index.clone());
                        index
                    }
                };
                let cv =
                    index
                        .get(chart, &constraint)
                        .map_err(|source| SourceError::NotInRepo {
                            chart: chart.clone(),
                            version: constraint.clone(),
                            repo: repo.clone(),
                            source: Box::new(source),
                        })?;
                let first = cv
                    .urls
                    .first()
                    .ok_or_else(|| SourceError::NoUrls(format!("{repo}/{chart}")))?;
                let url = http::resolve_reference(&entry.url, first)?;
                let getter = clients.get(&HttpOptions::from_entry(&entry), Some(&entry.url))?;
                Ok(Plan {
                    getter,
                    file_name: file_name_of(&url),
                    url,
                    digest: cv.digest.clone(),
                })
            }
            ChartRef::RepoUrl {
                url: repo_url,
                chart,
            } => {
                let getter = clients.get(&opts.http, Some(repo_url))?;
                let slot = indexes
                    .iter_mut()
                    .find(|(u, h, _, _)| u == repo_url && *h == opts.http);
                let fetched;
                let index = match slot {
                    Some((_, _, Ok(index), _)) => &*index,
                    Some((_, _, Err(e), handed)) => {
                        let again = SourceError::Again(crate::error_chain(&*e));
                        if *handed {
                            return Err(again);
                        }
                        *handed = true;
                        return Err(std::mem::replace(e, again));
                    }
                    None => {
                        fetched = fetch_index(&getter, repo_url)?;
                        &fetched
                    }
                };
                let cv = index
                    .get(chart, &constraint)
                    .map_err(|_| SourceError::NotInRepoUrl {
                        chart: chart.clone(),
                        version: if constraint.is_empty() {
                            String::new()
                        } else {
                            format!(" version {constraint:?}")
                        },
                        url: repo_url.clone(),
                    })?;
                let first = cv
                    .urls
                    .first()
                    .ok_or_else(|| SourceError::NoUrls(chart.clone()))?;
                let url = http::resolve_reference(repo_url, first)?;
                Ok(Plan {
                    getter,
                    file_name: file_name_of(&url),
                    url,
                    digest: cv.digest.clone(),
                })
            }
            ChartRef::Url { url } => Ok(Plan {
                getter: clients.get(&opts.http, Some(url))?,
                file_name: file_name_of(url),
                url: url.clone(),
                digest: String::new(),
            }),
            ChartRef::Local { .. } | ChartRef::Oci { .. } => Err(SourceError::NoUrls(describe(r))),
        }
    }

    /// Downloads and parses a repository's index (not cached: `--repo`).
    pub(super) fn fetch_index(getter: &Getter, repo_url: &str) -> Result<IndexFile, SourceError> {
        let wrap = |e: SourceError| SourceError::Repository {
            url: repo_url.to_string(),
            source: Box::new(e),
        };
        let url = http::index_url(repo_url).map_err(|e| wrap(e.into()))?;
        let bytes = http::get_one(getter, &url).map_err(|e| wrap(e.into()))?;
        crate::source::index::parse(&bytes, &url).map_err(|e| wrap(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devel_means_any_prerelease_when_no_version_is_given() {
        let mut o = LocateOptions::from_env();
        assert_eq!(o.constraint(), "");
        o.devel = true;
        assert_eq!(o.constraint(), ">0.0.0-0");
        o.version = " ~1.2 ".into();
        assert_eq!(o.constraint(), "~1.2");
    }

    #[test]
    fn a_repo_that_was_not_added_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = LocateOptions::from_env();
        o.paths =
            HelmPaths::from_lookup(|k| (k == "HOME").then(|| dir.path().display().to_string()));
        let e = load_chart("nope/chart", &o).unwrap_err();
        assert_eq!(e.to_string(), "repo nope not found");
    }
}
