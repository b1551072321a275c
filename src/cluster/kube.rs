//! A real Kubernetes API server through kube-rs (`--cluster kube`,
//! `--kubeconfig`, `--kube-context`).
//!
//! [`KubeCluster`] implements the blocking [`Cluster`] trait over kube-rs'
//! async client. Its requests run as tasks on a tokio runtime, and a call
//! waits for its task's answer on a plain channel:
//!
//! - [`KubeCluster::connect`] (the CLI, [`crate::cluster::open`]) starts a
//!   private runtime on a thread of its own; the client can then be
//!   created, used and dropped from any thread, inside an async runtime
//!   (on `spawn_blocking` threads or even on a runtime's worker) or not,
//!   and dropping it never blocks: it only tells that thread to stop;
//! - [`KubeCluster::connect_on`] and [`KubeCluster::from_client`] run the
//!   requests on a runtime the caller names (its own, for the async
//!   [`crate::Client`]), and the latter uses the caller's own
//!   `kube::Client`. Calls must then come from threads that may block
//!   (`spawn_blocking`, plain threads), never from that runtime's own
//!   workers: on a current-thread runtime that would wait forever for a
//!   task that can never run.
//!
//! Objects travel as JSON, exactly as the server sends them; requests are
//! plain REST calls built from discovery:
//!
//! - discovery (`/api`, `/apis`, aggregated discovery when the server has
//!   it) is read once, cached, and read again when a kind is not found;
//! - `get`/`list` are GETs (`labelSelector=k=v,...`, paged);
//! - `create` is a POST, `replace` a PUT that carries the object's
//!   `resourceVersion` (so a stale copy is a 409 [`ClusterError::Conflict`]);
//! - `apply` is server-side apply: `PATCH` with
//!   `application/apply-patch+yaml`, `fieldManager`, `fieldValidation=Strict`,
//!   `force=true` only when asked and `dryRun=All` for dry runs;
//! - `delete` sends `propagationPolicy: Background` (and a
//!   `resourceVersion` precondition when given);
//! - `watch_change` is a watch on one object (`fieldSelector=metadata.name`)
//!   from the resourceVersion a wait last saw, with bookmarks: waits wake
//!   up on the object's next event instead of polling. A 410 Gone, a
//!   refused watch or a broken connection makes that round a poll.
//!
//! Connection errors, 429 and 5xx answers to reads are retried three times
//! with a short backoff; writes are retried only when the request cannot
//! have reached the server (connection refused) or on 429. Every error is
//! one line naming the server and context.
//!
//! The kubeconfig is found as kubectl finds it: `--kubeconfig` (one file),
//! else the files listed in `KUBECONFIG` (merged, first wins), else
//! `~/.kube/config`; the context is `--kube-context` or the current one.
use super::{
    ApiResource, ApplyOptions, Cluster, ClusterError, ClusterIdentity, ObjectKey, RequestCounts,
    RequestVerb, Watched,
};
use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// The field manager of `create` and `replace` unless one is set.
pub const DEFAULT_FIELD_MANAGER: &str = "rudder";
/// How many times a request is tried before its error is returned.
const TRIES: u32 = 3;
/// From how many objects of one kind in one namespace a batch of reads
/// lists them (see [`Cluster::list_batch_min`]): two GETs cost about what
/// one LIST of a small namespace does.
const LIST_BATCH_MIN: usize = 3;
/// Items per page when listing.
const PAGE: usize = 500;
/// Upper bound on pages of one list (500 × 1000 objects), so a server that
/// keeps sending continue tokens cannot keep rudder looping.
const MAX_PAGES: usize = 1000;

/// Where the connection settings come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeOptions {
    /// `--kubeconfig`: one kubeconfig file, which wins over `KUBECONFIG`.
    pub kubeconfig: Option<String>,
    /// `--kube-context`: the context to use instead of the current one.
    pub context: Option<String>,
}

/// A Kubernetes API server. See the module documentation.
pub struct KubeCluster {
    driver: Driver,
    client: kube::Client,
    /// The API server URL.
    server: String,
    /// The kubeconfig context in use.
    context: String,
    update_manager: String,
    discovery: Mutex<Option<Vec<ApiResource>>>,
    identity: Mutex<Option<ClusterIdentity>>,
    /// Requests sent, by verb.
    requests: super::RequestCounter,
}

impl std::fmt::Debug for KubeCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeCluster")
            .field("server", &self.server)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

/// The kubeconfig files in kubectl's order of precedence.
fn kubeconfig_paths(opts: &KubeOptions) -> Result<Vec<PathBuf>, String> {
    if let Some(p) = opts.kubeconfig.as_deref().filter(|p| !p.is_empty()) {
        return Ok(vec![PathBuf::from(p)]);
    }
    if let Some(v) = std::env::var_os("KUBECONFIG") {
        let paths: Vec<PathBuf> = std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if !paths.is_empty() {
            return Ok(paths);
        }
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(vec![PathBuf::from(h).join(".kube").join("config")]),
        None => Err("no kubeconfig: set --kubeconfig or KUBECONFIG (HOME is not set)".into()),
    }
}

fn load_kubeconfig(paths: &[PathBuf]) -> Result<Kubeconfig, String> {
    let mut merged: Option<Kubeconfig> = None;
    for p in paths {
        let text = std::fs::read_to_string(p)
            .map_err(|e| format!("reading kubeconfig {}: {e}", p.display()))?;
        let cfg = Kubeconfig::from_yaml(&text)
            .map_err(|e| format!("reading kubeconfig {}: {e}", p.display()))?;
        merged = Some(match merged {
            None => cfg,
            Some(m) => m
                .merge(cfg)
                .map_err(|e| format!("merging kubeconfig {}: {e}", p.display()))?,
        });
    }
    merged.ok_or_else(|| "no kubeconfig file".to_string())
}

/// Percent-encodes a query or path component.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

/// An answer from the server.
struct Resp {
    code: u16,
    body: Vec<u8>,
}

