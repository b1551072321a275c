//! The [`Fetcher`] over chart repositories (feature `remote`): Helm's
//! `repositories.yaml`, its index cache (`<name>-index.yaml` and
//! `<name>-charts.txt`), HTTP downloads with each repository's credentials
//! and TLS settings ([`crate::source::http`]), every archive checked
//! against its index's digest, and rudder's content-addressed cache (a
//! chart already cached at that digest is not downloaded again).
//!
//! OCI dependencies are not fetched here yet: they fail with a clear
//! error until the registry client is wired in.
use super::{
    DownloadRequest, FetchError, Fetched, Fetcher, IndexVersion, RefreshTarget, RemoteSource,
    RepoRef,
};
use crate::source::cache::{check_digest, normalize_digest, ContentCache};
use crate::source::http::{self, Getter, HttpOptions};
use crate::source::index::IndexFile;
use crate::source::paths::HelmPaths;
use crate::source::repofile::{RepoEntry, RepoFile};
use crate::template::funcs::semver::parse_version;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Fetches dependencies from the repositories of Helm's files.
///
/// One fetcher serves one command: it reads `repositories.yaml` and each
/// cached index once (an index again only after [`Fetcher::refresh`]
/// stored a new one), and the archives it downloads enter the content
/// cache when the manager has saved them ([`Fetcher::keep`]: as links to
/// the saved files).
#[derive(Debug)]
pub struct RepoFetcher {
    /// Helm's file locations.
    pub paths: HelmPaths,
    /// Credentials and TLS for repositories that are not in
    /// `repositories.yaml` (the command's `--username`, `--ca-file`, ...).
    pub http: HttpOptions,
    /// Talk to OCI registries over plain HTTP (`--plain-http`).
    pub plain_http: bool,
    /// `--verify`: check each download against its provenance file
    /// ([`super::verify`]).
    pub verify: Option<super::verify::Verify>,
    memo: Memo,
}

/// What a [`RepoFetcher`] has read, and the downloads it has not cached.
#[derive(Debug, Default)]
struct Memo {
    repo_file: Mutex<Option<Arc<RepoFile>>>,
    indexes: Mutex<HashMap<String, Arc<IndexFile>>>,
    /// sha256 (hex) of downloaded archives that are not cached yet.
    uncached: Mutex<HashSet<String>>,
    /// Charts to download with the next refresh ([`Fetcher::prefetch`]).
    hints: Mutex<Vec<Hint>>,
    /// What was downloaded with a refresh, by chart URL: used by
    /// `download_all` only for the same URL and a matching digest.
    prefetched: Mutex<HashMap<String, Vec<u8>>>,
}

/// A chart of a repository of `repositories.yaml` that the cached index
/// resolved a dependency to before a refresh.
#[derive(Debug)]
struct Hint {
    cache_name: String,
    repo_url: String,
    chart: String,
    version: String,
    url: String,
}

impl Clone for RepoFetcher {
    /// A fetcher with the same settings that has read nothing yet.
    fn clone(&self) -> Self {
        let mut f = RepoFetcher::new(self.paths.clone(), self.http.clone(), self.plain_http);
        f.verify = self.verify.clone();
        f
    }
}

/// A lock that a panicking holder left is still usable: the memo holds
/// only finished values.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why the repository fetcher failed; each names the file or URL.
#[derive(Debug, thiserror::Error)]
pub enum RepoFetchError {
    /// A file could not be read (Go's `open PATH: ...`).
    #[error("open {path}: {message}")]
    Open {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// A chart is not in the index.
    #[error("entry not found")]
    NoEntry,
    /// No version of the chart equals the one asked for.
    #[error("no matching version")]
    NoVersion,
    /// A repository that is not added: its chart was not found at its URL.
    #[error("chart {chart} not found in {url}: {message}")]
    NotInUrl {
        /// The chart.
        chart: String,
        /// The repository URL.
        url: String,
        /// Why.
        message: String,
    },
    /// OCI dependencies need the registry client.
    #[error("{0}: OCI dependencies are not supported by this rudder yet")]
    Oci(String),
    /// `repositories.yaml` names no such repository.
    #[error("repo {0} not found")]
    NoRepo(String),
}

fn os_message(e: &std::io::Error) -> String {
    super::os_message(e)
}

impl RepoFetcher {
    /// A fetcher over Helm's files at `paths`.
    pub fn new(paths: HelmPaths, http: HttpOptions, plain_http: bool) -> RepoFetcher {
        RepoFetcher {
            paths,
            http,
            plain_http,
            verify: None,
            memo: Memo::default(),
        }
    }

