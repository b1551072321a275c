//! Where objects live: the [`Cluster`] interface and its implementations.
//!
//! The planner, the executor and the in-cluster release drivers all talk to
//! a cluster through [`Cluster`], and none of them knows which one it is:
//!
//! - [`sim::SimCluster`]: the embedded default (`--cluster sim:DIR`), a
//!   simulated API server whose state is a file under DIR;
//! - a Kubernetes API server through kube-rs (feature `kube`).
//!
//! Beside them, [`controllers`] computes the status the simulated cluster's
//! objects show, and [`reads`] batches reads of one consistent look at a
//! cluster.
//!
//! Objects travel as JSON values, exactly as the API server sends them. An
//! object's identity is its [`ObjectKey`]: group, kind, namespace and name,
//! without the version, as Helm's `isMatchingInfo` compares them.
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

pub mod controllers;
#[cfg(feature = "kube")]
pub mod kube;
pub mod reads;
pub mod sim;

/// The identity of an object: group, kind, namespace and name. The API
/// version is not part of it, so an apiVersion bump is the same object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    /// API group (`""` for the core group).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace (`""` for cluster-scoped objects).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key from its four parts.
    pub fn new(group: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of a JSON object (`apiVersion`, `kind`, `metadata.name`,
    /// `metadata.namespace`); `None` when a field is missing.
    pub fn of(obj: &Value) -> Option<ObjectKey> {
        let api_version = obj.get("apiVersion")?.as_str()?;
        let kind = obj.get("kind")?.as_str()?;
        let meta = obj.get("metadata")?;
        let name = meta.get("name")?.as_str()?;
        let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        Some(ObjectKey::new(group, kind, namespace, name))
    }
}

impl fmt::Display for ObjectKey {
    /// kubectl's `kind.group/name` shape, with the namespace in front:
    /// `kube-system/Deployment.apps/coredns`, `ConfigMap/x` when cluster-wide.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}", self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        write!(f, "/{}", self.name)
    }
}

/// Whether a kind lives in a namespace.
pub use crate::manifest::Scope;

/// One kind the cluster serves (a row of `kubectl api-resources`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResource {
    /// API group (`""` for core).
    pub group: String,
    /// The preferred version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name (`deployments`).
    pub plural: String,
    /// Singular name (`deployment`).
    pub singular: String,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
}

impl ApiResource {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// What identifies a cluster, so that a saved plan is not applied to
/// another one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentity {
    /// `sim` or `kube`.
    pub kind: String,
    /// A stable identity: the simulated cluster's id, or a hash of the API
    /// server's URL and the `kube-system` namespace's uid.
    pub id: String,
    /// The server's version (`v1.32.0`), which feeds `.Capabilities`.
    pub server_version: String,
}

/// What [`Cluster::watch_change`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    /// An event for the object (added, modified or deleted).
    Changed,
    /// `max` passed without one (bookmarks only move the watch on).
    Quiet,
    /// The resourceVersion is too old to resume from (410 Gone): read the
    /// object again.
    Expired,
    /// This cluster cannot watch: poll.
    Unsupported,
}

/// One thing [`Cluster::watch_any`] watches: an object (`key.name` set)
/// or every object of a kind in a namespace (`key.name` empty), from a
/// resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchTarget {
    /// What to watch.
    pub key: ObjectKey,
    /// Where to start (empty: from now).
    pub resource_version: String,
}

/// How an apply is sent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyOptions {
    /// Field manager (`rudder`).
    pub field_manager: String,
    /// Take over fields that another manager owns (`--force-conflicts`).
    pub force: bool,
    /// Compute the result without persisting it (`dryRun=All`).
    pub dry_run: bool,
}