impl Resp {
    fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }
    fn json(&self) -> Result<Value, String> {
        crate::yaml::json_from_slice(&self.body)
            .map_err(|e| format!("invalid JSON from the server: {e}"))
    }
    /// The `Status` object of an error answer, if it is one.
    fn status(&self) -> Value {
        crate::yaml::json_from_slice(&self.body).unwrap_or(Value::Null)
    }
    fn message(&self) -> String {
        let st = self.status();
        match str_at(&st, &["message"]) {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => {
                let t = String::from_utf8_lossy(&self.body);
                let t = t.trim();
                if t.is_empty() {
                    http::StatusCode::from_u16(self.code)
                        .ok()
                        .and_then(|c| c.canonical_reason())
                        .unwrap_or("error")
                        .to_string()
                } else {
                    t.lines().next().unwrap_or("").chars().take(300).collect()
                }
            }
        }
    }
    fn reason(&self) -> String {
        str_at(&self.status(), &["reason"])
            .unwrap_or("")
            .to_string()
    }
}

/// Which write a request is, for error mapping and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Get,
    List,
    Create,
    Update,
    Patch,
    Delete,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
    fn method(self) -> http::Method {
        match self {
            Verb::Get | Verb::List => http::Method::GET,
            Verb::Create => http::Method::POST,
            Verb::Update => http::Method::PUT,
            Verb::Patch => http::Method::PATCH,
            Verb::Delete => http::Method::DELETE,
        }
    }
    fn idempotent(self) -> bool {
        matches!(self, Verb::Get | Verb::List)
    }
}

/// Whether an error from sending means the request never left this host.
fn not_sent(e: &kube::Error) -> bool {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    let s = s.to_ascii_lowercase();
    s.contains("connection refused") || s.contains("dns error") || s.contains("no route to host")
}

/// The whole error chain on one line.
fn chain(e: &dyn std::error::Error) -> String {
    crate::error_chain(e).replace('\n', " ")
}

/// Parses `conflict with "manager" using v1` into the manager's name.
fn manager_of(message: &str) -> String {
    message
        .split('"')
        .nth(1)
        .map(str::to_string)
        .unwrap_or_else(|| message.to_string())
}

fn resource_from_discovery(group: &str, version: &str, r: &Value) -> Option<ApiResource> {
    let plural = r.get("name").or_else(|| r.get("resource"))?.as_str()?;
    if plural.contains('/') {
        return None; // a subresource
    }
    let kind = r
        .get("kind")
        .and_then(Value::as_str)
        .or_else(|| str_at(r, &["responseKind", "kind"]))?;
    let namespaced = match r.get("namespaced") {
        Some(v) => v.as_bool().unwrap_or(false),
        None => r.get("scope").and_then(Value::as_str) == Some("Namespaced"),
    };
    let singular = r
        .get("singularName")
        .or_else(|| r.get("singularResource"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let short_names = r
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Some(ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        plural: plural.to_string(),
        singular,
        short_names,
        namespaced,
    })
}

/// Kinds every server has, resolved without discovery (the release drivers
/// only touch these).
fn core_kind(group: &str, kind: &str) -> Option<ApiResource> {
    if !group.is_empty() {
        return None;
    }
    let (plural, namespaced) = match kind {
        "Secret" => ("secrets", true),
        "ConfigMap" => ("configmaps", true),
        "Namespace" => ("namespaces", false),
        _ => return None,
    };
    Some(ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        short_names: Vec::new(),
        namespaced,
    })
}

/// The kubeconfig, the options that pick its context, and the files it
/// came from (for messages), checked as kubectl checks them.
fn prepare(opts: &KubeOptions) -> Result<(Kubeconfig, KubeConfigOptions, String), ClusterError> {
    let paths = kubeconfig_paths(opts).map_err(ClusterError::Setup)?;
    let kc = load_kubeconfig(&paths).map_err(ClusterError::Setup)?;
    let files = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let context = match &opts.context {
        Some(c) => c.clone(),
        None => kc.current_context.clone().unwrap_or_default(),
    };
    if context.is_empty() {
        return Err(ClusterError::Setup(format!(
            "kubeconfig {files} has no current context: pass --kube-context"
        )));
    }
    if !kc.contexts.iter().any(|c| c.name == context) {
        return Err(ClusterError::Setup(format!(
            "context {context:?} not found in kubeconfig {files}"
        )));
    }
    let kopts = KubeConfigOptions {
        context: Some(context),
        ..KubeConfigOptions::default()
    };
    Ok((kc, kopts, files))
}

/// The client configuration of a checked kubeconfig, and the server URL.
async fn config_for(
    kc: Kubeconfig,
    kopts: KubeConfigOptions,
    files: String,
) -> Result<(kube::Config, String), ClusterError> {
    let context = kopts.context.clone().unwrap_or_default();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kopts)
        .await
        .map_err(|e| {
            ClusterError::Setup(format!(
                "kubeconfig {files}, context {context}: {}",
                chain(&e)
            ))
        })?;
    let server = cfg
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    Ok((cfg, server))
}

/// Where a [`KubeCluster`]'s requests run: a tokio runtime, reached through
/// its handle, and the private runtime's thread when the cluster owns one.
struct Driver {
    handle: tokio::runtime::Handle,
    /// Dropping this ends the private runtime's thread.
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Driver {
    /// A current-thread runtime on a thread of its own, which runs until
    /// the driver is dropped. Dropping never blocks: the thread is told to
    /// stop and drops its runtime itself, outside any caller's runtime.
    fn private() -> Result<Driver, ClusterError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Setup(format!("starting the Kubernetes client: {e}")))?;
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("rudder-kube".into())
            .spawn(move || {
                // Ends when the sender is dropped (or sends).
                let _ = rt.block_on(stopped);
            })
            .map_err(|e| ClusterError::Setup(format!("starting the Kubernetes client: {e}")))?;
        Ok(Driver {
            handle,
            _stop: Some(stop),
        })
    }

    /// Requests run on the caller's runtime.
    fn on(handle: tokio::runtime::Handle) -> Driver {
        Driver {
            handle,
            _stop: None,
        }
    }

    /// Runs `fut` as a task on the driver's runtime and waits for its
    /// answer on a plain channel (never `block_on`, which panics inside a
    /// runtime).
    fn run<F>(&self, fut: F) -> Result<F::Output, ClusterError>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| {
            ClusterError::Setup(
                "the tokio runtime the Kubernetes client runs on has shut down".into(),
            )
        })
    }
}

