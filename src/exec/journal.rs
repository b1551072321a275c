//! The execution journal: every write the executor makes, before and after
//! it happens, per release, so that an interrupted run can be finished or
//! rolled back by the next one.
//!
//! Layout under the journal directory (next to the release store,
//! `.rudder/journal` for the default `file:.rudder`):
//!
//! ```text
//! <dir>/<namespace>/<name>.journal   JSON lines, appended, one entry a line
//! <dir>/<namespace>/<name>.lock      held (flock) by the process running the release
//! <dir>/.transactions/<id>.journal   an atomic plan's own journal (below)
//! ```
//!
//! (A namespace name never starts with a dot, so `.transactions` is no
//! release namespace.)
//!
//! A run starts with a `begin` entry that lists every write it intends
//! (group commit: one fsync for all intents), appends a `write` entry after
//! each write (buffered), and ends with an `end` entry (fsynced). A run
//! whose `begin` has no `end` was interrupted. A torn last line is ignored.
//!
//! An atomic plan (`--atomic-plan`) also keeps a transaction journal: a
//! `begin` naming every release the apply may change and its rollback
//! point (fsynced before the first write), `commit` when every release
//! succeeded, `unwound` after each release is back at its rollback point,
//! and `end`. A transaction with a `begin` and no `end` whose releases no
//! process holds was interrupted: without `commit`, the next run unwinds
//! the releases not yet `unwound` ([`super::Executor::recover_transactions`]).
use super::faults;
use crate::cluster::ObjectKey;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Why the journal could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing a journal file failed.
    #[error("journal: {op} {path}: {error}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: String,
        /// The OS error (its text ends the message, so it is not the
        /// error's source).
        error: std::io::Error,
    },
    /// Another process runs this release.
    #[error("release {release} is being changed by another process ({holder}); wait for it to finish, or stop it first")]
    Held {
        /// `namespace/name`.
        release: String,
        /// Who holds it (pid, host, since when), as it wrote itself down.
        holder: String,
    },
}

fn io(op: &'static str, path: &Path, error: std::io::Error) -> JournalError {
    JournalError::Io {
        op,
        path: path.display().to_string(),
        error,
    }
}

static FSYNCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many fsyncs journals in this process have issued so far: a relaxed
/// counter for benchmarks and tests (`benches/exec.rs` reports fsyncs per
/// release with it).
pub fn fsync_count() -> u64 {
    FSYNCS.load(std::sync::atomic::Ordering::Relaxed)
}

/// One intended write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    /// The object.
    pub key: ObjectKey,
    /// `apply` or `delete`.
    pub verb: String,
    /// Whether the object was absent when planned (an apply then creates it).
    pub absent_at_plan: bool,
}

/// A journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Entry {
    /// A run of an operation on the release starts.
    #[serde(rename_all = "camelCase")]
    Begin {
        /// Random id of this run.
        run: String,
        /// `install`, `upgrade`, `rollback`, `uninstall`.
        operation: String,
        /// The plan's id (empty for direct commands).
        plan_id: String,
        /// The revision this run writes.
        revision: u64,
        /// Where a failure returns to (`None`: uninstall instead).
        rollback_revision: Option<u64>,
        /// Whether failure rolls back.
        atomic: bool,
        /// Every write the run intends.
        intents: Vec<Intent>,
    },
    /// A cluster write happened (or failed).
    #[serde(rename_all = "camelCase")]
    Write {
        /// The run.
        run: String,
        /// `apply`, `create` (the release namespace), `delete`,
        /// `hook-create`, `hook-delete`.
        verb: String,
        /// The object.
        key: ObjectKey,
        /// Whether the object existed before the write.
        existed: bool,
        /// uid after the write (empty after a delete or a failure).
        uid: String,
        /// resourceVersion after the write.
        resource_version: String,
        /// `ok` or the error.
        outcome: String,
    },
    /// The run reached a phase (`creating-namespace`, `pending-recorded`,
    /// `objects-applied`, `waited`, `deployed-recorded`, `rolling-back`).
    #[serde(rename_all = "camelCase")]
    Phase {
        /// The run.
        run: String,
        /// The phase.
        phase: String,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    End {
        /// The run.
        run: String,
        /// `deployed`, `failed`, `rolled-back`, `uninstalled`, `recovered`.
        outcome: String,
    },
}

/// A release an atomic plan may change, and where it returns on failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxMember {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The revision to roll back to; `None`: the release is uninstalled
    /// (this apply installs it).
    pub rollback_revision: Option<u64>,
    /// The newest record's revision before the apply (`None`: there was
    /// none): a release whose newest record is not newer was not changed.
    pub last_revision: Option<u64>,
    /// The release's options (the rollback's wait and deadline).
    pub options: crate::plan::ReleaseOptions,
}