/// Why a cluster request failed. Each message names the object and, where
/// there is one, the server.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The object does not exist (404).
    #[error("{key} not found")]
    NotFound {
        /// The object.
        key: ObjectKey,
    },
    /// A create found the object already there (409 AlreadyExists).
    #[error("{key} already exists")]
    AlreadyExists {
        /// The object.
        key: ObjectKey,
    },
    /// An update carried a stale resourceVersion (409 Conflict).
    #[error("Operation cannot be fulfilled on {key}: the object has been modified; please apply your changes to the latest version and try again")]
    Conflict {
        /// The object.
        key: ObjectKey,
    },
    /// A server-side apply would change fields another manager owns.
    #[error("Apply failed with {} conflict(s) on {key}: {}", .fields.len(), .fields.iter().map(|(f, m)| format!("conflict with {m:?}: {f}")).collect::<Vec<_>>().join("; "))]
    FieldConflict {
        /// The object.
        key: ObjectKey,
        /// (field path, manager) pairs.
        fields: Vec<(String, String)>,
    },
    /// The server refused the object (422 Invalid, 400 BadRequest).
    #[error("{key} is invalid: {message}")]
    Invalid {
        /// The object.
        key: ObjectKey,
        /// The server's message.
        message: String,
    },
    /// The namespace of a namespaced object does not exist.
    #[error("namespaces {namespace:?} not found (creating {key})")]
    NamespaceNotFound {
        /// The object being written.
        key: ObjectKey,
        /// The missing namespace.
        namespace: String,
    },
    /// The kind is not served by the cluster.
    #[error("no matches for kind {kind:?} in version {api_version:?}")]
    UnknownKind {
        /// `group/version`.
        api_version: String,
        /// Kind.
        kind: String,
    },
    /// The object is not a Kubernetes object (no apiVersion, kind or name).
    #[error("not a Kubernetes object: {0}")]
    BadObject(String),
    /// The server answered with an error status that is none of the above.
    #[error("{server}: {code} {message}")]
    Server {
        /// Which server (`sim:DIR`, or the API server URL and context).
        server: String,
        /// HTTP status code.
        code: u16,
        /// The message.
        message: String,
    },
    /// The cluster could not be reached: the connection was refused or
    /// broke, DNS or TLS failed, a request timed out, or an answer could not
    /// be read. The message names the server.
    #[error("{message}")]
    Unreachable {
        /// Which server (`sim:DIR`, or the API server URL and context).
        server: String,
        /// What failed, on one line.
        message: String,
    },
    /// The server refused the credentials (401 Unauthorized) or the request
    /// (403 Forbidden).
    #[error("{server}: {code} {message}")]
    Forbidden {
        /// Which server.
        server: String,
        /// 401 or 403.
        code: u16,
        /// The server's message, with what was asked.
        message: String,
    },
    /// The cluster cannot be opened as asked: an invalid `--cluster` URL, a
    /// kubeconfig that cannot be read or has no such context, or a cluster
    /// kind this build lacks (feature `kube`).
    #[error("{0}")]
    Setup(String),
    /// Reading or writing the simulated cluster's state failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The simulated cluster's state file is not valid.
    #[error("{path}: corrupted simulated cluster state: {message}")]
    Corrupt {
        /// The state file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// How many API requests a cluster handle has sent, by verb. Retries count
/// as requests; a dry-run apply counts under `dry_run`, not `patch`.
/// [`RequestCounts::since`] gives the requests of one step (a plan, an
/// apply) from two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCounts {
    /// GETs of one object (and of discovery, `/version`).
    pub get: u64,
    /// LISTs (each page counts).
    pub list: u64,
    /// Watches started.
    pub watch: u64,
    /// Creates (POST).
    pub create: u64,
    /// Updates (PUT).
    pub update: u64,
    /// Patches that write: server-side applies and managed-field rewrites.
    pub patch: u64,
    /// Server-side apply dry runs (`dryRun=All`).
    pub dry_run: u64,
    /// Deletes.
    pub delete: u64,
}

impl RequestCounts {
    /// Every request.
    pub fn total(&self) -> u64 {
        self.reads() + self.writes() + self.dry_run
    }

    /// GETs, LISTs and watches.
    pub fn reads(&self) -> u64 {
        self.get + self.list + self.watch
    }

    /// Creates, updates, patches and deletes (dry runs excluded).
    pub fn writes(&self) -> u64 {
        self.create + self.update + self.patch + self.delete
    }

    /// The requests made between `earlier` and `self` (readings of the
    /// same handle).
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        RequestCounts {
            get: self.get.saturating_sub(earlier.get),
            list: self.list.saturating_sub(earlier.list),
            watch: self.watch.saturating_sub(earlier.watch),
            create: self.create.saturating_sub(earlier.create),
            update: self.update.saturating_sub(earlier.update),
            patch: self.patch.saturating_sub(earlier.patch),
            dry_run: self.dry_run.saturating_sub(earlier.dry_run),
            delete: self.delete.saturating_sub(earlier.delete),
        }
    }
}

