//! The embedded default store: one file per revision under a directory
//! (`.rudder/` unless `--store file:DIR` says otherwise).
//!
//! # On-disk format
//!
//! ```text
//! DIR/
//!   <namespace>/
//!     .lock                                  advisory lock (flock) for writers
//!     sh.helm.release.v1.<name>.v<version>   one record per revision
//!     .tmp-*                                 leftovers of interrupted writes (ignored)
//! ```
//!
//! Each record file is one JSON object, the same information Helm's
//! Secrets driver puts on a Secret:
//!
//! ```json
//! {"key":"sh.helm.release.v1.web.v2","namespace":"default","type":"helm.sh/release.v1",
//!  "labels":{"createdAt":"1795997026","name":"web","owner":"helm","status":"deployed","version":"2"},
//!  "body":"H4sIAAAAAAAC/..."}
//! ```
//!
//! `body` is Helm's encoding, `base64(gzip(json(release)))`, so a record can
//! be copied into a Secret, ConfigMap or `releases_v1` row unchanged.
//! `labels` are the storage labels exactly as Helm's Kubernetes drivers set
//! them (system labels, `createdAt` on create, `modifiedAt` on update, user
//! labels).
//!
//! # Crash safety
//!
//! Every write goes to a fresh `.tmp-*` file in the same directory, which is
//! fsynced before it becomes visible: a new revision is published with
//! `link(2)` (which fails if the revision exists, so creates never overwrite),
//! an update with `rename(2)` (atomic replace); then the directory is
//! fsynced. A crash at any point leaves either the old record or the new
//! one, plus at most a stray `.tmp-*` file that readers ignore and the next
//! writer removes. Writers of a namespace serialise on `.lock`, so an update
//! compares the stored record with the caller's copy and swaps it atomically
//! with respect to other processes.
//!
//! # Privacy and integrity
//!
//! Records hold the release's values, Secrets included: the store's
//! directories are 0700 and its files 0600, whatever the umask, and an
//! older store's wider modes are tightened on the next write, with a
//! warning ([`crate::fsutil`]). Each record is checked against its file
//! name and directory when read ([`super::check_record`]): one that holds
//! another release, namespace or revision, or a revision out of Helm's
//! range, is reported naming the file, and nothing builds on it.
use super::{
    check_name, check_record, check_revision, same_record, sort_by_version, Store, StoreError,
};
use crate::fsutil::{self, AtomicWrite, Mode, Step};
use crate::release::codec::{self, Write};
use crate::release::model::Release;
use crate::release::time::HelmTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The JSON object stored in each record file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordFile {
    /// `sh.helm.release.v1.<name>.v<version>`.
    pub key: String,
    /// The release namespace.
    pub namespace: String,
    /// `helm.sh/release.v1`.
    #[serde(rename = "type")]
    pub record_type: String,
    /// Storage labels, as on Helm's Secrets.
    pub labels: BTreeMap<String, String>,
    /// `base64(gzip(json(release)))`.
    pub body: String,
}

/// Counts the steps of file writes and fails one of them, to test that a
/// crash at any step leaves the old or the new state. After the injected
/// failure every later step fails too: the process is considered dead.
#[derive(Debug, Default)]
pub struct FaultInjector {
    step: AtomicUsize,
    fail_at: AtomicUsize,
}

impl FaultInjector {
    /// Fails the `n`-th write step (0-based) and all after it; `usize::MAX` never fails.
    pub fn fail_at(n: usize) -> Arc<Self> {
        Arc::new(FaultInjector {
            step: AtomicUsize::new(0),
            fail_at: AtomicUsize::new(n),
        })
    }

    /// How many steps were attempted so far.
    pub fn steps(&self) -> usize {
        self.step.load(Ordering::SeqCst)
    }

    fn check(&self) -> std::io::Result<()> {
        let n = self.step.fetch_add(1, Ordering::SeqCst);
        if n >= self.fail_at.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("injected crash"));
        }
        Ok(())
    }
}

/// A record that exists but could not be read, which listings skip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The storage key, `sh.helm.release.v1.<name>.v<version>`.
    pub key: String,
    /// The release namespace.
    pub namespace: String,
    /// The release name (from the key).
    pub name: String,
    /// The revision (from the key).
    pub version: u64,
    /// Where the record is: a file path, or the store's own address.
    pub location: String,
    /// Why it could not be read.
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "skipped unreadable release record {} ({}): {}",
            self.key, self.location, self.reason
        )
    }
}

