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
use super::controllers;
use super::{
    ApiResource, ApplyOptions, Cluster, ClusterError, ClusterIdentity, ObjectKey, RequestCounter,
    RequestCounts, RequestVerb, Scope,
};
use crate::fsutil::{self, AtomicWrite, Mode, Step};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

mod defaults;
mod fields;
mod kinds;
pub mod pods;

use fields::{FieldSet, Managed};

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
/// `RUDDER_SIM_FAIL_AT`: see [`SimFaults::fail_at`].
const ENV_FAIL_AT: &str = "RUDDER_SIM_FAIL_AT";
/// `RUDDER_SIM_LATENCY_MS`: see [`SimFaults::latency`].
const ENV_LATENCY_MS: &str = "RUDDER_SIM_LATENCY_MS";
/// `RUDDER_SIM_READY_DELAY_MS`: the default convergence delay of clusters
/// opened from a directory ([`SimCluster::open`]).
const ENV_READY_DELAY_MS: &str = "RUDDER_SIM_READY_DELAY_MS";

const LOCK_FILE: &str = ".lock";
const FIRST_CLUSTER_IP: u32 = 16;
const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";
/// A write that finds more log entries than this compacts.
const COMPACT_ENTRIES: u64 = 1000;
/// A write that would grow the log past this many bytes compacts.
const COMPACT_BYTES: u64 = 4 << 20;

fn builtin() -> &'static [ApiResource] {
    static B: OnceLock<Vec<ApiResource>> = OnceLock::new();
    B.get_or_init(kinds::builtin)
}

/// The cluster's clock: the time since its origin. See
/// [`SimCluster::with_clock`].
pub type NowFn = Arc<dyn Fn() -> Duration + Send + Sync>;

fn wall_clock() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// Faults injected into a simulated cluster's requests (see the module
/// documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimFaults {
    /// Fail the N-th write (counting from 1), and its immediate retries
    /// (the same write again from the same thread),
    /// with a 500 (`RUDDER_SIM_FAIL_AT`).
    pub fail_at: Option<u64>,
    /// Sleep this long before every request (`RUDDER_SIM_LATENCY_MS`).
    pub latency: Duration,
}

impl SimFaults {
    /// The faults `RUDDER_SIM_FAIL_AT` and `RUDDER_SIM_LATENCY_MS` ask for
    /// (unset, empty or unparsable: none), when fault injection from the
    /// environment is on (see the module documentation); none otherwise.
    fn from_env() -> SimFaults {
        use crate::env_faults::knob;
        SimFaults {
            fail_at: knob(ENV_FAIL_AT).filter(|n| *n > 0),
            latency: Duration::from_millis(knob(ENV_LATENCY_MS).unwrap_or(0)),
        }
    }

    fn is_set(&self) -> bool {
        self.fail_at.is_some() || !self.latency.is_zero()
    }
}

/// How many writes a set of handles has sent, and the one failing now.
#[derive(Debug, Default)]
struct FaultCounter {
    writes: u64,
    /// The failing write, and the thread that sent it: its retries come
    /// from that thread, while other threads' writes go on around them.
    failing: Option<(&'static str, Option<ObjectKey>, std::thread::ThreadId)>,
}

/// The counter of the handles whose faults come from the environment: one
/// per process.
fn process_counter() -> Arc<Mutex<FaultCounter>> {
    static C: OnceLock<Arc<Mutex<FaultCounter>>> = OnceLock::new();
    C.get_or_init(Default::default).clone()
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

/// What identifies a version of a file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    ino: u64,
}

fn stamp_of(meta: &fs::Metadata) -> Stamp {
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let ino = 0;
    Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        ino,
    }
}

fn stat(path: &Path) -> Result<Option<Stamp>, ClusterError> {
    match fs::metadata(path) {
        Ok(m) => Ok(Some(stamp_of(&m))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("stat", path)(e)),
    }
}

struct Loaded {
    /// `state.json` as read (`None`: it did not exist).
    stamp: Option<Stamp>,
    /// `log.jsonl` as read (`None`: it did not exist).
    log_stamp: Option<Stamp>,
    /// The bytes of the log replayed (up to the last complete line).
    log_pos: u64,
    /// The entries in the log.
    log_entries: u64,
    /// Whether this handle's own compaction made `state.json` and the log
    /// durable (fsynced, with the directory), so that a flush needs only to
    /// fsync the log.
    synced: bool,
    state: State,
}

/// The cluster's state in memory.
#[derive(Debug, Clone)]
struct State {
    id: String,
    server_version: String,
    counter: u64,
    next_ip: u32,
    /// The sequence number of the last write (log entry) applied.
    seq: u64,
    /// Shared: reads hand them out without copying ([`Cluster::get_many_shared`]).
    objects: BTreeMap<ObjectKey, Arc<Value>>,
    /// When each object's spec was last written (ms on the clock). Hashed:
    /// only looked up by key per write (a B-tree search per write grew
    /// with the cluster); sorted where it is saved.
    written: foldhash::HashMap<ObjectKey, u64>,
    /// Each object's JSON as last encoded, so that a compaction encodes
    /// only what changed.
    encoded: foldhash::HashMap<ObjectKey, Vec<u8>>,
    crds: Vec<ApiResource>,
}

/// An object a write stores.
#[derive(Debug)]
struct Put {
    key: ObjectKey,
    obj: Value,
    /// Whether the write is spec-changing (a create or a generation bump).
    touched: bool,
    /// When its spec was last written (set before commit).
    written_at: u64,
}

/// What a write does, computed before anything changes.
#[derive(Debug, Default)]
struct Plan {
    puts: Vec<Put>,
    deletes: Vec<ObjectKey>,
    counter: Option<u64>,
    next_ip: Option<u32>,
    server_version: Option<String>,
    result: Option<Value>,
}

impl Plan {
    fn changes(&self) -> bool {
        !self.puts.is_empty() || !self.deletes.is_empty() || self.server_version.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Create,
    Replace,
    Apply,
}

fn now() -> String {
    let t = jiff::Timestamp::now();
    jiff::Timestamp::from_second(t.as_second())
        .unwrap_or(t)
        .to_string()
}

fn hash_uuid(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_random_bytes(b).into_uuid().to_string()
}

/// The canonical form of a path that may not exist yet: the nearest
/// existing ancestor canonicalised, the rest appended.
fn canonical(dir: &Path) -> PathBuf {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(dir))
            .unwrap_or_else(|_| dir.to_path_buf())
    };
    let mut rest = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(c) = cur.canonicalize() {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(p), Some(n)) => {
                rest.push(n.to_os_string());
                cur = p;
            }
            _ => return abs,
        }
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

fn split_api_version(av: &str) -> (&str, &str) {
    av.rsplit_once('/').unwrap_or(("", av))
}

