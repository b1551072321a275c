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
//! whose `begin` has no `end` was interrupted. A torn last line (one
//! without its newline, which an interrupted append leaves) is ignored by
//! readers and cut off when the journal is next opened for writing; any
//! other line that is not an entry is an error naming the file and the
//! line ([`JournalError::Garbled`]), never skipped: a journal edited by
//! hand must not make rudder recover a run that ended, or miss one that
//! did not. Journal files are 0600 and their directories 0700.
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
use crate::fsutil;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
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
    /// A line other than a torn last one is not a journal entry: the
    /// journal was changed by something other than rudder, and what it
    /// says about the release cannot be trusted.
    #[error("journal {path}: line {line} is not a journal entry ({reason}; only a torn last line is ignored): check the release's records and objects, then move the journal aside")]
    Garbled {
        /// The file.
        path: String,
        /// The line, counted from 1.
        line: usize,
        /// Why it does not parse (with the column in the line).
        reason: String,
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

/// Reads a journal's entries. Every line must be an entry, except a torn
/// last line (one without its newline, which an interrupted append
/// leaves), which is ignored; anything else is [`JournalError::Garbled`].
/// A missing file has no entries.
fn read_entries<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, JournalError> {
    let data = match fs::metadata(path) {
        Ok(m) if m.len() > crate::input::MAX_INPUT_BYTES => {
            return Err(io("read journal", path, crate::input::too_large()))
        }
        Ok(_) => fs::read(path),
        Err(e) => Err(e),
    };
    let data = match data {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("read journal", path, e)),
    };
    let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut lines: Vec<&[u8]> = data[..complete].split(|&b| b == b'\n').collect();
    // The empty piece after the last newline is no line.
    lines.pop();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.into_iter().enumerate() {
        let e = serde_json::from_slice(line).map_err(|error| JournalError::Garbled {
            path: path.display().to_string(),
            line: i + 1,
            // serde's position is within the line: keep only its column.
            reason: error
                .to_string()
                .replace(" at line 1 column ", " at column "),
        })?;
        out.push(e);
    }
    Ok(out)
}

/// Cuts a torn last line (one without its newline, left by an interrupted
/// append) off a journal its caller holds, so that the next entry starts
/// a line of its own.
fn cut_torn_tail(f: &File, path: &Path) -> Result<(), JournalError> {
    use std::io::{Read, Seek, SeekFrom};
    let len = f.metadata().map_err(|e| io("stat journal", path, e))?.len();
    if len == 0 {
        return Ok(());
    }
    let mut r = f;
    let mut last = [0u8];
    r.seek(SeekFrom::Start(len - 1))
        .and_then(|_| r.read_exact(&mut last))
        .map_err(|e| io("read journal", path, e))?;
    if last[0] == b'\n' {
        return Ok(());
    }
    if len > crate::input::MAX_INPUT_BYTES {
        return Err(io("read journal", path, crate::input::too_large()));
    }
    // The last newline, found by reading back from the end a block at a
    // time (a torn line is short; the journal need not be read whole).
    let mut end = len;
    let mut block = vec![0u8; 64 * 1024];
    let mut keep = 0;
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let chunk = &mut block[..(end - start) as usize];
        r.seek(SeekFrom::Start(start))
            .and_then(|_| r.read_exact(chunk))
            .map_err(|e| io("read journal", path, e))?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            keep = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    f.set_len(keep).map_err(|e| io("truncate journal", path, e))
}

