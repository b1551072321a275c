//! The facade: one [`Client`] over a release store and a cluster, with
//! Helm's actions and plan-then-apply, async first; its blocking twin is
//! [`crate::blocking::Client`].
//!
//! ```
//! # async fn run() -> Result<(), rudder::Error> {
//! # let dir = tempfile::tempdir().map_err(|e| rudder::Error::Task(e.to_string()))?;
//! # let store = format!("file:{}", dir.path().join("store").display());
//! # let cluster = format!("sim:{}", dir.path().join("cluster").display());
//! let client = rudder::Client::builder()
//!     .store(store)        // any --store URL
//!     .cluster(cluster)    // any --cluster URL
//!     .build()
//!     .await?;
//! # Ok(()) }
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Design: a blocking core, driven correctly from async
//!
//! rudder's planner, executor, stores and clusters are synchronous code
//! (the [`crate::cluster::Cluster`] trait, the file and PostgreSQL stores,
//! the journal's fsyncs). The async [`Client`] runs each call on tokio's
//! blocking pool (`spawn_blocking`), so a call never holds up a runtime
//! worker: waits and retries sleep on a blocking-pool thread, and every
//! other task keeps running, on a current-thread runtime too. The
//! Kubernetes client's requests run as tasks on the caller's runtime (or
//! on the caller's own `kube::Client`), and the core waits for their
//! answers on plain channels, never with `block_on`, which panics inside a
//! runtime. A rewrite of every stage as async code would have bought
//! nothing a blocking-pool thread does not already give: the work between
//! requests is CPU work, and the executor's writes must stay ordered.
//!
//! A call that has started runs to its end even when its future is
//! dropped: an apply is not abandoned halfway (its journal would have to
//! settle it later). Dropping the last clone of a client never blocks the
//! runtime: what might block (a PostgreSQL connection's runtime) is
//! dropped on a thread of its own.
pub mod blocking;
pub(crate) mod core;
mod error;

pub use error::Error;

use crate::cluster::Cluster;
use crate::exec::{CrossRelease, Event, ExecOptions, Report};
use crate::plan::{DesiredRelease, Plan, ReleaseOptions};
use crate::release::Release;
use crate::targets::Targets;
use crate::yaml::Node;
use core::{Core, ProgressFn};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The store of the embedded setup, as the CLI's default.
const DEFAULT_STORE: &str = "file:.rudder";
/// The cluster of the embedded setup, as the CLI's default.
const DEFAULT_CLUSTER: &str = "sim:.rudder/cluster";
/// Helm's Secrets driver: the store when the client is given a
/// `kube::Client` and no store.
const KUBE_STORE: &str = "secret";

/// Settings of a client, shared by [`ClientBuilder`] and
/// [`crate::blocking::ClientBuilder`].
#[derive(Clone, Default)]
pub(crate) struct Settings {
    // Fields are set by the builders' shared methods.
    store: Option<String>,
    cluster: Option<String>,
    /// The caller's client, and the runtime it was made on.
    #[cfg(feature = "kube")]
    kube_client: Option<(kube::Client, Option<tokio::runtime::Handle>)>,
    progress: Option<ProgressFn>,
    exec: ExecOptions,
}

impl Settings {
    fn store_url(&self) -> String {
        if let Some(s) = &self.store {
            return s.clone();
        }
        if self.real_cluster() {
            return KUBE_STORE.into();
        }
        DEFAULT_STORE.into()
    }

    fn cluster_url(&self) -> String {
        self.cluster.clone().unwrap_or_else(|| {
            if self.real_cluster() {
                "kube".into()
            } else {
                DEFAULT_CLUSTER.into()
            }
        })
    }

    fn real_cluster(&self) -> bool {
        #[cfg(feature = "kube")]
        if self.kube_client.is_some() {
            return true;
        }
        self.cluster
            .as_deref()
            .is_some_and(|c| c == "kube" || c.starts_with("kube?") || c.starts_with("kube:"))
    }

    /// Opens the store beside an opened cluster.
    pub(crate) fn finish(self, cluster: Arc<dyn Cluster>) -> Result<Core, Error> {
        let store_url = self.store_url();
        let cluster_url = self.cluster_url();
        let store = crate::release::store::open_in(&store_url, cluster.clone())?;
        Ok(Core {
            targets: Targets {
                store,
                journal: crate::targets::journal_for(&store_url),
                store_url,
                cluster,
                cluster_url,
            },
            progress: self.progress,
            exec: self.exec,
        })
    }