impl fmt::Display for RequestCounts {
    /// `12 requests (get 3, list 4, dry-run 5)`: the verbs with requests.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("get", self.get),
            ("list", self.list),
            ("watch", self.watch),
            ("create", self.create),
            ("update", self.update),
            ("patch", self.patch),
            ("dry-run", self.dry_run),
            ("delete", self.delete),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| format!("{v} {n}"))
        .collect();
        let total = self.total();
        write!(f, "{total} request{}", if total == 1 { "" } else { "s" })?;
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// Counters behind [`RequestCounts`], for cluster implementations.
#[derive(Debug, Default)]
pub struct RequestCounter {
    counts: [std::sync::atomic::AtomicU64; 8],
}

/// A verb [`RequestCounter`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestVerb {
    /// See [`RequestCounts::get`].
    Get,
    /// See [`RequestCounts::list`].
    List,
    /// See [`RequestCounts::watch`].
    Watch,
    /// See [`RequestCounts::create`].
    Create,
    /// See [`RequestCounts::update`].
    Update,
    /// See [`RequestCounts::patch`].
    Patch,
    /// See [`RequestCounts::dry_run`].
    DryRun,
    /// See [`RequestCounts::delete`].
    Delete,
}

impl RequestCounter {
    /// Counts one request.
    pub fn count(&self, verb: RequestVerb) {
        self.add(verb, 1);
    }

    /// Counts `n` requests.
    pub fn add(&self, verb: RequestVerb, n: u64) {
        self.counts[verb as usize].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn counts(&self) -> RequestCounts {
        let n = |v: RequestVerb| self.counts[v as usize].load(std::sync::atomic::Ordering::Relaxed);
        RequestCounts {
            get: n(RequestVerb::Get),
            list: n(RequestVerb::List),
            watch: n(RequestVerb::Watch),
            create: n(RequestVerb::Create),
            update: n(RequestVerb::Update),
            patch: n(RequestVerb::Patch),
            dry_run: n(RequestVerb::DryRun),
            delete: n(RequestVerb::Delete),
        }
    }
}

/// A Kubernetes API, as much of it as rudder needs.
///
/// Reads never change anything. Writes return the object as stored, with
/// the server's metadata (uid, resourceVersion, generation, ...).
pub trait Cluster: Send + Sync {
    /// Which cluster this is.
    fn identity(&self) -> Result<ClusterIdentity, ClusterError>;

    /// Every kind the cluster serves, built-in and from CRDs.
    fn api_resources(&self) -> Result<Vec<ApiResource>, ClusterError>;

    /// Whether `group`/`kind` is namespaced; `None` when the cluster does
    /// not serve it.
    fn scope(&self, group: &str, kind: &str) -> Result<Option<Scope>, ClusterError> {
        Ok(self
            .api_resources()?
            .into_iter()
            .find(|r| r.group == group && r.kind == kind)
            .map(|r| {
                if r.namespaced {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                }
            }))
    }

    /// One object, or `None` when it does not exist (also when the cluster
    /// does not serve its kind: a CRD that defines it may be about to be
    /// created).
    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError>;

    /// Objects of one kind, in one namespace (`Some`) or all (`None`),
    /// whose labels match every `key=value` pair of `labels`.
    fn list(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &[(String, String)],
    ) -> Result<Vec<Value>, ClusterError>;

    /// Creates an object; [`ClusterError::AlreadyExists`] when it exists.
    fn create(&self, obj: &Value) -> Result<Value, ClusterError>;

    /// Replaces an object. When `metadata.resourceVersion` is set it must
    /// equal the live one, or [`ClusterError::Conflict`].
    fn replace(&self, obj: &Value) -> Result<Value, ClusterError>;

    /// Server-side apply of `obj` (create when missing).
    fn apply(&self, obj: &Value, opts: &ApplyOptions) -> Result<Value, ClusterError>;

    /// The object `obj` would be stored as, without storing it: at least
    /// the server's write-time transforms and defaults on the desired
    /// object's own fields (`stringData` folded into `data`, defaulted
    /// fields, the namespace of cluster-scoped kinds dropped). The default
    /// is a forced server-side apply dry run by manager `rudder`.
    fn dry_run(&self, obj: &Value) -> Result<Value, ClusterError> {
        self.apply(
            obj,
            &ApplyOptions {
                field_manager: "rudder".into(),
                force: true,
                dry_run: true,
            },
        )
    }