impl KubeCluster {
    /// Connects as kubectl would with these flags. Nothing is sent to the
    /// server yet; the first request tells whether it can be reached.
    ///
    /// The client runs on a private runtime thread, so this works from any
    /// thread, inside an async runtime or not (see the module docs).
    pub fn connect(opts: &KubeOptions) -> Result<KubeCluster, ClusterError> {
        let (kc, kopts, files) = prepare(opts)?;
        let context = kopts.context.clone().unwrap_or_default();
        let driver = Driver::private()?;
        let (cfg, server) = driver.run(config_for(kc, kopts, files))??;
        // The client's request buffer is a task: spawn it on the private
        // runtime, where its requests will run.
        let client = driver.run(async move { kube::Client::try_from(cfg) })?;
        let client = client.map_err(|e| {
            ClusterError::Setup(format!("Kubernetes cluster {server}: {}", chain(&e)))
        })?;
        Ok(KubeCluster::assemble(driver, client, server, context))
    }

    /// Connects as [`KubeCluster::connect`] does, on the runtime `handle`
    /// (the caller's): the client's tasks run there. Blocking calls must
    /// then come from threads that may block, not from that runtime's
    /// workers (see the module docs).
    pub async fn connect_on(
        opts: &KubeOptions,
        handle: tokio::runtime::Handle,
    ) -> Result<KubeCluster, ClusterError> {
        let (kc, kopts, files) = prepare(opts)?;
        let context = kopts.context.clone().unwrap_or_default();
        let (cfg, server) = config_for(kc, kopts, files).await?;
        let client = {
            let _g = handle.enter();
            kube::Client::try_from(cfg).map_err(|e| {
                ClusterError::Setup(format!("Kubernetes cluster {server}: {}", chain(&e)))
            })?
        };
        Ok(KubeCluster::assemble(
            Driver::on(handle),
            client,
            server,
            context,
        ))
    }

    /// A cluster over the caller's own `kube::Client`, whose requests run
    /// on `handle` (the runtime the client was made on, usually
    /// `tokio::runtime::Handle::current()`). The API server's URL is not
    /// known to rudder then: messages name the client instead, and the
    /// cluster's [`ClusterIdentity`] is derived from the `kube-system`
    /// namespace's uid alone.
    pub fn from_client(client: kube::Client, handle: tokio::runtime::Handle) -> KubeCluster {
        KubeCluster::assemble(
            Driver::on(handle),
            client,
            "the caller's kube::Client".into(),
            String::new(),
        )
    }

    fn assemble(driver: Driver, client: kube::Client, server: String, context: String) -> Self {
        KubeCluster {
            driver,
            client,
            server,
            context,
            update_manager: DEFAULT_FIELD_MANAGER.into(),
            discovery: Mutex::new(None),
            identity: Mutex::new(None),
            requests: super::RequestCounter::default(),
        }
    }

    /// Sets the field manager of `create` and `replace` (`rudder` unless set).
    pub fn with_update_manager(mut self, manager: &str) -> KubeCluster {
        self.update_manager = manager.to_string();
        self
    }

    /// The API server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The kubeconfig context in use.
    pub fn context(&self) -> &str {
        &self.context
    }

    fn where_(&self) -> String {
        if self.context.is_empty() {
            self.server.clone()
        } else {
            format!("{} (context {})", self.server, self.context)
        }
    }

    fn unavailable(&self, what: &str, e: &dyn std::error::Error) -> ClusterError {
        ClusterError::Unreachable {
            server: self.where_(),
            message: format!(
                "cannot reach the Kubernetes API server {} to {what}: {}",
                self.where_(),
                chain(e)
            ),
        }
    }

    /// An answer that could not be read.
    fn unreadable(&self, what: &str, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::Unreachable {
            server: self.where_(),
            message: format!("{}: {what}: {e}", self.where_()),
        }
    }

