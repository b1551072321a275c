//! `--verify` on `dependency update` and `dependency build`: each
//! downloaded dependency checked against its provenance file, as Helm's
//! `ChartDownloader.DownloadTo` (v3.17.2 and v4.1.4,
//! `pkg/downloader/chart_downloader.go`) checks it.
//!
//! For every dependency downloaded from a repository (a URL or an
//! `@alias`) or a registry (`oci://`), Helm fetches `URL.prov` (for a
//! registry, the manifest's provenance layer) with the same credentials,
//! writes it beside the archive in `tmpcharts-<pid>/`, and verifies the
//! archive with the keyring (`provenance::verify_chart`, with the
//! `provenance` feature).
//! `file://` dependencies and those already in `charts/` are never
//! checked. The strategy is Helm's:
//! - `update --verify` is [`Strategy::Always`]: a provenance file that
//!   cannot be fetched fails the dependency (`failed to fetch provenance
//!   "URL.prov"`);
//! - `build --verify` is [`Strategy::IfPossible`]: it prints `WARNING:
//!   Verification not found for REF: ERROR` and keeps the chart.
//!
//! In both, a provenance file that does not verify (unknown signer,
//! changed body, digest mismatch, missing keyring) fails the dependency;
//! the manager then reports `could not download URL: ...` and leaves
//! `charts/` as it was.
//!
//! Like Helm, the `.prov` file does not reach `charts/`: Helm's move of
//! `tmpcharts-<pid>/` into `charts/` keeps only files that load as charts,
//! and reports the `.prov` as `Could not verify ... for moving`.
use super::FetchError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Helm's verification strategies that `dependency` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Strategy {
    /// `VerifyIfPossible` (`dependency build --verify`): a missing
    /// provenance file is a warning.
    IfPossible,
    /// `VerifyAlways` (`dependency update --verify`): a missing provenance
    /// file is an error.
    Always,
}

/// What `--verify` asks for: the strategy and the keyring (`--keyring`,
/// by default `provenance::default_keyring`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Verify {
    /// How a missing provenance file is treated.
    pub strategy: Strategy,
    /// The keyring file the signature is checked against.
    pub keyring: PathBuf,
}

impl Verify {
    /// Helm's strategy for `dependency update` (`Always`) or `build`
    /// (`IfPossible`).
    pub fn for_command(update: bool, keyring: PathBuf) -> Verify {
        Verify {
            strategy: if update {
                Strategy::Always
            } else {
                Strategy::IfPossible
            },
            keyring,
        }
    }
}

/// Why a downloaded dependency did not pass `--verify`; the texts are
/// Helm's.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// `URL.prov` could not be fetched ([`Strategy::Always`]).
    #[error("failed to fetch provenance {}", crate::gostd::strconv::quote(.url))]
    NoProvenance {
        /// The provenance URL (`URL.prov`, or `oci://...:TAG.prov`).
        url: String,
    },
    /// The provenance file could not be written beside the archive.
    #[error("open {path}: {message}")]
    Write {
        /// The `.prov` path.
        path: String,
        /// The OS error, Go style.
        message: String,
    },
    /// The chart does not verify.
    #[cfg(feature = "provenance")]
    #[error(transparent)]
    Provenance(#[from] crate::source::provenance::ProvenanceError),
    /// `--verify` in a build without feature `provenance`.
    #[error("--verify: this rudder was built without feature \"provenance\"")]
    NotBuilt,
}

/// What [`check`] found: the signature, or nothing when the provenance
/// file was missing and the strategy allows it.
#[cfg(feature = "provenance")]
pub type Checked = Option<crate::source::provenance::Verification>;
/// What [`check`] found (nothing in a build without feature `provenance`).
#[cfg(not(feature = "provenance"))]
pub type Checked = Option<()>;

/// The second half of Helm's `DownloadTo` for one dependency whose archive
/// was just saved at `saved`: `prov` is the fetch of `prov_url`
/// (`URL.prov`); `reference` names the chart in the warning (`build`), as
/// Helm names it (the chart URL; for a registry, without the tag). The
/// provenance file is written to `saved` + `.prov`, then verified with the
/// keyring.
pub fn check(
    verify: &Verify,
    reference: &str,
    prov_url: &str,
    prov: Result<Vec<u8>, FetchError>,
    saved: &Path,
    out: &mut dyn Write,
) -> Result<Checked, VerifyError> {
    let body = match prov {
        Ok(b) => b,
        Err(e) => {
            if verify.strategy == Strategy::Always {
                return Err(VerifyError::NoProvenance {
                    url: prov_url.to_string(),
                });
            }
            let _ = writeln!(
                out,
                "WARNING: Verification not found for {reference}: {}",
                crate::error_chain(&*e)
            );
            return Ok(None);
        }
    };
    let mut path = saved.as_os_str().to_owned();
    path.push(".prov");
    let path = PathBuf::from(path);
    crate::fsutil::replace_file(&path, &body, crate::fsutil::Mode::SHARED).map_err(|e| {
        VerifyError::Write {
            path: e.path.display().to_string(),
            message: super::os_message(&e.error),
        }
    })?;
    #[cfg(feature = "provenance")]
    {
        Ok(Some(crate::source::provenance::verify_chart(
            saved,
            &verify.keyring,
        )?))
    }
    #[cfg(not(feature = "provenance"))]
    {
        Err(VerifyError::NotBuilt)
    }
}

