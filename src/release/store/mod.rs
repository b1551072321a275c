//! Where release records live: the [`Store`] trait and its backends.
//!
//! A store keeps revisions by (namespace, name, version), exactly like
//! Helm's storage drivers, and adds what Helm lacks: a writer that read a
//! record and finds it changed when it writes back gets
//! [`StoreError::Conflict`] instead of overwriting it, and creating a
//! revision that exists fails, so two upgraders of one release cannot both
//! proceed. Backends:
//!
//! - [`memory::MemoryStore`]: in process, for tests and dry runs;
//! - [`file::FileStore`]: the embedded default (`file:.rudder`), crash-safe;
//! - `postgres::PgStore` (feature `postgres`): Helm's SQL driver schema (`postgresql://...`);
//! - [`objects::ObjectStore`]: Helm's Secrets and ConfigMaps drivers
//!   (`secret`, `configmap`) in a cluster, real or simulated ([`open_in`]).
//!
//! The record lifecycle (install, upgrade, rollback, uninstall, history
//! pruning) is in [`ops`], on top of any store.
use super::codec::{self, CodecError};
use super::model::Release;
use std::collections::BTreeMap;

pub mod file;
pub use file::Skipped;
pub mod memory;
pub mod objects;
pub mod ops;
#[cfg(feature = "postgres")]
pub mod postgres;

/// What can go wrong reading or writing records. Messages follow Helm's
/// where Helm has one.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No such record (Helm: `release: not found`).
    #[error("release: not found")]
    NotFound,
    /// The revision already exists (Helm: `release: already exists`).
    #[error("release: already exists")]
    AlreadyExists,
    /// The record changed since it was read: another writer got there first.
    #[error("release {key} in namespace {namespace:?} was changed by another writer since it was read; reload and retry")]
    Conflict {
        /// The storage key.
        key: String,
        /// The namespace.
        namespace: String,
    },
    /// A record body could not be encoded or decoded.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A file store operation failed.
    #[error("{op} {path}: {error}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: String,
        /// The OS error (its text ends the message).
        error: std::io::Error,
    },
    /// A PostgreSQL operation failed.
    #[error("postgresql: {0}")]
    Sql(String),
    /// The `--store` URL is not understood.
    #[error("invalid store {0:?}: want file:DIR, memory: or postgresql://...")]
    InvalidUrl(String),
    /// A name or namespace cannot be stored (empty, or contains `/`).
    #[error("invalid release name or namespace {0:?}")]
    InvalidName(String),
    /// A stored record does not belong under its key, or a revision is
    /// out of Helm's range: nothing is read from it or written over it.
    #[error("release record {location}: {reason}")]
    Invalid {
        /// The file, object or row (its text names it).
        location: String,
        /// What is wrong (its text ends the message).
        reason: RecordMismatch,
    },
}

/// The highest revision: Helm's SQL driver keeps revisions in an
/// `INTEGER` (int32) column, and Helm counts from 1, so every store keeps
/// revisions within 1 to 2147483647. A record beyond it is refused when
/// read, and no revision beyond it is ever written.
pub const MAX_REVISION: u64 = i32::MAX as u64;

/// Why a record does not belong under the key it is stored under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordMismatch {
    /// A revision outside 1 to [`MAX_REVISION`].
    #[error("revision {0} is out of range (revisions are 1 to 2147483647)")]
    Revision(u64),
    /// The record is another release's.
    #[error("it holds release {found:?}, but its key is release {expected:?}'s")]
    Name {
        /// The name in the key.
        expected: String,
        /// The name in the record.
        found: String,
    },
    /// The record is another namespace's.
    #[error("it holds namespace {found:?}, but it is stored in namespace {expected:?}")]
    Namespace {
        /// The namespace it is stored in.
        expected: String,
        /// The namespace in the record.
        found: String,
    },
    /// The record is another revision's.
    #[error("it holds revision {found}, but its key is revision {expected}")]
    Version {
        /// The revision in the key.
        expected: u64,
        /// The revision in the record.
        found: u64,
    },
}

