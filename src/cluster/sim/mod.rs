//! The simulated cluster: an embedded API server whose state is one JSON
//! file (`--cluster sim:DIR`, by default `sim:.rudder/cluster`).
//!
//! It does what an API server does to the objects written to it, as far
//! as it shows in an upgrade plan: it assigns `metadata.uid`,
//! `resourceVersion`, `generation` and `creationTimestamp`; it knows which
//! kinds exist and which are namespaced (the built-in kinds of Kubernetes
//! 1.32 and the kinds of the CustomResourceDefinitions applied to it); it
//! applies the defaults of the common kinds and folds a Secret's
//! `stringData` into `data`; it keeps `.status` away from writes; and it
//! implements server-side apply with per-manager field ownership, conflicts
//! and `force`.
//!
//! # Semantics
//!
//! - A missing DIR is an empty cluster holding the namespaces `default`
//!   and `kube-system`. Reads create nothing; the first write creates DIR.
//! - `resourceVersion` is one cluster-wide counter; every write that changes
//!   something takes the next value. A write that changes nothing (the same
//!   apply twice, a replace with the live content) keeps the object as it is.
//! - `generation` is 1 on create and grows when `spec` changes (for kinds
//!   without `spec`: anything but `metadata` and `status`).
//! - `create` and `replace` record an `Update` entry in `managedFields` for
//!   the handle's update manager ([`SimCluster::with_update_manager`],
//!   `"unknown"` unless set); `apply` an `Apply` entry for
//!   [`ApplyOptions::field_manager`]. Fields owned by another manager that an
//!   apply would change are a [`ClusterError::FieldConflict`], unless
//!   `force`, which moves them. Fields a manager applied before and leaves
//!   out now are removed, unless another manager owns them too. Maps merge
//!   recursively; lists are replaced whole, except `containers`,
//!   `initContainers`, `ephemeralContainers`, `env`, `volumes`,
//!   `imagePullSecrets` (by `name`), `volumeMounts`/`volumeDevices` (by
//!   `mountPath`) and `ports` (by `containerPort`, or `port`), merged by key.
//! - `fieldsV1` is Kubernetes' shape: `f:<field>` per map key,
//!   `k:{"name":"web"}` per keyed list item, `{}` at each owned leaf.
//! - Deleting a Namespace deletes the objects in it; deleting a
//!   CustomResourceDefinition deletes its objects and its kind. `default`
//!   and `kube-system` cannot be deleted (403, as on a real server).
//! - Services get a `clusterIP` from 10.96.0.0/16 on create (unless they
//!   ask for one, or `None`), kept by later writes.
//!
//! # Controllers
//!
//! The kinds that have a controller on a real cluster (Deployment,
//! ReplicaSet, ReplicationController, DaemonSet, StatefulSet, Job, Pod,
//! PersistentVolumeClaim, Service) show the status
//! [`super::controllers::status`] computes when they
//! are read (`get`, `list`, [`SimCluster::snapshot`], and the object a
//! write returns): from the time since the object's last *spec-changing*
//! write (its creation or a write that bumped its `generation`), its
//! generation, and the number of `Node` objects. By default objects
//! converge at once (delay 0: ready at the first read after the write);
//! [`SimCluster::with_default_delay`] or, for clusters opened from a
//! directory in a process with fault injection on (see below),
//! `RUDDER_SIM_READY_DELAY_MS` set another default, and the
//! annotations `sim.rudder.io/ready: never|fail` and
//! `sim.rudder.io/ready-after: <duration>` override it per object. These
//! status updates are not writes: they never take a resourceVersion and
//! never count for fault injection. Time comes from the cluster's clock
//! ([`SimCluster::with_clock`]; by default the wall clock, in milliseconds
//! since the Unix epoch, so that separate processes agree).
//!
//! A create, replace or apply of an object annotated
//! `sim.rudder.io/reject: <message>` fails with [`ClusterError::Invalid`]
//! and that message. Dry runs are not rejected (they show the object as it
//! would be stored), so a plan shows the change and the apply fails.
//!
//! # Injected faults
//!
//! [`SimFaults`] (set with [`SimCluster::with_faults`]; clusters made by
//! [`SimCluster::open`] and [`SimCluster::in_memory`] take it from the
//! environment, in the `rudder` binaries and in tests: a program that embeds
//! the library never reads these variables unless it calls the hidden
//! `rudder::enable_env_faults`) makes requests fail or slow:
//!
//! - `RUDDER_SIM_FAIL_AT=N`: the N-th write this process sends to a
//!   simulated cluster (a create, replace or apply that is not a dry run,
//!   or a delete) fails with [`ClusterError::Server`] code 500,
//!   `injected failure (RUDDER_SIM_FAIL_AT=N)`, and so does every
//!   immediate retry of it (the same verb on the same object), until a
//!   different write comes. Reads and dry runs never count.
//! - `RUDDER_SIM_LATENCY_MS=M`: every request, read or write, first sleeps
//!   M milliseconds.
//!
//! # State files
//!
//! The state lives in two files under DIR: `state.json`, a snapshot, and
//! `log.jsonl`, the writes since that snapshot, one JSON object a line.
//! The cluster is `state.json` with the log replayed over it.
//!
//! `state.json` is one JSON object:
//!
//! ```json
//! {"format":"rudder.sim/v1",
//!  "id":"6f1c…-…",
//!  "serverVersion":"v1.32.0",
//!  "resourceVersion":7,
//!  "nextClusterIP":17,
//!  "seq":5,
//!  "writtenAt":{"default/Deployment.apps/web":1767225600000},
//!  "objects":[
//!   {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default",…},…},
//!   …
//!  ]}
//! ```
//!
//! - `format` is `rudder.sim/v1`; anything else is refused.
//! - `id` is the cluster's identity ([`Cluster::identity`]). Before the first
//!   write it is derived from the canonical path of DIR (the nearest
//!   existing ancestor canonicalised, the rest appended): the first 16 bytes
//!   of `sha256("rudder.sim" NUL path NUL)`, shaped as a version-4 UUID. An
//!   in-memory cluster has a random UUID. The first write
//!   stores that same value, which never changes afterwards (even if DIR
//!   moves).
//! - `serverVersion` is what the cluster reports (`.Capabilities`); edit it
//!   or call [`SimCluster::set_server_version`].
//! - `resourceVersion` is the last resourceVersion handed out.
//! - `nextClusterIP` is the offset in 10.96.0.0/16 where the next Service
//!   address search starts.
//! - `seq` (optional, default 0) is the sequence number of the last log
//!   entry the snapshot contains.
//! - `writtenAt` (optional) maps an object's key (as [`ObjectKey`] displays
//!   it) to the time of its last spec-changing write, in milliseconds on
//!   the cluster's clock; a missing entry is the clock's origin (long ago).
//! - `objects` are the stored objects, one per line, sorted by group, kind,
//!   namespace and name, as `get` returns them except for the status that
//!   controllers compute. The kinds of CustomResourceDefinitions are derived
//!   from the CRD objects.
//!
//! Each line of `log.jsonl` is one write:
//!
//! ```json
//! {"seq":6,"resourceVersion":8,"nextClusterIP":17,"delete":[{"group":"","kind":"ConfigMap","namespace":"default","name":"old"}],"put":[{"writtenAt":1767225601000,"object":{…}}]}
//! ```
//!
//! - `seq` is the previous entry's plus one (the first after a snapshot:
//!   the snapshot's `seq` plus one); entries at or below the snapshot's
//!   `seq` are already in it and are skipped.
//! - `resourceVersion`, `nextClusterIP` and (when it changed)
//!   `serverVersion` are the state's values after the write.
//! - `delete` lists the keys the write removed, then `put` the objects it
//!   stored (whole, with their `writtenAt`).
//!
//! # Crash safety and concurrency
//!
//! Every write takes an exclusive `flock` on `DIR/.lock`, brings its cached
//! state up to date (re-reading the files, or only the log's new lines,
//! when they changed since this handle last read them) and appends one line
//! to `log.jsonl`, without fsync: a crash of the process keeps every write
//! it made (they are in the OS), a crash of the machine may lose the last
//! ones. A torn last line (one without its newline) is ignored by readers
//! and cut off by the next writer; any other line that does not parse is
//! [`ClusterError::Corrupt`], as is a `state.json` that does not parse, and
//! both are left as they are.
//!
//! The state holds Secrets, so DIR is 0700 and every file in it 0600,
//! whatever the umask; a wider mode found on a write is tightened, with a
//! warning ([`crate::fsutil`]).
//!
//! The first write, a write that finds the log past 1,000 entries or
//! 4 MiB, and [`Cluster::flush`] compact: they write the whole state to
//! `state.json` with [`crate::fsutil::atomic_write`] (a fresh `DIR/.tmp-*`
//! file, fsynced, renamed over it, DIR fsynced), then put an empty log in
//! place of `log.jsonl` the same way. A crash
//! leaves the old files or the new ones (or the new snapshot with the old
//! log, whose entries it skips), plus a stray temp file, removed by the next
//! compaction. Readers that find the files changed re-read them under a
//! shared lock, so they never see a half-done compaction. Concurrent
//! writers, in one process or several, never lose each other's updates.
//! [`SimCluster::without_fsync`] skips the fsyncs of automatic compactions
//! (a benchmark mode; [`Cluster::flush`] always syncs).
//!
//! Reads use the state cached in the handle as long as both files' length,
//! modification time and inode are unchanged, so reading 20,000 objects (or
//! dry-running their applies, which never touch the disk) costs no file I/O
//! but two `stat`s a request.
//!
//! # Code
//!
//! This file holds the handle ([`SimCluster`]) and its [`Cluster`] requests;
//! the parts it calls live beside it:
//!
//! - `state`: the objects, kinds and namespaces in memory, and what a write
//!   changes (a `Plan`) before it is committed;
//! - `write`: the server's part of create, replace and server-side apply
//!   (defaults, generation, field ownership, conflicts);
//! - `view`: what reads show (controller status) and dry runs;
//! - `persist`: `state.json`, `log.jsonl`, their locks, compaction and
//!   the write path that logs each change;
//! - `faults`: injected failures, latency and rejections;
//! - `defaults`, `fields`, `kinds`, `pods`: API defaults, `managedFields`,
//!   the built-in kinds and the pods of workloads.
use super::controllers;
use super::{
    ApiResource, ApplyOptions, Cluster, ClusterError, ClusterIdentity, ObjectKey, RequestCounter,
    RequestCounts, RequestVerb, Scope,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod defaults;
mod faults;
mod fields;
mod kinds;
mod persist;
pub mod pods;
mod state;
mod view;
mod write;

pub use faults::SimFaults;
pub use persist::fsync_count;

use faults::{process_counter, FaultCounter};
use persist::Loaded;
use state::{builtin, compact, Op, Plan, State};
use view::View;
/// The `format` of the state file.
pub const FORMAT: &str = "rudder.sim/v1";
/// The server version a new simulated cluster reports (Helm's default).
pub const DEFAULT_SERVER_VERSION: &str = "v1.32.0";
/// The state file's name under DIR.
pub const STATE_FILE: &str = "state.json";
/// The write log's name under DIR.
pub const LOG_FILE: &str = "log.jsonl";
/// The update manager of `create` and `replace` unless one is set.
pub const DEFAULT_UPDATE_MANAGER: &str = "unknown";

/// `RUDDER_SIM_READY_DELAY_MS`: the default convergence delay of clusters
/// opened from a directory ([`SimCluster::open`]).
const ENV_READY_DELAY_MS: &str = "RUDDER_SIM_READY_DELAY_MS";

/// The cluster's clock: the time since its origin. See
/// [`SimCluster::with_clock`].
pub type NowFn = Arc<dyn Fn() -> Duration + Send + Sync>;

fn wall_clock() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// A simulated API server whose state lives under a directory (or only in
/// memory). See the module documentation.
pub struct SimCluster {
    dir: Option<PathBuf>,
    update_manager: String,
    inner: Mutex<Option<Loaded>>,
    clock: NowFn,
    default_delay: Duration,
    faults: SimFaults,
    counter: Arc<Mutex<FaultCounter>>,
    fsync: bool,
    /// Requests answered by this handle, by verb.
    requests: RequestCounter,
}

impl std::fmt::Debug for SimCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCluster")
            .field("dir", &self.dir)
            .field("update_manager", &self.update_manager)
            .field("default_delay", &self.default_delay)
            .field("faults", &self.faults)
            .field("fsync", &self.fsync)
            .finish_non_exhaustive()
    }
}

