//! The executor: applies a [`Plan`], waits, and rolls back on failure.
//!
//! This module owns the [`Executor`] itself and the journal bookkeeping
//! every step shares; the work is split by what it does:
//! - `types`: the options, errors, progress events and outcomes;
//! - `apply`: a whole plan (its checks, and its releases run in order,
//!   several at a time);
//! - `run`: the steps of one release's run;
//! - `write`: the writes to the cluster (apply, delete, retries);
//! - `wait`: the waits for readiness and for deletions;
//! - `undo`: rollbacks and uninstalls;
//! - `atomic`: the transaction of an atomic plan, and its unwind;
//! - `recover`: settling a run a crash interrupted.
//!
//! [`Plan`]: crate::plan::Plan
use super::clock::Clock;
use super::journal::{Entry, Intent, Journal, ReleaseJournal};
use super::why::Diagnosis;
use crate::cluster::{Cluster, ObjectKey};
use crate::release::{OpError, Store};
use serde_json::Value;
use std::collections::BTreeMap;

mod apply;
mod atomic;
mod recover;
mod run;
mod types;
mod undo;
mod wait;
mod write;

pub use types::{
    CrossRelease, Event, ExecError, ExecOptions, Outcome, Progress, Quiet, ReleaseOutcome, Report,
    Reverted, DEFAULT_CONCURRENCY, DEFAULT_LOG_LINES,
};

/// The executor.
pub struct Executor<'a> {
    store: &'a dyn Store,
    store_url: String,
    cluster: &'a dyn Cluster,
    journal: Journal,
    clock: &'a dyn Clock,
    progress: &'a dyn Progress,
    opts: ExecOptions,
    /// Releases started per namespace by this executor.
    ns_started: std::sync::Mutex<BTreeMap<String, usize>>,
    /// What failed waits found, for the report.
    stuck: std::sync::Mutex<Vec<Diagnosis>>,
}

/// A failure inside a release's cluster work.
struct Failure(String);

/// Keys that this run created (apply of an object that did not exist).
fn created_by(entries: &[Entry], run: &str) -> Vec<ObjectKey> {
    let mut out = Vec::new();
    for e in entries {
        if let Entry::Write {
            run: r,
            verb,
            key,
            existed,
            ..
        } = e
        {
            if r == run && (verb == "apply" || verb == "create") && !existed && !out.contains(key) {
                out.push(key.clone());
            }
        }
    }
    out
}

/// The journal phase written just before the release namespace is created.
const CREATING_NAMESPACE: &str = "creating-namespace";

/// The key of namespace `ns`.
fn namespace_key(ns: &str) -> ObjectKey {
    ObjectKey::new("", "Namespace", "", ns)
}

fn namespaced(k: &ObjectKey) -> String {
    if k.namespace.is_empty() {
        k.name.clone()
    } else {
        format!("{}/{}", k.namespace, k.name)
    }
}

fn meta_str(v: &Value, f: &str) -> String {
    v.get("metadata")
        .and_then(|m| m.get(f))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

impl<'a> Executor<'a> {
    /// An executor over a store (named `store_url` in plans), a cluster,
    /// a journal and a clock.
    pub fn new(
        store: &'a dyn Store,
        store_url: &str,
        cluster: &'a dyn Cluster,
        journal: Journal,
        clock: &'a dyn Clock,
    ) -> Self {
        Executor {
            store,
            store_url: store_url.to_string(),
            cluster,
            journal,
            clock,
            progress: &Quiet,
            opts: ExecOptions::default(),
            ns_started: Default::default(),
            stuck: Default::default(),
        }
    }

    /// Sends progress to `p`.
    pub fn with_progress(mut self, p: &'a dyn Progress) -> Self {
        self.progress = p;
        self
    }

    /// Sets the options.
    pub fn with_options(mut self, o: ExecOptions) -> Self {
        self.opts = o;
        self
    }

    fn store_err(&self, rel: &str) -> impl Fn(OpError) -> ExecError + '_ {
        let rel = rel.to_string();
        move |source| ExecError::Store {
            release: rel.clone(),
            source: Box::new(source),
        }
    }

    fn done(&self, release: &str, outcome: &str) {
        self.progress.event(&Event::ReleaseDone {
            release: release.into(),
            outcome: outcome.into(),
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn begin(
        &self,
        j: &mut ReleaseJournal,
        run: &str,
        operation: &str,
        plan_id: &str,
        revision: u64,
        rollback_revision: Option<u64>,
        atomic: bool,
        intents: Vec<Intent>,
    ) -> Result<(), ExecError> {
        j.append(
            Entry::Begin {
                run: run.into(),
                operation: operation.into(),
                plan_id: plan_id.into(),
                revision,
                rollback_revision,
                atomic,
                intents,
            },
            true,
        )?;
        Ok(())
    }

    fn phase(&self, j: &mut ReleaseJournal, run: &str, phase: &str) -> Result<(), ExecError> {
        j.append(
            Entry::Phase {
                run: run.into(),
                phase: phase.into(),
            },
            false,
        )?;
        Ok(())
    }

    fn end(&self, j: &mut ReleaseJournal, run: &str, outcome: &str) -> Result<(), ExecError> {
        j.append(
            Entry::End {
                run: run.into(),
                outcome: outcome.into(),
            },
            true,
        )?;
        Ok(())
    }
}
