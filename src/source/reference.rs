//! What a chart argument names, parsed as Helm's `LocateChart` reads it.
//!
//! ```
//! use rudder::source::reference::{ChartRef, parse};
//! assert_eq!(
//!     parse("jetstack/cert-manager", None, |_| false).unwrap(),
//!     ChartRef::Repo { repo: "jetstack".into(), chart: "cert-manager".into() },
//! );
//! assert_eq!(
//!     parse("oci://ghcr.io/org/charts/app", None, |_| false).unwrap(),
//!     ChartRef::Oci { reference: "oci://ghcr.io/org/charts/app".into() },
//! );
//! assert!(matches!(parse("./missing", None, |_| false), Err(_)));
//! ```
use std::path::PathBuf;

/// A chart argument, classified.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ChartRef {
    /// A chart directory or archive on disk.
    Local {
        /// The path as given.
        path: PathBuf,
    },
    /// `oci://HOST/PATH/CHART`, optionally with `:TAG` or `@sha256:...`.
    Oci {
        /// The reference, `oci://` included.
        reference: String,
    },
    /// `REPO/CHART`: a chart in a repository that `repo add` named.
    Repo {
        /// The repository's name in `repositories.yaml`.
        repo: String,
        /// The chart's name in the repository's index.
        chart: String,
    },
    /// `CHART` with `--repo URL`: a chart in a repository given by its URL.
    RepoUrl {
        /// The repository's URL.
        url: String,
        /// The chart's name in the repository's index.
        chart: String,
    },
    /// An absolute `http://` or `https://` URL of a chart archive.
    Url {
        /// The URL.
        url: String,
    },
}

/// Why a chart argument names no chart (Helm's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    /// A path-like argument (absolute, or starting with `.`) that does not
    /// exist.
    #[error("path {0:?} not found")]
    PathNotFound(String),
    /// Neither a path, a URL nor `REPO/CHART`.
    #[error("non-absolute URLs should be in form of repo_name/path_to_chart, got: {0}")]
    NotRepoForm(String),
}

/// Classifies `arg` as Helm does: `oci://` first, then a path that exists
/// (`exists` asks the file system; tests pass their own), then a missing
/// path (absolute or starting with `.`), then `--repo`, then a URL, then
/// `REPO/CHART`.
pub fn parse(
    arg: &str,
    repo_url: Option<&str>,
    exists: impl Fn(&str) -> bool,
) -> Result<ChartRef, RefError> {
    if arg.starts_with("oci://") {
        return Ok(ChartRef::Oci {
            reference: arg.to_string(),
        });
    }
    if exists(arg) {
        return Ok(ChartRef::Local {
            path: PathBuf::from(arg),
        });
    }
    if arg.starts_with('/') || arg.starts_with('.') {
        return Err(RefError::PathNotFound(arg.to_string()));
    }
    if let Some(url) = repo_url.filter(|u| !u.is_empty()) {
        return Ok(ChartRef::RepoUrl {
            url: url.to_string(),
            chart: arg.to_string(),
        });
    }
    if arg.starts_with("https://") || arg.starts_with("http://") {
        return Ok(ChartRef::Url {
            url: arg.to_string(),
        });
    }
    match arg.split_once('/') {
        Some((repo, chart)) if !repo.is_empty() && !chart.is_empty() => Ok(ChartRef::Repo {
            repo: repo.to_string(),
            chart: chart.to_string(),
        }),
        _ => Err(RefError::NotRepoForm(arg.to_string())),
    }
}

/// [`parse`] against the real file system.
pub fn parse_arg(arg: &str, repo_url: Option<&str>) -> Result<ChartRef, RefError> {
    parse(arg, repo_url, |p| std::path::Path::new(p).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let none = |_: &str| false;
        assert_eq!(
            parse("chart", Some("https://r.example/c"), none).unwrap(),
            ChartRef::RepoUrl {
                url: "https://r.example/c".into(),
                chart: "chart".into()
            }
        );
        assert_eq!(
            parse("https://r.example/c-1.0.0.tgz", None, none).unwrap(),
            ChartRef::Url {
                url: "https://r.example/c-1.0.0.tgz".into()
            }
        );
        assert_eq!(
            parse("chart", None, none).unwrap_err().to_string(),
            "non-absolute URLs should be in form of repo_name/path_to_chart, got: chart"
        );
        assert_eq!(
            parse("./x", None, none).unwrap_err().to_string(),
            "path \"./x\" not found"
        );
        assert_eq!(
            parse("stable/x", None, |p| p == "stable/x").unwrap(),
            ChartRef::Local {
                path: "stable/x".into()
            }
        );
    }
}