    /// Hands the fields that `from` managers set with client-side writes
    /// (`operation: Update`, Helm 3's and `kubectl apply`'s way) to the
    /// server-side apply manager `to`, as Helm 4 does when a release moves to
    /// server-side apply (client-go's `csaupgrade`): their field sets join
    /// `to`'s `Apply` entry and their own entries go. Returns whether the
    /// object changed. Without it, rudder's first apply of an object that
    /// Helm 3 installed conflicts on every field whose value changes.
    ///
    /// The default does nothing: only a real API server has client-side
    /// writers (the simulated cluster is written by rudder alone).
    fn upgrade_managed_fields(
        &self,
        live: &Value,
        from: &[&str],
        to: &str,
    ) -> Result<bool, ClusterError> {
        let _ = (live, from, to);
        Ok(false)
    }

    /// [`Cluster::get`] of several objects: one answer per key, in order;
    /// the first error ends the batch. The default calls `get` for each;
    /// the simulated cluster answers them all from one look at its state.
    fn get_many(&self, keys: &[ObjectKey]) -> Result<Vec<Option<Value>>, ClusterError> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// [`Cluster::get_many`] for readers that never look at `status` (the
    /// planner compares what releases set, and status is not among it):
    /// the objects are shared instead of copied where the implementation
    /// keeps them, and their `status` is whatever the implementation has at
    /// hand. The simulated cluster hands out its stored objects, without
    /// the status its controllers would show at this instant (a planner
    /// reads every object of every release, and copying them cost more
    /// than comparing them). The default wraps `get_many`'s answers.
    fn get_many_shared(
        &self,
        keys: &[ObjectKey],
    ) -> Result<Vec<Option<std::sync::Arc<Value>>>, ClusterError> {
        Ok(self
            .get_many(keys)?
            .into_iter()
            .map(|o| o.map(std::sync::Arc::new))
            .collect())
    }

    /// From how many objects of one kind in one namespace a LIST is
    /// cheaper than reading them one by one ([`reads::Reads`] lists
    /// them then). `None` (the default) never lists: the simulated
    /// cluster answers [`Cluster::get_many_shared`] from one look at its
    /// state.
    fn list_batch_min(&self) -> Option<usize> {
        None
    }

    /// How many requests it pays to have in flight at once when reading
    /// for a plan. 1 (the default): the cluster answers from memory, and
    /// the cores are the limit. A remote API server answers each request
    /// after a round trip; planning several releases at once hides it.
    fn request_parallelism(&self) -> usize {
        1
    }

    /// How many requests this handle has sent so far, by verb; `None`
    /// (the default) when it does not count.
    fn request_counts(&self) -> Option<RequestCounts> {
        None
    }

    /// Makes every write so far durable (the simulated cluster compacts its
    /// log and fsyncs); the default does nothing.
    fn flush(&self) -> Result<(), ClusterError> {
        Ok(())
    }

    /// Blocks until the object at `key` may have changed since
    /// `resource_version` (a watch event for it), or `max` has passed.
    /// Waits call it between their readiness checks instead of sleeping a
    /// poll interval. The default cannot watch and answers
    /// [`Watched::Unsupported`] at once; the caller then polls.
    fn watch_change(
        &self,
        key: &ObjectKey,
        resource_version: &str,
        max: std::time::Duration,
    ) -> Result<Watched, ClusterError> {
        let _ = (key, resource_version, max);
        Ok(Watched::Unsupported)
    }

    /// [`Cluster::list`] of every object of a kind in a namespace (`None`:
    /// all), with the collection's resourceVersion to watch from (empty
    /// where the cluster has none: the default, which calls `list`).
    fn list_at(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Vec<Value>, String), ClusterError> {
        Ok((self.list(group, kind, namespace, &[])?, String::new()))
    }

    /// Blocks until any of `targets` may have changed (a watch event for
    /// it), or `max` has passed. A target without a name watches every
    /// object of its kind in its namespace. The default watches the first
    /// target that names an object ([`Cluster::watch_change`]) and ignores
    /// the others; a real cluster watches them all at once.
    fn watch_any(
        &self,
        targets: &[WatchTarget],
        max: std::time::Duration,
    ) -> Result<Watched, ClusterError> {
        match targets.iter().find(|t| !t.key.name.is_empty()) {
            Some(t) => self.watch_change(&t.key, &t.resource_version, max),
            None => Ok(Watched::Unsupported),
        }
    }

    /// The last `tail_lines` lines of a container's log (of its previous
    /// run with `previous`), or `None` where the cluster serves no logs
    /// (the default).
    fn pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        tail_lines: u32,
        previous: bool,
    ) -> Result<Option<String>, ClusterError> {
        let _ = (namespace, pod, container, tail_lines, previous);
        Ok(None)
    }

