//! Where releases and objects live: the `--store`, `--cluster`,
//! `--kubeconfig` and `--kube-context` flags of the `rudder` and
//! `rudder-upgrader` binaries ([`TargetFlags`]), resolved to URLs as those
//! binaries resolve them (`HELM_DRIVER`, `KUBECONFIG`), and the store,
//! cluster and journal the URLs open ([`Targets`]).
//!
//! ```
//! use rudder::targets::{TargetFlags, Targets};
//!
//! let flags = TargetFlags {
//!     store: Some("memory:".into()),
//!     cluster: Some("sim:target/doc-sim".into()),
//!     ..TargetFlags::default()
//! };
//! let targets = Targets::open(&flags.store_url()?, &flags.cluster_url()?)?;
//! assert_eq!(targets.store_url, "memory:");
//! # Ok::<(), rudder::targets::TargetsError>(())
//! ```
use crate::cluster::{Cluster, ClusterError};
use crate::exec::Journal;
use crate::release::{Store, StoreError};
use std::path::Path;
use std::sync::Arc;

/// Why targets cannot be resolved or opened.
#[derive(Debug, thiserror::Error)]
pub enum TargetsError {
    /// `HELM_DRIVER=sql` without a connection string.
    #[error("HELM_DRIVER=sql needs HELM_DRIVER_SQL_CONNECTION_STRING")]
    SqlWithoutConnectionString,
    /// `HELM_DRIVER` names no driver Helm has.
    #[error("unknown driver {0:?}")]
    UnknownDriver(String),
    /// A real cluster was asked for, in a build without feature `kube`.
    #[error(
        "real Kubernetes clusters need rudder built with the kube feature: use --cluster sim:DIR"
    )]
    KubeNotBuilt,
    /// The cluster URL does not open (boxed: a cluster error is large).
    #[error(transparent)]
    Cluster(Box<ClusterError>),
    /// The store URL does not open.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ClusterError> for TargetsError {
    fn from(e: ClusterError) -> Self {
        TargetsError::Cluster(Box::new(e))
    }
}

/// The target flags every subcommand of the binaries takes, without their
/// command-line parser: where records and objects are. `None` is a flag
/// not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetFlags {
    /// `--store`: `file:DIR`, `memory:`, `postgresql://...`, `secret` or
    /// `configmap`.
    pub store: Option<String>,
    /// `--cluster`: `sim:DIR` or `kube` (`kube?kubeconfig=..&context=..`).
    pub cluster: Option<String>,
    /// `--kubeconfig`: the kubeconfig file of a real cluster.
    pub kubeconfig: Option<String>,
    /// `--kube-context`: the kubeconfig context to use.
    pub kube_context: Option<String>,
}

/// The default store of the embedded setup.
pub const DEFAULT_STORE: &str = "file:.rudder";
/// The default cluster of the embedded setup.
pub const DEFAULT_CLUSTER: &str = "sim:.rudder/cluster";

impl TargetFlags {
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
    pub fn store_url(&self) -> Result<String, TargetsError> {
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
                    return Err(TargetsError::SqlWithoutConnectionString);
                }
                return Ok(dsn);
            }
            _ => return Err(TargetsError::UnknownDriver(driver)),
        }
        Ok(if self.real_cluster() {
            "secret".to_string()
        } else {
            DEFAULT_STORE.to_string()
        })
    }

    /// The cluster URL in effect (`sim:DIR`, or `kube?kubeconfig=..&context=..`
    /// for a real one), or an error for what this build does not support.
    pub fn cluster_url(&self) -> Result<String, TargetsError> {
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
            Err(TargetsError::KubeNotBuilt)
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
    pub fn open(store_url: &str, cluster_url: &str) -> Result<Targets, TargetsError> {
        let cluster: Arc<dyn Cluster> = Arc::from(crate::cluster::open(cluster_url)?);
        Targets::with_cluster(store_url, cluster_url, cluster)
    }

    /// The cluster for people: its URL, or for a real cluster the API
    /// server and kubeconfig context it resolved to.
    pub fn cluster_desc(&self) -> String {
        self.cluster
            .location()
            .unwrap_or_else(|| self.cluster_url.clone())
    }

    /// An executor over these targets (their store, its URL, their
    /// cluster and journal), timed by `clock`.
    pub fn executor<'a>(&'a self, clock: &'a dyn crate::exec::Clock) -> crate::exec::Executor<'a> {
        crate::exec::Executor::new(
            self.store.as_ref(),
            &self.store_url,
            self.cluster.as_ref(),
            self.journal.clone(),
            clock,
        )
    }

    /// Opens the store of `store_url` beside an already opened cluster.
    pub fn with_cluster(
        store_url: &str,
        cluster_url: &str,
        cluster: Arc<dyn Cluster>,
    ) -> Result<Targets, TargetsError> {
        let store = crate::release::store::open_in(store_url, cluster.clone())?;
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