impl SimCluster {
    fn new(dir: Option<PathBuf>, loaded: Option<Loaded>) -> SimCluster {
        let faults = SimFaults::from_env();
        SimCluster {
            dir,
            update_manager: DEFAULT_UPDATE_MANAGER.into(),
            inner: Mutex::new(loaded),
            clock: Arc::new(wall_clock),
            default_delay: Duration::ZERO,
            counter: process_counter(),
            faults,
            fsync: true,
            requests: RequestCounter::default(),
        }
    }

    /// Opens the simulated cluster at `dir`. Nothing is read or created
    /// until the first request; a missing directory is an empty cluster.
    /// With fault injection from the environment on (the binaries, tests),
    /// faults come from `RUDDER_SIM_FAIL_AT` and `RUDDER_SIM_LATENCY_MS`,
    /// the default convergence delay from `RUDDER_SIM_READY_DELAY_MS`
    /// (milliseconds); otherwise there are none, and the delay is 0.
    pub fn open(dir: impl Into<PathBuf>) -> Result<SimCluster, ClusterError> {
        let mut c = SimCluster::new(Some(dir.into()), None);
        if let Some(ms) = crate::env_faults::knob(ENV_READY_DELAY_MS) {
            c.default_delay = Duration::from_millis(ms);
        }
        Ok(c)
    }