    /// Opens everything from blocking code (the blocking client; the async
    /// one on a blocking-pool thread).
    pub(crate) fn open_blocking(self) -> Result<Core, Error> {
        #[cfg(feature = "kube")]
        if let Some((c, handle)) = self.kube_client.clone() {
            let handle = handle.ok_or_else(|| {
                crate::cluster::ClusterError::Setup(
                    "a kube::Client runs on the tokio runtime it was made on: pass it to the builder inside that runtime".into(),
                )
            })?;
            let cluster = crate::cluster::kube::KubeCluster::from_client(c, handle);
            return self.finish(Arc::new(cluster));
        }
        let cluster: Arc<dyn Cluster> = Arc::from(crate::cluster::open(&self.cluster_url())?);
        self.finish(cluster)
    }
}

macro_rules! builder_methods {
    () => {
        /// The release store: any `--store` URL (`file:DIR`, `memory:`,
        /// `postgresql://...`, `secret`, `configmap`). Default:
        /// `file:.rudder`, or Helm's Secrets (`secret`) on a real cluster.
        pub fn store(mut self, url: impl Into<String>) -> Self {
            self.settings.store = Some(url.into());
            self
        }

        /// The cluster: any `--cluster` URL (`sim:DIR`, `kube`,
        /// `kube?kubeconfig=PATH&context=NAME`). Default:
        /// `sim:.rudder/cluster`. `kube` reads the kubeconfig as kubectl
        /// does (`KUBECONFIG`, then `~/.kube/config`).
        pub fn cluster(mut self, url: impl Into<String>) -> Self {
            self.settings.cluster = Some(url.into());
            self
        }

        /// Calls `f` with every progress event of applies, installs,
        /// upgrades, rollbacks and uninstalls (a release starting, an object
        /// written, a wait and why it goes on, a failure, ...), from the
        /// thread that does the work, so that a tool can draw its own
        /// progress.
        pub fn on_progress(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Self {
            self.settings.progress = Some(Arc::new(f));
            self
        }

        /// Take over fields that other managers own (`--force-conflicts`).
        pub fn force_conflicts(mut self, force: bool) -> Self {
            self.settings.exec.force_conflicts = force;
            self
        }

        /// When a release of a plan fails, also roll back the releases the
        /// apply already completed, newest first (`--rollback-completed`).
        /// Default: stop, and keep what was done.
        pub fn rollback_completed(mut self, yes: bool) -> Self {
            self.settings.exec.cross_release = if yes {
                CrossRelease::RollbackCompleted
            } else {
                CrossRelease::Stop
            };
            self
        }

        /// Make every plan one transaction (`--atomic-plan`): a failure in
        /// any release returns every release the apply changed to its
        /// revision before the apply (a release it installed is
        /// uninstalled, its history kept), newest first; a crash during the
        /// apply or its unwind is unwound by the next call. Plans made by
        /// this client show each release's rollback point. Default: off.
        pub fn atomic_plan(mut self, yes: bool) -> Self {
            self.settings.exec.cross_release = if yes {
                CrossRelease::AtomicPlan
            } else {
                CrossRelease::Stop
            };
            self
        }

        /// How many releases of a plan run at the same time (those with no
        /// `needs` path between them), and how many objects of one kind a
        /// release writes at once (`--concurrency`; 0 counts as 1).
        /// Default [`crate::exec::DEFAULT_CONCURRENCY`].
        pub fn concurrency(mut self, n: usize) -> Self {
            self.settings.exec.concurrency = n;
            self
        }

        /// Stop waiting at once, instead of at the deadline, when a pod is
        /// in a state that does not resolve by itself (`--fail-fast`;
        /// `Some(FailFast::default())`: unschedulable for 15 s, an image
        /// pull error, a crash loop past 3 restarts). Default: `None`, wait
        /// until the deadline as Helm does.
        pub fn fail_fast(mut self, ff: Option<crate::exec::FailFast>) -> Self {
            self.settings.exec.fail_fast = ff;
            self
        }

        /// How many lines of a failing container's log a failed wait's
        /// report ([`crate::exec::Report::diagnoses`]) carries, where the
        /// cluster serves logs (`--log-lines`; 0: none). Default
        /// [`crate::exec::DEFAULT_LOG_LINES`].
        pub fn log_lines(mut self, n: u32) -> Self {
            self.settings.exec.log_lines = n;
            self
        }

        /// Use the caller's own `kube::Client` for a real cluster; call this
        /// inside the tokio runtime the client was made on, whose tasks will
        /// run its requests. The store defaults to Helm's Secrets in each
        /// release's namespace.
        #[cfg(feature = "kube")]
        pub fn kube_client(mut self, client: kube::Client) -> Self {
            let handle = tokio::runtime::Handle::try_current().ok();
            self.settings.kube_client = Some((client, handle));
            self
        }
    };
}
pub(crate) use builder_methods;

/// Builds a [`Client`]: [`Client::builder`].
#[must_use]
#[derive(Default)]
pub struct ClientBuilder {
    settings: Settings,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("store", &self.settings.store)
            .field("cluster", &self.settings.cluster)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    builder_methods!();

    /// Opens the store and the cluster. Nothing is written; a real
    /// cluster is not contacted until the first call.
    pub async fn build(self) -> Result<Client, Error> {
        #[allow(unused_mut)]
        let mut settings = self.settings;
        #[cfg(feature = "kube")]
        if let Some((_, h @ None)) = &mut settings.kube_client {
            *h = Some(tokio::runtime::Handle::current());
        }
        #[cfg(feature = "kube")]
        if settings.kube_client.is_none() && settings.real_cluster() {
            // A kubeconfig cluster: its client runs on this runtime.
            let url = settings.cluster_url();
            let opts = crate::cluster::kube::parse_url(&url).ok_or_else(|| {
                crate::cluster::ClusterError::Setup(format!(
                    "invalid cluster {url:?}: want kube or kube?kubeconfig=PATH&context=NAME"
                ))
            })?;
            let handle = tokio::runtime::Handle::current();
            let cluster = crate::cluster::kube::KubeCluster::connect_on(&opts, handle).await?;
            let core = run(move || settings.finish(Arc::new(cluster))).await?;
            return Ok(Client::from_core(core));
        }
        let core = run(move || settings.open_blocking()).await?;
        Ok(Client::from_core(core))
    }
}

/// Holds the core; the last holder drops it off the runtime.
pub(crate) struct Shared(Option<Arc<Core>>);

impl Shared {
    pub(crate) fn new(core: Core) -> Shared {
        Shared(Some(Arc::new(core)))
    }

    /// The core (present until the holder is dropped).
    pub(crate) fn core(&self) -> Result<Arc<Core>, Error> {
        self.0
            .clone()
            .ok_or_else(|| Error::Task("the client was dropped".into()))
    }
}

impl Clone for Shared {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let Some(core) = self.0.take().and_then(Arc::into_inner) else {
            return;
        };
        // A PostgreSQL store owns a runtime, which must not be dropped on a
        // runtime's worker: drop it on a thread of its own there.
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = std::thread::Builder::new()
                .name("rudder-drop".into())
                .spawn(move || drop(core));
        }
    }
}