impl State {
    fn empty(id: String) -> State {
        let mut s = State {
            server_version: DEFAULT_SERVER_VERSION.into(),
            counter: 0,
            next_ip: FIRST_CLUSTER_IP,
            seq: 0,
            objects: BTreeMap::new(),
            written: Default::default(),
            encoded: Default::default(),
            crds: Vec::new(),
            id,
        };
        let ts = now();
        for ns in ["default", "kube-system"] {
            s.counter += 1;
            let mut obj = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "uid": hash_uuid(&[&s.id, "namespace", ns]),
                    "resourceVersion": s.counter.to_string(),
                    "generation": 1,
                    "creationTimestamp": ts,
                },
            });
            defaults::apply_defaults(&mut obj, "", "Namespace");
            if let Some(m) = obj.as_object_mut() {
                m.insert("status".into(), json!({"phase": "Active"}));
            }
            s.objects
                .insert(ObjectKey::new("", "Namespace", "", ns), Arc::new(obj));
        }
        s
    }

    fn parse(data: &[u8], path: &Path) -> Result<State, ClusterError> {
        let corrupt = |message: String| ClusterError::Corrupt {
            path: path.display().to_string(),
            message,
        };
        // Objects as deep as Helm's values may be (10,000 levels).
        let v: Value = crate::yaml::json_from_slice(data).map_err(|e| corrupt(e.to_string()))?;
        let format = v.get("format").and_then(Value::as_str);
        if format != Some(FORMAT) {
            return Err(corrupt(format!(
                "format is {}, want {FORMAT:?}",
                v.get("format")
                    .map_or("missing".to_string(), |f| f.to_string())
            )));
        }
        let field_str = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| corrupt(format!("{k:?} is missing or not a string")))
        };
        let id = field_str("id")?;
        let server_version = field_str("serverVersion")?;
        let counter = v
            .get("resourceVersion")
            .and_then(Value::as_u64)
            .ok_or_else(|| corrupt("\"resourceVersion\" is missing or not a number".into()))?;
        let next_ip = v
            .get("nextClusterIP")
            .and_then(Value::as_u64)
            .map_or(FIRST_CLUSTER_IP, |n| (n & 0xffff) as u32);
        let items = v
            .get("objects")
            .and_then(Value::as_array)
            .ok_or_else(|| corrupt("\"objects\" is missing or not a list".into()))?;
        let seq = match v.get("seq") {
            None => 0,
            Some(n) => n
                .as_u64()
                .ok_or_else(|| corrupt("\"seq\" is not a number".into()))?,
        };
        let written_at = match v.get("writtenAt") {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(corrupt("\"writtenAt\" is not a map".into())),
        };
        let mut objects = BTreeMap::new();
        let mut written = foldhash::HashMap::default();
        for (i, o) in items.iter().enumerate() {
            let key = ObjectKey::of(o)
                .ok_or_else(|| corrupt(format!("object {i} has no apiVersion, kind or name")))?;
            if let Some(t) = written_at
                .and_then(|m| m.get(&key.to_string()))
                .and_then(Value::as_u64)
            {
                written.insert(key.clone(), t);
            }
            if objects.insert(key.clone(), Arc::new(o.clone())).is_some() {
                return Err(corrupt(format!("object {key} is there twice")));
            }
        }
        let mut s = State {
            id,
            server_version,
            counter,
            next_ip,
            seq,
            objects,
            written,
            encoded: Default::default(),
            crds: Vec::new(),
        };
        s.refresh_crds();
        Ok(s)
    }

    fn serialize(&mut self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(256 + self.objects.len() * 512);
        out.extend_from_slice(b"{\"format\":");
        serde_json::to_writer(&mut out, FORMAT)?;
        out.extend_from_slice(b",\"id\":");
        serde_json::to_writer(&mut out, &self.id)?;
        out.extend_from_slice(b",\"serverVersion\":");
        serde_json::to_writer(&mut out, &self.server_version)?;
        out.extend_from_slice(format!(",\"resourceVersion\":{}", self.counter).as_bytes());
        out.extend_from_slice(format!(",\"nextClusterIP\":{}", self.next_ip).as_bytes());
        out.extend_from_slice(format!(",\"seq\":{}", self.seq).as_bytes());
        out.extend_from_slice(b",\"writtenAt\":{");
        let mut written: Vec<(&ObjectKey, &u64)> = self.written.iter().collect();
        written.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (i, (k, t)) in written.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, &k.to_string())?;
            out.extend_from_slice(format!(":{t}").as_bytes());
        }
        out.extend_from_slice(b"}");
        out.extend_from_slice(b",\"objects\":[");
        for (i, (k, o)) in self.objects.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
            match self.encoded.get(k) {
                Some(b) => out.extend_from_slice(b),
                None => {
                    let b = serde_json::to_vec(o)?;
                    out.extend_from_slice(&b);
                    self.encoded.insert(k.clone(), b);
                }
            }
        }
        out.extend_from_slice(b"\n]}\n");
        Ok(out)
    }

    fn refresh_crds(&mut self) {
        let mut crds: Vec<ApiResource> = Vec::new();
        for (k, o) in self.kind_range(CRD_GROUP, CRD_KIND) {
            let _ = k;
            if let Some(r) = kinds::from_crd(o) {
                let taken = builtin()
                    .iter()
                    .chain(crds.iter())
                    .any(|b| b.group == r.group && b.kind == r.kind);
                if !taken {
                    crds.push(r);
                }
            }
        }
        self.crds = crds;
    }

    fn kind_range<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
        self.objects
            .range(ObjectKey::new(group, kind, "", "")..)
            .take_while(move |(k, _)| k.group == group && k.kind == kind)
            .map(|(k, o)| (k, &**o))
    }

    /// The objects of one kind in one namespace (`""`: cluster-scoped),
    /// without visiting the kind's other namespaces.
    fn namespace_range<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
        self.objects
            .range(ObjectKey::new(group, kind, namespace, "")..)
            .take_while(move |(k, _)| {
                k.group == group && k.kind == kind && k.namespace == namespace
            })
            .map(|(k, o)| (k, &**o))
    }

    fn resource(&self, group: &str, kind: &str) -> Option<&ApiResource> {
        builtin()
            .iter()
            .chain(self.crds.iter())
            .find(|r| r.group == group && r.kind == kind)
    }

    /// The key under which `group/kind/namespace/name` is stored, or `None`
    /// for an unknown kind.
    fn storage_key(&self, key: &ObjectKey) -> Option<ObjectKey> {
        let r = self.resource(&key.group, &key.kind)?;
        let mut k = key.clone();
        if !r.namespaced {
            k.namespace.clear();
        }
        Some(k)
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.objects
            .contains_key(&ObjectKey::new("", "Namespace", "", ns))
    }

    /// Checks an object written to the cluster and strips what writes
    /// ignore; returns its key, the cleaned object and the resourceVersion
    /// it carried.
    fn normalize(&self, obj: &Value) -> Result<(ObjectKey, Value, Option<String>), ClusterError> {
        let bad = |what: &str| ClusterError::BadObject(format!("{what} in {}", compact(obj)));
        if !obj.is_object() {
            return Err(ClusterError::BadObject(compact(obj)));
        }
        let av = str_at(obj, &["apiVersion"]).ok_or_else(|| bad("no apiVersion"))?;
        let kind = str_at(obj, &["kind"]).ok_or_else(|| bad("no kind"))?;
        let name = str_at(obj, &["metadata", "name"]).ok_or_else(|| bad("no metadata.name"))?;
        let (group, _version) = split_api_version(av);
        let Some(res) = self.resource(group, kind) else {
            return Err(ClusterError::UnknownKind {
                api_version: av.into(),
                kind: kind.into(),
            });
        };
        let mut out = obj.clone();
        let ns = str_at(obj, &["metadata", "namespace"])
            .unwrap_or("")
            .to_string();
        let key = ObjectKey::new(group, kind, if res.namespaced { &ns } else { "" }, name);
        let rv;
        if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
            if !res.namespaced {
                meta.remove("namespace");
            }
            for f in [
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
                "selfLink",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                meta.remove(f);
            }
            rv = meta
                .remove("resourceVersion")
                .and_then(|v| v.as_str().map(str::to_string))
                .filter(|s| !s.is_empty());
        } else {
            return Err(bad("metadata is not a map"));
        }
        if name.is_empty() {
            return Err(ClusterError::Invalid {
                key,
                message: "metadata.name: Required value: name is required".into(),
            });
        }
        if res.namespaced {
            if ns.is_empty() {
                return Err(ClusterError::Invalid {
                    key,
                    message: "the namespace of the object is empty".into(),
                });
            }
            if !self.namespace_exists(&ns) {
                return Err(ClusterError::NamespaceNotFound { key, namespace: ns });
            }
        }
        if let Some(m) = out.as_object_mut() {
            m.remove("status");
        }
        if group.is_empty() && kind == "Secret" {
            defaults::secret_string_data(&mut out);
        }
        if group == CRD_GROUP && kind == CRD_KIND {
            let Some(r) = kinds::from_crd(&out) else {
                return Err(ClusterError::Invalid {
                    key,
                    message: "spec.group and spec.names.kind are required".into(),
                });
            };
            let want = format!("{}.{}", r.plural, r.group);
            if name != want {
                return Err(ClusterError::Invalid {
                    key,
                    message: format!(
                        "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({want:?})"
                    ),
                });
            }
        }
        Ok((key, out, rv))
    }

    /// A free cluster IP, and the offset to search from next time.
    fn allocate_ip(&self) -> (String, u32) {
        let used: BTreeSet<&str> = self
            .kind_range("", "Service")
            .filter_map(|(_, o)| str_at(o, &["spec", "clusterIP"]))
            .collect();
        let mut n = self.next_ip;
        for _ in 0..0xffff {
            if !(1..0xffff).contains(&n) {
                n = 1;
            }
            let ip = format!("10.96.{}.{}", n >> 8, n & 0xff);
            if !used.contains(ip.as_str()) {
                return (ip, n + 1);
            }
            n += 1;
        }
        ("10.96.255.254".into(), n)
    }

    /// The server's part of a write: defaults, status, cluster IP,
    /// generation, managedFields, resourceVersion. `live` is the object
    /// before the write, `managed` its new ownership.
    fn finish(
        &self,
        key: &ObjectKey,
        mut obj: Value,
        live: Option<&Value>,
        mut managed: Vec<Managed>,
        plan: &mut Plan,
        dry_run: bool,
    ) -> Value {
        defaults::apply_defaults(&mut obj, &key.group, &key.kind);
        let ts = now();
        // Status: the live one, or the initial one a new object gets.
        if let Some(m) = obj.as_object_mut() {
            let status = match live {
                Some(l) => l.get("status").cloned(),
                None => initial_status(key, m),
            };
            if let Some(s) = status {
                m.insert("status".into(), s);
            }
        }
        if key.group.is_empty() && key.kind == "Service" {
            let live_ip = live
                .and_then(|l| l.get("spec"))
                .and_then(|s| s.get("clusterIP"));
            let external = str_at(&obj, &["spec", "type"]) == Some("ExternalName");
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                let asked = spec
                    .get("clusterIP")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string);
                let ip = match (asked, live_ip) {
                    (Some(a), _) => Some(a),
                    (None, Some(Value::String(l))) => Some(l.clone()),
                    (None, _) if !external => {
                        let (ip, next) = self.allocate_ip();
                        plan.next_ip = Some(next);
                        Some(ip)
                    }
                    _ => None,
                };
                if let Some(ip) = ip {
                    spec.insert("clusterIP".into(), Value::String(ip.clone()));
                    if spec.get("clusterIPs").is_none() {
                        spec.insert("clusterIPs".into(), json!([ip]));
                    }
                }
            }
        }
        fields::retain_present(&obj, &mut managed);
        let generation = match live {
            None => 1,
            Some(l) => {
                let g = l
                    .get("metadata")
                    .and_then(|m| m.get("generation"))
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                if spec_changed(l, &obj) {
                    g + 1
                } else {
                    g
                }
            }
        };
        let (uid, created, rv) = match live {
            Some(l) => (
                str_at(l, &["metadata", "uid"]).map(str::to_string),
                str_at(l, &["metadata", "creationTimestamp"]).map(str::to_string),
                str_at(l, &["metadata", "resourceVersion"]).map(str::to_string),
            ),
            None if dry_run => (None, Some(ts.clone()), None),
            None => (
                Some(uuid::Uuid::new_v4().to_string()),
                Some(ts.clone()),
                None,
            ),
        };
        fields::write_managed(&mut obj, &managed);
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(u) = uid {
                meta.insert("uid".into(), Value::String(u));
            }
            if let Some(rv) = rv {
                meta.insert("resourceVersion".into(), Value::String(rv));
            }
            meta.insert("generation".into(), json!(generation));
            if let Some(c) = created {
                meta.insert("creationTimestamp".into(), Value::String(c));
            }
        }
        // A write that changes nothing keeps the object (and its version).
        if let Some(l) = live {
            if *l == obj {
                return obj;
            }
        }
        if !dry_run {
            let next = plan.counter.unwrap_or(self.counter) + 1;
            plan.counter = Some(next);
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(next.to_string()));
            }
            let touched = live.is_none_or(|l| {
                l.get("metadata").and_then(|m| m.get("generation")) != Some(&json!(generation))
            });
            plan.puts.push(Put {
                key: key.clone(),
                obj: obj.clone(),
                touched,
                written_at: 0,
            });
        }
        obj
    }

    fn write(
        &self,
        obj: &Value,
        op: Op,
        manager: &str,
        opts: &ApplyOptions,
    ) -> Result<Plan, ClusterError> {
        let (key, cfg, rv) = self.normalize(obj)?;
        let live = self.objects.get(&key).map(|o| &**o);
        let av = str_at(&cfg, &["apiVersion"]).unwrap_or("").to_string();
        let ts = now();
        let mut plan = Plan::default();
        if let (Some(l), Some(rv)) = (live, &rv) {
            if str_at(l, &["metadata", "resourceVersion"]) != Some(rv.as_str()) {
                return Err(ClusterError::Conflict { key });
            }
        }
        let entry = |fields: FieldSet, operation: &str| Managed {
            manager: manager.to_string(),
            operation: operation.to_string(),
            api_version: av.clone(),
            time: ts.clone(),
            fields,
        };
        let result = match (op, live) {
            (Op::Create, Some(_)) => return Err(ClusterError::AlreadyExists { key }),
            (Op::Replace, None) => return Err(ClusterError::NotFound { key }),
            (Op::Apply, None) if rv.is_some() => return Err(ClusterError::NotFound { key }),
            (Op::Create | Op::Apply, None) => {
                let operation = if op == Op::Apply { "Apply" } else { "Update" };
                let managed = vec![entry(fields::leaves(&cfg), operation)];
                self.finish(&key, cfg, None, managed, &mut plan, opts.dry_run)
            }
            (Op::Replace, Some(l)) => {
                let mut managed = fields::read_managed(l);
                let mut mine = FieldSet::new();
                for p in fields::leaves(&cfg) {
                    if fields::get(l, &p) != fields::get(&cfg, &p) {
                        for m in managed.iter_mut() {
                            m.fields.retain(|q| !fields::overlaps(q, &p));
                        }
                        mine.insert(p);
                    }
                }
                add_fields(&mut managed, manager, "Update", &av, &ts, mine);
                self.finish(&key, cfg, Some(l), managed, &mut plan, opts.dry_run)
            }
            (Op::Apply, Some(l)) => {
                self.apply_existing(&key, l, cfg, manager, opts, &av, &ts, &mut plan)?
            }
        };
        if key.group == CRD_GROUP && key.kind == CRD_KIND {
            self.check_crd_change(&key, live, &result)?;
        }
        plan.result = Some(result);
        Ok(plan)
    }

    /// A CRD may not take a group/kind another CRD (or a built-in) serves.
    fn check_crd_change(
        &self,
        key: &ObjectKey,
        live: Option<&Value>,
        new: &Value,
    ) -> Result<(), ClusterError> {
        let Some(r) = kinds::from_crd(new) else {
            return Ok(());
        };
        if let Some(l) = live.and_then(kinds::from_crd) {
            if l.group == r.group && l.kind == r.kind {
                return Ok(());
            }
        }
        if self.resource(&r.group, &r.kind).is_some() {
            return Err(ClusterError::Invalid {
                key: key.clone(),
                message: format!("kind {} in group {:?} is already served", r.kind, r.group),
            });
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_existing(
        &self,
        key: &ObjectKey,
        live: &Value,
        cfg: Value,
        manager: &str,
        opts: &ApplyOptions,
        av: &str,
        ts: &str,
        plan: &mut Plan,
    ) -> Result<Value, ClusterError> {
        let mut managed = fields::read_managed(live);
        let new_set = fields::leaves(&cfg);
        let is_me = |m: &Managed| m.manager == manager && m.operation == "Apply";
        // Conflicts: fields another manager owns that this apply changes.
        let mut conflicts: Vec<(String, String)> = Vec::new();
        let mut taken: Vec<fields::Path> = Vec::new();
        for p in &new_set {
            let lv = fields::get(live, p);
            let cv = fields::get(&cfg, p);
            if lv.is_none() || lv == cv {
                continue;
            }
            // An empty map merges into a map without changing it.
            if lv.is_some_and(Value::is_object)
                && cv.is_some_and(|c| c.as_object().is_some_and(Map::is_empty))
            {
                continue;
            }
            for m in managed.iter().filter(|m| !is_me(m)) {
                if m.fields.iter().any(|q| fields::overlaps(q, p)) {
                    let c = (fields::display(p), m.manager.clone());
                    if !conflicts.contains(&c) {
                        conflicts.push(c);
                    }
                    taken.push(p.clone());
                }
            }
        }
        if !conflicts.is_empty() {
            if !opts.force {
                return Err(ClusterError::FieldConflict {
                    key: key.clone(),
                    fields: conflicts,
                });
            }
            for m in managed.iter_mut().filter(|m| !is_me(m)) {
                m.fields
                    .retain(|q| !taken.iter().any(|p| fields::overlaps(q, p)));
            }
        }
        let mut obj = live.clone();
        fields::merge(&mut obj, &cfg);
        // Fields this manager applied before and leaves out now.
        let old_set: FieldSet = managed
            .iter()
            .filter(|m| is_me(m))
            .flat_map(|m| m.fields.iter().cloned())
            .collect();
        let others_own = |p: &[String]| {
            managed.iter().filter(|m| !is_me(m)).any(|m| {
                m.fields
                    .iter()
                    .any(|q| q.starts_with(p) || p.starts_with(q))
            })
        };
        let removed: Vec<&fields::Path> = old_set
            .iter()
            .filter(|p| !new_set.contains(*p) && !others_own(p))
            .collect();
        // Whole list items first (deepest first), then single fields; an
        // item's key fields go only with the item.
        let mut items: Vec<fields::Path> = fields::item_prefixes(removed.iter().copied())
            .into_iter()
            .filter(|item| !new_set.iter().any(|p| p.starts_with(item)) && !others_own(item))
            .collect();
        items.sort_by_key(|i| std::cmp::Reverse(i.len()));
        for item in &items {
            fields::remove(&mut obj, item);
        }
        for p in &removed {
            if items.iter().any(|i| p.starts_with(i)) || fields::is_key_field(p) {
                continue;
            }
            fields::remove(&mut obj, p);
        }
        let me = managed.iter().position(is_me);
        match me {
            Some(i) => {
                let m = &mut managed[i];
                if m.fields != new_set || m.api_version != av {
                    m.fields = new_set;
                    m.api_version = av.to_string();
                    m.time = ts.to_string();
                }
            }
            None => managed.push(Managed {
                manager: manager.to_string(),
                operation: "Apply".into(),
                api_version: av.to_string(),
                time: ts.to_string(),
                fields: new_set,
            }),
        }
        Ok(self.finish(key, obj, Some(live), managed, plan, opts.dry_run))
    }

    fn delete(&self, key: &ObjectKey, rv: Option<&str>) -> Result<Plan, ClusterError> {
        let mut plan = Plan::default();
        let Some(k) = self.storage_key(key) else {
            return Ok(plan);
        };
        let Some(live) = self.objects.get(&k).map(|o| &**o) else {
            return Ok(plan);
        };
        if let Some(rv) = rv {
            if str_at(live, &["metadata", "resourceVersion"]) != Some(rv) {
                return Err(ClusterError::Conflict { key: k });
            }
        }
        if k.group.is_empty() && k.kind == "Namespace" {
            if k.name == "default" || k.name == "kube-system" {
                return Err(ClusterError::Server {
                    server: "sim".into(),
                    code: 403,
                    message: format!(
                        "namespaces {:?} is forbidden: this namespace may not be deleted",
                        k.name
                    ),
                });
            }
            plan.deletes.extend(
                self.objects
                    .keys()
                    .filter(|o| o.namespace == k.name)
                    .cloned(),
            );
        }
        if k.group == CRD_GROUP && k.kind == CRD_KIND {
            if let Some(r) = kinds::from_crd(live) {
                if self
                    .crds
                    .iter()
                    .any(|c| c.group == r.group && c.kind == r.kind)
                {
                    plan.deletes
                        .extend(self.kind_range(&r.group, &r.kind).map(|(k, _)| k.clone()));
                }
            }
        }
        plan.deletes.push(k.clone());
        plan.counter = Some(self.counter + 1);
        plan.result = Some(live.clone());
        Ok(plan)
    }

    fn commit(&mut self, plan: &mut Plan) {
        let mut crds = false;
        for k in &plan.deletes {
            crds |= k.group == CRD_GROUP && k.kind == CRD_KIND;
            self.objects.remove(k);
            self.written.remove(k);
            self.encoded.remove(k);
        }
        for p in plan.puts.iter_mut() {
            let k = &p.key;
            crds |= k.group == CRD_GROUP && k.kind == CRD_KIND;
            self.objects
                .insert(k.clone(), Arc::new(std::mem::take(&mut p.obj)));
            self.written.insert(k.clone(), p.written_at);
            self.encoded.remove(k);
        }
        if let Some(c) = plan.counter {
            self.counter = c;
        }
        if let Some(n) = plan.next_ip {
            self.next_ip = n;
        }
        if let Some(v) = &plan.server_version {
            self.server_version = v.clone();
        }
        if crds {
            self.refresh_crds();
        }
    }
}

impl State {
    /// The number of Node objects, as controllers see it.
    fn nodes(&self) -> i64 {
        self.kind_range("", "Node").count() as i64
    }

    /// Sets the status controllers give `obj` (stored under `key`) when
    /// its spec was last written at `written_at` (ms); kinds without a
    /// controller keep theirs.
    fn controlled(&self, key: &ObjectKey, obj: &mut Value, view: &View, written_at: u64) {
        if !controllers::controlled(&key.group, &key.kind) {
            return;
        }
        let age = Duration::from_millis(view.now.saturating_sub(written_at));
        let nodes = if key.kind == "DaemonSet" {
            self.nodes()
        } else {
            0
        };
        if let Some(st) = controllers::status(obj, age, view.delay, nodes) {
            if let Some(m) = obj.as_object_mut() {
                m.insert("status".into(), st);
            }
        }
    }

    /// A stored object as reads show it.
    fn shown(&self, key: &ObjectKey, obj: &Value, view: &View) -> Value {
        let mut out = obj.clone();
        let t = self.written.get(key).copied().unwrap_or(0);
        self.controlled(key, &mut out, view, t);
        out
    }

    /// The object `obj` would be stored as if it replaced the live one (or
    /// created it): the write-time transforms and defaults, the live
    /// object's server metadata, a generation bump when the spec changes,
    /// and the status a read would show right after the write. No field
    /// ownership is computed, nothing is stored, no Service address is
    /// allocated for a new Service.
    fn dry_run(&self, obj: &Value, view: &View) -> Result<Value, ClusterError> {
        let (key, mut out, rv) = self.normalize(obj)?;
        let live = self.objects.get(&key).map(|o| &**o);
        if let (Some(l), Some(rv)) = (live, &rv) {
            if str_at(l, &["metadata", "resourceVersion"]) != Some(rv.as_str()) {
                return Err(ClusterError::Conflict { key });
            }
        }
        if live.is_none() && rv.is_some() {
            return Err(ClusterError::NotFound { key });
        }
        defaults::apply_defaults(&mut out, &key.group, &key.kind);
        if key.group.is_empty() && key.kind == "Service" {
            let live_ip = live
                .and_then(|l| l.get("spec"))
                .and_then(|s| s.get("clusterIP"))
                .and_then(Value::as_str);
            if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
                let asked = spec
                    .get("clusterIP")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                if let (false, Some(ip)) = (asked, live_ip) {
                    spec.insert("clusterIP".into(), Value::String(ip.to_string()));
                    if spec.get("clusterIPs").is_none() {
                        spec.insert("clusterIPs".into(), json!([ip]));
                    }
                }
            }
        }
        let (generation, written_at) = match live {
            None => (1, view.now),
            Some(l) => {
                let g = l
                    .get("metadata")
                    .and_then(|m| m.get("generation"))
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                if spec_changed(l, &out) {
                    (g + 1, view.now)
                } else {
                    (g, self.written.get(&key).copied().unwrap_or(0))
                }
            }
        };
        if let Some(m) = out.as_object_mut() {
            let status = match live {
                Some(l) => l.get("status").cloned(),
                None => initial_status(&key, m),
            };
            if let Some(st) = status {
                m.insert("status".into(), st);
            }
        }
        if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
            match live.and_then(|l| l.get("metadata")) {
                Some(lm) => {
                    for f in ["uid", "resourceVersion", "creationTimestamp"] {
                        if let Some(v) = lm.get(f) {
                            meta.insert(f.into(), v.clone());
                        }
                    }
                }
                None => {
                    meta.insert("creationTimestamp".into(), Value::String(now()));
                }
            }
            meta.insert("generation".into(), json!(generation));
        }
        self.controlled(&key, &mut out, view, written_at);
        Ok(out)
    }

    /// Replays one log line (`n` counts lines from 1).
    fn replay(&mut self, line: &[u8], n: u64, path: &Path) -> Result<(), ClusterError> {
        let corrupt = |message: String| ClusterError::Corrupt {
            path: path.display().to_string(),
            message: format!("line {n}: {message}"),
        };
        let v: Value = crate::yaml::json_from_slice(line).map_err(|e| corrupt(e.to_string()))?;
        let seq = v
            .get("seq")
            .and_then(Value::as_u64)
            .ok_or_else(|| corrupt("\"seq\" is missing or not a number".into()))?;
        if seq <= self.seq {
            return Ok(());
        }
        if seq != self.seq + 1 {
            return Err(corrupt(format!(
                "entry {seq} follows entry {}: entries are missing",
                self.seq
            )));
        }
        let counter = v
            .get("resourceVersion")
            .and_then(Value::as_u64)
            .ok_or_else(|| corrupt("\"resourceVersion\" is missing or not a number".into()))?;
        let mut plan = Plan {
            counter: Some(counter),
            next_ip: v
                .get("nextClusterIP")
                .and_then(Value::as_u64)
                .map(|n| (n & 0xffff) as u32),
            server_version: v
                .get("serverVersion")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Plan::default()
        };
        let list = |f: &str| match v.get(f) {
            None => Ok(&[][..]),
            Some(Value::Array(a)) => Ok(a.as_slice()),
            Some(_) => Err(corrupt(format!("{f:?} is not a list"))),
        };
        for d in list("delete")? {
            let k: ObjectKey = serde_json::from_value(d.clone())
                .map_err(|e| corrupt(format!("a deleted key: {e}")))?;
            plan.deletes.push(k);
        }
        for p in list("put")? {
            let obj = p
                .get("object")
                .ok_or_else(|| corrupt("a put has no \"object\"".into()))?;
            let key = ObjectKey::of(obj)
                .ok_or_else(|| corrupt("a put object has no apiVersion, kind or name".into()))?;
            let written_at = p.get("writtenAt").and_then(Value::as_u64).unwrap_or(0);
            plan.puts.push(Put {
                key,
                obj: obj.clone(),
                touched: false,
                written_at,
            });
        }
        self.commit(&mut plan);
        self.seq = seq;
        Ok(())
    }
}

