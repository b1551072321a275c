//! Helm-compatible release records, their codec and their stores.
//!
//! - [`model`]: the record (`Release`, `Info`, `Hook`, `Status`) in Helm v3's JSON;
//! - [`time`]: Helm's timestamps and the ways its CLI prints them;
//! - [`codec`]: keys, `base64(gzip(json))` bodies, storage labels, and the
//!   Secret/ConfigMap objects of Helm's Kubernetes drivers;
//! - [`store`]: the [`store::Store`] trait, memory, file and PostgreSQL
//!   backends, and the install/upgrade/rollback/uninstall record lifecycle
//!   ([`store::ops::Releases`]);
//! - [`view`]: what `helm list/history/status/get` print.
//!
//! This module only records; talking to a cluster is the executor's job.
pub mod codec;
pub mod model;
pub mod selector;
pub mod store;
pub mod time;
pub mod view;

pub use model::{Hook, HookExecution, Info, Release, Status};
pub use store::ops::{HistoryMax, ListQuery, OpError, Releases, RevisionContent, UpgradeBase};
pub use store::{open, Store, StoreError};
pub use time::HelmTime;