    /// A cluster that lives in this handle only: nothing is persisted.
    /// Faults come from `RUDDER_SIM_FAIL_AT` and `RUDDER_SIM_LATENCY_MS`
    /// when fault injection from the environment is on.
    pub fn in_memory() -> SimCluster {
        let state = State::empty(uuid::Uuid::new_v4().to_string());
        SimCluster::new(None, Some(Loaded::new(state)))
    }

    /// Sets the field manager that `create` and `replace` record.
    pub fn with_update_manager(mut self, manager: &str) -> SimCluster {
        self.update_manager = manager.to_string();
        self
    }

    /// Sets the clock controllers read: the time since its origin. The
    /// default is the wall clock (since the Unix epoch), which separate
    /// processes sharing a directory agree on; a driven clock suits an
    /// in-memory cluster (`Arc::new(move || clock.now())`).
    pub fn with_clock(mut self, now: NowFn) -> SimCluster {
        self.clock = now;
        self
    }

    /// Sets how long objects take to become ready after a spec-changing
    /// write when their annotations do not say (default: at once).
    pub fn with_default_delay(mut self, delay: Duration) -> SimCluster {
        self.default_delay = delay;
        self
    }

    /// Sets the injected faults, replacing those from the environment, with
    /// a write count of this handle's own.
    pub fn with_faults(mut self, faults: SimFaults) -> SimCluster {
        self.faults = faults;
        self.counter = Arc::new(Mutex::new(FaultCounter::default()));
        self
    }