/// The log line of a write with sequence number `seq`, committed to
/// `state` (whose encodings of the objects it stores are used).
fn log_line(state: &State, plan: &Plan, seq: u64) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(128 + plan.puts.len() * 1024);
    out.extend_from_slice(
        format!(
            "{{\"seq\":{seq},\"resourceVersion\":{},\"nextClusterIP\":{}",
            state.counter, state.next_ip
        )
        .as_bytes(),
    );
    if let Some(v) = &plan.server_version {
        out.extend_from_slice(b",\"serverVersion\":");
        serde_json::to_writer(&mut out, v)?;
    }
    if !plan.deletes.is_empty() {
        out.extend_from_slice(b",\"delete\":");
        serde_json::to_writer(&mut out, &plan.deletes)?;
    }
    if !plan.puts.is_empty() {
        out.extend_from_slice(b",\"put\":[");
        for (i, p) in plan.puts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(
                format!("{{\"writtenAt\":{},\"object\":", p.written_at).as_bytes(),
            );
            match state.encoded.get(&p.key) {
                Some(b) => out.extend_from_slice(b),
                None => serde_json::to_writer(&mut out, &p.obj)?,
            }
            out.push(b'}');
        }
        out.push(b']');
    }
    out.extend_from_slice(b"}\n");
    Ok(out)
}

