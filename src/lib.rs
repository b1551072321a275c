//! # rudder
//!
//! Build, render and release Helm charts from Rust.
//!
//! rudder is a library first. Its modules follow the way the data flows, and a
//! module only uses the stages before it:
//!
//! | stage | module | owns |
//! |---|---|---|
//! | 0 | [`yaml`] | every YAML/JSON parse and emit with Go (yaml.v2, sigs.k8s.io/yaml, encoding/json) semantics |
//! | 1 | [`manifest`] | Kubernetes objects: parse, split, identity, install order |
//! | 2 | [`chart`] | the chart model; building charts from manifests and components; load, validate, lint, package |
//! | 3 | [`template`] | the Go `text/template` engine with Sprig and Helm's functions |
//! | 4 | [`render`] | chart + values -> manifests, exactly as `helm template` |
//! | 5 | [`cluster`] | the [`cluster::Cluster`] interface: the simulated cluster, and the Kubernetes one (feature `kube`) |
//! | 6 | [`release`] | Helm-compatible release records and their stores |
//! | 7 | [`plan`] | upgrade plans as data: what changes, in which order, what to wait for |
//! | 8 | [`exec`] | the executor: applies plans, waits, rolls back, journals every write |
//! | 9 | [`targets`] | the global store/cluster flags, and the store, cluster and journal they open |
//! | 10 | [`upgrader`] | the bundled `rudder-upgrader`: Lokomotive's control-plane upgrade as plan-then-apply |
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
pub mod cluster;
pub mod duration;
mod env_faults;
pub mod exec;
pub mod jsonpath;
pub mod manifest;
mod par;
pub mod plan;
pub mod release;
pub mod render;
pub mod targets;
pub mod template;
pub mod upgrader;
pub mod yaml;

pub use chart::Chart;
pub use plan::{DesiredRelease, Plan};
pub use release::Release;

#[doc(hidden)]
pub use env_faults::enable_env_faults;