/// A record file name whose revision has more digits than any `u64`
/// (`sh.helm.release.v1.web.v99999999999999999999`): (name, `u64::MAX`),
/// so that it is reported as out of range rather than ignored.
pub(crate) fn overflowing_key(key: &str) -> Option<(&str, u64)> {
    let rest = key.strip_prefix("sh.helm.release.v1.")?;
    let (name, v) = rest.rsplit_once(".v")?;
    (!name.is_empty() && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .then_some((name, u64::MAX))
}

/// The file store. See the module documentation for the format.
#[derive(Debug)]
pub struct FileStore {
    root: PathBuf,
    faults: Option<Arc<FaultInjector>>,
}

impl FileStore {
    /// Opens a store directory. Nothing is created until the first write:
    /// reading a store that does not exist finds no records.
    pub fn open(dir: impl AsRef<Path>) -> Result<FileStore, StoreError> {
        let root = dir.as_ref().to_path_buf();
        Ok(FileStore { root, faults: None })
    }

    /// Opens a store whose writes fail at a chosen step (crash testing).
    pub fn open_with_faults(
        dir: impl AsRef<Path>,
        faults: Arc<FaultInjector>,
    ) -> Result<FileStore, StoreError> {
        let mut s = FileStore::open(dir)?;
        s.faults = Some(faults);
        Ok(s)
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn step(&self, what: &'static str, path: &Path) -> Result<(), StoreError> {
        match &self.faults {
            Some(f) => f.check().map_err(|e| StoreError::io(what, path, e)),
            None => Ok(()),
        }
    }

    fn ns_dir(&self, namespace: &str) -> Result<PathBuf, StoreError> {
        check_name(namespace)?;
        Ok(self.root.join(namespace))
    }

    fn record_path(
        &self,
        namespace: &str,
        name: &str,
        version: u64,
    ) -> Result<PathBuf, StoreError> {
        check_name(name)?;
        Ok(self.ns_dir(namespace)?.join(codec::key(name, version)))
    }

    /// Takes the namespace's writer lock (released when the file is
    /// dropped), creating the store and namespace directories owner-only
    /// (or tightening the namespace's).
    #[allow(clippy::incompatible_msrv)]
    fn lock(&self, dir: &Path) -> Result<File, StoreError> {
        // The root may be a directory the user keeps other things in: it is
        // created private, but an existing one keeps its mode (what lies
        // in it is private).
        fsutil::create_private_dir(&self.root).map_err(StoreError::write)?;
        fsutil::private_dir(dir).map_err(StoreError::write)?;
        let p = dir.join(".lock");
        let f = fsutil::open_private(
            &p,
            OpenOptions::new().create(true).truncate(false).write(true),
        )
        .map_err(StoreError::write)?;
        f.lock().map_err(|e| StoreError::io("lock", &p, e))?;
        Ok(f)
    }

    fn encode_file(&self, rel: &Release, w: Write) -> Result<Vec<u8>, StoreError> {
        let rec = RecordFile {
            key: codec::key(&rel.name, rel.version),
            namespace: rel.namespace.clone(),
            record_type: codec::RELEASE_TYPE.into(),
            labels: codec::storage_labels(rel, w, HelmTime::now().unix()),
            body: codec::encode(rel)?,
        };
        let mut out = serde_json::to_vec(&rec).map_err(codec::CodecError::from)?;
        out.push(b'\n');
        Ok(out)
    }

    /// Writes a record file owner-only and atomically: linked when it must
    /// not exist yet (`create`), renamed over the old one otherwise.
    fn write_record(&self, path: &Path, data: &[u8], create: bool) -> Result<(), StoreError> {
        let hook = |_: Step, _: &Path| match &self.faults {
            Some(f) => f.check(),
            None => Ok(()),
        };
        let mut w = AtomicWrite::new(Mode::PRIVATE).hook(&hook);
        if create {
            w = w.no_replace();
        }
        match w.write(path, data) {
            Ok(()) => Ok(()),
            Err(e)
                if create
                    && e.op == "link"
                    && e.error.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                Err(StoreError::AlreadyExists)
            }
            Err(e) => Err(StoreError::write(e)),
        }
    }

    fn sync_dir(&self, dir: &Path) -> Result<(), StoreError> {
        self.step("fsync directory", dir)?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io("fsync directory", dir, e))
    }

    fn read_record(path: &Path) -> Result<Option<Release>, StoreError> {
        let data = match crate::input::read(path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("read", path, e)),
        };
        let undecodable =
            |e: String| StoreError::io("decode record", path, std::io::Error::other(e));
        if data.iter().all(u8::is_ascii_whitespace) {
            return Err(undecodable("the file is empty".into()));
        }
        let rec: RecordFile =
            serde_json::from_slice(&data).map_err(|e| undecodable(e.to_string()))?;
        let mut rel = codec::decode(&rec.body).map_err(|e| undecodable(e.to_string()))?;
        rel.labels = rec.labels;
        Ok(Some(rel))
    }

    /// Reads the record at `path`, stored under `namespace` and the key of
    /// (`name`, `version`), and checks it against that key
    /// ([`super::check_record`]); a mismatch is [`StoreError::Invalid`]
    /// naming the file.
    fn read_checked(
        path: &Path,
        namespace: &str,
        name: &str,
        version: u64,
    ) -> Result<Option<Release>, StoreError> {
        let Some(rel) = Self::read_record(path)? else {
            return Ok(None);
        };
        check_record(&rel, namespace, name, version).map_err(|reason| StoreError::Invalid {
            location: path.display().to_string(),
            reason,
        })?;
        Ok(Some(rel))
    }

    /// Removes leftovers of interrupted writes (caller holds the lock).
    fn clean_tmp(dir: &Path) {
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(".tmp-") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
    }

    fn read_dir_records(
        &self,
        dir: &Path,
        name: Option<&str>,
        skipped: &mut Vec<Skipped>,
    ) -> Result<Vec<Release>, StoreError> {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(StoreError::io("read directory", dir, e)),
        };
        let namespace = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(|err| StoreError::io("read directory", dir, err))?;
            let fname = e.file_name().to_string_lossy().into_owned();
            let Some((n, version)) = codec::parse_key(&fname).or_else(|| overflowing_key(&fname))
            else {
                continue;
            };
            if name.is_some_and(|want| want != n) {
                continue;
            }
            // As Helm's drivers do, a record that does not decode is skipped
            // in listings rather than hiding every other release, but it is
            // reported to the caller.
            let path = e.path();
            match Self::read_checked(&path, &namespace, n, version) {
                Ok(Some(r)) => out.push(r),
                Ok(None) => {}
                Err(err) => skipped.push(Skipped {
                    key: fname.clone(),
                    namespace: namespace.clone(),
                    name: n.to_string(),
                    version,
                    location: path.display().to_string(),
                    reason: match err {
                        StoreError::Io { error, .. } => error.to_string(),
                        StoreError::Invalid { reason, .. } => reason.to_string(),
                        other => other.to_string(),
                    },
                }),
            }
        }
        // Directory order is the filesystem's; make listings deterministic.
        out.sort_by(|a, b| a.name.cmp(&b.name).then(a.version.cmp(&b.version)));
        skipped.sort_by(|a, b| a.name.cmp(&b.name).then(a.version.cmp(&b.version)));
        Ok(out)
    }
}