/// An entry of an atomic plan's transaction journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum TxEntry {
    /// The transaction starts.
    #[serde(rename_all = "camelCase")]
    Begin {
        /// The plan's id.
        plan_id: String,
        /// The releases, in plan order.
        members: Vec<TxMember>,
    },
    /// Every release succeeded: nothing is to be undone.
    Commit,
    /// A release is back at its rollback point.
    #[serde(rename_all = "camelCase")]
    Unwound {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// What was done.
        what: String,
    },
    /// The transaction ended (`committed`, `unwound`).
    End {
        /// How.
        outcome: String,
    },
}

/// An atomic plan's transaction journal, open for appends.
pub struct TxJournal {
    path: Option<PathBuf>,
    file: Option<File>,
    durable: bool,
    /// The transaction's entries.
    pub entries: Vec<TxEntry>,
}

impl TxJournal {
    /// Appends an entry, forced to disk (when durability is on).
    pub fn append(&mut self, e: TxEntry) -> Result<(), JournalError> {
        if let (Some(f), Some(p)) = (self.file.as_mut(), self.path.as_ref()) {
            let mut line = serde_json::to_vec(&e).unwrap_or_default();
            line.push(b'\n');
            f.write_all(&line)
                .map_err(|err| io("append journal", p, err))?;
            if self.durable {
                FSYNCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                f.sync_data().map_err(|err| io("sync journal", p, err))?;
            }
            faults::durable_write("journal");
        }
        self.entries.push(e);
        Ok(())
    }
}

/// The directory of the transaction journals under a journal directory.
const TRANSACTIONS: &str = ".transactions";

/// Where journals live.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: Option<PathBuf>,
    durable: bool,
}

/// The held lock of one release, with its journal file open for appends.
pub struct ReleaseJournal {
    path: Option<PathBuf>,
    file: Option<File>,
    _lock: Option<File>,
    durable: bool,
    /// Entries of this process's run (also kept in memory).
    pub entries: Vec<Entry>,
}

impl Journal {
    /// Journals under `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Journal {
        Journal {
            dir: Some(dir.into()),
            durable: true,
        }
    }

    /// A journal kept in memory only (tests, `memory:` stores).
    pub fn in_memory() -> Journal {
        Journal {
            dir: None,
            durable: false,
        }
    }

    /// Turns fsync off (the documented benchmark mode).
    pub fn without_fsync(mut self) -> Journal {
        self.durable = false;
        self
    }

    fn paths(&self, namespace: &str, name: &str) -> Option<(PathBuf, PathBuf)> {
        let d = self.dir.as_ref()?.join(namespace);
        Some((
            d.join(format!("{name}.journal")),
            d.join(format!("{name}.lock")),
        ))
    }

    /// Takes the release's lock, or fails naming the holder.
    #[allow(clippy::incompatible_msrv)]
    pub fn lock(&self, namespace: &str, name: &str) -> Result<ReleaseJournal, JournalError> {
        let Some((jpath, lpath)) = self.paths(namespace, name) else {
            return Ok(ReleaseJournal {
                path: None,
                file: None,
                _lock: None,
                durable: false,
                entries: Vec::new(),
            });
        };
        if let Some(parent) = lpath.parent() {
            fs::create_dir_all(parent).map_err(|e| io("create directory", parent, e))?;
        }
        let mut lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lpath)
            .map_err(|e| io("open lock", &lpath, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let holder = fs::read_to_string(&lpath).unwrap_or_default();
                return Err(JournalError::Held {
                    release: format!("{namespace}/{name}"),
                    holder: if holder.trim().is_empty() {
                        "unknown holder".into()
                    } else {
                        holder.trim().to_string()
                    },
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(io("lock", &lpath, e)),
        }
        let host = fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into());
        let me = format!(
            "pid {} on {host} since {}",
            std::process::id(),
            crate::release::HelmTime::now().to_rfc3339()
        );
        let _ = lock.set_len(0);
        let _ = lock.write_all(me.as_bytes());
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&jpath)
            .map_err(|e| io("open journal", &jpath, e))?;
        Ok(ReleaseJournal {
            path: Some(jpath),
            file: Some(file),
            _lock: Some(lock),
            durable: self.durable,
            entries: Vec::new(),
        })
    }

    /// Starts the transaction journal `id` of an atomic plan.
    pub fn transaction(&self, id: &str) -> Result<TxJournal, JournalError> {
        let Some(dir) = &self.dir else {
            return Ok(TxJournal {
                path: None,
                file: None,
                durable: false,
                entries: Vec::new(),
            });
        };
        let d = dir.join(TRANSACTIONS);
        fs::create_dir_all(&d).map_err(|e| io("create directory", &d, e))?;
        let path = d.join(format!("{id}.journal"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io("open journal", &path, e))?;
        Ok(TxJournal {
            path: Some(path),
            file: Some(file),
            durable: self.durable,
            entries: Vec::new(),
        })
    }

    /// The transactions that did not end: their ids and entries (a torn
    /// last line skipped), oldest file name first.
    pub fn open_transactions(&self) -> Result<Vec<(String, Vec<TxEntry>)>, JournalError> {
        let Some(dir) = &self.dir else {
            return Ok(Vec::new());
        };
        let d = dir.join(TRANSACTIONS);
        let listing = match fs::read_dir(&d) {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("read directory", &d, e)),
        };
        let mut names: Vec<String> = listing
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(".journal").map(str::to_string))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for id in names {
            let p = d.join(format!("{id}.journal"));
            let f = File::open(&p).map_err(|e| io("open journal", &p, e))?;
            let mut entries = Vec::new();
            for line in BufReader::new(f).lines() {
                let line = line.map_err(|e| io("read journal", &p, e))?;
                if let Ok(e) = serde_json::from_str::<TxEntry>(&line) {
                    entries.push(e);
                }
            }
            if !entries.iter().any(|e| matches!(e, TxEntry::End { .. })) {
                out.push((id, entries));
            }
        }
        Ok(out)
    }

    /// Whether another process holds the release's lock right now.
    pub fn holder(&self, namespace: &str, name: &str) -> Option<String> {
        match self.lock(namespace, name) {
            Err(JournalError::Held { holder, .. }) => Some(holder),
            _ => None,
        }
    }
}