/// Helm's `parseOCIRef` (the regular expression
/// `^(oci://[^:]+(:[0-9]{1,5})?[^:]+):(.*)$`): `oci://HOST[:PORT]/PATH:TAG`
/// split into the reference without the tag and the tag; `None` when it
/// does not match.
pub fn split_oci_tag(reference: &str) -> Option<(&str, &str)> {
    const SCHEME: &str = "oci://";
    let rest = reference.strip_prefix(SCHEME)?;
    let c1 = rest.find(':')?;
    // With a port: a non-empty host, `:`, 1-5 digits and at least one more
    // character before the next colon, which ends the reference.
    if c1 > 0 {
        let after = &rest[c1 + 1..];
        if let Some(c2) = after.find(':') {
            let segment = &after[..c2];
            if segment.len() >= 2 && segment.as_bytes()[0].is_ascii_digit() {
                let at = SCHEME.len() + c1 + 1 + c2;
                return Some((&reference[..at], &reference[at + 1..]));
            }
        }
    }
    // Without: at least two characters before the first colon.
    (c1 >= 2).then(|| {
        let at = SCHEME.len() + c1;
        (&reference[..at], &reference[at + 1..])
    })
}

/// The provenance layer's absence, in the words of Helm's registry client.
#[cfg(feature = "remote")]
#[derive(Debug, thiserror::Error)]
#[error(
    "manifest does not contain a layer with mediatype {}",
    crate::source::oci::PROV_LAYER_MEDIA_TYPE
)]
pub struct NoProvenanceLayer;

#[cfg(feature = "remote")]
impl super::fetch::RepoFetcher {
    /// [`check`] for one download: `URL.prov` fetched with the
    /// repository's credentials and TLS settings, or the registry
    /// manifest's provenance layer (the chart layer comes from the content
    /// cache, where the download put it).
    pub(super) fn check_provenance(
        &self,
        verify: &Verify,
        request: &super::DownloadRequest<'_>,
        saved: &Path,
        out: &mut dyn Write,
    ) -> Result<(), FetchError> {
        use crate::source::cache::ContentCache;
        use crate::source::http::{self, Getter};
        let prov_url = format!("{}.prov", request.url);
        let (reference, prov): (String, Result<Vec<u8>, FetchError>) = match request.source {
            super::RemoteSource::Oci(repo) => {
                let reference = format!("{}/{}", repo.trim_end_matches('/'), request.chart);
                let cache = ContentCache::new(self.paths.content_cache());
                let blobs: crate::source::oci::BlobCache =
                    std::sync::Arc::new(move |d: &str| cache.get(d));
                let got = crate::source::oci::pull_with_cache(
                    &reference,
                    Some(request.version).filter(|v| !v.is_empty()),
                    &self.oci_options(),
                    blobs,
                )
                .map_err(FetchError::from)
                .and_then(|c| {
                    let prov = c.prov.ok_or_else(|| FetchError::from(NoProvenanceLayer))?;
                    // Helm's registry client reports the pull on stderr.
                    eprintln!("Pulled: {}\nDigest: {}", c.reference, c.manifest_digest);
                    Ok(prov)
                });
                (reference, got)
            }
            super::RemoteSource::Repo {
                url,
                cache_name,
                managed,
            } => {
                let got = self
                    .options_for(managed.then_some(cache_name))
                    .and_then(|o| Ok(Getter::new(&o, Some(url))?))
                    .and_then(|g| Ok(http::get_one(&g, &prov_url)?));
                (request.url.to_string(), got)
            }
        };
        check(verify, &reference, &prov_url, prov, saved, out)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oci_refs_split_as_helm() {
        assert_eq!(
            split_oci_tag("oci://127.0.0.1:5000/charts/alpha:1.0.0"),
            Some(("oci://127.0.0.1:5000/charts/alpha", "1.0.0"))
        );
        assert_eq!(
            split_oci_tag("oci://ghcr.io/a/b:1.2.3+x"),
            Some(("oci://ghcr.io/a/b", "1.2.3+x"))
        );
        assert_eq!(split_oci_tag("oci://ghcr.io/a/b"), None);
        assert_eq!(split_oci_tag("https://x/y:1"), None);
    }

    #[test]
    fn a_missing_prov_fails_or_warns_by_strategy() {
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("a-1.0.0.tgz");
        let always = Verify::for_command(true, dir.path().join("ring.gpg"));
        let mut out = Vec::new();
        let e = check(
            &always,
            "http://h/a-1.0.0.tgz",
            "http://h/a-1.0.0.tgz.prov",
            Err("failed to fetch http://h/a-1.0.0.tgz.prov : 404 Not Found".into()),
            &saved,
            &mut out,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "failed to fetch provenance \"http://h/a-1.0.0.tgz.prov\""
        );
        assert!(out.is_empty());
        let maybe = Verify::for_command(false, dir.path().join("ring.gpg"));
        let r = check(
            &maybe,
            "http://h/a-1.0.0.tgz",
            "http://h/a-1.0.0.tgz.prov",
            Err("failed to fetch http://h/a-1.0.0.tgz.prov : 404 Not Found".into()),
            &saved,
            &mut out,
        )
        .unwrap();
        assert!(r.is_none());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "WARNING: Verification not found for http://h/a-1.0.0.tgz: failed to fetch http://h/a-1.0.0.tgz.prov : 404 Not Found\n"
        );
        assert!(!dir.path().join("a-1.0.0.tgz.prov").exists());
    }
}