    /// Compacts without fsync (a benchmark mode): a machine crash may lose
    /// or tear the state. [`Cluster::flush`] still syncs.
    pub fn without_fsync(mut self) -> SimCluster {
        self.fsync = false;
        self
    }

    /// The faults this handle injects.
    pub fn faults(&self) -> &SimFaults {
        &self.faults
    }

    /// The directory of the state (`None` for an in-memory cluster).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Every stored object, sorted by group, kind, namespace and name.
    pub fn snapshot(&self) -> Result<Vec<Value>, ClusterError> {
        self.request();
        let view = self.view();
        self.read(|s| {
            Ok(s.objects
                .iter()
                .map(|(k, o)| s.shown(k, o, &view))
                .collect())
        })
    }

    /// Sets the server version the cluster reports (`v1.31.0`).
    pub fn set_server_version(&self, version: &str) -> Result<(), ClusterError> {
        self.write(|s| {
            if s.server_version == version {
                return Ok(Plan::default());
            }
            Ok(Plan {
                server_version: Some(version.to_string()),
                ..Plan::default()
            })
        })
        .map(|_| ())
    }

    fn view(&self) -> View {
        View {
            now: u64::try_from((self.clock)().as_millis()).unwrap_or(u64::MAX),
            delay: self.default_delay,
        }
    }