    /// Where this cluster is, for people: a real one's API server URL and
    /// kubeconfig context (`https://10.0.0.1:6443 (context prod)`). `None`
    /// (the default) when the URL it was opened from says it all.
    fn location(&self) -> Option<String> {
        None
    }

    /// Deletes an object (propagation `Background`) and returns it as it
    /// was, or `None` when it did not exist. With `resource_version`, the
    /// delete only happens if the live object still has it.
    fn delete(
        &self,
        key: &ObjectKey,
        resource_version: Option<&str>,
    ) -> Result<Option<Value>, ClusterError>;
}

/// The label and annotations by which Helm marks an object as a release's.
pub mod ownership {
    use serde_json::Value;

    /// `app.kubernetes.io/managed-by`, which Helm sets to `Helm`.
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// `meta.helm.sh/release-name`.
    pub const RELEASE_NAME: &str = "meta.helm.sh/release-name";
    /// `meta.helm.sh/release-namespace`.
    pub const RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";
    /// `helm.sh/resource-policy`.
    pub const RESOURCE_POLICY: &str = "helm.sh/resource-policy";

    fn meta_str<'a>(obj: &'a Value, field: &str, key: &str) -> Option<&'a str> {
        obj.get("metadata")?.get(field)?.get(key)?.as_str()
    }

    /// The release an object's live metadata names, when it is complete:
    /// `(name, namespace)` with `managed-by: Helm`.
    pub fn owner(obj: &Value) -> Option<(&str, &str)> {
        if meta_str(obj, "labels", MANAGED_BY) != Some("Helm") {
            return None;
        }
        Some((
            meta_str(obj, "annotations", RELEASE_NAME)?,
            meta_str(obj, "annotations", RELEASE_NAMESPACE)?,
        ))
    }

    /// Whether the object's live metadata names this release.
    pub fn owned_by(obj: &Value, release: &str, namespace: &str) -> bool {
        owner(obj) == Some((release, namespace))
    }

    /// Whether the object carries `helm.sh/resource-policy: keep`.
    pub fn keep(obj: &Value) -> bool {
        meta_str(obj, "annotations", RESOURCE_POLICY) == Some("keep")
    }

    /// Helm's ownership check (`checkOwnership`): `None` when the object may
    /// be imported into the release, or the validation errors Helm reports.
    pub fn check(obj: &Value, release: &str, namespace: &str) -> Option<String> {
        let mut errs = Vec::new();
        match meta_str(obj, "labels", MANAGED_BY) {
            None => errs.push(format!(
                "label validation error: missing key {MANAGED_BY:?}: must be set to \"Helm\""
            )),
            Some("Helm") => {}
            Some(v) => errs.push(format!(
                "label validation error: key {MANAGED_BY:?} must equal \"Helm\": current value is {v:?}"
            )),
        }
        for (key, want) in [(RELEASE_NAME, release), (RELEASE_NAMESPACE, namespace)] {
            match meta_str(obj, "annotations", key) {
                None => errs.push(format!(
                    "annotation validation error: missing key {key:?}: must be set to {want:?}"
                )),
                Some(v) if v == want => {}
                Some(v) => errs.push(format!(
                    "annotation validation error: key {key:?} must equal {want:?}: current value is {v:?}"
                )),
            }
        }
        if errs.is_empty() {
            None
        } else {
            Some(format!("invalid ownership metadata; {}", errs.join("; ")))
        }
    }

    /// Sets Helm's ownership label and annotations on an object.
    pub fn stamp(obj: &mut Value, release: &str, namespace: &str) {
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if !labels.is_object() {
            *labels = Value::Object(Default::default());
        }
        if let Some(l) = labels.as_object_mut() {
            l.insert(MANAGED_BY.into(), Value::String("Helm".into()));
        }
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if !ann.is_object() {
            *ann = Value::Object(Default::default());
        }
        if let Some(a) = ann.as_object_mut() {
            a.insert(RELEASE_NAME.into(), Value::String(release.into()));
            a.insert(RELEASE_NAMESPACE.into(), Value::String(namespace.into()));
        }
    }
}