/// What reads need to show controller status: the clock's reading (ms) and
/// the default convergence delay.
struct View {
    now: u64,
    delay: Duration,
}

fn add_fields(
    managed: &mut Vec<Managed>,
    manager: &str,
    op: &str,
    av: &str,
    ts: &str,
    fields: FieldSet,
) {
    if fields.is_empty() {
        return;
    }
    match managed
        .iter_mut()
        .find(|m| m.manager == manager && m.operation == op)
    {
        Some(m) => {
            m.fields.extend(fields);
            m.api_version = av.to_string();
            m.time = ts.to_string();
        }
        None => managed.push(Managed {
            manager: manager.into(),
            operation: op.into(),
            api_version: av.into(),
            time: ts.into(),
            fields,
        }),
    }
}

fn initial_status(key: &ObjectKey, obj: &Map<String, Value>) -> Option<Value> {
    match (key.group.as_str(), key.kind.as_str()) {
        ("", "Namespace") => Some(json!({"phase": "Active"})),
        (CRD_GROUP, CRD_KIND) => {
            let crd = Value::Object(obj.clone());
            let r = kinds::from_crd(&crd)?;
            let names = crd.get("spec").and_then(|s| s.get("names")).cloned();
            Some(json!({
                "acceptedNames": names.unwrap_or_else(|| json!({"kind": r.kind, "plural": r.plural})),
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
                ],
                "storedVersions": [r.version],
            }))
        }
        _ => None,
    }
}

fn spec_changed(old: &Value, new: &Value) -> bool {
    if old.get("spec").is_some() || new.get("spec").is_some() {
        return old.get("spec") != new.get("spec");
    }
    // The top-level fields besides metadata, status, apiVersion and kind,
    // compared in place (no copies).
    fn body(v: &Value) -> impl Iterator<Item = (&String, &Value)> + '_ {
        v.as_object().into_iter().flat_map(|m| {
            m.iter().filter(|(k, _)| {
                !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
            })
        })
    }
    !body(old).eq(body(new))
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 200 {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}

fn io_err(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError {
    let path = path.display().to_string();
    move |source| ClusterError::Io { op, path, source }
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
        SimCluster::new(
            None,
            Some(Loaded {
                stamp: None,
                log_stamp: None,
                log_pos: 0,
                log_entries: 0,
                synced: false,
                state,
            }),
        )
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

    /// What every request does first: the injected latency.
    fn request(&self) {
        if !self.faults.latency.is_zero() {
            std::thread::sleep(self.faults.latency);
        }
    }

    /// Counts a write and fails it when it is the one to fail.
    fn inject(&self, verb: &'static str, key: Option<ObjectKey>) -> Result<(), ClusterError> {
        if !self.faults.is_set() {
            return Ok(());
        }
        let Some(n) = self.faults.fail_at else {
            return Ok(());
        };
        let mut c = self.counter.lock().unwrap_or_else(|e| e.into_inner());
        let fail = || ClusterError::Server {
            server: "sim".into(),
            code: 500,
            message: format!("injected failure ({ENV_FAIL_AT}={n})"),
        };
        let me = std::thread::current().id();
        if let Some((v, k, t)) = &c.failing {
            if *t == me {
                if *v == verb && *k == key {
                    return Err(fail());
                }
                c.failing = None;
            }
        }
        c.writes += 1;
        if c.writes == n {
            c.failing = Some((verb, key, me));
            return Err(fail());
        }
        Ok(())
    }

    /// A write of an object annotated `sim.rudder.io/reject` fails.
    fn reject(obj: &Value) -> Result<(), ClusterError> {
        match controllers::rejection(obj) {
            None => Ok(()),
            Some(message) => Err(ClusterError::Invalid {
                key: ObjectKey::of(obj).ok_or_else(|| ClusterError::BadObject(compact(obj)))?,
                message,
            }),
        }
    }

    fn guard(&self) -> MutexGuard<'_, Option<Loaded>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the cached state up to date with the files. `locked`: the
    /// caller holds the exclusive lock; otherwise a reload takes a shared
    /// one.
    fn refresh<'a>(
        &self,
        slot: &'a mut Option<Loaded>,
        locked: bool,
    ) -> Result<&'a mut Loaded, ClusterError> {
        let Some(dir) = &self.dir else {
            return match slot {
                Some(l) => Ok(l),
                None => Err(ClusterError::Corrupt {
                    path: "sim:".into(),
                    message: "the in-memory cluster lost its state".into(),
                }),
            };
        };
        let ss = stat(&dir.join(STATE_FILE))?;
        let ls = stat(&dir.join(LOG_FILE))?;
        let fresh = matches!(slot, Some(l) if l.stamp == ss && l.log_stamp == ls);
        if !fresh {
            let _shared = if locked { None } else { lock_shared(dir)? };
            if let Err(e) = Self::reload(slot, dir) {
                *slot = None;
                return Err(e);
            }
        }
        match slot {
            Some(l) => Ok(l),
            None => Err(ClusterError::Corrupt {
                path: dir.display().to_string(),
                message: "state not loaded".into(),
            }),
        }
    }

    /// Reads what changed: the log's new lines, or both files.
    fn reload(slot: &mut Option<Loaded>, dir: &Path) -> Result<(), ClusterError> {
        let state_path = dir.join(STATE_FILE);
        let log_path = dir.join(LOG_FILE);
        let ss = stat(&state_path)?;
        let mut log = match File::open(&log_path) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("open", &log_path)(e)),
        };
        let ls = match &log {
            Some(f) => Some(stamp_of(&f.metadata().map_err(io_err("stat", &log_path))?)),
            None => None,
        };
        let incremental = matches!(slot, Some(l) if ss.is_some() && l.stamp == ss
            && matches!((&l.log_stamp, &ls), (Some(a), Some(b)) if a.ino == b.ino && b.len >= l.log_pos));
        if !incremental {
            *slot = None;
            let state = match &ss {
                None => State::empty(hash_uuid(&[
                    "rudder.sim",
                    &canonical(dir).to_string_lossy(),
                ])),
                Some(_) => {
                    let data =
                        crate::input::read(&state_path).map_err(io_err("read", &state_path))?;
                    State::parse(&data, &state_path)?
                }
            };
            *slot = Some(Loaded {
                stamp: None,
                log_stamp: None,
                log_pos: 0,
                log_entries: 0,
                synced: false,
                state,
            });
        }
        let Some(l) = slot.as_mut() else {
            return Err(ClusterError::Corrupt {
                path: dir.display().to_string(),
                message: "state not loaded".into(),
            });
        };
        if let Some(f) = log.as_mut() {
            let unread = f
                .metadata()
                .map_or(0, |m| m.len().saturating_sub(l.log_pos));
            if unread > crate::input::MAX_INPUT_BYTES {
                return Err(io_err("read", &log_path)(crate::input::too_large()));
            }
            let buf = f
                .seek(std::io::SeekFrom::Start(l.log_pos))
                .and_then(|_| crate::input::read_from(&mut *f))
                .map_err(io_err("read", &log_path))?;
            // Complete lines only: a torn last line is not there yet.
            let complete = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            for line in buf[..complete].split_inclusive(|b| *b == b'\n') {
                l.log_entries += 1;
                let line = &line[..line.len() - 1];
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                l.state.replay(line, l.log_entries, &log_path)?;
            }
            l.log_pos += complete as u64;
        }
        l.stamp = ss;
        l.log_stamp = ls;
        Ok(())
    }

    fn read<R>(
        &self,
        f: impl FnOnce(&State) -> Result<R, ClusterError>,
    ) -> Result<R, ClusterError> {
        let mut g = self.guard();
        let loaded = self.refresh(&mut g, false)?;
        f(&loaded.state)
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

    /// A write's result as reads show it.
    fn result(state: &State, v: Option<Value>, view: &View) -> Option<Value> {
        let mut v = v?;
        if let Some(k) = ObjectKey::of(&v).and_then(|k| state.storage_key(&k)) {
            let t = state.written.get(&k).copied().unwrap_or(0);
            state.controlled(&k, &mut v, view, t);
        }
        Some(v)
    }

    /// Runs a write: under the directory lock, on fresh state, logged
    /// before the call returns. `f` computes what to do without changing
    /// anything.
    #[allow(clippy::incompatible_msrv)]
    fn write(
        &self,
        f: impl Fn(&State) -> Result<Plan, ClusterError>,
    ) -> Result<Option<Value>, ClusterError> {
        let view = self.view();
        let mut g = self.guard();
        let Some(dir) = self.dir.clone() else {
            let loaded = self.refresh(&mut g, false)?;
            let mut plan = f(&loaded.state)?;
            if plan.changes() {
                let seq = loaded.state.seq + 1;
                stamp_times(&loaded.state, &mut plan, view.now);
                loaded.state.commit(&mut plan);
                loaded.state.seq = seq;
            }
            return Ok(Self::result(&loaded.state, plan.result, &view));
        };
        // On a cluster that was never written, a request that changes
        // nothing (deleting a missing object) creates nothing.
        {
            let loaded = self.refresh(&mut g, false)?;
            if loaded.stamp.is_none() {
                let plan = f(&loaded.state)?;
                if !plan.changes() {
                    return Ok(Self::result(&loaded.state, plan.result, &view));
                }
            }
        }
        fsutil::private_dir(&dir).map_err(write_err)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = fsutil::open_private(
            &lock_path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )
        .map_err(write_err)?;
        lock.lock().map_err(io_err("lock", &lock_path))?;
        // A state written by an older rudder may be readable by others.
        fsutil::tighten_existing(&dir.join(STATE_FILE)).map_err(write_err)?;
        let loaded = self.refresh(&mut g, true)?;
        let mut plan = f(&loaded.state)?;
        if !plan.changes() {
            return Ok(Self::result(&loaded.state, plan.result, &view));
        }
        stamp_times(&loaded.state, &mut plan, view.now);
        let encode_err = |e: serde_json::Error| ClusterError::Io {
            op: "encode",
            path: dir.join(LOG_FILE).display().to_string(),
            source: std::io::Error::other(e),
        };
        let encoded = plan
            .puts
            .iter()
            .map(|p| serde_json::to_vec(&p.obj))
            .collect::<Result<Vec<_>, _>>()
            .map_err(encode_err)?;
        let seq = loaded.state.seq + 1;
        loaded.state.commit(&mut plan);
        loaded.state.seq = seq;
        for (p, e) in plan.puts.iter().zip(encoded) {
            loaded.state.encoded.insert(p.key.clone(), e);
        }
        let done = (|| {
            let line = log_line(&loaded.state, &plan, seq).map_err(encode_err)?;
            // Compact when the log is long, but never before it holds half
            // the snapshot's bytes: rewriting a large state for a few
            // writes would make a run quadratic in the cluster's size.
            let grown = loaded.log_pos + line.len() as u64;
            let base = loaded.stamp.as_ref().map_or(0, |s| s.len);
            let full = (loaded.log_entries >= COMPACT_ENTRIES || grown > COMPACT_BYTES)
                && grown > base / 2;
            if loaded.stamp.is_none() || loaded.log_stamp.is_none() || full {
                let (s, l) = compact_files(&dir, &mut loaded.state, self.fsync)?;
                loaded.stamp = Some(s);
                loaded.log_stamp = Some(l);
                loaded.log_pos = 0;
                loaded.log_entries = 0;
                loaded.synced = self.fsync;
            } else {
                let st = append(&dir, loaded.log_pos, &line)?;
                loaded.log_stamp = Some(st);
                loaded.log_pos += line.len() as u64;
                loaded.log_entries += 1;
            }
            Ok::<(), ClusterError>(())
        })();
        let out = Self::result(&loaded.state, plan.result, &view);
        if let Err(e) = done {
            // The files may or may not have changed: read them again next time.
            *g = None;
            return Err(e);
        }
        drop(lock);
        Ok(out)
    }
}