/// Checks a record read under `namespace` and the key of (`name`,
/// `version`) against that key: the release name, the namespace and the
/// revision must be the key's, and the revision within 1 to
/// [`MAX_REVISION`]. A record copied or edited by hand fails here, so no
/// plan or write builds on it.
pub fn check_record(
    rel: &Release,
    namespace: &str,
    name: &str,
    version: u64,
) -> Result<(), RecordMismatch> {
    check_revision(version)?;
    if rel.name != name {
        return Err(RecordMismatch::Name {
            expected: name.to_string(),
            found: rel.name.clone(),
        });
    }
    if rel.namespace != namespace {
        return Err(RecordMismatch::Namespace {
            expected: namespace.to_string(),
            found: rel.namespace.clone(),
        });
    }
    if rel.version != version {
        return Err(RecordMismatch::Version {
            expected: version,
            found: rel.version,
        });
    }
    Ok(())
}

/// Whether `version` is a revision a store may hold (1 to [`MAX_REVISION`]).
pub fn check_revision(version: u64) -> Result<(), RecordMismatch> {
    if version == 0 || version > MAX_REVISION {
        return Err(RecordMismatch::Revision(version));
    }
    Ok(())
}

impl StoreError {
    pub(crate) fn write(e: crate::fsutil::WriteError) -> Self {
        StoreError::Io {
            op: e.op,
            path: e.path.display().to_string(),
            error: e.error,
        }
    }

    pub(crate) fn io(op: &'static str, path: &std::path::Path, error: std::io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.display().to_string(),
            error,
        }
    }
}

/// A place that keeps release records.
///
/// Reads return records with their storage labels in [`Release::labels`].
/// All writes are atomic per record.
pub trait Store: Send + Sync {
    /// Stores a new revision. An existing revision is
    /// [`StoreError::AlreadyExists`] (never overwritten).
    fn create(&self, rel: &Release) -> Result<(), StoreError>;

    /// Replaces a stored revision with `new`, but only if it still equals
    /// `expected` (the copy the caller read); otherwise [`StoreError::Conflict`].
    /// A missing revision is [`StoreError::NotFound`].
    fn update(&self, expected: &Release, new: &Release) -> Result<(), StoreError>;

    /// One revision.
    fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError>;

    /// Every revision of a release, oldest first (empty when there is
    /// none): [`Store::history_reporting`] without the report.
    fn history(&self, namespace: &str, name: &str) -> Result<Vec<Release>, StoreError> {
        Ok(self.history_reporting(namespace, name)?.0)
    }

    /// Every record of every release in a namespace, or in all namespaces
    /// (`None`), in no particular order: [`Store::list_all_reporting`]
    /// without the report.
    fn list_all(&self, namespace: Option<&str>) -> Result<Vec<Release>, StoreError> {
        Ok(self.list_all_reporting(namespace)?.0)
    }

