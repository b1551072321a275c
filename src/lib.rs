//! # rudder
//!
//! Build, render and release Helm charts from Rust: charts from component
//! manifests, rendering identical to `helm template`, Helm-compatible
//! release records, and upgrade plans as data that a thin executor applies
//! to a cluster.
//!
//! ## Guide: one release, from component to history
//!
//! A tool describes what it deploys as a [`chart::Component`] (or loads a
//! chart with [`chart::load`]), asks a [`Client`] for a [`Plan`], looks at
//! it, applies it, and reads the release's history. Here on the embedded
//! simulated cluster, with the file store, in a scratch directory:
//!
//! ```
//! use rudder::chart::{chart_from_component, BoxError, Component};
//! use rudder::plan::{DesiredRelease, ReleaseAction};
//! use std::collections::BTreeMap;
//!
//! // 1. A component renders its manifests; rudder makes it a chart.
//! struct Web;
//! impl Component for Web {
//!     fn name(&self) -> &str { "web" }
//!     fn namespace(&self) -> &str { "apps" }
//!     fn render_manifests(&self) -> Result<BTreeMap<String, String>, BoxError> {
//!         Ok(BTreeMap::from([(
//!             "cm.yaml".to_string(),
//!             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n".to_string(),
//!         )]))
//!     }
//! }
//! let chart = chart_from_component(&Web)?;
//!
//! // 2. A client over a store and a cluster: any `--store`/`--cluster` URL
//! //    of the CLI. Here the file store and the simulated cluster, each in
//! //    a directory; `kube` is a real cluster (feature `kube`).
//! let dir = tempfile::tempdir()?;
//! let store = format!("file:{}", dir.path().join("store").display());
//! let cluster = format!("sim:{}", dir.path().join("cluster").display());
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let client = rudder::Client::builder().store(store).cluster(cluster).build().await?;
//!
//! // 3. A plan is data: print it, diff it, save it, snapshot it.
//! let release = DesiredRelease::new("web", "apps", chart);
//! let plan = client.plan(&[release.clone()]).await?;
//! assert_eq!(plan.releases[0].action, ReleaseAction::Install);
//!
//! // 4. Apply it: writes, waits, rolls back on failure (atomic by default).
//! client.apply(&plan).await?;
//!
//! // 5. Nothing changed, nothing to do: the next plan is a noop.
//! let again = client.plan(&[release]).await?;
//! assert_eq!(again.releases[0].action, ReleaseAction::Noop);
//!
//! // 6. The records are Helm's (`helm history` reads them on a real cluster).
//! let history: Vec<rudder::Release> = client.history("apps", "web").await?;
//! assert_eq!(history.len(), 1);
//! assert_eq!(history[0].info.status, rudder::release::Status::Deployed);
//! # Ok::<(), rudder::Error>(()) })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A component's chart takes no Helm values: its templates are the
//! manifests the component rendered, so its parameters are the component's
//! own fields (values given to it anyway make the plan warn). A chart
//! loaded with [`chart::load`] takes values in
//! [`DesiredRelease::values`](plan::DesiredRelease::values).
//! [`DesiredRelease::options`](plan::DesiredRelease::options) are Helm's
//! flags, with the defaults of a releases file: atomic, waiting, a 5 minute
//! timeout, and the namespace created when it is missing (Helm's CLI needs
//! `--create-namespace` for that).
//!
//! `?` converts the chart, component and client errors into [`Error`]; a
//! program that mixes in errors of its own returns `Box<dyn Error + Send +
//! Sync>` or `anyhow::Result`. [`error_chain`] prints an error with its
//! sources, as the CLI does.
//!
//! Without an async runtime, [`blocking::Client`] has the same calls.
//! Next to `plan`/`apply`, both clients have Helm's actions: `install`,
//! `upgrade`, `upgrade_or_install`, `rollback`, `uninstall`, `status`,
//! `list`, `history` and `get_values`; `sync` plans and applies in one
//! call. [`ClientBuilder::on_progress`] receives the executor's
//! [`exec::Event`]s (a release starting, an object written, what a wait is
//! waiting for), so that a tool can draw its own progress.
//!
//! ## Real clusters
//!
//! With feature `kube` (on by default), `.cluster("kube")` reads the
//! kubeconfig as kubectl does, and [`ClientBuilder::kube_client`] takes the
//! caller's own client; `rudder::kube` re-exports the kube-rs crate rudder is
//! built with, so its version never has to be matched by hand. Records are
//! then Helm's Secrets in each release's namespace, which `helm list` and
//! `helm history` read. `examples/operator.rs` is an operator-style program
//! that does this.
//!
//! ## Async
//!
//! rudder's stages are blocking code; [`Client`] runs each call on tokio's
//! blocking pool, so it can be awaited on any tokio runtime, current-thread
//! included, and other tasks keep running through the longest wait. The
//! Kubernetes client runs its requests as tasks on the caller's runtime.
//! Neither client panics for being used inside or outside a runtime.
//!
//! ## Errors
//!
//! The clients return [`Error`]: `Send + Sync + 'static`, with a variant
//! per failure a caller may handle (`NameInUse`, `NotDeployed`, `Failed`
//! with the executor's report, ...) and the specific error of each stage
//! underneath ([`cluster::ClusterError`] through [`Error::cluster_error`]:
//! unreachable, forbidden, not found, a field conflict with its managers,
//! invalid).
//!
//! ## Snapshot tests
//!
//! `rudder::assert_chart_snapshot!` (feature `snapshot`) snapshots a chart
//! with insta; see its docs.
//!
//! ## Stages
//!
//! The modules follow the way the data flows, and a module only uses the
//! stages before it:
//!
//! | stage | module | owns |
//! |---|---|---|
//! | 0 | [`yaml`] | every YAML/JSON parse and emit with Go (yaml.v2, sigs.k8s.io/yaml, encoding/json) semantics |
//! | 1 | [`manifest`] | Kubernetes objects: parse, split, identity, install order |
//! | 2 | [`chart`] | the chart model; building charts from manifests and components; load, validate, lint, package |
//! | 3 | [`template`] | the Go `text/template` engine with Sprig and Helm's functions |
//! | 4 | [`render`] | chart + values -> manifests, exactly as `helm template` |
//! | 4½ | [`source`] | chart repositories, OCI registries, chart URLs and dependencies, in Helm's own files |
//! | 5 | [`cluster`] | the [`cluster::Cluster`] interface: the simulated cluster, and the Kubernetes one (feature `kube`) |
//! | 6 | [`release`] | Helm-compatible release records and their stores |
//! | 7 | [`plan`] | upgrade plans as data: what changes, in which order, what to wait for |
//! | 8 | [`exec`] | the executor: applies plans, waits, rolls back, journals every write |
//! | 9 | [`targets`] | the global store/cluster flags, and the store, cluster and journal they open |
//! | 10 | [`Client`], [`blocking`] | the facade: one client over a store and a cluster, async and blocking |
//! | 11 | [`upgrader`] | the bundled `rudder-upgrader`: Lokomotive's control-plane upgrade as plan-then-apply |
//!
//! [`fsutil`] (safe, owner-only file writes) and [`duration`] are used by
//! every stage.
//!
//! The `rudder` binary is a thin shell over these modules.
//!
//! ## Example: a chart from manifests, rendered back
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! let mut manifests = BTreeMap::new();
//! manifests.insert(
//!     "cm.yaml".to_string(),
//!     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rules\ndata:\n  alert: '{{ $labels.pod }} is down'\n"
//!         .to_string(),
//! );
//! let chart = rudder::chart::chart_from_manifests("monitoring", "kube-system", &manifests)?;
//!
//! let opts = rudder::render::RenderOptions {
//!     release_name: "monitoring".into(),
//!     namespace: "kube-system".into(),
//!     ..Default::default()
//! };
//! let rendered = rudder::render::render(&chart, &Default::default(), &opts)?;
//! // Helm prints the Go-template text of the input verbatim.
//! assert!(rendered.manifests[0].content.contains("{{ $labels.pod }} is down"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
// No unsafe code, except memory-mapping chart files in
// `chart::loader::load_mapped`, an `unsafe fn` whose contract says why.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod chart;
mod client;
pub mod cluster;
pub mod duration;
mod env_faults;
mod error_chain;
pub mod exec;
pub mod fsutil;
pub mod gostd;
pub mod input;
pub mod jsonpath;
pub mod manifest;
mod par;
pub mod plan;
pub mod release;
pub mod render;
pub mod source;
mod stack;
pub mod targets;
pub mod template;
pub mod upgrader;
pub mod yaml;

pub use chart::Chart;
pub use client::{blocking, Client, ClientBuilder, Error};
pub use error_chain::error_chain;
pub use plan::{DesiredRelease, Plan};
pub use release::Release;

/// The kube-rs crate rudder is built with (feature `kube`): build the
/// `kube::Client` for [`ClientBuilder::kube_client`] from it, so that its
/// version always matches.
#[cfg(feature = "kube")]
pub use kube;

#[doc(hidden)]
pub use env_faults::enable_env_faults;