/// Sets when each stored object's spec was last written.
fn stamp_times(state: &State, plan: &mut Plan, now: u64) {
    for p in plan.puts.iter_mut() {
        p.written_at = if p.touched {
            now
        } else {
            state.written.get(&p.key).copied().unwrap_or(0)
        };
    }
}

/// A shared lock on DIR's lock file, when there is one (there is none
/// before the first write).
#[allow(clippy::incompatible_msrv)]
fn lock_shared(dir: &Path) -> Result<Option<File>, ClusterError> {
    let path = dir.join(LOCK_FILE);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("open lock", &path)(e)),
    };
    f.lock_shared().map_err(io_err("lock", &path))?;
    Ok(Some(f))
}

/// Appends a line to the log, first cutting off a torn last line (the log
/// has `pos` good bytes); returns the log's new stamp.
fn append(dir: &Path, pos: u64, line: &[u8]) -> Result<Stamp, ClusterError> {
    let path = dir.join(LOG_FILE);
    let mut f = fsutil::open_private(&path, OpenOptions::new().append(true).create(true))
        .map_err(write_err)?;
    let len = f.metadata().map_err(io_err("stat", &path))?.len();
    if len > pos {
        f.set_len(pos).map_err(io_err("truncate", &path))?;
    }
    f.write_all(line).map_err(io_err("append to", &path))?;
    let meta = f.metadata().map_err(io_err("stat", &path))?;
    Ok(stamp_of(&meta))
}

/// Replaces `path` with `data` through [`fsutil::AtomicWrite`], owner-only,
/// counting its fsyncs.
fn write_private(path: &Path, data: &[u8], fsync: bool) -> Result<(), ClusterError> {
    let count = |s: Step, _: &Path| {
        if matches!(s, Step::SyncTemp | Step::SyncDir) {
            counted_fsync();
        }
        Ok(())
    };
    AtomicWrite::new(Mode::PRIVATE)
        .fsync(fsync)
        .hook(&count)
        .write(path, data)
        .map_err(write_err)
}

fn write_err(e: fsutil::WriteError) -> ClusterError {
    ClusterError::Io {
        op: e.op,
        path: e.path.display().to_string(),
        source: e.error,
    }
}

static FSYNCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn counted_fsync() {
    FSYNCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many fsyncs (of files and directories) simulated clusters in this
/// process have issued so far: a relaxed counter for benchmarks and tests
/// (`benches/exec.rs` reports fsyncs per release with it).
pub fn fsync_count() -> u64 {
    FSYNCS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes the whole state to `state.json` and empties the log, each
/// crash-safely (in that order); returns both files' new stamps.
fn compact_files(
    dir: &Path,
    state: &mut State,
    fsync: bool,
) -> Result<(Stamp, Stamp), ClusterError> {
    let stamp = persist(dir, state, fsync)?;
    let path = dir.join(LOG_FILE);
    write_private(&path, b"", fsync)?;
    let log = stat(&path)?.ok_or_else(|| ClusterError::Corrupt {
        path: path.display().to_string(),
        message: "the log vanished while it was read".into(),
    })?;
    Ok((stamp, log))
}

/// Writes the state file crash-safely; returns the new file's stamp.
fn persist(dir: &Path, state: &mut State, fsync: bool) -> Result<Stamp, ClusterError> {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let path = dir.join(STATE_FILE);
    let data = state.serialize().map_err(|e| ClusterError::Io {
        op: "encode",
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    write_private(&path, &data, fsync)?;
    let meta = fs::metadata(&path).map_err(io_err("stat", &path))?;
    Ok(stamp_of(&meta))
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
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        let mut g = self.guard();
        {
            let loaded = self.refresh(&mut g, false)?;
            if loaded.stamp.is_none() && loaded.log_stamp.is_none() {
                return Ok(());
            }
            if self.fsync && loaded.log_stamp.as_ref().is_some_and(|s| s.len == 0) {
                return Ok(());
            }
        }
        let lock_path = dir.join(LOCK_FILE);
        let lock = fsutil::open_private(
            &lock_path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )
        .map_err(write_err)?;
        #[allow(clippy::incompatible_msrv)]
        lock.lock().map_err(io_err("lock", &lock_path))?;
        let loaded = self.refresh(&mut g, true)?;
        if loaded.synced {
            // The snapshot and the log's creation are durable already: the
            // writes since are in the log, so fsyncing it is enough (one
            // fsync, whatever the cluster's size).
            let path = dir.join(LOG_FILE);
            let synced = File::open(&path).and_then(|f| {
                counted_fsync();
                f.sync_data()
            });
            if let Err(e) = synced {
                *g = None;
                return Err(io_err("fsync", &path)(e));
            }
            drop(lock);
            return Ok(());
        }
        match compact_files(&dir, &mut loaded.state, true) {
            Ok((s, l)) => {
                loaded.stamp = Some(s);
                loaded.log_stamp = Some(l);
                loaded.log_pos = 0;
                loaded.log_entries = 0;
                loaded.synced = true;
            }
            Err(e) => {
                *g = None;
                return Err(e);
            }
        }
        drop(lock);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(ns: &str, name: &str, data: Value) -> Value {
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":ns},"data":data})
    }

    fn key(group: &str, kind: &str, ns: &str, name: &str) -> ObjectKey {
        ObjectKey::new(group, kind, ns, name)
    }

    fn apply_opts(manager: &str) -> ApplyOptions {
        ApplyOptions {
            field_manager: manager.into(),
            ..Default::default()
        }
    }

    fn rv(o: &Value) -> u64 {
        str_at(o, &["metadata", "resourceVersion"])
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

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

    #[test]
    fn generation_only_on_spec_change_and_status_kept() {
        let c = SimCluster::in_memory();
        let d = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
            "spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
            "spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}},
            "status":{"replicas":5}});
        let live = c.create(&d).unwrap();
        // The status written is ignored; the controller's shows.
        assert_eq!(live["status"]["replicas"], json!(1));
        assert_eq!(live["status"]["readyReplicas"], json!(1));
        assert_eq!(live["spec"]["replicas"], json!(1));
        assert_eq!(live["spec"]["progressDeadlineSeconds"], json!(600));
        let pod = &live["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["imagePullPolicy"],
            json!("IfNotPresent")
        );
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], json!("TCP"));
        assert_eq!(pod["dnsPolicy"], json!("ClusterFirst"));
        let mut l2 = live.clone();
        l2["metadata"]["labels"] = json!({"x": "y"});
        let l2 = c.replace(&l2).unwrap();
        assert_eq!(l2["metadata"]["generation"], json!(1));
        let mut l3 = l2.clone();
        l3["spec"]["replicas"] = json!(3);
        let l3 = c.replace(&l3).unwrap();
        assert_eq!(l3["metadata"]["generation"], json!(2));
        assert!(l3["spec"]["replicas"].is_i64());
        // A write with the same content changes nothing.
        let l4 = c.replace(&l3).unwrap();
        assert_eq!(l4, l3);
    }

    #[test]
    fn secret_string_data_and_reapply_is_identical() {
        let c = SimCluster::in_memory();
        let s = json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},
            "stringData":{"password":"hunter2"}});
        let live = c.apply(&s, &apply_opts("rudder")).unwrap();
        assert_eq!(live["data"]["password"], json!("aHVudGVyMg=="));
        assert!(live.get("stringData").is_none());
        assert_eq!(live["type"], json!("Opaque"));
        let mut dry = apply_opts("rudder");
        dry.dry_run = true;
        assert_eq!(c.apply(&s, &dry).unwrap(), live);
        assert_eq!(c.apply(&s, &apply_opts("rudder")).unwrap(), live);
    }

    #[test]
    fn dry_run_persists_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let c = SimCluster::open(tmp.path().join("c")).unwrap();
        let mut dry = apply_opts("rudder");
        dry.dry_run = true;
        let o = c
            .apply(&cm("default", "a", json!({"x":"1"})), &dry)
            .unwrap();
        assert_eq!(o["data"]["x"], json!("1"));
        assert!(o["metadata"].get("uid").is_none());
        assert!(o["metadata"].get("resourceVersion").is_none());
        assert!(c
            .get(&key("", "ConfigMap", "default", "a"))
            .unwrap()
            .is_none());
        assert!(!tmp.path().join("c").exists());
        let live = c
            .apply(&cm("default", "a", json!({"x":"1"})), &apply_opts("rudder"))
            .unwrap();
        let d2 = c
            .apply(&cm("default", "a", json!({"x":"2"})), &dry)
            .unwrap();
        assert_eq!(d2["data"]["x"], json!("2"));
        assert_eq!(
            c.get(&key("", "ConfigMap", "default", "a"))
                .unwrap()
                .unwrap(),
            live
        );
    }

    #[test]
    fn apply_conflicts_force_and_removal() {
        let c = SimCluster::in_memory();
        c.apply(
            &cm("default", "a", json!({"x":"1","y":"1"})),
            &apply_opts("alice"),
        )
        .unwrap();
        // Same value from another manager: shared, no conflict.
        c.apply(&cm("default", "a", json!({"x":"1"})), &apply_opts("bob"))
            .unwrap();
        // A different value: conflict with alice.
        let err = c
            .apply(&cm("default", "a", json!({"y":"2"})), &apply_opts("bob"))
            .unwrap_err();
        match &err {
            ClusterError::FieldConflict { fields, .. } => {
                assert_eq!(fields, &[(".data.y".to_string(), "alice".to_string())])
            }
            e => panic!("{e}"),
        }
        let mut force = apply_opts("bob");
        force.force = true;
        let o = c
            .apply(&cm("default", "a", json!({"y":"2"})), &force)
            .unwrap();
        assert_eq!(o["data"], json!({"x":"1","y":"2"}));
        // bob left x out: alice still owns it, so it stays.
        let mf = fields::read_managed(&o);
        let alice = mf.iter().find(|m| m.manager == "alice").unwrap();
        assert_eq!(alice.fields.len(), 1);
        // alice drops x: nobody owns it any more, it goes.
        let o = c
            .apply(&cm("default", "a", json!({})), &apply_opts("alice"))
            .unwrap();
        assert_eq!(o["data"], json!({"y":"2"}));
        // A replace by another manager takes the fields it changes.
        let mut r = o.clone();
        r["data"]["y"] = json!("3");
        let o = c.replace(&r).unwrap();
        let err = c
            .apply(&cm("default", "a", json!({"y":"4"})), &apply_opts("bob"))
            .unwrap_err();
        assert!(
            matches!(&err, ClusterError::FieldConflict { fields, .. } if fields[0].1 == "unknown"),
            "{err} {o}"
        );
    }

    #[test]
    fn apply_merges_containers_by_name_and_removes_dropped_ones() {
        let c = SimCluster::in_memory();
        let dep = |containers: Value| {
            json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"default"},
                "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
                "spec":{"containers":containers}}}})
        };
        c.apply(
            &dep(json!([{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}])),
            &apply_opts("m"),
        )
        .unwrap();
        let o = c
            .apply(&dep(json!([{"name":"a","image":"a:2"}])), &apply_opts("m"))
            .unwrap();
        let cs = o["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0]["image"], json!("a:2"));
        assert_eq!(
            cs[0]["terminationMessagePath"],
            json!("/dev/termination-log")
        );
        assert_eq!(o["metadata"]["generation"], json!(2));
    }

    #[test]
    fn services_get_a_cluster_ip_and_keep_it() {
        let c = SimCluster::in_memory();
        let svc = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},
            "spec":{"ports":[{"port":80}],"selector":{"a":"b"}}});
        let o = c.apply(&svc, &apply_opts("m")).unwrap();
        let ip = o["spec"]["clusterIP"].as_str().unwrap().to_string();
        assert!(ip.starts_with("10.96."));
        assert_eq!(o["spec"]["ports"][0]["targetPort"], json!(80));
        assert_eq!(o["spec"]["type"], json!("ClusterIP"));
        let o2 = c.apply(&svc, &apply_opts("m")).unwrap();
        assert_eq!(o2, o);
        let mut other = svc.clone();
        other["metadata"]["name"] = json!("t");
        let t = c.create(&other).unwrap();
        assert_ne!(t["spec"]["clusterIP"], json!(ip));
    }

    #[test]
    fn namespaces_kinds_and_crds() {
        let c = SimCluster::in_memory();
        assert!(matches!(
            c.create(&cm("nope", "a", json!({}))),
            Err(ClusterError::NamespaceNotFound { .. })
        ));
        assert!(matches!(
            c.create(&cm("", "a", json!({}))),
            Err(ClusterError::Invalid { .. })
        ));
        let w = json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"}});
        assert!(matches!(
            c.create(&w),
            Err(ClusterError::UnknownKind { .. })
        ));
        // A cluster-scoped object loses its namespace.
        let cr = json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
            "metadata":{"name":"r","namespace":"default"},"rules":[]});
        let o = c.create(&cr).unwrap();
        assert!(o["metadata"].get("namespace").is_none());
        assert!(c
            .get(&key(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "whatever",
                "r"
            ))
            .unwrap()
            .is_some());
        let crd = |scope: &str| {
            json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":"widgets.example.com"},
            "spec":{"group":"example.com","scope":scope,
                "names":{"kind":"Widget","plural":"widgets","singular":"widget","shortNames":["wd"]},
                "versions":[{"name":"v1beta1","served":true,"storage":false},{"name":"v1","served":true,"storage":true}]}})
        };
        let live = c.apply(&crd("Namespaced"), &apply_opts("m")).unwrap();
        assert_eq!(
            live["status"]["conditions"][1]["type"],
            json!("Established")
        );
        assert_eq!(
            c.scope("example.com", "Widget").unwrap(),
            Some(Scope::Namespaced)
        );
        let r = c.api_resources().unwrap();
        let wr = r.iter().find(|r| r.kind == "Widget").unwrap();
        assert_eq!(
            (wr.version.as_str(), wr.short_names.clone()),
            ("v1", vec!["wd".to_string()])
        );
        c.create(&w).unwrap();
        // Deleting the CRD deletes its objects and its kind.
        c.delete(
            &key(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            ),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.scope("example.com", "Widget").unwrap(), None);
        assert_eq!(
            c.snapshot()
                .unwrap()
                .iter()
                .filter(|o| o["kind"] == "Widget")
                .count(),
            0
        );
        c.apply(&crd("Cluster"), &apply_opts("m")).unwrap();
        assert_eq!(
            c.scope("example.com", "Widget").unwrap(),
            Some(Scope::Cluster)
        );
        let o = c.create(&w).unwrap();
        assert!(o["metadata"].get("namespace").is_none());
        // Deleting a namespace deletes what is in it.
        let ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}});
        let live = c.create(&ns).unwrap();
        assert_eq!(live["spec"]["finalizers"], json!(["kubernetes"]));
        c.create(&cm("team", "a", json!({}))).unwrap();
        c.delete(&key("", "Namespace", "", "team"), None).unwrap();
        assert!(c.get(&key("", "ConfigMap", "team", "a")).unwrap().is_none());
        assert!(c
            .delete(&key("", "Namespace", "", "default"), None)
            .is_err());
    }

    #[test]
    fn persists_across_opens_and_keeps_server_version() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let c = SimCluster::open(&dir).unwrap();
        let a = c.create(&cm("default", "a", json!({"k":"v"}))).unwrap();
        c.set_server_version("v1.31.4").unwrap();
        let d = SimCluster::open(&dir).unwrap();
        assert_eq!(
            d.get(&key("", "ConfigMap", "default", "a"))
                .unwrap()
                .unwrap(),
            a
        );
        assert_eq!(d.identity().unwrap().server_version, "v1.31.4");
        // The first handle sees the second one's writes.
        d.create(&cm("default", "b", json!({}))).unwrap();
        assert!(c
            .get(&key("", "ConfigMap", "default", "b"))
            .unwrap()
            .is_some());
        let text = fs::read_to_string(dir.join(STATE_FILE)).unwrap();
        assert!(text.starts_with("{\"format\":\"rudder.sim/v1\""));
    }

    #[test]
    fn corrupted_state_is_an_error_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        SimCluster::open(&dir)
            .unwrap()
            .create(&cm("default", "a", json!({})))
            .unwrap();
        let path = dir.join(STATE_FILE);
        let good = fs::read(&path).unwrap();
        for bad in [
            good[..good.len() / 2].to_vec(),
            b"".to_vec(),
            b"{\"format\":\"other/v9\"}".to_vec(),
            b"not json".to_vec(),
        ] {
            fs::write(&path, &bad).unwrap();
            let c = SimCluster::open(&dir).unwrap();
            let e = c.get(&key("", "ConfigMap", "default", "a")).unwrap_err();
            assert!(
                matches!(&e, ClusterError::Corrupt { path: p, .. } if p.ends_with(STATE_FILE)),
                "{e}"
            );
            assert!(e.to_string().contains("state.json"));
            let e = c.create(&cm("default", "b", json!({}))).unwrap_err();
            assert!(matches!(e, ClusterError::Corrupt { .. }));
            assert_eq!(fs::read(&path).unwrap(), bad);
        }
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    let c = SimCluster::open(&dir).unwrap();
                    for i in 0..50 {
                        c.create(&cm("default", &format!("t{t}-{i}"), json!({})))
                            .unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let c = SimCluster::open(&dir).unwrap();
        let all = c.list("", "ConfigMap", None, &[]).unwrap();
        assert_eq!(all.len(), 100);
        let rvs: BTreeSet<u64> = all.iter().map(rv).collect();
        assert_eq!(rvs.len(), 100);
    }

    #[test]
    fn many_dry_runs_are_cheap() {
        let c = SimCluster::in_memory();
        let mut dry = apply_opts("rudder");
        dry.dry_run = true;
        let start = std::time::Instant::now();
        for i in 0..2000 {
            let o = c
                .apply(&cm("default", &format!("c{i}"), json!({"a":"b"})), &dry)
                .unwrap();
            assert!(c.get(&ObjectKey::of(&o).unwrap()).unwrap().is_none());
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }
}