    /// Removes a revision and returns it.
    fn delete(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError>;

    /// Every revision of a release, oldest first (empty when there is
    /// none), and the records it skipped as unreadable.
    fn history_reporting(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError>;

    /// Every readable record of every release in a namespace, or in all
    /// namespaces (`None`), in no particular order, and the records it
    /// skipped as unreadable.
    fn list_all_reporting(
        &self,
        ns: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError>;
}

/// Whether two reads are the same stored record: same JSON body and same
/// user labels (system labels are derived from the body or the write time).
pub fn same_record(a: &Release, b: &Release) -> bool {
    if codec::user_labels(&a.labels) != codec::user_labels(&b.labels) {
        return false;
    }
    match (serde_json::to_vec(a), serde_json::to_vec(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Rejects names that cannot be a path component or storage key part.
pub(crate) fn check_name(s: &str) -> Result<(), StoreError> {
    if s.is_empty()
        || s.len() > 253
        || s.starts_with('.')
        || s.contains(['/', '\\', '\0'])
        || s.chars().any(char::is_control)
    {
        return Err(StoreError::InvalidName(s.to_string()));
    }
    Ok(())
}

/// Opens a store from a URL: `file:DIR` (also a bare path), `memory:`, or
/// `postgresql://...`/`postgres://...` (also `postgresql:` alone, which
/// takes every parameter from the `PG*` variables, and libpq's
/// `host=... dbname=...` form).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rudder::release::{self, Release, Status};
/// let dir = tempfile::tempdir()?;
/// let store = release::open(&format!("file:{}", dir.path().display()))?;
/// let mut rel = Release {
///     name: "web".into(),
///     namespace: "default".into(),
///     version: 1,
///     ..Release::default()
/// };
/// rel.info.status = Status::Deployed;
/// store.create(&rel)?;
/// let history = store.history("default", "web")?;
/// assert_eq!(history.len(), 1);
/// assert_eq!(history[0].info.status, Status::Deployed);
/// // Records are Helm's: one file per revision, as Helm names its Secrets.
/// assert!(dir.path().join("default/sh.helm.release.v1.web.v1").exists());
/// assert!(release::open("nosuchdriver://x").is_err());
/// # Ok(()) }
/// ```
pub fn open(url: &str) -> Result<Box<dyn Store>, StoreError> {
    if needs_cluster(url) {
        return Err(StoreError::InvalidUrl(format!(
            "{url} (the Secrets and ConfigMaps drivers need a cluster: open them with open_in)"
        )));
    }
    if let Some(dir) = url.strip_prefix("file:") {
        let dir = dir.strip_prefix("//").unwrap_or(dir);
        if dir.is_empty() {
            return Err(StoreError::InvalidUrl(url.to_string()));
        }
        return Ok(Box::new(file::FileStore::open(dir)?));
    }
    if url == "memory:" {
        return Ok(Box::new(memory::MemoryStore::new()));
    }
    // libpq's key=value form (`host=... dbname=...`), which Helm also takes.
    let kv_dsn = url.contains('=')
        && !url.contains('/')
        && url.split_whitespace().all(|kv| kv.contains('='));
    if url.starts_with("postgresql:") || url.starts_with("postgres:") || kv_dsn {
        #[cfg(feature = "postgres")]
        {
            return Ok(Box::new(postgres::PgStore::connect(url)?));
        }
        #[cfg(not(feature = "postgres"))]
        {
            return Err(StoreError::Sql(
                "this rudder was built without the postgres feature".into(),
            ));
        }
    }
    if url.contains("://") || url.is_empty() {
        return Err(StoreError::InvalidUrl(url.to_string()));
    }
    Ok(Box::new(file::FileStore::open(url)?))
}

/// Whether a store URL names a driver that keeps records in a cluster:
/// `secret`, `secrets`, `configmap`, `configmaps` (Helm's `HELM_DRIVER`
/// spellings).
pub fn needs_cluster(url: &str) -> bool {
    objects::Driver::from_url(url).is_some()
}

/// Opens a store from a URL as [`open`] does, with the Secrets and
/// ConfigMaps drivers (`secret`, `secrets`, `configmap`, `configmaps`)
/// keeping their records as objects in `cluster`.
pub fn open_in(
    url: &str,
    cluster: std::sync::Arc<dyn crate::cluster::Cluster>,
) -> Result<Box<dyn Store>, StoreError> {
    match objects::Driver::from_url(url) {
        Some(d) => Ok(Box::new(objects::ObjectStore::new(cluster, d))),
        None => open(url),
    }
}

/// Sorts records by version, oldest first.
pub(crate) fn sort_by_version(v: &mut [Release]) {
    v.sort_by_key(|r| r.version);
}

/// Labels as Helm's SQL driver returns them from `List`: the user labels
/// plus the system labels rebuilt from the record.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn with_system_labels(mut rel: Release) -> Release {
    let mut l: BTreeMap<String, String> = codec::user_labels(&rel.labels);
    l.insert("name".into(), rel.name.clone());
    l.insert("owner".into(), codec::OWNER.into());
    l.insert("status".into(), rel.info.status.as_str().into());
    l.insert("version".into(), rel.version.to_string());
    rel.labels = l;
    rel
}