    /// Counts the GETs a batch read stands for (one per object, as a
    /// client without batches would send).
    fn count_gets(&self, n: usize) {
        self.requests
            .add(RequestVerb::Get, u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// One look at the state (one lock, one freshness check of the files)
    /// for all of `keys`, at one instant: `f` gives what each stored object
    /// found is read as.
    fn read_many<T>(
        &self,
        keys: &[ObjectKey],
        f: impl Fn(&State, &ObjectKey, &Arc<Value>, &View) -> T,
    ) -> Result<Vec<Option<T>>, ClusterError> {
        for _ in keys {
            self.request();
        }
        let view = self.view();
        self.read(|s| {
            Ok(keys
                .iter()
                .map(|key| {
                    s.storage_key(key)
                        .and_then(|k| s.objects.get_key_value(&k))
                        .map(|(k, o)| f(s, k, o, &view))
                })
                .collect())
        })
    }
}

impl Cluster for SimCluster {
    fn identity(&self) -> Result<ClusterIdentity, ClusterError> {
        self.requests.count(RequestVerb::Get);
        self.request();
        self.read(|s| {
            Ok(ClusterIdentity {
                kind: "sim".into(),
                id: s.id.clone(),
                server_version: s.server_version.clone(),
            })
        })
    }

    fn api_resources(&self) -> Result<Vec<ApiResource>, ClusterError> {
        self.requests.count(RequestVerb::Get);
        self.request();
        self.read(|s| Ok(builtin().iter().chain(s.crds.iter()).cloned().collect()))
    }

    fn scope(&self, group: &str, kind: &str) -> Result<Option<Scope>, ClusterError> {
        self.requests.count(RequestVerb::Get);
        self.request();
        self.read(|s| {
            Ok(s.resource(group, kind).map(|r| {
                if r.namespaced {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                }
            }))
        })
    }

    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError> {
        self.requests.count(RequestVerb::Get);
        self.request();
        let view = self.view();
        self.read(|s| {
            Ok(s.storage_key(key)
                .and_then(|k| s.objects.get_key_value(&k))
                .map(|(k, o)| s.shown(k, o, &view)))
        })
    }

    fn list(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &[(String, String)],
    ) -> Result<Vec<Value>, ClusterError> {
        self.requests.count(RequestVerb::List);
        self.request();
        let view = self.view();
        self.read(|s| {
            let Some(r) = s.resource(group, kind) else {
                return Ok(Vec::new());
            };
            let ns = if r.namespaced { namespace } else { None };
            let objects: Box<dyn Iterator<Item = (&ObjectKey, &Value)>> = match ns {
                Some(n) => Box::new(s.namespace_range(group, kind, n)),
                None => Box::new(s.kind_range(group, kind)),
            };
            let matches = |o: &Value| {
                labels.iter().all(|(lk, lv)| {
                    o.get("metadata")
                        .and_then(|m| m.get("labels"))
                        .and_then(|l| l.get(lk))
                        .and_then(Value::as_str)
                        == Some(lv.as_str())
                })
            };
            let mut out: Vec<Value> = objects
                .filter(|(_, o)| matches(o))
                .map(|(k, o)| s.shown(k, o, &view))
                .collect();
            // The played pods of workloads annotated sim.rudder.io/pods.
            if group.is_empty() && (kind == "Pod" || kind == "Event") {
                for (wg, wk) in pods::WORKLOADS {
                    let ws: Box<dyn Iterator<Item = (&ObjectKey, &Value)>> = match ns {
                        Some(n) => Box::new(s.namespace_range(wg, wk, n)),
                        None => Box::new(s.kind_range(wg, wk)),
                    };
                    for (k, w) in ws {
                        if pods::state(w).is_none() {
                            continue;
                        }
                        let written = s.written.get(k).copied().unwrap_or(0);
                        let (p, e) = pods::pods_and_events(w, written, s.nodes());
                        let found = if kind == "Pod" { p } else { e };
                        out.extend(found.into_iter().filter(|o| matches(o)));
                    }
                }
            }
            Ok(out)
        })
    }

    fn pod_log(
        &self,
        namespace: &str,
        pod: &str,
        _container: &str,
        tail_lines: u32,
        _previous: bool,
    ) -> Result<Option<String>, ClusterError> {
        self.request();
        self.read(|s| {
            for (wg, wk) in pods::WORKLOADS {
                for (_, w) in s.namespace_range(wg, wk, namespace) {
                    if let Some(l) = pods::log(w, pod) {
                        let lines: Vec<&str> = l.lines().collect();
                        let n = usize::try_from(tail_lines).unwrap_or(usize::MAX);
                        let from = lines.len().saturating_sub(n);
                        return Ok(Some(lines[from..].join("\n")));
                    }
                }
            }
            Ok(None)
        })
    }

    fn create(&self, obj: &Value) -> Result<Value, ClusterError> {
        self.requests.count(RequestVerb::Create);
        self.request();
        self.inject("create", ObjectKey::of(obj))?;
        Self::reject(obj)?;
        let opts = ApplyOptions::default();
        self.write(|s| s.write(obj, Op::Create, &self.update_manager, &opts))
            .map(Option::unwrap_or_default)
    }

    fn replace(&self, obj: &Value) -> Result<Value, ClusterError> {
        self.requests.count(RequestVerb::Update);
        self.request();
        self.inject("replace", ObjectKey::of(obj))?;
        Self::reject(obj)?;
        let opts = ApplyOptions::default();
        self.write(|s| s.write(obj, Op::Replace, &self.update_manager, &opts))
            .map(Option::unwrap_or_default)
    }

    fn apply(&self, obj: &Value, opts: &ApplyOptions) -> Result<Value, ClusterError> {
        self.requests.count(if opts.dry_run {
            RequestVerb::DryRun
        } else {
            RequestVerb::Patch
        });
        self.request();
        if !opts.dry_run {
            self.inject("apply", ObjectKey::of(obj))?;
        }
        if opts.field_manager.is_empty() {
            let key = ObjectKey::of(obj).ok_or_else(|| ClusterError::BadObject(compact(obj)))?;
            return Err(ClusterError::Invalid {
                key,
                message: "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".into(),
            });
        }
        if opts.dry_run {
            let view = self.view();
            return self.read(|s| {
                let plan = s.write(obj, Op::Apply, &opts.field_manager, opts)?;
                let mut v = plan.result.unwrap_or_default();
                if let Some(k) = ObjectKey::of(&v).and_then(|k| s.storage_key(&k)) {
                    let generation =
                        |o: &Value| o.get("metadata").and_then(|m| m.get("generation")).cloned();
                    let touched = s
                        .objects
                        .get(&k)
                        .is_none_or(|l| generation(l) != generation(&v));
                    let t = match s.written.get(&k) {
                        Some(t) if !touched => *t,
                        _ => view.now,
                    };
                    s.controlled(&k, &mut v, &view, t);
                }
                Ok(v)
            });
        }
        Self::reject(obj)?;
        self.write(|s| s.write(obj, Op::Apply, &opts.field_manager, opts))
            .map(Option::unwrap_or_default)
    }

    fn dry_run(&self, obj: &Value) -> Result<Value, ClusterError> {
        self.requests.count(RequestVerb::DryRun);
        self.request();
        let view = self.view();
        self.read(|s| s.dry_run(obj, &view))
    }

    fn get_many(&self, keys: &[ObjectKey]) -> Result<Vec<Option<Value>>, ClusterError> {
        self.count_gets(keys.len());
        self.read_many(keys, |s, k, o, view| s.shown(k, o, view))
    }

    fn get_many_shared(&self, keys: &[ObjectKey]) -> Result<Vec<Option<Arc<Value>>>, ClusterError> {
        self.count_gets(keys.len());
        // The stored objects, their status as last written.
        self.read_many(keys, |_, _, o, _| Arc::clone(o))
    }

    fn delete(
        &self,
        key: &ObjectKey,
        resource_version: Option<&str>,
    ) -> Result<Option<Value>, ClusterError> {
        self.requests.count(RequestVerb::Delete);
        self.request();
        self.inject("delete", Some(key.clone()))?;
        self.write(|s| s.delete(key, resource_version))
    }

    fn request_counts(&self) -> Option<RequestCounts> {
        Some(self.requests.counts())
    }

    fn flush(&self) -> Result<(), ClusterError> {
        self.flush_files()
    }
}

#[cfg(test)]
mod testing;

#[cfg(test)]
mod tests {
    use super::state::str_at;
    use super::*;
    use crate::cluster::sim::testing::*;
    use serde_json::json;

    #[test]
    fn empty_cluster_has_default_namespaces_and_reads_create_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cluster");
        let c = SimCluster::open(&dir).unwrap();
        let ns = c.list("", "Namespace", None, &[]).unwrap();
        let names: Vec<_> = ns
            .iter()
            .map(|o| str_at(o, &["metadata", "name"]).unwrap())
            .collect();
        assert_eq!(names, ["default", "kube-system"]);
        assert_eq!(ns[0]["status"]["phase"], json!("Active"));
        assert_eq!(
            ns[0]["metadata"]["labels"]["kubernetes.io/metadata.name"],
            json!("default")
        );
        assert!(c
            .get(&key("", "Namespace", "", "default"))
            .unwrap()
            .is_some());
        let id = c.identity().unwrap();
        assert_eq!(id.kind, "sim");
        assert_eq!(id.server_version, "v1.32.0");
        assert!(c
            .delete(&key("", "ConfigMap", "default", "x"), None)
            .unwrap()
            .is_none());
        assert!(!dir.exists());
        // The id is derived from the path, and kept by the first write.
        let again = SimCluster::open(&dir).unwrap().identity().unwrap();
        assert_eq!(id, again);
        c.create(&cm("default", "a", json!({}))).unwrap();
        assert!(dir.join(STATE_FILE).exists());
        assert_eq!(SimCluster::open(&dir).unwrap().identity().unwrap(), id);
    }

    #[test]
    fn create_get_list_replace_delete() {
        let c = SimCluster::in_memory();
        let a = c.create(&cm("default", "a", json!({"k":"v"}))).unwrap();
        assert_eq!(a["metadata"]["generation"], json!(1));
        assert!(uuid::Uuid::parse_str(str_at(&a, &["metadata", "uid"]).unwrap()).is_ok());
        assert!(str_at(&a, &["metadata", "creationTimestamp"])
            .unwrap()
            .ends_with('Z'));
        assert!(matches!(
            c.create(&cm("default", "a", json!({}))),
            Err(ClusterError::AlreadyExists { .. })
        ));
        let mut b = cm("kube-system", "b", json!({}));
        b["metadata"]["labels"] = json!({"app": "x"});
        c.create(&b).unwrap();
        c.create(&cm("default", "c", json!({}))).unwrap();
        let all = c.list("", "ConfigMap", None, &[]).unwrap();
        let names: Vec<_> = all.iter().map(|o| o["metadata"]["name"].clone()).collect();
        assert_eq!(names, [json!("a"), json!("c"), json!("b")]);
        assert_eq!(
            c.list("", "ConfigMap", Some("default"), &[]).unwrap().len(),
            2
        );
        let sel = [("app".to_string(), "x".to_string())];
        assert_eq!(c.list("", "ConfigMap", None, &sel).unwrap().len(), 1);

        // Replace with CAS.
        let mut upd = a.clone();
        upd["data"] = json!({"k": "w"});
        let a2 = c.replace(&upd).unwrap();
        assert!(rv(&a2) > rv(&a));
        assert_eq!(a2["metadata"]["uid"], a["metadata"]["uid"]);
        assert_eq!(a2["metadata"]["generation"], json!(2));
        assert!(matches!(
            c.replace(&upd),
            Err(ClusterError::Conflict { .. })
        ));
        assert!(matches!(
            c.replace(&cm("default", "zz", json!({}))),
            Err(ClusterError::NotFound { .. })
        ));
        // Delete with a stale version, then for real.
        let k = key("", "ConfigMap", "default", "a");
        let stale = rv(&a).to_string();
        assert!(matches!(
            c.delete(&k, Some(&stale)),
            Err(ClusterError::Conflict { .. })
        ));
        let old = c.delete(&k, Some(&rv(&a2).to_string())).unwrap().unwrap();
        assert_eq!(old["data"]["k"], json!("w"));
        assert!(c.get(&k).unwrap().is_none());
        assert!(c.delete(&k, None).unwrap().is_none());
    }
}