#[cfg(test)]
mod sim_tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn opts(manager: &str) -> ApplyOptions {
        ApplyOptions {
            field_manager: manager.into(),
            ..Default::default()
        }
    }

    fn dep(name: &str, image: &str, annotations: Value) -> Value {
        json!({"apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{"name":name,"namespace":"default","annotations":annotations},
            "spec":{"replicas":2,"selector":{"matchLabels":{"app":name}},"template":{"metadata":{"labels":{"app":name}},
            "spec":{"containers":[{"name":"c","image":image}]}}}})
    }

    fn cm(name: &str, v: &str) -> Value {
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"default"},"data":{"k":v}})
    }

    fn dkey(name: &str) -> ObjectKey {
        ObjectKey::new("apps", "Deployment", "default", name)
    }

    fn ckey(name: &str) -> ObjectKey {
        ObjectKey::new("", "ConfigMap", "default", name)
    }

    fn ready(o: &Value) -> i64 {
        o["status"]["readyReplicas"].as_i64().unwrap_or(-1)
    }

    fn rv(o: &Value) -> String {
        o["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// A driven clock (ms) and a cluster on it.
    fn driven() -> (Arc<AtomicU64>, SimCluster) {
        let ms = Arc::new(AtomicU64::new(1_000));
        let m = ms.clone();
        let c = SimCluster::in_memory().with_clock(Arc::new(move || {
            Duration::from_millis(m.load(Ordering::SeqCst))
        }));
        (ms, c)
    }

    #[test]
    fn shared_reads_are_reads_but_for_status() {
        let c = SimCluster::in_memory();
        c.apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        let cm = json!({"apiVersion":"v1","kind":"ConfigMap",
            "metadata":{"name":"c","namespace":"default"},"data":{"a":"1"}});
        c.apply(&cm, &opts("m")).unwrap();
        let keys = [
            dkey("web"),
            ObjectKey::new("", "ConfigMap", "default", "c"),
            dkey("absent"),
        ];
        let strip = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("status");
            v
        };
        let read = c.get_many(&keys).unwrap();
        let shared = c.get_many_shared(&keys).unwrap();
        assert_eq!(read.len(), shared.len());
        for (r, s) in read.iter().zip(&shared) {
            assert_eq!(r.as_ref().map(strip), s.as_deref().map(strip));
        }
        assert!(shared[2].is_none());
        // The same object twice is one object, not two copies.
        let again = c.get_many_shared(&keys[..1]).unwrap();
        assert!(Arc::ptr_eq(
            shared[0].as_ref().unwrap(),
            again[0].as_ref().unwrap()
        ));
    }

    #[test]
    fn objects_are_ready_at_once_and_status_is_not_a_write() {
        let c = SimCluster::in_memory();
        let w = c
            .apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        assert_eq!(ready(&w), 2);
        let g = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(ready(&g), 2);
        assert_eq!(g["status"]["observedGeneration"], json!(1));
        assert_eq!(rv(&g), rv(&w));
        let g2 = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(rv(&g2), rv(&w));
        let listed = c.list("apps", "Deployment", None, &[]).unwrap();
        assert_eq!(ready(&listed[0]), 2);
        let snap = c.snapshot().unwrap();
        let d = snap.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(ready(d), 2);
        assert_eq!(rv(d), rv(&w));
        // Reapplying the same object changes nothing.
        let again = c
            .apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        assert_eq!(rv(&again), rv(&w));
        // A Service gets an (empty) load balancer status.
        let svc = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},
            "spec":{"ports":[{"port":80}]}});
        let s = c.create(&svc).unwrap();
        assert_eq!(s["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn never_ready_and_failing_objects() {
        let (ms, c) = driven();
        c.apply(
            &dep("web", "nginx:1", json!({controllers::READY: "never"})),
            &opts("m"),
        )
        .unwrap();
        ms.fetch_add(3_600_000, Ordering::SeqCst);
        let g = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(ready(&g), 0);
        assert_eq!(g["status"]["unavailableReplicas"], json!(2));
        let job = json!({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default",
            "annotations":{controllers::READY: "fail"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x"}]}}}});
        let j = c.create(&job).unwrap();
        assert_eq!(j["status"]["conditions"][0]["type"], json!("Failed"));
    }

    #[test]
    fn ready_after_follows_the_clock_and_generation_bumps_reset_it() {
        let (ms, c) = driven();
        let ann = json!({controllers::READY_AFTER: "2s"});
        let w = c
            .apply(&dep("web", "nginx:1", ann.clone()), &opts("m"))
            .unwrap();
        assert_eq!(ready(&w), 0);
        ms.fetch_add(1_999, Ordering::SeqCst);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 0);
        ms.fetch_add(1, Ordering::SeqCst);
        let g = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(ready(&g), 2);
        assert_eq!(rv(&g), rv(&w));
        // A change outside the spec keeps it ready.
        let mut labelled = dep("web", "nginx:1", ann.clone());
        labelled["metadata"]["labels"] = json!({"x": "y"});
        let l = c.apply(&labelled, &opts("m")).unwrap();
        assert_eq!(l["metadata"]["generation"], json!(1));
        assert_eq!(ready(&l), 2);
        // A spec change starts over.
        let mut bumped = dep("web", "nginx:2", ann);
        bumped["metadata"]["labels"] = json!({"x": "y"});
        let dry = c.dry_run(&bumped).unwrap();
        assert_eq!(dry["metadata"]["generation"], json!(2));
        assert_eq!(ready(&dry), 0);
        let mut dry_opts = opts("m");
        dry_opts.dry_run = true;
        assert_eq!(ready(&c.apply(&bumped, &dry_opts).unwrap()), 0);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
        let b = c.apply(&bumped, &opts("m")).unwrap();
        assert_eq!(b["metadata"]["generation"], json!(2));
        assert_eq!(ready(&b), 0);
        assert_eq!(b["status"]["observedGeneration"], json!(2));
        ms.fetch_add(2_000, Ordering::SeqCst);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
    }

    #[test]
    fn default_delay_and_daemonsets_count_nodes() {
        let (ms, c) = driven();
        let c = c.with_default_delay(Duration::from_secs(1));
        c.apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 0);
        ms.fetch_add(1_000, Ordering::SeqCst);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
        let ds = json!({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","namespace":"default"},
            "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
            "spec":{"containers":[{"name":"c","image":"x"}]}}}});
        let d = c.create(&ds).unwrap();
        assert_eq!(d["status"]["desiredNumberScheduled"], json!(1));
        for i in 0..3 {
            c.create(&json!({"apiVersion":"v1","kind":"Node","metadata":{"name":format!("n{i}")}}))
                .unwrap();
        }
        let k = ObjectKey::new("apps", "DaemonSet", "default", "d");
        let d = c.get(&k).unwrap().unwrap();
        assert_eq!(d["status"]["desiredNumberScheduled"], json!(3));
        assert_eq!(d["status"]["numberReady"], json!(0));
    }

    #[test]
    fn rejected_objects_fail_real_writes_only() {
        let c = SimCluster::in_memory();
        let mut o = cm("bad", "1");
        o["metadata"]["annotations"] = json!({controllers::REJECT: "admission webhook denied it"});
        for r in [c.create(&o), c.apply(&o, &opts("m"))] {
            match r {
                Err(ClusterError::Invalid { key, message }) => {
                    assert_eq!(key, ckey("bad"));
                    assert_eq!(message, "admission webhook denied it");
                }
                other => panic!("{other:?}"),
            }
        }
        let mut dry = opts("m");
        dry.dry_run = true;
        assert!(c.apply(&o, &dry).is_ok());
        assert!(c.dry_run(&o).is_ok());
        assert!(c.get(&ckey("bad")).unwrap().is_none());
        let live = c.create(&cm("bad", "1")).unwrap();
        let mut r = live.clone();
        r["metadata"]["annotations"] = json!({controllers::REJECT: "no"});
        assert!(matches!(c.replace(&r), Err(ClusterError::Invalid { .. })));
    }

    #[test]
    fn fail_at_fails_the_nth_write_and_its_retries() {
        let c = SimCluster::in_memory().with_faults(SimFaults {
            fail_at: Some(2),
            latency: Duration::ZERO,
        });
        let mut dry = opts("m");
        dry.dry_run = true;
        // Reads and dry runs do not count.
        c.get(&ckey("a")).unwrap();
        c.list("", "ConfigMap", None, &[]).unwrap();
        c.apply(&cm("a", "1"), &dry).unwrap();
        c.dry_run(&cm("a", "1")).unwrap();
        c.apply(&cm("a", "1"), &opts("m")).unwrap();
        let is_injected = |r: Result<Value, ClusterError>| match r {
            Err(ClusterError::Server {
                server,
                code,
                message,
            }) => {
                assert_eq!((server.as_str(), code), ("sim", 500));
                assert_eq!(message, "injected failure (RUDDER_SIM_FAIL_AT=2)");
                true
            }
            _ => false,
        };
        assert!(is_injected(c.apply(&cm("b", "1"), &opts("m"))));
        // Its retries fail too, reads in between or not.
        assert!(is_injected(c.apply(&cm("b", "1"), &opts("m"))));
        assert!(c.get(&ckey("b")).unwrap().is_none());
        assert!(is_injected(c.apply(&cm("b", "2"), &opts("m"))));
        // A different write clears it.
        c.create(&cm("c", "1")).unwrap();
        c.apply(&cm("b", "1"), &opts("m")).unwrap();
        assert!(c.delete(&ckey("c"), None).unwrap().is_some());
        assert_eq!(c.list("", "ConfigMap", None, &[]).unwrap().len(), 2);
        // Deletes count (the 2nd write here).
        let d = SimCluster::in_memory().with_faults(SimFaults {
            fail_at: Some(2),
            latency: Duration::ZERO,
        });
        d.create(&cm("a", "1")).unwrap();
        let e = d.delete(&ckey("a"), None).unwrap_err();
        assert!(matches!(e, ClusterError::Server { code: 500, .. }), "{e}");
        assert!(d.delete(&ckey("a"), None).is_err());
        d.create(&cm("b", "1")).unwrap();
        assert!(d.delete(&ckey("a"), None).unwrap().is_some());
    }

    #[test]
    fn latency_delays_every_request() {
        let c = SimCluster::in_memory().with_faults(SimFaults {
            fail_at: None,
            latency: Duration::from_millis(30),
        });
        let t = std::time::Instant::now();
        c.get(&ckey("a")).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(30));
        let t = std::time::Instant::now();
        c.create(&cm("a", "1")).unwrap();
        c.dry_run(&cm("a", "2")).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(60));
    }

    #[test]
    fn dry_run_is_the_stored_form_of_the_desired_object() {
        let c = SimCluster::in_memory();
        let secret = json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},
            "stringData":{"password":"hunter2"}});
        let d = c.dry_run(&secret).unwrap();
        assert_eq!(d["data"]["password"], json!("aHVudGVyMg=="));
        assert_eq!(d["type"], json!("Opaque"));
        assert!(d["metadata"].get("uid").is_none());
        assert!(c
            .get(&ObjectKey::new("", "Secret", "default", "s"))
            .unwrap()
            .is_none());
        let live = c.apply(&secret, &opts("rudder")).unwrap();
        let d = c.dry_run(&secret).unwrap();
        for f in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            assert_eq!(d["metadata"][f], live["metadata"][f], "{f}");
        }
        assert_eq!(d["data"], live["data"]);
        // The same as the full dry-run apply on the desired fields.
        let desired = dep("web", "nginx:1", json!({}));
        c.apply(&desired, &opts("rudder")).unwrap();
        let mut changed = desired.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        let cheap = c.dry_run(&changed).unwrap();
        let full = c
            .apply(
                &changed,
                &ApplyOptions {
                    field_manager: "rudder".into(),
                    force: true,
                    dry_run: true,
                },
            )
            .unwrap();
        assert_eq!(cheap["spec"], full["spec"]);
        assert_eq!(cheap["status"], full["status"]);
        assert_eq!(cheap["metadata"]["generation"], json!(2));
        // Cluster-scoped kinds lose their namespace; bad objects fail.
        let cr = json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
            "metadata":{"name":"r","namespace":"default"},"rules":[]});
        assert!(c.dry_run(&cr).unwrap()["metadata"]
            .get("namespace")
            .is_none());
        assert!(matches!(
            c.dry_run(&json!({"kind": "ConfigMap"})),
            Err(ClusterError::BadObject(_))
        ));
        let mut nons = cm("x", "1");
        nons["metadata"]["namespace"] = json!("nope");
        assert!(matches!(
            c.dry_run(&nons),
            Err(ClusterError::NamespaceNotFound { .. })
        ));
        // A Service keeps its live address.
        let svc = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},
            "spec":{"ports":[{"port":80}]}});
        let s = c.create(&svc).unwrap();
        assert_eq!(
            c.dry_run(&svc).unwrap()["spec"]["clusterIP"],
            s["spec"]["clusterIP"]
        );
    }

    fn log_lines(dir: &Path) -> Vec<String> {
        fs::read_to_string(dir.join(LOG_FILE))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn writes_append_to_the_log_and_other_handles_replay_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let a = SimCluster::open(&dir).unwrap();
        let first = a.create(&cm("one", "1")).unwrap();
        // The first write compacts: state.json and an empty log.
        assert!(dir.join(STATE_FILE).exists());
        assert!(log_lines(&dir).is_empty());
        a.create(&cm("two", "2")).unwrap();
        a.apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        let lines = log_lines(&dir);
        assert_eq!(lines.len(), 2);
        let e: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(e["seq"], json!(3));
        assert!(e["put"][0]["writtenAt"].is_u64());
        assert_eq!(e["put"][0]["object"]["kind"], json!("Deployment"));
        let b = SimCluster::open(&dir).unwrap();
        assert_eq!(b.get(&ckey("one")).unwrap().unwrap(), first);
        assert!(b.get(&ckey("two")).unwrap().is_some());
        assert_eq!(ready(&b.get(&dkey("web")).unwrap().unwrap()), 2);
        // b's writes show in a (the new lines only are read).
        b.delete(&ckey("two"), None).unwrap().unwrap();
        b.create(&cm("three", "3")).unwrap();
        assert!(a.get(&ckey("two")).unwrap().is_none());
        let three = a.get(&ckey("three")).unwrap().unwrap();
        assert_eq!(rv(&three), "7");
        let e: Value = serde_json::from_str(&log_lines(&dir)[2]).unwrap();
        assert_eq!(e["delete"][0]["name"], json!("two"));
        assert_eq!(a.snapshot().unwrap(), b.snapshot().unwrap());
        // A fresh handle agrees too.
        assert_eq!(
            SimCluster::open(&dir).unwrap().snapshot().unwrap(),
            a.snapshot().unwrap()
        );
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_cut_off() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let a = SimCluster::open(&dir).unwrap();
        a.create(&cm("one", "1")).unwrap();
        a.create(&cm("two", "2")).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.join(LOG_FILE))
            .unwrap();
        f.write_all(b"{\"seq\":3,\"resourceVersion\":5,\"put\":[{\"obj")
            .unwrap();
        drop(f);
        let b = SimCluster::open(&dir).unwrap();
        assert!(b.get(&ckey("two")).unwrap().is_some());
        b.create(&cm("three", "3")).unwrap();
        let lines = log_lines(&dir);
        assert_eq!(lines.len(), 2);
        assert!(lines
            .iter()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()));
        let c = SimCluster::open(&dir).unwrap();
        assert_eq!(c.list("", "ConfigMap", None, &[]).unwrap().len(), 3);
        assert!(a.get(&ckey("three")).unwrap().is_some());
    }

    #[test]
    fn a_corrupt_log_line_is_an_error_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let a = SimCluster::open(&dir).unwrap();
        a.create(&cm("one", "1")).unwrap();
        a.create(&cm("two", "2")).unwrap();
        a.create(&cm("three", "3")).unwrap();
        let path = dir.join(LOG_FILE);
        let good = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = good.lines().collect();
        for bad in [
            format!("{}\nnot json\n{}\n", lines[0], lines[1]),
            format!("{}\n{{\"seq\":9}}\n", lines[0]),
            format!("{}\n", lines[1]),
        ] {
            fs::write(&path, &bad).unwrap();
            let c = SimCluster::open(&dir).unwrap();
            let e = c.get(&ckey("one")).unwrap_err();
            assert!(
                matches!(&e, ClusterError::Corrupt { path: p, .. } if p.ends_with(LOG_FILE)),
                "{e}"
            );
            assert!(e.to_string().contains("log.jsonl"), "{e}");
            assert!(matches!(
                c.create(&cm("four", "4")),
                Err(ClusterError::Corrupt { .. })
            ));
            assert!(matches!(
                a.get(&ckey("one")),
                Err(ClusterError::Corrupt { .. })
            ));
            assert_eq!(fs::read_to_string(&path).unwrap(), bad);
        }
        fs::write(&path, &good).unwrap();
        assert!(a.get(&ckey("three")).unwrap().is_some());
    }

    #[test]
    fn the_log_compacts_past_its_limit_and_on_flush() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let a = SimCluster::open(&dir).unwrap();
        for i in 0..(COMPACT_ENTRIES + 5) {
            a.create(&cm(&format!("c{i}"), "x")).unwrap();
        }
        let n = log_lines(&dir).len() as u64;
        assert!(n < 10, "{n} lines");
        let state: Value =
            serde_json::from_slice(&fs::read(dir.join(STATE_FILE)).unwrap()).unwrap();
        assert_eq!(state["seq"], json!(COMPACT_ENTRIES + 5 - n));
        let before = a.snapshot().unwrap();
        // This handle wrote (and fsynced) the snapshot and the log itself:
        // a flush fsyncs the log and rewrites nothing.
        a.flush().unwrap();
        assert_eq!(log_lines(&dir).len() as u64, n);
        assert_eq!(SimCluster::open(&dir).unwrap().snapshot().unwrap(), before);
        // A handle that only read them compacts on flush.
        let c = SimCluster::open(&dir).unwrap();
        c.create(&cm("late", "1")).unwrap();
        let old_log = fs::read(dir.join(LOG_FILE)).unwrap();
        c.flush().unwrap();
        assert!(log_lines(&dir).is_empty());
        // A crash between the two renames of a compaction: the new state
        // with the old log, whose entries it already has.
        fs::write(dir.join(LOG_FILE), &old_log).unwrap();
        let b = SimCluster::open(&dir).unwrap();
        assert_eq!(b.snapshot().unwrap(), c.snapshot().unwrap());
        assert_eq!(b.snapshot().unwrap(), a.snapshot().unwrap());
        b.create(&cm("later", "1")).unwrap();
        assert!(a.get(&ckey("later")).unwrap().is_some());
        // Flushing an unwritten or in-memory cluster does nothing.
        SimCluster::open(tmp.path().join("none"))
            .unwrap()
            .flush()
            .unwrap();
        assert!(!tmp.path().join("none").exists());
        SimCluster::in_memory().flush().unwrap();
    }

    #[test]
    fn written_at_survives_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let ms = Arc::new(AtomicU64::new(10_000));
        let clock = |m: &Arc<AtomicU64>| -> NowFn {
            let m = m.clone();
            Arc::new(move || Duration::from_millis(m.load(Ordering::SeqCst)))
        };
        let a = SimCluster::open(&dir).unwrap().with_clock(clock(&ms));
        let ann = json!({controllers::READY_AFTER: "5s"});
        a.apply(&dep("web", "nginx:1", ann.clone()), &opts("m"))
            .unwrap();
        a.apply(&dep("api", "nginx:1", ann), &opts("m")).unwrap();
        ms.fetch_add(4_000, Ordering::SeqCst);
        let b = SimCluster::open(&dir).unwrap().with_clock(clock(&ms));
        assert_eq!(ready(&b.get(&dkey("web")).unwrap().unwrap()), 0);
        assert_eq!(ready(&b.get(&dkey("api")).unwrap().unwrap()), 0);
        b.flush().unwrap();
        ms.fetch_add(1_000, Ordering::SeqCst);
        let c = SimCluster::open(&dir).unwrap().with_clock(clock(&ms));
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
        assert_eq!(ready(&c.get(&dkey("api")).unwrap().unwrap()), 2);
    }
}