    /// `repositories.yaml`, read once.
    fn repo_file(&self) -> Result<Arc<RepoFile>, FetchError> {
        let mut slot = lock(&self.memo.repo_file);
        if let Some(f) = slot.as_ref() {
            return Ok(f.clone());
        }
        let f = Arc::new(RepoFile::load_or_default(&self.paths.repository_config)?);
        *slot = Some(f.clone());
        Ok(f)
    }

    fn entry(&self, name: &str) -> Result<RepoEntry, FetchError> {
        self.repo_file()?
            .get(name)
            .cloned()
            .ok_or_else(|| Box::new(RepoFetchError::NoRepo(name.into())) as FetchError)
    }

    /// Helm's `repo.LoadIndexFile` of a cached index (parsed once; a
    /// failure is not kept, the next call reads the file again).
    fn cached(&self, cache_name: &str) -> Result<Arc<IndexFile>, FetchError> {
        if let Some(i) = lock(&self.memo.indexes).get(cache_name) {
            return Ok(i.clone());
        }
        let p = self.paths.index_file(cache_name);
        let bytes = crate::input::read(&p).map_err(|e| RepoFetchError::Open {
            path: p.display().to_string(),
            message: os_message(&e),
        })?;
        let index = Arc::new(crate::source::index::parse(
            &bytes,
            &p.display().to_string(),
        )?);
        lock(&self.memo.indexes).insert(cache_name.to_string(), index.clone());
        Ok(index)
    }

    /// Stores a downloaded index as Helm's `DownloadIndexFile` does; what
    /// it parsed to is what [`Self::cached`] answers from then on.
    fn store(&self, cache_name: &str, url: &str, bytes: &[u8]) -> Result<(), FetchError> {
        let index = crate::source::resolve::cache_index(&self.paths, cache_name, url, bytes)?;
        lock(&self.memo.indexes).insert(cache_name.to_string(), Arc::new(index));
        Ok(())
    }

    /// The downloads of the hints (taken): each chart whose cached index
    /// gives a sha256 digest that is not in the content cache, with its
    /// repository's credentials, as `download_all` would make it.
    fn hinted_jobs(&self, clients: &mut http::GetterCache) -> Vec<(Getter, String)> {
        let hints = std::mem::take(&mut *lock(&self.memo.hints));
        let cache = ContentCache::new(self.paths.content_cache());
        let mut jobs: Vec<(Getter, String)> = Vec::new();
        for h in hints {
            let digest = self.cached(&h.cache_name).ok().and_then(|i| {
                i.entries.get(&h.chart).and_then(|vs| {
                    vs.iter()
                        .find(|cv| version_equals(&h.version, cv.version()))
                        .and_then(|cv| normalize_digest(&cv.digest))
                })
            });
            let Some(hex) = digest else { continue };
            if cache.path(&hex).exists() || jobs.iter().any(|(_, u)| *u == h.url) {
                continue;
            }
            let getter = self
                .options_for(Some(&h.cache_name))
                .and_then(|o| Ok(clients.get(&o, Some(&h.repo_url))?));
            if let Ok(g) = getter {
                jobs.push((g, h.url));
            }
        }
        jobs
    }

    /// The registry options: Helm's registry login, the command's TLS
    /// flags and `--plain-http`.
    pub(super) fn oci_options(&self) -> crate::source::oci::OciOptions {
        crate::source::oci::OciOptions {
            plain_http: self.plain_http,
            insecure_skip_tls_verify: self.http.insecure_skip_tls_verify,
            ca_file: self.http.ca_file.clone(),
            cert_file: self.http.cert_file.clone(),
            key_file: self.http.key_file.clone(),
            registry_config: Some(self.paths.registry_config.clone()),
            ..crate::source::oci::OciOptions::default()
        }
    }