/// Runs blocking work on tokio's blocking pool.
pub(crate) async fn run<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(Error::Task(e.to_string())),
    }
}

/// An async client over one release store and one cluster: Helm's actions
/// and rudder's plans. Cheap to clone; clones share the store and cluster.
///
/// Every call runs on tokio's blocking pool (see the
/// crate docs' section on async use for why), so it can be awaited on any
/// tokio runtime, current-thread included.
#[derive(Clone)]
pub struct Client {
    shared: Shared,
    store_url: String,
    cluster_url: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("store", &self.store_url)
            .field("cluster", &self.cluster_url)
            .finish()
    }
}

impl Client {
    /// A builder: [`ClientBuilder::store`], [`ClientBuilder::cluster`],
    /// then [`ClientBuilder::build`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    fn from_core(core: Core) -> Client {
        Client {
            store_url: core.targets.store_url.clone(),
            cluster_url: core.targets.cluster_url.clone(),
            shared: Shared::new(core),
        }
    }

    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Core) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let core = self.shared.core()?;
        let shared = self.shared.clone();
        run(move || {
            let r = f(&core);
            drop(core);
            // The last clone may be this one: drop it here, off the runtime.
            drop(shared);
            r
        })
        .await
    }

    /// Loads the chart `reference` names, as Helm's chart arguments do: a
    /// directory or `.tgz`, `REPO/CHART` (a repository `helm repo add` or
    /// `rudder repo add` made), `CHART` with [`LocateOptions::repo_url`],
    /// `oci://HOST/PATH/CHART`, or an `https://` URL of an archive, at the
    /// version [`LocateOptions::version`] picks (a Masterminds constraint).
    /// Downloads are checked against their digest and cached by it.
    ///
    /// ```no_run
    /// # async fn f(client: rudder::Client) -> Result<(), rudder::Error> {
    /// use rudder::source::resolve::LocateOptions;
    /// let opts = LocateOptions { version: "~1.16".into(), ..LocateOptions::from_env() };
    /// let chart = client.load_chart("jetstack/cert-manager", &opts).await?;
    /// let release = rudder::DesiredRelease::new("cert-manager", "cert-manager", chart);
    /// client.sync(&[release]).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// [`LocateOptions::repo_url`]: crate::source::resolve::LocateOptions::repo_url
    /// [`LocateOptions::version`]: crate::source::resolve::LocateOptions::version
    pub async fn load_chart(
        &self,
        reference: &str,
        opts: &crate::source::resolve::LocateOptions,
    ) -> Result<crate::Chart, Error> {
        let (r, o) = (reference.to_string(), opts.clone());
        run(move || Ok(crate::source::resolve::load_chart(&r, &o)?)).await
    }

    /// The store URL in use (what plans record).
    pub fn store_url(&self) -> &str {
        &self.store_url
    }

    /// The cluster URL in use.
    pub fn cluster_url(&self) -> &str {
        &self.cluster_url
    }

    /// Plans the releases against the store and the live cluster; writes
    /// nothing. Releases are ordered by their `needs`; an unchanged release
    /// is a `noop` and will get no new revision.
    pub async fn plan(&self, releases: &[DesiredRelease]) -> Result<Plan, Error> {
        let releases = releases.to_vec();
        self.call(move |c| c.plan(&releases)).await
    }

    /// Applies a plan made by this client (or for the same store and
    /// cluster): re-checks its preconditions, then runs its releases in
    /// order, waiting and rolling back as their options say. A failed
    /// release is [`Error::Failed`], which carries the report.
    pub async fn apply(&self, plan: &Plan) -> Result<Report, Error> {
        let plan = plan.clone();
        self.call(move |c| c.apply(&plan)).await
    }

    /// Settles interrupted runs of the releases, plans them and applies the
    /// plan (planning again, up to three times, if the cluster moved in
    /// between): `rudder apply FILE`.
    pub async fn sync(&self, releases: &[DesiredRelease]) -> Result<Report, Error> {
        let releases = releases.to_vec();
        self.call(move |c| c.sync(&releases)).await
    }

    /// Installs a release, as `helm install` (always a new revision).
    /// Fails with [`Error::NameInUse`] when the name has records.
    pub async fn install(&self, release: DesiredRelease) -> Result<Release, Error> {
        self.call(move |c| c.install(release)).await
    }

    /// Upgrades an installed release, as `helm upgrade` (always a new
    /// revision). Fails with [`Error::NotDeployed`] when it is not
    /// installed.
    pub async fn upgrade(&self, release: DesiredRelease) -> Result<Release, Error> {
        self.call(move |c| c.upgrade(release, false)).await
    }

    /// Upgrades the release, or installs it when it is not installed:
    /// `helm upgrade --install`.
    pub async fn upgrade_or_install(&self, release: DesiredRelease) -> Result<Release, Error> {
        self.call(move |c| c.upgrade(release, true)).await
    }

    /// Rolls a release back to `revision` (the previous one when `None`),
    /// as `helm rollback`, waiting as `options` say (`wait`, `timeout`;
    /// `ReleaseOptions::default()` waits up to 5 minutes).
    pub async fn rollback(
        &self,
        namespace: &str,
        name: &str,
        revision: Option<u64>,
        options: ReleaseOptions,
    ) -> Result<Release, Error> {
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.call(move |c| c.rollback(&ns, &n, revision, &options))
            .await
    }

    /// Uninstalls a release, as `helm uninstall` (`--keep-history` keeps
    /// its records, marked uninstalled).
    pub async fn uninstall(
        &self,
        namespace: &str,
        name: &str,
        keep_history: bool,
    ) -> Result<(), Error> {
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.call(move |c| c.uninstall(&ns, &n, keep_history)).await
    }

    /// The newest record of a release (`helm status`).
    pub async fn status(&self, namespace: &str, name: &str) -> Result<Release, Error> {
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.call(move |c| c.status(&ns, &n)).await
    }

    /// Every record of a release, oldest first (`helm history`); empty
    /// when it has none.
    pub async fn history(&self, namespace: &str, name: &str) -> Result<Vec<Release>, Error> {
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.call(move |c| c.history_sorted(&ns, &n)).await
    }

    /// The newest record of every release in `namespace` (all namespaces
    /// when `None`), whatever its status (`helm list -a`).
    pub async fn list(&self, namespace: Option<&str>) -> Result<Vec<Release>, Error> {
        let ns = namespace.map(str::to_string);
        self.call(move |c| c.list(ns.as_deref())).await
    }

    /// The values of a release's newest revision (`helm get values`): the
    /// user-supplied ones, or with `all` the chart's defaults coalesced
    /// with them (`--all`).
    pub async fn get_values(
        &self,
        namespace: &str,
        name: &str,
        all: bool,
    ) -> Result<BTreeMap<String, Node>, Error> {
        let (ns, n) = (namespace.to_string(), name.to_string());
        self.call(move |c| c.values(&ns, &n, all)).await
    }
}
