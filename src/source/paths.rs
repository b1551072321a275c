//! Where Helm keeps its files, found as Helm finds them
//! (`pkg/helmpath` and `pkg/cli/environment.go`), so that rudder and helm
//! share one set: `repositories.yaml`, the repository cache and the
//! registry's `config.json`.
//!
//! Each base directory is, in order: Helm's own variable
//! (`HELM_CONFIG_HOME`, `HELM_CACHE_HOME`, `HELM_DATA_HOME`), then the XDG
//! variable joined with `helm` (`$XDG_CONFIG_HOME/helm`, ...), then the XDG
//! default under the home directory (`~/.config/helm`, `~/.cache/helm`,
//! `~/.local/share/helm`). The three files are then moved by
//! `HELM_REPOSITORY_CONFIG`, `HELM_REPOSITORY_CACHE` and
//! `HELM_REGISTRY_CONFIG`, and by the CLI's `--repository-config`,
//! `--repository-cache` and `--registry-config` flags.
//!
//! ```
//! use rudder::source::paths::HelmPaths;
//! let env = |k: &str| match k {
//!     "HELM_CONFIG_HOME" => Some("/etc/helm".to_string()),
//!     "HOME" => Some("/home/u".to_string()),
//!     _ => None,
//! };
//! let p = HelmPaths::from_lookup(env);
//! assert_eq!(p.repository_config, std::path::Path::new("/etc/helm/repositories.yaml"));
//! assert_eq!(p.registry_config, std::path::Path::new("/etc/helm/registry/config.json"));
//! assert_eq!(p.repository_cache, std::path::Path::new("/home/u/.cache/helm/repository"));
//! ```
use std::path::{Path, PathBuf};

/// Helm's file locations for one process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HelmPaths {
    /// Helm's configuration home (`~/.config/helm`).
    pub config_home: PathBuf,
    /// Helm's cache home (`~/.cache/helm`).
    pub cache_home: PathBuf,
    /// Helm's data home (`~/.local/share/helm`).
    pub data_home: PathBuf,
    /// `repositories.yaml`: the repositories `repo add` made.
    pub repository_config: PathBuf,
    /// The repository cache: `<name>-index.yaml`, `<name>-charts.txt`, and
    /// downloaded charts.
    pub repository_cache: PathBuf,
    /// The registry credentials (`config.json`, Docker's format).
    pub registry_config: PathBuf,
}

impl HelmPaths {
    /// The locations from this process's environment, as Helm finds them.
    pub fn from_env() -> HelmPaths {
        HelmPaths::from_lookup(|k| std::env::var(k).ok())
    }

    /// The locations from the variables `lookup` gives (a variable set to
    /// the empty string counts as unset, as in Helm).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> HelmPaths {
        let get = |k: &str| lookup(k).filter(|v| !v.is_empty());
        let home = get("HOME").map(PathBuf::from).unwrap_or_default();
        let base = |helm: &str, xdg: &str, default: &[&str]| -> PathBuf {
            if let Some(b) = get(helm) {
                return PathBuf::from(b);
            }
            let root = match get(xdg) {
                Some(x) => PathBuf::from(x),
                None => default.iter().fold(home.clone(), |p, e| p.join(e)),
            };
            root.join("helm")
        };
        let config_home = base("HELM_CONFIG_HOME", "XDG_CONFIG_HOME", &[".config"]);
        let cache_home = base("HELM_CACHE_HOME", "XDG_CACHE_HOME", &[".cache"]);
        let data_home = base("HELM_DATA_HOME", "XDG_DATA_HOME", &[".local", "share"]);
        let or = |k: &str, d: PathBuf| get(k).map(PathBuf::from).unwrap_or(d);
        HelmPaths {
            repository_config: or(
                "HELM_REPOSITORY_CONFIG",
                config_home.join("repositories.yaml"),
            ),
            repository_cache: or("HELM_REPOSITORY_CACHE", cache_home.join("repository")),
            registry_config: or(
                "HELM_REGISTRY_CONFIG",
                config_home.join("registry").join("config.json"),
            ),
            config_home,
            cache_home,
            data_home,
        }
    }

    /// The cached index of repository `name` (`<cache>/<name>-index.yaml`).
    pub fn index_file(&self, name: &str) -> PathBuf {
        self.repository_cache.join(format!("{name}-index.yaml"))
    }

    /// The cached chart-name list of repository `name`
    /// (`<cache>/<name>-charts.txt`), which Helm writes next to the index.
    pub fn charts_file(&self, name: &str) -> PathBuf {
        self.repository_cache.join(format!("{name}-charts.txt"))
    }

    /// rudder's content-addressed chart cache:
    /// `<cache home>/rudder/sha256/<hex>.tgz` (see [`crate::source::cache`]).
    pub fn content_cache(&self) -> PathBuf {
        self.cache_home.join("rudder").join("sha256")
    }

    /// The lock file Helm takes around `repositories.yaml` writes: the
    /// same path with its extension replaced by `.lock`.
    pub fn repository_lock(&self) -> PathBuf {
        lock_path(&self.repository_config)
    }
}

/// `path` with its extension replaced by `.lock` (Helm's
/// `strings.TrimSuffix(f, filepath.Ext(f)) + ".lock"`).
pub fn lock_path(path: &Path) -> PathBuf {
    path.with_extension("lock")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(vars: &[(&str, &str)]) -> HelmPaths {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HelmPaths::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn xdg_defaults_under_home() {
        let p = paths(&[("HOME", "/h")]);
        assert_eq!(
            p.repository_config,
            Path::new("/h/.config/helm/repositories.yaml")
        );
        assert_eq!(p.repository_cache, Path::new("/h/.cache/helm/repository"));
        assert_eq!(
            p.registry_config,
            Path::new("/h/.config/helm/registry/config.json")
        );
        assert_eq!(p.data_home, Path::new("/h/.local/share/helm"));
        assert_eq!(
            p.index_file("bitnami"),
            Path::new("/h/.cache/helm/repository/bitnami-index.yaml")
        );
    }

    #[test]
    fn helm_variables_beat_xdg_and_empty_counts_as_unset() {
        let p = paths(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x/c"),
            ("XDG_CACHE_HOME", "/x/k"),
            ("HELM_CACHE_HOME", "/helm/k"),
            ("HELM_DATA_HOME", ""),
        ]);
        assert_eq!(p.config_home, Path::new("/x/c/helm"));
        assert_eq!(p.cache_home, Path::new("/helm/k"));
        assert_eq!(p.data_home, Path::new("/h/.local/share/helm"));
        let p = paths(&[
            ("HOME", "/h"),
            ("HELM_REPOSITORY_CONFIG", "/r.yaml"),
            ("HELM_REPOSITORY_CACHE", "/rc"),
            ("HELM_REGISTRY_CONFIG", "/reg.json"),
        ]);
        assert_eq!(p.repository_config, Path::new("/r.yaml"));
        assert_eq!(p.repository_cache, Path::new("/rc"));
        assert_eq!(p.registry_config, Path::new("/reg.json"));
        assert_eq!(p.repository_lock(), Path::new("/r.lock"));
    }
}
