//! The blocking twin of [`crate::Client`]: the same calls, for plain
//! synchronous code.
//!
//! ```
//! # fn main() -> Result<(), rudder::Error> {
//! # let dir = tempfile::tempdir().map_err(|e| rudder::Error::Task(e.to_string()))?;
//! # let store = format!("file:{}", dir.path().join("store").display());
//! # let cluster = format!("sim:{}", dir.path().join("cluster").display());
//! let client = rudder::blocking::Client::builder()
//!     .store(store)
//!     .cluster(cluster)
//!     .build()?;
//! assert!(client.history("apps", "web")?.is_empty());
//! # Ok(()) }
//! ```
//!
//! Called inside an async runtime (on a runtime's worker, which should not
//! block), each call still works: it runs on a thread of its own while the
//! caller's thread waits, so nothing that must not run inside a runtime
//! (a PostgreSQL connection's own runtime) runs there. It never panics for
//! being inside one. Prefer [`crate::Client`] in async code: this blocks
//! the worker for the whole call.
use crate::client::core::Core;
use crate::client::{Error, Settings, Shared};
use crate::exec::{CrossRelease, Event, Report};
use crate::plan::{DesiredRelease, Plan, ReleaseOptions};
use crate::release::Release;
use crate::yaml::Node;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Runs `f` here, or on a scoped thread when this thread is inside a tokio
/// runtime.
fn off_runtime<T: Send>(f: impl FnOnce() -> Result<T, Error> + Send) -> Result<T, Error> {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("rudder-blocking".into())
            .spawn_scoped(s, f)
            .map_err(|e| Error::Task(e.to_string()))?
            .join()
            .unwrap_or_else(|p| Err(Error::Task(panic_text(&p))))
    })
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the call panicked".into())
}

/// Builds a blocking [`Client`]: [`Client::builder`].
#[must_use]
#[derive(Default)]
pub struct ClientBuilder {
    settings: Settings,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder").finish_non_exhaustive()
    }
}

impl ClientBuilder {
    crate::client::builder_methods!();

    /// Opens the store and the cluster. Nothing is written; a real
    /// cluster is not contacted until the first call.
    pub fn build(self) -> Result<Client, Error> {
        let settings = self.settings;
        let core = off_runtime(move || settings.open_blocking())?;
        Ok(Client {
            store_url: core.targets.store_url.clone(),
            cluster_url: core.targets.cluster_url.clone(),
            shared: Shared::new(core),
        })
    }
}

/// A blocking client over one release store and one cluster: the calls of
/// [`crate::Client`], without `.await`. Cheap to clone; clones share the
/// store and cluster.
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

    fn call<T: Send>(&self, f: impl FnOnce(&Core) -> Result<T, Error> + Send) -> Result<T, Error> {
        let core: Arc<Core> = self.shared.core()?;
        off_runtime(move || f(&core))
    }

    /// The store URL in use (what plans record).
    pub fn store_url(&self) -> &str {
        &self.store_url
    }

    /// The cluster URL in use.
    pub fn cluster_url(&self) -> &str {
        &self.cluster_url
    }

    /// [`crate::Client::plan`].
    pub fn plan(&self, releases: &[DesiredRelease]) -> Result<Plan, Error> {
        self.call(|c| c.plan(releases))
    }

    /// [`crate::Client::apply`].
    pub fn apply(&self, plan: &Plan) -> Result<Report, Error> {
        self.call(|c| c.apply(plan))
    }

    /// [`crate::Client::sync`].
    pub fn sync(&self, releases: &[DesiredRelease]) -> Result<Report, Error> {
        self.call(|c| c.sync(releases))
    }

    /// [`crate::Client::install`].
    pub fn install(&self, release: DesiredRelease) -> Result<Release, Error> {
        self.call(|c| c.install(release))
    }

    /// [`crate::Client::upgrade`].
    pub fn upgrade(&self, release: DesiredRelease) -> Result<Release, Error> {
        self.call(|c| c.upgrade(release, false))
    }

    /// [`crate::Client::upgrade_or_install`].
    pub fn upgrade_or_install(&self, release: DesiredRelease) -> Result<Release, Error> {
        self.call(|c| c.upgrade(release, true))
    }

    /// [`crate::Client::rollback`].
    pub fn rollback(
        &self,
        namespace: &str,
        name: &str,
        revision: Option<u64>,
        options: ReleaseOptions,
    ) -> Result<Release, Error> {
        self.call(|c| c.rollback(namespace, name, revision, &options))
    }

    /// [`crate::Client::uninstall`].
    pub fn uninstall(&self, namespace: &str, name: &str, keep_history: bool) -> Result<(), Error> {
        self.call(|c| c.uninstall(namespace, name, keep_history))
    }

    /// [`crate::Client::status`].
    pub fn status(&self, namespace: &str, name: &str) -> Result<Release, Error> {
        self.call(|c| c.status(namespace, name))
    }

    /// [`crate::Client::history`].
    pub fn history(&self, namespace: &str, name: &str) -> Result<Vec<Release>, Error> {
        self.call(|c| c.history_sorted(namespace, name))
    }

    /// [`crate::Client::load_chart`].
    pub fn load_chart(
        &self,
        reference: &str,
        opts: &crate::source::resolve::LocateOptions,
    ) -> Result<crate::Chart, Error> {
        Ok(crate::source::resolve::load_chart(reference, opts)?)
    }

    /// [`crate::Client::list`].
    pub fn list(&self, namespace: Option<&str>) -> Result<Vec<Release>, Error> {
        self.call(|c| c.list(namespace))
    }

    /// [`crate::Client::get_values`].
    pub fn get_values(
        &self,
        namespace: &str,
        name: &str,
        all: bool,
    ) -> Result<BTreeMap<String, Node>, Error> {
        self.call(|c| c.values(namespace, name, all))
    }
}