    /// Pulls `repo/chart` at `version` through the content cache.
    fn pull_oci(&self, repo: &str, chart: &str, version: &str) -> Result<Fetched, FetchError> {
        let cache = ContentCache::new(self.paths.content_cache());
        let lookup = cache.clone();
        let blobs: crate::source::oci::BlobCache =
            std::sync::Arc::new(move |d: &str| lookup.get(d));
        let reference = format!("{}/{chart}", repo.trim_end_matches('/'));
        let c = crate::source::oci::pull_with_cache(
            &reference,
            Some(version).filter(|v| !v.is_empty()),
            &self.oci_options(),
            blobs,
        )?;
        cache.put(&c.archive)?;
        // What Helm's registry client prints on stderr for each pull.
        eprintln!("Pulled: {}\nDigest: {}", c.reference, c.manifest_digest);
        Ok(Fetched {
            file_name: format!("{}-{}.tgz", c.name, c.version),
            archive: c.archive,
        })
    }

    pub(super) fn options_for(
        &self,
        managed_name: Option<&str>,
    ) -> Result<HttpOptions, FetchError> {
        Ok(match managed_name {
            Some(n) => HttpOptions::from_entry(&self.entry(n)?),
            None => self.http.clone(),
        })
    }
}

/// Helm's `versionEquals`: equal as versions, or as strings when the wanted
/// one does not parse.
fn version_equals(want: &str, have: &str) -> bool {
    match parse_version(want) {
        Err(_) => want == have,
        Ok(a) => parse_version(have).is_ok_and(|b| a.compare(&b) == std::cmp::Ordering::Equal),
    }
}

impl Fetcher for RepoFetcher {
    fn repositories(&self) -> Result<Option<Vec<RepoRef>>, FetchError> {
        if !self.paths.repository_config.exists() {
            return Ok(None);
        }
        Ok(Some(
            self.repo_file()?
                .repositories
                .iter()
                .map(|e| RepoRef {
                    name: e.name.clone(),
                    url: e.url.clone(),
                })
                .collect(),
        ))
    }

    fn refresh(&self, targets: &[RefreshTarget]) -> Vec<Result<(), FetchError>> {
        let mut jobs = Vec::new();
        let mut slots: Vec<Result<(usize, String), FetchError>> = Vec::new();
        let mut clients = http::GetterCache::default();
        // The hinted charts download along with the indexes.
        let hinted = self.hinted_jobs(&mut clients);
        for t in targets {
            let prepared = self
                .options_for(t.managed.then_some(t.cache_name.as_str()))
                .and_then(|o| Ok(clients.get(&o, Some(&t.url))?))
                .and_then(|g| Ok((g, http::index_url(&t.url)?)));
            match prepared {
                Ok((g, u)) => {
                    slots.push(Ok((jobs.len(), u.clone())));
                    jobs.push((g, u));
                }
                Err(e) => slots.push(Err(e)),
            }
        }
        let first_hint = jobs.len();
        let hint_urls: Vec<String> = hinted.iter().map(|(_, u)| u.clone()).collect();
        jobs.extend(hinted);
        let mut answers: Vec<Option<Result<Vec<u8>, http::HttpError>>> =
            http::get_all(jobs).into_iter().map(Some).collect();
        for (url, got) in hint_urls
            .into_iter()
            .zip(answers.iter_mut().skip(first_hint))
        {
            if let Some(Ok(bytes)) = got.take() {
                lock(&self.memo.prefetched).insert(url, bytes);
            }
        }
        slots
            .into_iter()
            .zip(targets)
            .map(|(slot, t)| {
                let (i, url) = slot?;
                let bytes = answers
                    .get_mut(i)
                    .and_then(Option::take)
                    .ok_or("no answer for the index download")??;
                self.store(&t.cache_name, &url, &bytes)
            })
            .collect()
    }

    fn load_indexes(&self, repos: &[RepoRef]) -> Result<(), FetchError> {
        for r in repos {
            self.cached(&r.name)?;
        }
        Ok(())
    }