    /// One HTTP exchange, with bounded retries.
    fn send(
        &self,
        verb: Verb,
        path: &str,
        content_type: Option<&str>,
        accept: Option<&str>,
        body: Option<Vec<u8>>,
        what: &str,
    ) -> Result<Resp, ClusterError> {
        let mut last_err = None;
        for attempt in 0..TRIES {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(200 << (attempt - 1)));
            }
            self.requests.count(match verb {
                Verb::Get => RequestVerb::Get,
                Verb::List => RequestVerb::List,
                Verb::Create => RequestVerb::Create,
                Verb::Update => RequestVerb::Update,
                Verb::Patch if path.contains("dryRun=All") => RequestVerb::DryRun,
                Verb::Patch => RequestVerb::Patch,
                Verb::Delete => RequestVerb::Delete,
            });
            let mut b = http::Request::builder().method(verb.method()).uri(path);
            if let Some(ct) = content_type {
                b = b.header(http::header::CONTENT_TYPE, ct);
            }
            b = b.header(http::header::ACCEPT, accept.unwrap_or("application/json"));
            let req = b
                .body(body.clone().unwrap_or_default())
                .map_err(|e| ClusterError::BadObject(format!("{path}: {e}")))?;
            let client = self.client.clone();
            let res = self.driver.run(async move {
                let res = client.send(req.map(kube::client::Body::from)).await?;
                let code = res.status().as_u16();
                let body = res
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| kube::Error::Service(Box::new(e)))?
                    .to_bytes()
                    .to_vec();
                Ok::<Resp, kube::Error>(Resp { code, body })
            })?;
            match res {
                Ok(r) => {
                    let retry = r.code == 429
                        || (verb.idempotent() && matches!(r.code, 500 | 502 | 503 | 504));
                    if retry && attempt + 1 < TRIES {
                        continue;
                    }
                    return Ok(r);
                }
                Err(e) => {
                    let again = verb.idempotent() || not_sent(&e);
                    let err = self.unavailable(what, &e);
                    if !again {
                        return Err(err);
                    }
                    last_err = Some(err);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| ClusterError::Unreachable {
            server: self.where_(),
            message: format!("{}: {what} failed", self.where_()),
        }))
    }

    /// Maps an error answer to a [`ClusterError`].
    fn error(&self, verb: Verb, res: &ApiResource, key: &ObjectKey, r: &Resp) -> ClusterError {
        let msg = r.message();
        let reason = r.reason();
        let st = r.status();
        let server = self.where_();
        match r.code {
            401 => ClusterError::Forbidden {
                server,
                code: 401,
                message: format!(
                    "Unauthorized: the credentials of context {} were rejected (expired or invalid) when trying to {} {}",
                    self.context,
                    verb.name(),
                    if key.name.is_empty() {
                        format!("{} in namespace {:?}", res.plural, key.namespace)
                    } else {
                        key.to_string()
                    }
                ),
            },
            403 => ClusterError::Forbidden {
                server,
                code: 403,
                message: if msg.contains("cannot") {
                    msg
                } else {
                    format!(
                        "forbidden: cannot {} resource {:?} in API group {:?}{}: {msg}",
                        verb.name(),
                        res.plural,
                        res.group,
                        if key.namespace.is_empty() {
                            String::new()
                        } else {
                            format!(" in the namespace {:?}", key.namespace)
                        }
                    )
                },
            },
            404 => {
                let kind = str_at(&st, &["details", "kind"]).unwrap_or("");
                let name = str_at(&st, &["details", "name"]).unwrap_or("");
                if kind == "namespaces" && name == key.namespace && !key.namespace.is_empty() {
                    ClusterError::NamespaceNotFound {
                        key: key.clone(),
                        namespace: key.namespace.clone(),
                    }
                } else if reason == "NotFound" || kind == res.plural || st.is_null() {
                    ClusterError::NotFound { key: key.clone() }
                } else {
                    ClusterError::Server {
                        server,
                        code: 404,
                        message: msg,
                    }
                }
            }
            409 => {
                if reason == "AlreadyExists" {
                    return ClusterError::AlreadyExists { key: key.clone() };
                }
                let causes: Vec<(String, String)> = st
                    .get("details")
                    .and_then(|d| d.get("causes"))
                    .and_then(Value::as_array)
                    .map(|cs| {
                        cs.iter()
                            .filter(|c| {
                                str_at(c, &["reason"]) == Some("FieldManagerConflict")
                            })
                            .map(|c| {
                                (
                                    str_at(c, &["field"]).unwrap_or("").to_string(),
                                    manager_of(str_at(c, &["message"]).unwrap_or("")),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if !causes.is_empty() {
                    ClusterError::FieldConflict {
                        key: key.clone(),
                        fields: causes,
                    }
                } else if verb == Verb::Create && msg.contains("already exists") {
                    ClusterError::AlreadyExists { key: key.clone() }
                } else {
                    ClusterError::Conflict { key: key.clone() }
                }
            }
            // The API server answers 500 when an applied object does not
            // fit the kind's schema (an unknown or mistyped field).
            500 if verb == Verb::Patch && msg.contains("failed to create typed patch object") => {
                ClusterError::Invalid {
                    key: key.clone(),
                    message: msg,
                }
            }
            400 | 422 => ClusterError::Invalid {
                key: key.clone(),
                message: msg,
            },
            code => ClusterError::Server {
                server,
                code,
                message: format!("{} {key}: {msg}", verb.name()),
            },
        }
    }

    /// Discovery, from the cache or the server.
    fn discover(&self, refresh: bool) -> Result<Vec<ApiResource>, ClusterError> {
        let mut slot = self.discovery.lock().unwrap_or_else(|e| e.into_inner());
        if !refresh {
            if let Some(d) = slot.as_ref() {
                return Ok(d.clone());
            }
        }
        let d = self.fetch_discovery()?;
        *slot = Some(d.clone());
        Ok(d)
    }

    fn get_json(
        &self,
        path: &str,
        accept: Option<&str>,
        what: &str,
    ) -> Result<Value, ClusterError> {
        let r = self.send(Verb::Get, path, None, accept, None, what)?;
        if !r.ok() {
            return Err(self.plain_error(&r, what));
        }
        r.json().map_err(|e| self.unreadable(what, e))
    }

    /// An error answer to a request that is not about one object.
    fn plain_error(&self, r: &Resp, what: &str) -> ClusterError {
        let message = if r.code == 401 {
            format!(
                "Unauthorized: the credentials of context {} were rejected (expired or invalid) when trying to {what}",
                self.context
            )
        } else {
            format!("{what}: {}", r.message())
        };
        if matches!(r.code, 401 | 403) {
            return ClusterError::Forbidden {
                server: self.where_(),
                code: r.code,
                message,
            };
        }
        ClusterError::Server {
            server: self.where_(),
            code: r.code,
            message,
        }
    }

    fn fetch_discovery(&self) -> Result<Vec<ApiResource>, ClusterError> {
        const AGG: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        let mut out = Vec::new();
        for root in ["/api", "/apis"] {
            let v = self.get_json(root, Some(AGG), "discover the API")?;
            if v.get("kind").and_then(Value::as_str) == Some("APIGroupDiscoveryList") {
                for g in v
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let group = str_at(g, &["metadata", "name"]).unwrap_or("");
                    // The first version listed is the preferred one; a kind
                    // that only another version serves (a CRD's new version,
                    // or a group whose kinds have versions of their own) is
                    // taken from the first version that has it.
                    let mut seen = std::collections::HashSet::new();
                    for ver in g
                        .get("versions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let version = str_at(ver, &["version"]).unwrap_or("");
                        for r in ver
                            .get("resources")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            if let Some(res) = resource_from_discovery(group, version, r) {
                                if seen.insert(res.kind.clone()) {
                                    out.push(res);
                                }
                            }
                        }
                    }
                }
                continue;
            }
            // Legacy discovery: one more request per group.
            // Per group, the preferred version first, then the others (a
            // kind only they serve is taken from the first that has it).
            let versions: Vec<(String, Vec<String>)> = if root == "/api" {
                v.get("versions")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                    .map(|ver| vec![(String::new(), vec![ver.to_string()])])
                    .unwrap_or_default()
            } else {
                v.get("groups")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|g| {
                        let preferred = str_at(g, &["preferredVersion", "version"])?.to_string();
                        let mut all = vec![preferred.clone()];
                        all.extend(
                            g.get("versions")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .filter_map(|x| str_at(x, &["version"]))
                                .filter(|x| *x != preferred)
                                .map(str::to_string),
                        );
                        Some((str_at(g, &["name"])?.to_string(), all))
                    })
                    .collect()
            };
            for (group, group_versions) in versions {
                let mut seen = std::collections::HashSet::new();
                for version in group_versions {
                    let path = if group.is_empty() {
                        format!("/api/{version}")
                    } else {
                        format!("/apis/{group}/{version}")
                    };
                    let rl = self.get_json(&path, None, "discover the API")?;
                    for r in rl
                        .get("resources")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(res) = resource_from_discovery(&group, &version, r) {
                            if seen.insert(res.kind.clone()) {
                                out.push(res);
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// The resource of a kind, from discovery (refreshed once on a miss).
    fn resource(
        &self,
        group: &str,
        kind: &str,
        api_version: &str,
    ) -> Result<ApiResource, ClusterError> {
        if let Some(r) = core_kind(group, kind) {
            return Ok(r);
        }
        for refresh in [false, true] {
            if let Some(r) = self
                .discover(refresh)?
                .into_iter()
                .find(|r| r.group == group && r.kind == kind)
            {
                return Ok(r);
            }
        }
        Err(ClusterError::UnknownKind {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        })
    }

    /// [`Cluster::list`], with the collection's resourceVersion (of its
    /// first page).
    fn list_versioned(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &[(String, String)],
    ) -> Result<(Vec<Value>, String), ClusterError> {
        let res = match self.resource(group, kind, group) {
            Ok(r) => r,
            Err(ClusterError::UnknownKind { .. }) => return Ok((Vec::new(), String::new())),
            Err(e) => return Err(e),
        };
        let base = Self::collection_path(&res, &res.version, namespace);
        let selector = labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let key = ObjectKey::new(group, kind, namespace.unwrap_or(""), "");
        let mut out = Vec::new();
        let mut version = String::new();
        let mut cont = String::new();
        for _ in 0..MAX_PAGES {
            let mut q = format!("limit={PAGE}");
            if !selector.is_empty() {
                q.push_str(&format!("&labelSelector={}", enc(&selector)));
            }
            if !cont.is_empty() {
                q.push_str(&format!("&continue={}", enc(&cont)));
            }
            let what = format!("list {}", res.plural);
            let r = self.send(Verb::List, &format!("{base}?{q}"), None, None, None, &what)?;
            if !r.ok() {
                if r.code == 404 && namespace.is_some() {
                    // Listing in a namespace that does not exist finds nothing.
                    if let ClusterError::NamespaceNotFound { .. } | ClusterError::NotFound { .. } =
                        self.error(Verb::List, &res, &key, &r)
                    {
                        return Ok((out, version));
                    }
                }
                return Err(self.error(Verb::List, &res, &key, &r));
            }
            let v = r.json().map_err(|e| self.unreadable(&what, e))?;
            if version.is_empty() {
                version = str_at(&v, &["metadata", "resourceVersion"])
                    .unwrap_or("")
                    .to_string();
            }
            let av = res.api_version();
            for mut item in v
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                if let Some(m) = item.as_object_mut() {
                    m.entry("apiVersion").or_insert_with(|| json!(av));
                    m.entry("kind").or_insert_with(|| json!(kind));
                }
                out.push(item);
            }
            cont = str_at(&v, &["metadata", "continue"])
                .unwrap_or("")
                .to_string();
            if cont.is_empty() {
                return Ok((out, version));
            }
        }
        Err(ClusterError::Server {
            server: self.where_(),
            code: 0,
            message: format!(
                "list {}: more than {} pages; giving up",
                res.plural, MAX_PAGES
            ),
        })
    }

    fn collection_path(res: &ApiResource, version: &str, namespace: Option<&str>) -> String {
        let base = if res.group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{}/{version}", res.group)
        };
        match namespace.filter(|_| res.namespaced) {
            Some(ns) => format!("{base}/namespaces/{}/{}", enc(ns), res.plural),
            None => format!("{base}/{}", res.plural),
        }
    }

    fn object_path(res: &ApiResource, version: &str, key: &ObjectKey) -> String {
        format!(
            "{}/{}",
            Self::collection_path(res, version, Some(&key.namespace)),
            enc(&key.name)
        )
    }

    /// Key, resource and version of an object about to be written.
    fn target(&self, obj: &Value) -> Result<(ObjectKey, ApiResource, String), ClusterError> {
        if !obj.is_object() {
            return Err(ClusterError::BadObject(
                obj.to_string().chars().take(200).collect(),
            ));
        }
        let key = ObjectKey::of(obj).ok_or_else(|| {
            ClusterError::BadObject(format!(
                "no apiVersion, kind or metadata.name in {}",
                obj.to_string().chars().take(200).collect::<String>()
            ))
        })?;
        let av = str_at(obj, &["apiVersion"]).unwrap_or("");
        let version = av.rsplit_once('/').map_or(av, |(_, v)| v).to_string();
        let res = self.resource(&key.group, &key.kind, av)?;
        let mut key = key;
        if !res.namespaced {
            key.namespace.clear();
        } else if key.namespace.is_empty() {
            return Err(ClusterError::Invalid {
                key,
                message: "the namespace of the object is empty".into(),
            });
        }
        Ok((key, res, version))
    }

    fn write(
        &self,
        verb: Verb,
        obj: &Value,
        query: &str,
        content_type: &str,
    ) -> Result<Value, ClusterError> {
        let (key, res, version) = self.target(obj)?;
        let mut body = obj.clone();
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
            if !res.namespaced {
                m.remove("namespace");
            }
        }
        let path = match verb {
            Verb::Create => Self::collection_path(&res, &version, Some(&key.namespace)),
            _ => Self::object_path(&res, &version, &key),
        };
        let path = format!("{path}?{query}");
        let data = serde_json::to_vec(&body).map_err(|e| ClusterError::BadObject(e.to_string()))?;
        let what = format!("{} {key}", verb.name());
        let r = self.send(verb, &path, Some(content_type), None, Some(data), &what)?;
        if !r.ok() {
            let e = self.error(verb, &res, &key, &r);
            // A server-side apply creates a missing object: its 404 says
            // the version is not served (a CRD's new version the server
            // has not picked up yet, or none at all).
            if content_type == "application/apply-patch+yaml"
                && matches!(e, ClusterError::NotFound { .. })
            {
                return Err(ClusterError::UnknownKind {
                    api_version: str_at(obj, &["apiVersion"]).unwrap_or("").to_string(),
                    kind: key.kind.clone(),
                });
            }
            return Err(e);
        }
        r.json().map_err(|e| self.unreadable(&what, e))
    }
}

/// One watch request until its first event: `Err(Changed|Expired|Quiet)`,
/// or `Ok(code)` when the server refused it.
async fn watch_one(
    client: kube::Client,
    req: http::Request<Vec<u8>>,
) -> Result<Result<u16, Watched>, kube::Error> {
    let res = client.send(req.map(kube::client::Body::from)).await?;
    let code = res.status().as_u16();
    if code == 410 {
        return Ok(Err(Watched::Expired));
    }
    if !(200..300).contains(&code) {
        return Ok(Ok(code));
    }
    let mut body = res.into_body();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| kube::Error::Service(Box::new(e)))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let Ok(ev) = crate::yaml::json_from_slice::<Value>(&line) else {
                continue;
            };
            match ev["type"].as_str() {
                Some("BOOKMARK") => {}
                Some("ERROR") if ev["object"]["code"] == 410 => {
                    return Ok(Err(Watched::Expired));
                }
                Some(_) => return Ok(Err(Watched::Changed)),
                None => {}
            }
        }
    }
    Ok(Err(Watched::Quiet))
}

impl Cluster for KubeCluster {
    fn location(&self) -> Option<String> {
        Some(self.where_())
    }

    /// Three or more objects of a kind in a namespace are listed: one
    /// request (a page per 500 objects) instead of one each.
    fn list_batch_min(&self) -> Option<usize> {
        Some(LIST_BATCH_MIN)
    }

    /// As many as the executor's default concurrency of releases: the
    /// client keeps a connection per request in flight.
    fn request_parallelism(&self) -> usize {
        8
    }

    fn request_counts(&self) -> Option<RequestCounts> {
        Some(self.requests.counts())
    }

    /// A watch on the one object (`fieldSelector=metadata.name=..`) from
    /// `resource_version`, with bookmarks, for at most `max`.
    fn watch_change(
        &self,
        key: &ObjectKey,
        resource_version: &str,
        max: Duration,
    ) -> Result<Watched, ClusterError> {
        let res = match self.resource(&key.group, &key.kind, &key.group) {
            Err(ClusterError::UnknownKind { .. }) => return Ok(Watched::Unsupported),
            r => r?,
        };
        // The server ends the watch a little after the client stops waiting.
        let secs = max.as_secs() + 2;
        let mut path = format!(
            "{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={secs}&fieldSelector={}",
            Self::collection_path(&res, &res.version, Some(&key.namespace)),
            enc(&format!("metadata.name={}", key.name))
        );
        if !resource_version.is_empty() {
            path.push_str(&format!("&resourceVersion={}", enc(resource_version)));
        }
        let req = http::Request::builder()
            .method(http::Method::GET)
            .uri(&path)
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|e| ClusterError::BadObject(format!("{path}: {e}")))?;
        let client = self.client.clone();
        let what = format!("watch {key}");
        self.requests.count(RequestVerb::Watch);
        let outcome = self.driver.run(async move {
            let run = watch_one(client, req);
            match tokio::time::timeout(max, run).await {
                Ok(r) => r,
                Err(_) => Ok(Err(Watched::Quiet)),
            }
        })?;
        match outcome {
            Ok(Err(w)) => Ok(w),
            // Not allowed to watch, or an old server: poll instead.
            Ok(Ok(_code)) => Ok(Watched::Unsupported),
            Err(e) => Err(self.unavailable(&what, &e)),
        }
    }

    fn identity(&self) -> Result<ClusterIdentity, ClusterError> {
        let mut slot = self.identity.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = slot.as_ref() {
            return Ok(id.clone());
        }
        let ver = self.get_json("/version", None, "read the server version")?;
        let ks = self.get_json(
            "/api/v1/namespaces/kube-system",
            None,
            "read namespace kube-system",
        )?;
        let uid = str_at(&ks, &["metadata", "uid"]).unwrap_or("");
        let mut h = Sha256::new();
        h.update(self.server.as_bytes());
        h.update([0u8]);
        h.update(uid.as_bytes());
        let id: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let out = ClusterIdentity {
            kind: "kube".into(),
            id,
            server_version: str_at(&ver, &["gitVersion"]).unwrap_or("").to_string(),
        };
        *slot = Some(out.clone());
        Ok(out)
    }

    fn api_resources(&self) -> Result<Vec<ApiResource>, ClusterError> {
        self.discover(false)
    }

    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError> {
        let res = match self.resource(&key.group, &key.kind, &key.group) {
            Err(ClusterError::UnknownKind { .. }) => return Ok(None),
            r => r?,
        };
        let mut key = key.clone();
        if !res.namespaced {
            key.namespace.clear();
        }
        let path = Self::object_path(&res, &res.version, &key);
        let r = self.send(Verb::Get, &path, None, None, None, &format!("get {key}"))?;
        if r.code == 404 {
            return match self.error(Verb::Get, &res, &key, &r) {
                ClusterError::NotFound { .. } | ClusterError::NamespaceNotFound { .. } => Ok(None),
                e => Err(e),
            };
        }
        if !r.ok() {
            return Err(self.error(Verb::Get, &res, &key, &r));
        }
        r.json()
            .map(Some)
            .map_err(|e| self.unreadable(&format!("get {key}"), e))
    }

    fn list(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &[(String, String)],
    ) -> Result<Vec<Value>, ClusterError> {
        self.list_versioned(group, kind, namespace, labels)
            .map(|(v, _)| v)
    }

    fn list_at(
        &self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Vec<Value>, String), ClusterError> {
        self.list_versioned(group, kind, namespace, &[])
    }

    fn watch_any(
        &self,
        targets: &[super::WatchTarget],
        max: Duration,
    ) -> Result<Watched, ClusterError> {
        let mut reqs = Vec::new();
        for t in targets {
            let key = &t.key;
            let res = match self.resource(&key.group, &key.kind, &key.group) {
                Err(ClusterError::UnknownKind { .. }) => continue,
                r => r?,
            };
            let secs = max.as_secs() + 2;
            let mut path = format!(
                "{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={secs}",
                Self::collection_path(&res, &res.version, Some(&key.namespace)),
            );
            if !key.name.is_empty() {
                path.push_str(&format!(
                    "&fieldSelector={}",
                    enc(&format!("metadata.name={}", key.name))
                ));
            }
            if !t.resource_version.is_empty() {
                path.push_str(&format!("&resourceVersion={}", enc(&t.resource_version)));
            }
            let req = http::Request::builder()
                .method(http::Method::GET)
                .uri(&path)
                .header(http::header::ACCEPT, "application/json")
                .body(Vec::new())
                .map_err(|e| ClusterError::BadObject(format!("{path}: {e}")))?;
            reqs.push(req);
        }
        if reqs.is_empty() {
            return Ok(Watched::Unsupported);
        }
        let client = self.client.clone();
        let what = format!(
            "watch {}",
            targets
                .iter()
                .map(|t| t.key.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for _ in &reqs {
            self.requests.count(RequestVerb::Watch);
        }
        let outcome = self.driver.run(async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel(reqs.len());
            let mut tasks = Vec::new();
            for req in reqs {
                let client = client.clone();
                let tx = tx.clone();
                tasks.push(tokio::spawn(async move {
                    let r = watch_one(client, req).await;
                    let _ = tx.send(r).await;
                }));
            }
            drop(tx);
            let first = tokio::time::timeout(max, async {
                let mut quiet = None;
                while let Some(r) = rx.recv().await {
                    match r {
                        // A watch the server refused: the others go on.
                        Ok(Ok(_code)) => quiet = Some(Ok(Ok(0))),
                        Ok(Err(Watched::Quiet)) => {}
                        other => return other,
                    }
                }
                quiet.unwrap_or(Ok(Err(Watched::Quiet)))
            })
            .await;
            for t in tasks {
                t.abort();
            }
            match first {
                Ok(r) => r,
                Err(_) => Ok(Err(Watched::Quiet)),
            }
        })?;
        match outcome {
            Ok(Err(w)) => Ok(w),
            Ok(Ok(_code)) => Ok(Watched::Unsupported),
            Err(e) => Err(self.unavailable(&what, &e)),
        }
    }

    fn pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        tail_lines: u32,
        previous: bool,
    ) -> Result<Option<String>, ClusterError> {
        let mut path = format!(
            "/api/v1/namespaces/{}/pods/{}/log?container={}&tailLines={tail_lines}",
            enc(namespace),
            enc(pod),
            enc(container)
        );
        if previous {
            path.push_str("&previous=true");
        }
        let what = format!("log of pod {namespace}/{pod} container {container}");
        let r = self.send(Verb::Get, &path, None, Some("text/plain"), None, &what)?;
        if !r.ok() {
            // No kubelet to ask (the test bed's), no previous run, no
            // permission: no log to show.
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&r.body).into_owned()))
    }

    fn create(&self, obj: &Value) -> Result<Value, ClusterError> {
        let q = format!("fieldManager={}", enc(&self.update_manager));
        self.write(Verb::Create, obj, &q, "application/json")
    }

    fn replace(&self, obj: &Value) -> Result<Value, ClusterError> {
        let q = format!("fieldManager={}", enc(&self.update_manager));
        self.write(Verb::Update, obj, &q, "application/json")
    }

    fn apply(&self, obj: &Value, opts: &ApplyOptions) -> Result<Value, ClusterError> {
        if opts.field_manager.is_empty() {
            let key = ObjectKey::of(obj).ok_or_else(|| ClusterError::BadObject(obj.to_string()))?;
            return Err(ClusterError::Invalid {
                key,
                message: "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".into(),
            });
        }
        let mut q = format!(
            "fieldManager={}&fieldValidation=Strict",
            enc(&opts.field_manager)
        );
        if opts.force {
            q.push_str("&force=true");
        }
        if opts.dry_run {
            q.push_str("&dryRun=All");
        }
        self.write(Verb::Patch, obj, &q, "application/apply-patch+yaml")
    }

    fn upgrade_managed_fields(
        &self,
        live: &Value,
        from: &[&str],
        to: &str,
    ) -> Result<bool, ClusterError> {
        let Some(fields) = upgraded_managed_fields(live, from, to) else {
            return Ok(false);
        };
        let (key, res, version) = self.target(live)?;
        let rv = live
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null);
        // The resourceVersion test makes the rewrite lose to any write in between.
        let patch = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/metadata/managedFields", "value": fields},
        ]);
        let path = format!(
            "{}?fieldManager={}",
            Self::object_path(&res, &version, &key),
            enc(to)
        );
        let body =
            serde_json::to_vec(&patch).map_err(|e| ClusterError::BadObject(e.to_string()))?;
        let what = format!("upgrade the managed fields of {key}");
        let r = self.send(
            Verb::Patch,
            &path,
            Some("application/json-patch+json"),
            None,
            Some(body),
            &what,
        )?;
        if !r.ok() {
            return Err(self.error(Verb::Patch, &res, &key, &r));
        }
        Ok(true)
    }

    fn delete(
        &self,
        key: &ObjectKey,
        resource_version: Option<&str>,
    ) -> Result<Option<Value>, ClusterError> {
        let Some(live) = self.get(key)? else {
            return Ok(None);
        };
        let res = self.resource(&key.group, &key.kind, &key.group)?;
        let mut key = key.clone();
        if !res.namespaced {
            key.namespace.clear();
        }
        let mut opts = json!({
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": "Background",
        });
        if let Some(rv) = resource_version {
            opts["preconditions"] = json!({ "resourceVersion": rv });
        }
        let path = Self::object_path(&res, &res.version, &key);
        let body = serde_json::to_vec(&opts).map_err(|e| ClusterError::BadObject(e.to_string()))?;
        let r = self.send(
            Verb::Delete,
            &path,
            Some("application/json"),
            None,
            Some(body),
            &format!("delete {key}"),
        )?;
        if r.code == 404 {
            return Ok(None);
        }
        if !r.ok() {
            return Err(self.error(Verb::Delete, &res, &key, &r));
        }
        Ok(Some(live))
    }
}