fn write_err(e: fsutil::WriteError) -> JournalError {
    JournalError::Io {
        op: e.op,
        path: e.path.display().to_string(),
        error: e.error,
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
    ///
    /// A lock that stays taken for [`LOCK_PATIENCE`] is held by someone
    /// else; a shorter hold is a child process that another thread of this
    /// process was starting when the lock was last released (a child
    /// shares the lock's open file until it execs) and is waited out.
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
        if let Some(dir) = &self.dir {
            fsutil::private_dir(dir).map_err(write_err)?;
        }
        if let Some(parent) = lpath.parent() {
            fsutil::private_dir(parent).map_err(write_err)?;
        }
        let mut lock = fsutil::open_private(
            &lpath,
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true),
        )
        .map_err(write_err)?;
        match try_lock_patiently(&lock) {
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
        let file = fsutil::open_private(
            &jpath,
            OpenOptions::new().create(true).read(true).append(true),
        )
        .map_err(write_err)?;
        cut_torn_tail(&file, &jpath)?;
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
        fsutil::private_dir(dir).map_err(write_err)?;
        fsutil::private_dir(&d).map_err(write_err)?;
        let path = d.join(format!("{id}.journal"));
        let file = fsutil::open_private(
            &path,
            OpenOptions::new().create(true).read(true).append(true),
        )
        .map_err(write_err)?;
        cut_torn_tail(&file, &path)?;
        Ok(TxJournal {
            path: Some(path),
            file: Some(file),
            durable: self.durable,
            entries: Vec::new(),
        })
    }

    /// The transactions that did not end: their ids and entries (a torn
    /// last line ignored, any other garbled line an error), oldest file
    /// name first.
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
            let entries: Vec<TxEntry> = read_entries(&p)?;
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
    /// Every entry on disk (all runs). A torn last line (one without its
    /// newline) is ignored; any other line that is not an entry is
    /// [`JournalError::Garbled`], naming the file and the line.
    pub fn read_all(&self) -> Result<Vec<Entry>, JournalError> {
        let Some(p) = &self.path else {
            return Ok(self.entries.clone());
        };
        read_entries(p)
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

/// How long [`Journal::lock`] retries a taken lock before it reports the
/// holder: far longer than a fork-to-exec window, far shorter than any
/// release's apply.
pub const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// `try_lock`, retried every few milliseconds for [`LOCK_PATIENCE`] while
/// the lock is taken.
#[allow(clippy::incompatible_msrv)]
fn try_lock_patiently(lock: &File) -> Result<(), fs::TryLockError> {
    let start = std::time::Instant::now();
    loop {
        match lock.try_lock() {
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
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

    fn begin(run: &str) -> Entry {
        Entry::Begin {
            run: run.into(),
            operation: "upgrade".into(),
            plan_id: String::new(),
            revision: 2,
            rollback_revision: Some(1),
            atomic: true,
            intents: vec![],
        }
    }

    fn end(run: &str) -> Entry {
        Entry::End {
            run: run.into(),
            outcome: "deployed".into(),
        }
    }

    /// Writes a journal of `lines` (each followed by a newline) for ns/web.
    fn journal_of(lines: &[String]) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("ns/web.journal");
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(
            &p,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
        (d, p)
    }

    fn line(e: &Entry) -> String {
        serde_json::to_string(e).unwrap()
    }

    #[test]
    fn a_garbled_line_is_an_error_naming_the_file_and_the_line() {
        for (lines, bad) in [
            // In the middle.
            (
                vec![
                    line(&begin("a")),
                    "{\"event\":\"wri".into(),
                    line(&end("a")),
                ],
                2,
            ),
            // Last, but whole (it has its newline): not torn.
            (
                vec![line(&begin("a")), line(&end("a")), "garbage".into()],
                3,
            ),
            // A known shape with a field missing.
            (vec![line(&begin("a")), "{\"event\":\"end\"}".into()], 2),
            // An empty line.
            (vec![line(&begin("a")), String::new(), line(&end("a"))], 2),
        ] {
            let (d, p) = journal_of(&lines);
            let j = Journal::at(d.path());
            let r = j.lock("ns", "web").unwrap();
            match r.interrupted() {
                Err(JournalError::Garbled { path, line, .. }) => {
                    assert_eq!((path.as_str(), line), (p.to_str().unwrap(), bad));
                }
                other => panic!("{lines:?}: {other:?}"),
            }
            let msg = r.read_all().unwrap_err().to_string();
            assert!(
                msg.contains(&format!("{}: line {bad} ", p.display())),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_garbled_end_line_does_not_make_an_ended_run_look_interrupted() {
        // The run ended; its `end` line was then edited.
        let edited = line(&end("a")).replace("\"end\"", "\"ebd\"");
        let (d, _) = journal_of(&[line(&begin("a")), edited]);
        let j = Journal::at(d.path());
        let r = j.lock("ns", "web").unwrap();
        assert!(matches!(
            r.interrupted(),
            Err(JournalError::Garbled { line: 2, .. })
        ));
    }

    #[test]
    fn a_torn_last_line_is_cut_before_the_next_append() {
        let (d, p) = journal_of(&[line(&begin("a"))]);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"event\":\"en").unwrap();
        drop(f);
        let j = Journal::at(d.path());
        let mut r = j.lock("ns", "web").unwrap();
        r.append(end("a"), true).unwrap();
        drop(r);
        let r = j.lock("ns", "web").unwrap();
        assert_eq!(r.read_all().unwrap(), vec![begin("a"), end("a")]);
        assert!(r.interrupted().unwrap().is_none());
    }

    #[test]
    fn journals_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("journal");
        let j = Journal::at(&root);
        let mut r = j.lock("ns", "web").unwrap();
        r.append(begin("a"), true).unwrap();
        let mut t = j.transaction("t1").unwrap();
        t.append(TxEntry::Commit).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        for dir in [root.clone(), root.join("ns"), root.join(TRANSACTIONS)] {
            assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        }
        for f in ["ns/web.journal", "ns/web.lock", ".transactions/t1.journal"] {
            assert_eq!(mode(&root.join(f)), 0o600, "{f}");
        }
    }
}