#[cfg(test)]
mod bench {
    use super::*;

    /// ~1 KiB objects: 200 releases (namespaces) of 50 ConfigMaps and 50
    /// Deployments.
    fn objects(image: &str) -> Vec<Value> {
        let mut out = Vec::with_capacity(20_000);
        for r in 0..200 {
            let ns = format!("r{r}");
            let ann =
                json!({"meta.helm.sh/release-name": ns, "meta.helm.sh/release-namespace": ns});
            for i in 0..50 {
                out.push(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("cm{i}"),"namespace":ns,
                    "labels":{"app.kubernetes.io/managed-by":"Helm","app":"x"},"annotations":ann},
                    "data":{"a":"x".repeat(300),"b":"y".repeat(300),"c":format!("{image}-{}", "z".repeat(200))}}));
                out.push(json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":format!("d{i}"),"namespace":ns,
                    "labels":{"app.kubernetes.io/managed-by":"Helm","app":"x"},"annotations":ann},
                    "spec":{"replicas":2,"selector":{"matchLabels":{"app":format!("d{i}")}},"template":{"metadata":{"labels":{"app":format!("d{i}")}},
                    "spec":{"containers":[{"name":"c","image":image,"args":["--port=8080","--verbose"],
                        "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
                        "ports":[{"containerPort":8080,"name":"http"}],
                        "resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}));
            }
        }
        out
    }

    fn namespaces(c: &SimCluster) {
        for r in 0..200 {
            c.create(
                &json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":format!("r{r}")}}),
            )
            .unwrap();
        }
    }

    fn plan(c: &SimCluster, objs: &[Value]) -> Duration {
        let t = std::time::Instant::now();
        for o in objs {
            let k = ObjectKey::of(o).unwrap();
            assert!(c.get(&k).unwrap().is_some());
            c.dry_run(o).unwrap();
        }
        t.elapsed()
    }

    /// Planning's and applying's access patterns on a 20,000-object cluster
    /// (`cargo test --release --lib bench_20k -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn bench_20k() {
        let first = objects("nginx:1");
        let second = objects("nginx:2");
        let size: usize = first.iter().map(|o| o.to_string().len()).sum();
        eprintln!(
            "{} objects, {} bytes on average",
            first.len(),
            size / first.len()
        );
        let opts = ApplyOptions {
            field_manager: "rudder".into(),
            ..Default::default()
        };
        let mem = SimCluster::in_memory();
        namespaces(&mem);
        let t = std::time::Instant::now();
        for o in &first {
            mem.apply(o, &opts).unwrap();
        }
        eprintln!("20k in-memory applies (create): {:?}", t.elapsed());
        for round in 0..3 {
            eprintln!(
                "20k in-memory get + dry_run ({round}): {:?}",
                plan(&mem, &second)
            );
        }
        let t = std::time::Instant::now();
        for o in &second {
            mem.apply(o, &opts).unwrap();
        }
        eprintln!("20k in-memory applies (update): {:?}", t.elapsed());

        let tmp = tempfile::tempdir().unwrap();
        for fsync in [true, false] {
            let dir = tmp.path().join(format!("c{fsync}"));
            let mut c = SimCluster::open(&dir).unwrap();
            if !fsync {
                c = c.without_fsync();
            }
            namespaces(&c);
            let t = std::time::Instant::now();
            for o in &first {
                c.apply(o, &opts).unwrap();
            }
            eprintln!(
                "20k persisted applies (create, fsync {fsync}): {:?}",
                t.elapsed()
            );
            let t = std::time::Instant::now();
            for o in &second {
                c.apply(o, &opts).unwrap();
            }
            eprintln!(
                "20k persisted applies (update, fsync {fsync}): {:?}",
                t.elapsed()
            );
            let t = std::time::Instant::now();
            c.flush().unwrap();
            eprintln!("flush: {:?}", t.elapsed());
            let fresh = SimCluster::open(&dir).unwrap();
            let t = std::time::Instant::now();
            fresh
                .get(&ObjectKey::new("", "Namespace", "", "default"))
                .unwrap();
            eprintln!("first read (load 20k objects): {:?}", t.elapsed());
            for round in 0..2 {
                eprintln!(
                    "20k persisted get + dry_run ({round}): {:?}",
                    plan(&fresh, &first)
                );
            }
        }
    }
}