/// Opens a cluster from a `--cluster` URL: `sim:DIR`, or (feature `kube`)
/// `kube` / `kube?kubeconfig=PATH&context=NAME` for a real API server
/// (see [`kube::parse_url`]).
pub fn open(url: &str) -> Result<Box<dyn Cluster>, ClusterError> {
    if url == "kube" || url.starts_with("kube?") || url.starts_with("kube:") {
        #[cfg(feature = "kube")]
        {
            let opts = kube::parse_url(url).ok_or_else(|| {
                ClusterError::Setup(format!(
                    "invalid cluster {url:?}: want kube or kube?kubeconfig=PATH&context=NAME"
                ))
            })?;
            return Ok(Box::new(kube::KubeCluster::connect(&opts)?));
        }
        #[cfg(not(feature = "kube"))]
        {
            return Err(ClusterError::Setup(format!(
                "cluster {url:?}: this rudder was built without the kube feature"
            )));
        }
    }
    if let Some(dir) = url.strip_prefix("sim:") {
        if dir.is_empty() {
            return Err(ClusterError::Setup(format!(
                "invalid cluster {url:?}: want sim:DIR or kube"
            )));
        }
        return Ok(Box::new(sim::SimCluster::open(dir)?));
    }
    Err(ClusterError::Setup(format!(
        "invalid cluster {url:?}: want sim:DIR or kube"
    )))
}

/// A shared cluster is a cluster: lets one connection serve both the
/// release store and the planner or executor. Every method is forwarded,
/// the provided ones too (a forgotten one would silently fall back to its
/// default).
impl<C: Cluster + ?Sized> Cluster for std::sync::Arc<C> {
    fn identity(&self) -> Result<ClusterIdentity, ClusterError> {
        (**self).identity()
    }
    fn api_resources(&self) -> Result<Vec<ApiResource>, ClusterError> {
        (**self).api_resources()
    }
    fn scope(&self, group: &str, kind: &str) -> Result<Option<Scope>, ClusterError> {
        (**self).scope(group, kind)
    }
    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError> {
        (**self).get(key)
    }
    fn list(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &[(String, String)],
    ) -> Result<Vec<Value>, ClusterError> {
        (**self).list(group, kind, namespace, labels)
    }
    fn create(&self, obj: &Value) -> Result<Value, ClusterError> {
        (**self).create(obj)
    }
    fn replace(&self, obj: &Value) -> Result<Value, ClusterError> {
        (**self).replace(obj)
    }
    fn apply(&self, obj: &Value, opts: &ApplyOptions) -> Result<Value, ClusterError> {
        (**self).apply(obj, opts)
    }
    fn get_many(&self, keys: &[ObjectKey]) -> Result<Vec<Option<Value>>, ClusterError> {
        (**self).get_many(keys)
    }
    fn get_many_shared(
        &self,
        keys: &[ObjectKey],
    ) -> Result<Vec<Option<std::sync::Arc<Value>>>, ClusterError> {
        (**self).get_many_shared(keys)
    }
    fn dry_run(&self, obj: &Value) -> Result<Value, ClusterError> {
        (**self).dry_run(obj)
    }
    fn upgrade_managed_fields(
        &self,
        live: &Value,
        from: &[&str],
        to: &str,
    ) -> Result<bool, ClusterError> {
        (**self).upgrade_managed_fields(live, from, to)
    }
    fn list_batch_min(&self) -> Option<usize> {
        (**self).list_batch_min()
    }
    fn request_counts(&self) -> Option<RequestCounts> {
        (**self).request_counts()
    }
    fn request_parallelism(&self) -> usize {
        (**self).request_parallelism()
    }
    fn flush(&self) -> Result<(), ClusterError> {
        (**self).flush()
    }
    fn location(&self) -> Option<String> {
        (**self).location()
    }
    fn watch_change(
        &self,
        key: &ObjectKey,
        resource_version: &str,
        max: std::time::Duration,
    ) -> Result<Watched, ClusterError> {
        (**self).watch_change(key, resource_version, max)
    }
    fn delete(
        &self,
        key: &ObjectKey,
        resource_version: Option<&str>,
    ) -> Result<Option<Value>, ClusterError> {
        (**self).delete(key, resource_version)
    }
    fn list_at(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Vec<Value>, String), ClusterError> {
        (**self).list_at(group, kind, namespace)
    }
    fn watch_any(
        &self,
        targets: &[WatchTarget],
        max: std::time::Duration,
    ) -> Result<Watched, ClusterError> {
        (**self).watch_any(targets, max)
    }
    fn pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        tail_lines: u32,
        previous: bool,
    ) -> Result<Option<String>, ClusterError> {
        (**self).pod_log(namespace, pod, container, tail_lines, previous)
    }
}