    fn index_versions(
        &self,
        cache_name: &str,
        chart: &str,
    ) -> Result<Option<Vec<IndexVersion>>, FetchError> {
        let index = self.cached(cache_name)?;
        Ok(index.entries.get(chart).map(|vs| {
            vs.iter()
                .map(|cv| IndexVersion {
                    version: cv.version().to_string(),
                    has_urls: !cv.urls.is_empty(),
                })
                .collect()
        }))
    }

    fn oci_tags(&self, repository: &str, chart: &str) -> Result<Vec<String>, FetchError> {
        let reference = format!("{}/{chart}", repository.trim_end_matches('/'));
        Ok(crate::source::oci::tags(&reference, &self.oci_options())?)
    }

    fn chart_url(
        &self,
        source: RemoteSource<'_>,
        chart: &str,
        version: &str,
    ) -> Result<String, FetchError> {
        match source {
            RemoteSource::Oci(repo) => Ok(format!("{repo}/{chart}:{version}")),
            RemoteSource::Repo {
                url,
                cache_name,
                managed: true,
            } => {
                let index = self.cached(cache_name)?;
                let vs = index.entries.get(chart).ok_or(RepoFetchError::NoEntry)?;
                let cv = vs
                    .iter()
                    .filter(|cv| !cv.urls.is_empty())
                    .find(|cv| version.is_empty() || version_equals(version, cv.version()))
                    .ok_or(RepoFetchError::NoVersion)?;
                Ok(http::resolve_reference(url, &cv.urls[0])?)
            }
            RemoteSource::Repo { url, .. } => {
                // Helm's FindChartInRepoURL: the index fetched for the call.
                let not_found = |message: String| RepoFetchError::NotInUrl {
                    chart: chart.into(),
                    url: url.into(),
                    message,
                };
                let g = Getter::new(&self.http, Some(url))?;
                let bytes = http::get_one(&g, &http::index_url(url)?)
                    .map_err(|e| not_found(crate::error_chain(&e)))?;
                let index = crate::source::index::parse(&bytes, url)?;
                let cv = index
                    .get(chart, version)
                    .map_err(|e| not_found(e.to_string()))?;
                let first = cv.urls.first().ok_or_else(|| not_found("no URLs".into()))?;
                Ok(http::resolve_reference(url, first)?)
            }
        }
    }