impl ReleaseJournal {
    /// Every entry on disk (all runs), skipping a torn last line.
    pub fn read_all(&self) -> Result<Vec<Entry>, JournalError> {
        let Some(p) = &self.path else {
            return Ok(self.entries.clone());
        };
        let f = match File::open(p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("open journal", p, e)),
        };
        match f.metadata() {
            Ok(m) if m.len() > crate::input::MAX_INPUT_BYTES => {
                return Err(io("read journal", p, crate::input::too_large()))
            }
            Ok(_) => {}
            Err(e) => return Err(io("read journal", p, e)),
        }
        let mut out = Vec::new();
        for line in BufReader::new(f).lines() {
            let line = line.map_err(|e| io("read journal", p, e))?;
            if let Ok(e) = serde_json::from_str::<Entry>(&line) {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// The entries of the last run when it did not end: `(begin, rest)`.
    pub fn interrupted(&self) -> Result<Option<Vec<Entry>>, JournalError> {
        let all = self.read_all()?;
        let Some(start) = all.iter().rposition(|e| matches!(e, Entry::Begin { .. })) else {
            return Ok(None);
        };
        let run = all[start..].to_vec();
        if run.iter().any(|e| matches!(e, Entry::End { .. })) {
            return Ok(None);
        }
        Ok(Some(run))
    }

    /// Appends an entry; `sync` forces it to disk (when durability is on).
    pub fn append(&mut self, e: Entry, sync: bool) -> Result<(), JournalError> {
        if let (Some(f), Some(p)) = (self.file.as_mut(), self.path.as_ref()) {
            let mut line = serde_json::to_vec(&e).unwrap_or_default();
            line.push(b'\n');
            f.write_all(&line)
                .map_err(|err| io("append journal", p, err))?;
            if sync && self.durable {
                FSYNCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                f.sync_data().map_err(|err| io("sync journal", p, err))?;
            }
            faults::durable_write("journal");
        }
        self.entries.push(e);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_named() {
        let d = tempfile::tempdir().unwrap();
        let j = Journal::at(d.path());
        let _held = j.lock("ns", "web").unwrap();
        match j.lock("ns", "web") {
            Err(JournalError::Held { holder, release }) => {
                assert_eq!(release, "ns/web");
                assert!(
                    holder.starts_with(&format!("pid {}", std::process::id())),
                    "{holder}"
                );
            }
            other => panic!("{:?}", other.err()),
        }
    }

    #[test]
    fn an_unended_run_is_interrupted_and_torn_lines_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let j = Journal::at(d.path());
        let mut r = j.lock("ns", "web").unwrap();
        r.append(
            Entry::Begin {
                run: "a".into(),
                operation: "upgrade".into(),
                plan_id: String::new(),
                revision: 2,
                rollback_revision: Some(1),
                atomic: true,
                intents: vec![],
            },
            true,
        )
        .unwrap();
        drop(r);
        let p = d.path().join("ns/web.journal");
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"event\":\"wri").unwrap();
        let r = j.lock("ns", "web").unwrap();
        let run = r.interrupted().unwrap().unwrap();
        assert_eq!(run.len(), 1);
    }
}
