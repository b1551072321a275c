//! Where a command's releases and objects live: the global `--store`,
//! `--cluster`, `--kubeconfig` and `--kube-context` flags of the `rudder`
//! and `rudder-upgrader` binaries, resolved to URLs, and the store, cluster
//! and journal they open.
use crate::cluster::Cluster;
use crate::exec::Journal;
use crate::release::Store;
use clap::Args;
use std::path::Path;
use std::sync::Arc;

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
}

/// The default store of the embedded setup.
pub const DEFAULT_STORE: &str = "file:.rudder";
/// The default cluster of the embedded setup.
pub const DEFAULT_CLUSTER: &str = "sim:.rudder/cluster";

impl GlobalArgs {
    /// Whether the flags and environment choose a real cluster:
    /// `--cluster kube`, or no `--cluster` and any of `--kubeconfig`,
    /// `--kube-context` or a non-empty `KUBECONFIG` (`~/.kube/config` alone
    /// does not).
    pub fn real_cluster(&self) -> bool {
        match self.cluster.as_deref() {
            Some(c) => c == "kube" || c.starts_with("kube?") || c.starts_with("kube:"),
            None => {
                self.kubeconfig.is_some()
                    || self.kube_context.is_some()
                    || std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
            }
        }
    }

    /// The store URL in effect: `--store`, else `HELM_DRIVER` as Helm reads
    /// it (`secret`, `configmap`, `memory`, `sql` with
    /// `HELM_DRIVER_SQL_CONNECTION_STRING`), else the Secrets driver on a
    /// real cluster and `file:.rudder` on the simulated one.
    pub fn store_url(&self) -> Result<String, String> {
        if let Some(s) = &self.store {
            return Ok(s.clone());
        }
        let driver = std::env::var("HELM_DRIVER").unwrap_or_default();
        match driver.as_str() {
            "" => {}
            "secret" | "secrets" | "configmap" | "configmaps" => return Ok(driver),
            "memory" => return Ok("memory:".into()),
            "sql" => {
                let dsn = std::env::var("HELM_DRIVER_SQL_CONNECTION_STRING").unwrap_or_default();
                if dsn.is_empty() {
                    return Err("HELM_DRIVER=sql needs HELM_DRIVER_SQL_CONNECTION_STRING".into());
                }
                return Ok(dsn);
            }
            other => return Err(format!("unknown driver {other:?}")),
        }
        Ok(if self.real_cluster() {
            "secret".to_string()
        } else {
            DEFAULT_STORE.to_string()
        })
    }

    /// The cluster URL in effect (`sim:DIR`, or `kube?kubeconfig=..&context=..`
    /// for a real one), or an error for what this build does not support.
    pub fn cluster_url(&self) -> Result<String, String> {
        if !self.real_cluster() {
            return Ok(self
                .cluster
                .clone()
                .unwrap_or_else(|| DEFAULT_CLUSTER.to_string()));
        }
        #[cfg(feature = "kube")]
        {
            if let Some(c) = self.cluster.as_deref().filter(|c| *c != "kube") {
                return Ok(c.to_string());
            }
            Ok(crate::cluster::kube::url_for(
                &crate::cluster::kube::KubeOptions {
                    kubeconfig: self.kubeconfig.clone(),
                    context: self.kube_context.clone(),
                },
            ))
        }
        #[cfg(not(feature = "kube"))]
        {
            Err("real Kubernetes clusters need rudder built with the kube feature: use --cluster sim:DIR".into())
        }
    }
}

/// An opened store, cluster and journal, with the URLs they came from.
pub struct Targets {
    /// The release store.
    pub store: Box<dyn Store>,
    /// Its URL (what plans record).
    pub store_url: String,
    /// The cluster.
    pub cluster: Arc<dyn Cluster>,
    /// Its URL.
    pub cluster_url: String,
    /// The executor's journal, next to the store.
    pub journal: Journal,
}

impl Targets {
    /// Opens the store and cluster of the given URLs; stores kept in the
    /// cluster (Helm's Secrets and ConfigMaps drivers) use that cluster.
    pub fn open(store_url: &str, cluster_url: &str) -> Result<Targets, String> {
        let cluster: Arc<dyn Cluster> =
            Arc::from(crate::cluster::open(cluster_url).map_err(|e| e.to_string())?);
        Targets::with_cluster(store_url, cluster_url, cluster)
    }

    /// The cluster for people: its URL, or for a real cluster the API
    /// server and kubeconfig context it resolved to.
    pub fn cluster_desc(&self) -> String {
        self.cluster
            .location()
            .unwrap_or_else(|| self.cluster_url.clone())
    }

    /// Opens the store of `store_url` beside an already opened cluster.
    pub fn with_cluster(
        store_url: &str,
        cluster_url: &str,
        cluster: Arc<dyn Cluster>,
    ) -> Result<Targets, String> {
        let store = crate::release::store::open_in(store_url, cluster.clone())
            .map_err(|e| e.to_string())?;
        Ok(Targets {
            store,
            store_url: store_url.to_string(),
            cluster,
            cluster_url: cluster_url.to_string(),
            journal: journal_for(store_url),
        })
    }
}

/// The journal lives next to the store: `DIR/journal` for `file:DIR`,
/// in memory for `memory:`, `.rudder/journal` otherwise.
pub fn journal_for(store_url: &str) -> Journal {
    if let Some(dir) = store_url.strip_prefix("file:") {
        let dir = dir.strip_prefix("//").unwrap_or(dir);
        return Journal::at(Path::new(dir).join("journal"));
    }
    if store_url.starts_with("memory:") {
        return Journal::in_memory();
    }
    Journal::at(".rudder/journal")
}