/// The `managedFields` of `live` after `csaupgrade`: the main-resource
/// `Update` entries of the `from` managers merge into `to`'s `Apply` entry
/// (created when missing). `None` when there is nothing to hand over.
fn upgraded_managed_fields(live: &Value, from: &[&str], to: &str) -> Option<Vec<Value>> {
    let entries = live.pointer("/metadata/managedFields")?.as_array()?;
    let is_main = |e: &Value| {
        e.get("subresource")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
    };
    let field = |e: &Value, f: &str| e.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let csa = |e: &Value| {
        is_main(e)
            && field(e, "operation") == "Update"
            && from.contains(&field(e, "manager").as_str())
    };
    if !entries.iter().any(csa) {
        return None;
    }
    let api_version = field(live, "apiVersion");
    let mut merged = Value::Object(Default::default());
    let mut out = Vec::new();
    let mut target = None;
    for e in entries {
        if csa(e) {
            if let Some(f) = e.get("fieldsV1") {
                union_fields(&mut merged, f);
            }
        } else if is_main(e) && field(e, "manager") == to && field(e, "operation") == "Apply" {
            target = Some(e.clone());
        } else {
            out.push(e.clone());
        }
    }
    let mut t = target.unwrap_or_else(|| {
        json!({
            "manager": to,
            "operation": "Apply",
            "apiVersion": api_version,
            "fieldsType": "FieldsV1",
            "fieldsV1": {},
        })
    });
    if let Some(f) = t.get("fieldsV1").cloned() {
        union_fields(&mut merged, &f);
    }
    t["fieldsV1"] = merged;
    if let Some(ts) = entries
        .iter()
        .filter(|e| csa(e))
        .filter_map(|e| e.get("time").cloned())
        .next_back()
    {
        if t.get("time").is_none() {
            t["time"] = ts;
        }
    }
    out.push(t);
    Some(out)
}

