//! The global flags of both binaries (`rudder`, and `rudder-upgrader`,
//! which includes this file with `#[path]`): where records and objects
//! are. The library resolves them ([`rudder::targets::TargetFlags`]); only
//! their command-line form lives here, so that the library's API has no
//! clap type.
use clap::Args;
use rudder::targets::{TargetFlags, TargetsError};

/// Flags every subcommand takes: where records and objects are.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Release store: `file:DIR` (embedded, the default `file:.rudder` on
    /// the simulated cluster), `memory:`, `postgresql://...`, or Helm's
    /// `secret` (the default on a real cluster) / `configmap` drivers.
    /// Without it, `HELM_DRIVER` is honoured as Helm does.
    #[arg(long, global = true)]
    pub store: Option<String>,
    /// Cluster: `sim:DIR` (the embedded simulated cluster, default
    /// `sim:.rudder/cluster`) or `kube` (a real one; also chosen by
    /// `--kubeconfig`, `--kube-context` or `KUBECONFIG`).
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// Path to the kubeconfig file of a real cluster.
    #[arg(long, global = true)]
    pub kubeconfig: Option<String>,
    /// The kubeconfig context to use.
    #[arg(long = "kube-context", global = true)]
    pub kube_context: Option<String>,
    /// Verbose output, as Helm's `--debug`: `rudder template` prints every
    /// rendered file when one is not valid YAML, then fails.
    #[arg(long, global = true)]
    pub debug: bool,
    /// Path to the file containing repository names and URLs (default:
    /// Helm's, `HELM_REPOSITORY_CONFIG` or `~/.config/helm/repositories.yaml`).
    #[arg(long = "repository-config", global = true)]
    pub repository_config: Option<std::path::PathBuf>,
    /// Path to the directory containing cached repository indexes (default:
    /// Helm's, `HELM_REPOSITORY_CACHE` or `~/.cache/helm/repository`).
    #[arg(long = "repository-cache", global = true)]
    pub repository_cache: Option<std::path::PathBuf>,
    /// Path to the registry config file (default: Helm's,
    /// `HELM_REGISTRY_CONFIG` or `~/.config/helm/registry/config.json`).
    #[arg(long = "registry-config", global = true)]
    pub registry_config: Option<std::path::PathBuf>,
}

impl GlobalArgs {
    /// The target flags, for the library to resolve.
    pub fn targets(&self) -> TargetFlags {
        TargetFlags {
            store: self.store.clone(),
            cluster: self.cluster.clone(),
            kubeconfig: self.kubeconfig.clone(),
            kube_context: self.kube_context.clone(),
        }
    }

    /// Helm's file locations: the environment's, moved by the flags.
    // rudder-upgrader includes this file and fetches no charts.
    #[allow(dead_code)]
    pub fn helm_paths(&self) -> rudder::source::HelmPaths {
        let mut p = rudder::source::HelmPaths::from_env();
        if let Some(c) = &self.repository_config {
            p.repository_config = c.clone();
        }
        if let Some(c) = &self.repository_cache {
            p.repository_cache = c.clone();
        }
        if let Some(c) = &self.registry_config {
            p.registry_config = c.clone();
        }
        p
    }

    /// The store URL in effect ([`TargetFlags::store_url`]).
    pub fn store_url(&self) -> Result<String, TargetsError> {
        self.targets().store_url()
    }

    /// The cluster URL in effect ([`TargetFlags::cluster_url`]).
    pub fn cluster_url(&self) -> Result<String, TargetsError> {
        self.targets().cluster_url()
    }
}
