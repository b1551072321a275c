//! The simulated cluster's files (see the module documentation's "State
//! files" and "Crash safety and concurrency"): encoding `state.json`,
//! appending to and replaying `log.jsonl`, the directory lock, freshness
//! checks of the cached state, compaction, and the write path that runs a
//! [`Plan`] under the lock and logs it.
use super::state::{hash_uuid, Plan, Put, State, FIRST_CLUSTER_IP};
use super::view::View;
use super::{ClusterError, ObjectKey, SimCluster, FORMAT, LOG_FILE, STATE_FILE};
use crate::fsutil::{self, AtomicWrite, Mode, Step};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};
pub(super) const LOCK_FILE: &str = ".lock";
/// A write that finds more log entries than this compacts.
pub(super) const COMPACT_ENTRIES: u64 = 1000;
/// A write that would grow the log past this many bytes compacts.
pub(super) const COMPACT_BYTES: u64 = 4 << 20;

/// What identifies a version of a file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) len: u64,
    pub(super) modified: Option<std::time::SystemTime>,
    pub(super) ino: u64,
}

pub(super) fn stamp_of(meta: &fs::Metadata) -> Stamp {
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

pub(super) fn stat(path: &Path) -> Result<Option<Stamp>, ClusterError> {
    match fs::metadata(path) {
        Ok(m) => Ok(Some(stamp_of(&m))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("stat", path)(e)),
    }
}

pub(super) struct Loaded {
    /// `state.json` as read (`None`: it did not exist).
    pub(super) stamp: Option<Stamp>,
    /// `log.jsonl` as read (`None`: it did not exist).
    pub(super) log_stamp: Option<Stamp>,
    /// The bytes of the log replayed (up to the last complete line).
    pub(super) log_pos: u64,
    /// The entries in the log.
    pub(super) log_entries: u64,
    /// Whether this handle's own compaction made `state.json` and the log
    /// durable (fsynced, with the directory), so that a flush needs only to
    /// fsync the log.
    pub(super) synced: bool,
    pub(super) state: State,
}

impl Loaded {
    /// `state`, before either file was read.
    pub(super) fn new(state: State) -> Loaded {
        Loaded {
            stamp: None,
            log_stamp: None,
            log_pos: 0,
            log_entries: 0,
            synced: false,
            state,
        }
    }
}

/// The canonical form of a path that may not exist yet: the nearest
/// existing ancestor canonicalised, the rest appended.
pub(super) fn canonical(dir: &Path) -> PathBuf {
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

impl State {
    pub(super) fn parse(data: &[u8], path: &Path) -> Result<State, ClusterError> {
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
        let mut objects = super::state::Objects::default();
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

    pub(super) fn serialize(&mut self) -> Result<Vec<u8>, serde_json::Error> {
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

    /// Replays one log line (`n` counts lines from 1).
    pub(super) fn replay(&mut self, line: &[u8], n: u64, path: &Path) -> Result<(), ClusterError> {
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
pub(super) fn log_line(state: &State, plan: &Plan, seq: u64) -> Result<Vec<u8>, serde_json::Error> {
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

pub(super) fn io_err(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError {
    let path = path.display().to_string();
    move |source| ClusterError::Io { op, path, source }
}

impl SimCluster {
    pub(super) fn guard(&self) -> MutexGuard<'_, Option<Loaded>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the cached state up to date with the files. `locked`: the
    /// caller holds the exclusive lock; otherwise a reload takes a shared
    /// one.
    pub(super) fn refresh<'a>(
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
    pub(super) fn reload(slot: &mut Option<Loaded>, dir: &Path) -> Result<(), ClusterError> {
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
            *slot = Some(Loaded::new(state));
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

    pub(super) fn read<R>(
        &self,
        f: impl FnOnce(&State) -> Result<R, ClusterError>,
    ) -> Result<R, ClusterError> {
        let mut g = self.guard();
        let loaded = self.refresh(&mut g, false)?;
        f(&loaded.state)
    }

    /// A write's result as reads show it.
    pub(super) fn result(state: &State, v: Option<Value>, view: &View) -> Option<Value> {
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
    pub(super) fn write(
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

impl SimCluster {
    /// [`Cluster::flush`](crate::cluster::Cluster::flush): makes every write durable, by fsyncing the log
    /// when this handle's compaction made the rest durable, or by
    /// compacting with fsync.
    pub(super) fn flush_files(&self) -> Result<(), ClusterError> {
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

/// Sets when each stored object's spec was last written.
pub(super) fn stamp_times(state: &State, plan: &mut Plan, now: u64) {
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
pub(super) fn lock_shared(dir: &Path) -> Result<Option<File>, ClusterError> {
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
pub(super) fn append(dir: &Path, pos: u64, line: &[u8]) -> Result<Stamp, ClusterError> {
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
pub(super) fn write_private(path: &Path, data: &[u8], fsync: bool) -> Result<(), ClusterError> {
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

pub(super) fn write_err(e: fsutil::WriteError) -> ClusterError {
    ClusterError::Io {
        op: e.op,
        path: e.path.display().to_string(),
        source: e.error,
    }
}

pub(super) static FSYNCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(super) fn counted_fsync() {
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
pub(super) fn compact_files(
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
pub(super) fn persist(dir: &Path, state: &mut State, fsync: bool) -> Result<Stamp, ClusterError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::controllers;
    use crate::cluster::sim::testing::*;
    use crate::cluster::sim::NowFn;
    use crate::cluster::Cluster;
    use serde_json::json;
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn dry_run_persists_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let c = SimCluster::open(tmp.path().join("c")).unwrap();
        let mut dry = opts("rudder");
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
            .apply(&cm("default", "a", json!({"x":"1"})), &opts("rudder"))
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
    fn writes_append_to_the_log_and_other_handles_replay_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let a = SimCluster::open(&dir).unwrap();
        let first = a.create(&config_map("one", "1")).unwrap();
        // The first write compacts: state.json and an empty log.
        assert!(dir.join(STATE_FILE).exists());
        assert!(log_lines(&dir).is_empty());
        a.create(&config_map("two", "2")).unwrap();
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
        b.create(&config_map("three", "3")).unwrap();
        assert!(a.get(&ckey("two")).unwrap().is_none());
        let three = a.get(&ckey("three")).unwrap().unwrap();
        assert_eq!(rv_str(&three), "7");
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
        a.create(&config_map("one", "1")).unwrap();
        a.create(&config_map("two", "2")).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.join(LOG_FILE))
            .unwrap();
        f.write_all(b"{\"seq\":3,\"resourceVersion\":5,\"put\":[{\"obj")
            .unwrap();
        drop(f);
        let b = SimCluster::open(&dir).unwrap();
        assert!(b.get(&ckey("two")).unwrap().is_some());
        b.create(&config_map("three", "3")).unwrap();
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
        a.create(&config_map("one", "1")).unwrap();
        a.create(&config_map("two", "2")).unwrap();
        a.create(&config_map("three", "3")).unwrap();
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
                c.create(&config_map("four", "4")),
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
            a.create(&config_map(&format!("c{i}"), "x")).unwrap();
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
        c.create(&config_map("late", "1")).unwrap();
        let old_log = fs::read(dir.join(LOG_FILE)).unwrap();
        c.flush().unwrap();
        assert!(log_lines(&dir).is_empty());
        // A crash between the two renames of a compaction: the new state
        // with the old log, whose entries it already has.
        fs::write(dir.join(LOG_FILE), &old_log).unwrap();
        let b = SimCluster::open(&dir).unwrap();
        assert_eq!(b.snapshot().unwrap(), c.snapshot().unwrap());
        assert_eq!(b.snapshot().unwrap(), a.snapshot().unwrap());
        b.create(&config_map("later", "1")).unwrap();
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