impl Store for FileStore {
    fn create(&self, rel: &Release) -> Result<(), StoreError> {
        let path = self.record_path(&rel.namespace, &rel.name, rel.version)?;
        check_revision(rel.version).map_err(|reason| StoreError::Invalid {
            location: path.display().to_string(),
            reason,
        })?;
        let dir = self.ns_dir(&rel.namespace)?;
        let data = self.encode_file(rel, Write::Create)?;
        let _lock = self.lock(&dir)?;
        Self::clean_tmp(&dir);
        self.write_record(&path, &data, true)
    }

    fn update(&self, expected: &Release, new: &Release) -> Result<(), StoreError> {
        let path = self.record_path(&new.namespace, &new.name, new.version)?;
        let dir = self.ns_dir(&new.namespace)?;
        let data = self.encode_file(new, Write::Update)?;
        let _lock = self.lock(&dir)?;
        let cur = Self::read_checked(&path, &new.namespace, &new.name, new.version)?
            .ok_or(StoreError::NotFound)?;
        if !same_record(&cur, expected) {
            return Err(StoreError::Conflict {
                key: codec::key(&new.name, new.version),
                namespace: new.namespace.clone(),
            });
        }
        Self::clean_tmp(&dir);
        self.write_record(&path, &data, false)
    }

    fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        let path = self.record_path(namespace, name, version)?;
        Self::read_checked(&path, namespace, name, version)?.ok_or(StoreError::NotFound)
    }

    fn history_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        check_name(name)?;
        let mut skipped = Vec::new();
        let mut v = self.read_dir_records(&self.ns_dir(namespace)?, Some(name), &mut skipped)?;
        v.retain(|r| r.name == name);
        sort_by_version(&mut v);
        Ok((v, skipped))
    }

    fn list_all_reporting(
        &self,
        namespace: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        let mut skipped = Vec::new();
        match namespace {
            Some(ns) => {
                let v = self.read_dir_records(&self.ns_dir(ns)?, None, &mut skipped)?;
                Ok((v, skipped))
            }
            None => {
                let mut out = Vec::new();
                let rd = match fs::read_dir(&self.root) {
                    Ok(rd) => rd,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Ok((out, skipped))
                    }
                    Err(e) => return Err(StoreError::io("read directory", &self.root, e)),
                };
                let mut dirs: Vec<PathBuf> = rd
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .map(|e| e.path())
                    .collect();
                dirs.sort();
                for d in dirs {
                    out.extend(self.read_dir_records(&d, None, &mut skipped)?);
                }
                Ok((out, skipped))
            }
        }
    }

    fn delete(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        let path = self.record_path(namespace, name, version)?;
        let dir = self.ns_dir(namespace)?;
        let _lock = self.lock(&dir)?;
        let rel =
            Self::read_checked(&path, namespace, name, version)?.ok_or(StoreError::NotFound)?;
        self.step("remove record", &path)?;
        fs::remove_file(&path).map_err(|e| StoreError::io("remove record", &path, e))?;
        self.sync_dir(&dir)?;
        Ok(rel)
    }
}