    fn download_all(&self, requests: &[DownloadRequest<'_>]) -> Vec<Result<Fetched, FetchError>> {
        let cache = ContentCache::new(self.paths.content_cache());
        let mut out: Vec<Option<Result<Fetched, FetchError>>> = Vec::new();
        let mut jobs = Vec::new();
        let mut pending: Vec<(usize, String, String)> = Vec::new();
        let mut clients = http::GetterCache::default();
        // Registry pulls: (slot, repository, chart, version).
        let mut oci_jobs: Vec<(usize, String, String, String)> = Vec::new();
        for r in requests {
            let file_name = file_name_of(r.url);
            let plan = (|| -> Result<Option<(Getter, String)>, FetchError> {
                let (managed, digest) = match r.source {
                    RemoteSource::Oci(repo) => {
                        oci_jobs.push((
                            out.len(),
                            repo.to_string(),
                            r.chart.to_string(),
                            r.version.to_string(),
                        ));
                        out.push(None);
                        return Ok(None);
                    }
                    RemoteSource::Repo {
                        cache_name,
                        managed,
                        ..
                    } => (
                        managed,
                        self.cached(cache_name)
                            .ok()
                            .and_then(|i| {
                                i.entries.get(r.chart).and_then(|vs| {
                                    vs.iter()
                                        .find(|cv| version_equals(r.version, cv.version()))
                                        .map(|cv| cv.digest.clone())
                                })
                            })
                            .unwrap_or_default(),
                    ),
                };
                if let Some(bytes) = (!digest.is_empty()).then(|| cache.get(&digest)).flatten() {
                    out.push(Some(Ok(Fetched {
                        file_name: file_name.clone(),
                        archive: bytes,
                    })));
                    return Ok(None);
                }
                // Downloaded with the refresh: kept only when it is what
                // the refreshed index's digest says this chart is.
                let early = lock(&self.memo.prefetched).remove(r.url);
                if let (Some(bytes), Some(_)) = (early, normalize_digest(&digest)) {
                    if let Ok(hex) = check_digest(r.url, &digest, &bytes) {
                        lock(&self.memo.uncached).insert(hex);
                        out.push(Some(Ok(Fetched {
                            file_name: file_name.clone(),
                            archive: bytes,
                        })));
                        return Ok(None);
                    }
                }
                let opts = match r.source {
                    RemoteSource::Repo { cache_name, .. } if managed => {
                        self.options_for(Some(cache_name))?
                    }
                    _ => self.http.clone(),
                };
                let base = match r.source {
                    RemoteSource::Repo { url, .. } => url,
                    RemoteSource::Oci(u) => u,
                };
                let g = clients.get(&opts, Some(base))?;
                pending.push((out.len(), digest, file_name.clone()));
                out.push(None);
                Ok(Some((g, r.url.to_string())))
            })();
            match plan {
                Ok(Some(job)) => jobs.push(job),
                Ok(None) => {}
                Err(e) => out.push(Some(Err(e))),
            }
        }
        // Registry pulls run on threads of their own while the HTTP
        // downloads run.
        let pulled: Vec<(usize, Result<Fetched, FetchError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = oci_jobs
                .iter()
                .map(|(slot, repo, chart, version)| {
                    scope.spawn(move || (*slot, self.pull_oci(repo, chart, version)))
                })
                .collect();
            let answers = http::get_all(std::mem::take(&mut jobs));
            let mut done = Vec::new();
            for ((slot, digest, file_name), got) in
                std::mem::take(&mut pending).into_iter().zip(answers)
            {
                done.push((slot, digest, file_name, got));
            }
            let mut pulled: Vec<(usize, Result<Fetched, FetchError>)> =
                handles.into_iter().filter_map(|h| h.join().ok()).collect();
            for (slot, digest, file_name, got) in done {
                let url = requests
                    .get(slot)
                    .map(|r| r.url.to_string())
                    .unwrap_or_default();
                let r = (|| -> Result<Fetched, FetchError> {
                    let archive = got?;
                    let hex = check_digest(&url, &digest, &archive)?;
                    // Cached when the manager has saved it (`keep`).
                    lock(&self.memo.uncached).insert(hex);
                    Ok(Fetched { file_name, archive })
                })();
                pulled.push((slot, r));
            }
            pulled
        });
        for (slot, r) in pulled {
            if let Some(o) = out.get_mut(slot) {
                *o = Some(r);
            }
        }
        out.into_iter()
            .map(|o| o.unwrap_or_else(|| Err("no answer for the download".into())))
            .collect()
    }

    fn download(&self, request: &DownloadRequest<'_>) -> Result<Fetched, FetchError> {
        self.download_all(std::slice::from_ref(request))
            .pop()
            .unwrap_or_else(|| Err("no answer for the download".into()))
    }

    fn verify_download(
        &self,
        request: &DownloadRequest<'_>,
        saved: &std::path::Path,
        out: &mut dyn std::io::Write,
    ) -> Result<(), FetchError> {
        match &self.verify {
            Some(v) => self.check_provenance(v, request, saved, out),
            None => Ok(()),
        }
    }

    fn prefetch(&self, requests: &[DownloadRequest<'_>]) {
        let mut hints = lock(&self.memo.hints);
        for r in requests {
            if let RemoteSource::Repo {
                url,
                cache_name,
                managed: true,
            } = r.source
            {
                hints.push(Hint {
                    cache_name: cache_name.to_string(),
                    repo_url: url.to_string(),
                    chart: r.chart.to_string(),
                    version: r.version.to_string(),
                    url: r.url.to_string(),
                });
            }
        }
    }

    fn keep(&self, saved: &Path, fetched: &Fetched) -> Result<(), FetchError> {
        let hex = crate::source::cache::sha256_hex(&fetched.archive);
        if lock(&self.memo.uncached).remove(&hex) {
            ContentCache::new(self.paths.content_cache()).put_linked_hashed(
                saved,
                hex,
                &fetched.archive,
            )?;
        }
        Ok(())
    }
}

/// The last path segment of a URL (Helm saves downloads under it).
fn file_name_of(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.rsplit('/').next().unwrap_or(path).to_string()
}