/// Set union of two `FieldsV1` trees.
fn union_fields(into: &mut Value, other: &Value) {
    match (into, other) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(x) => union_fields(x, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => {
            if slot.is_null() {
                *slot = v.clone();
            }
        }
    }
}

/// Parses the `kube` cluster URL: `kube`, or
/// `kube?kubeconfig=PATH&context=NAME` (values percent-encoded where they
/// hold `%` or `&`).
pub fn parse_url(url: &str) -> Option<KubeOptions> {
    let rest = url.strip_prefix("kube")?;
    let query = match rest {
        "" | ":" => return Some(KubeOptions::default()),
        r => r.strip_prefix('?').or_else(|| r.strip_prefix(":?"))?,
    };
    let mut o = KubeOptions::default();
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=')?;
        let v = decode(v)?;
        match k {
            "kubeconfig" => o.kubeconfig = Some(v),
            "context" => o.context = Some(v),
            _ => return None,
        }
    }
    Some(o)
}

/// The `kube` cluster URL for these options (inverse of [`parse_url`]).
pub fn url_for(opts: &KubeOptions) -> String {
    let esc = |s: &str| s.replace('%', "%25").replace('&', "%26");
    let mut parts = Vec::new();
    if let Some(k) = &opts.kubeconfig {
        parts.push(format!("kubeconfig={}", esc(k)));
    }
    if let Some(c) = &opts.context {
        parts.push(format!("context={}", esc(c)));
    }
    if parts.is_empty() {
        "kube".into()
    } else {
        format!("kube?{}", parts.join("&"))
    }
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csa_fields_join_the_apply_manager() {
        let live = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "managedFields": [
                {"manager": "helm", "operation": "Update", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "time": "2026-01-01T00:00:00Z",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:a": {}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                 "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
                {"manager": "rudder", "operation": "Apply", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:b": {}}}}}
            ]}
        });
        let out = upgraded_managed_fields(&live, &["helm"], "rudder").unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["manager"], "kube-controller-manager");
        assert_eq!(out[1]["manager"], "rudder");
        assert_eq!(
            out[1]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}, "f:template": {"f:a": {}, "f:b": {}}}})
        );
        // Nothing to hand over: no change.
        let none = json!({"metadata": {"managedFields": [out[1].clone()]}});
        assert!(upgraded_managed_fields(&none, &["helm"], "rudder").is_none());
    }

    #[test]
    fn urls_round_trip() {
        let o = KubeOptions {
            kubeconfig: Some("/tmp/a&b%c/kubeconfig".into()),
            context: Some("admin@x".into()),
        };
        assert_eq!(parse_url(&url_for(&o)), Some(o));
        assert_eq!(parse_url("kube"), Some(KubeOptions::default()));
        assert_eq!(parse_url("kubex"), None);
        assert_eq!(parse_url("kube?nope=1"), None);
    }

    #[test]
    fn field_managers_from_causes() {
        assert_eq!(manager_of("conflict with \"kubectl\" using v1"), "kubectl");
    }

    #[test]
    fn missing_kubeconfig_is_one_line() {
        let e = KubeCluster::connect(&KubeOptions {
            kubeconfig: Some("/nonexistent/kubeconfig".into()),
            context: None,
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("reading kubeconfig /nonexistent/kubeconfig"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
