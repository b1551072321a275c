//! Writing files safely, and keeping private ones private: every stage
//! that writes a file goes through this module.
//!
//! - [`atomic_write`] (and [`AtomicWrite`] for its options) is the one way
//!   rudder replaces or creates a file: a fresh `.tmp-*` file in the same
//!   directory, written, fsynced, renamed over the target (or linked to it,
//!   when the target must not exist yet), then the directory fsynced. A
//!   crash leaves the old file or the new one, never a torn one under the
//!   final name; at worst a stray `.tmp-*` file.
//! - [`private_dir`] and [`open_private`] create what rudder keeps under
//!   a release store, a journal or a simulated cluster owner-only
//!   (directories 0700, files 0600), whatever the umask, and tighten an
//!   existing one whose mode lets group or others in.
//!
//! A tightened file or directory is reported as a [`Tightened`] warning:
//! by default on stderr (`warning: tightened mode of ...`), the way the
//! release stores report records they skip; a program that embeds rudder
//! can take the warnings with [`set_warning_sink`].
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The mode of a private file: read and write for its owner only.
pub const PRIVATE_FILE: u32 = 0o600;
/// The mode of a private directory: its owner only.
pub const PRIVATE_DIR: u32 = 0o700;

/// The mode a written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Exactly this mode, whatever the umask; a file it replaces that had
    /// more permission bits is reported as [`Tightened`].
    Exact(u32),
    /// This mode less the process's umask, as `open(2)` gives it
    /// (`Umask(0o666)` is what `std::fs::write` gives).
    Umask(u32),
}

impl Mode {
    /// Owner-only, 0600: anything under a store, a journal or a simulated
    /// cluster, and saved plans.
    pub const PRIVATE: Mode = Mode::Exact(PRIVATE_FILE);
    /// 0666 less the umask: files meant to be shared, such as chart archives.
    pub const SHARED: Mode = Mode::Umask(0o666);
}

/// A step of an atomic write, in order (for fault injection, see
/// [`AtomicWrite::hook`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Creating the temp file.
    CreateTemp,
    /// Writing the data into it.
    WriteTemp,
    /// Fsyncing it.
    SyncTemp,
    /// Renaming (or linking) it to the target.
    Publish,
    /// Fsyncing the directory.
    SyncDir,
}

/// A write step failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}", path.display())]
pub struct WriteError {
    /// What was being done: `create temp file`, `write temp file`, `fsync
    /// temp file`, `rename`, `link`, `fsync directory`, `create directory`,
    /// `open`, `chmod`.
    pub op: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub error: io::Error,
}

impl WriteError {
    fn new<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> WriteError + 'p {
        move |error| WriteError {
            op,
            path: path.to_path_buf(),
            error,
        }
    }
}

/// A file or directory whose mode let group or others in, made owner-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    /// The file or directory.
    pub path: PathBuf,
    /// Its permission bits before.
    pub from: u32,
    /// Its permission bits now.
    pub to: u32,
}

impl std::fmt::Display for Tightened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tightened mode of {} from {:04o} to {:04o}: it may hold secrets, and was readable by others",
            self.path.display(),
            self.from,
            self.to
        )
    }
}

/// Where [`Tightened`] warnings go (see [`set_warning_sink`]).
pub type Sink = Arc<dyn Fn(&Tightened) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Sends [`Tightened`] warnings to `sink` instead of stderr, for the whole
/// process (`None`: back to stderr).
pub fn set_warning_sink(sink: Option<Sink>) {
    if let Ok(mut s) = SINK.write() {
        *s = sink;
    }
}

fn report(t: Tightened) {
    let sink = SINK.read().ok().and_then(|s| s.clone());
    match sink {
        Some(f) => f(&t),
        None => eprintln!("warning: {t}"),
    }
}

/// Serializes tightening within the process: two threads writing into
/// one store (a plan's releases apply in parallel) must not both see the
/// old mode, both chmod and both warn.
static TIGHTEN: Mutex<()> = Mutex::new(());

/// Tightens `path` to owner-only when its mode (read by `stat`, under
/// [`TIGHTEN`]) lets group or others in; reports it once.
fn tighten(
    path: &Path,
    stat: impl FnOnce() -> io::Result<u32>,
    set: impl FnOnce(fs::Permissions) -> io::Result<()>,
) -> Result<(), WriteError> {
    // A poisoned lock only means another thread panicked mid-chmod; the
    // mode is re-read here either way.
    let _guard = TIGHTEN.lock().unwrap_or_else(|e| e.into_inner());
    let bits = stat().map_err(WriteError::new("stat", path))? & 0o7777;
    if bits & 0o077 == 0 {
        return Ok(());
    }
    let to = bits & !0o077;
    set(fs::Permissions::from_mode(to)).map_err(WriteError::new("chmod", path))?;
    report(Tightened {
        path: path.to_path_buf(),
        from: bits,
        to,
    });
    Ok(())
}

/// Creates `dir` and its missing parents owner-only (0700, whatever the
/// umask), or tightens it when it exists with group or other bits
/// (reported as [`Tightened`]).
pub fn private_dir(dir: &Path) -> Result<(), WriteError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR)
        .create(dir)
        .map_err(WriteError::new("create directory", dir))?;
    tighten(
        dir,
        || fs::metadata(dir).map(|m| m.permissions().mode()),
        |p| fs::set_permissions(dir, p),
    )
}

/// Creates `dir` and its missing parents owner-only (0700, whatever the
/// umask), and leaves a directory that exists as it is: for a root the
/// user names (a store's directory may be one the user keeps other things
/// in), whose entries rudder makes private itself.
pub fn create_private_dir(dir: &Path) -> Result<(), WriteError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR)
        .create(dir)
        .map_err(WriteError::new("create directory", dir))
}

/// Opens (and with `create`, creates) a file owner-only: a new file is
/// 0600 whatever the umask, an existing one with group or other bits is
/// tightened (reported as [`Tightened`]). `opts` says how to open it.
pub fn open_private(path: &Path, opts: &mut OpenOptions) -> Result<File, WriteError> {
    let f = opts
        .mode(PRIVATE_FILE)
        .open(path)
        .map_err(WriteError::new("open", path))?;
    tighten(
        path,
        || f.metadata().map(|m| m.permissions().mode()),
        |p| f.set_permissions(p),
    )?;
    Ok(f)
}

/// Tightens an existing file or directory to owner-only when its mode
/// lets group or others in (reported as [`Tightened`]); a missing one is
/// left missing.
pub fn tighten_existing(path: &Path) -> Result<(), WriteError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_symlink() => tighten(
            path,
            || fs::symlink_metadata(path).map(|m| m.permissions().mode()),
            |p| fs::set_permissions(path, p),
        ),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(WriteError::new("stat", path)(e)),
    }
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temp file name in `dir`: `.tmp-<pid>-<n>`. Stores and the
/// simulated cluster remove such leftovers of interrupted writes.
pub fn tmp_path(dir: &Path) -> PathBuf {
    dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::SeqCst)
    ))
}

/// A step hook: called before each step; an error stops the write there.
pub type Hook<'a> = &'a (dyn Fn(Step, &Path) -> io::Result<()> + Sync);

/// An atomic write with options; [`atomic_write`] is the common case.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rudder::fsutil::{AtomicWrite, Mode};
/// use std::os::unix::fs::PermissionsExt;
/// let dir = tempfile::tempdir()?;
/// let p = dir.path().join("state.json");
/// AtomicWrite::new(Mode::PRIVATE).write(&p, b"{}")?;
/// assert_eq!(std::fs::metadata(&p)?.permissions().mode() & 0o777, 0o600);
/// // `no_replace`: the target must not exist yet.
/// let e = AtomicWrite::new(Mode::PRIVATE).no_replace().write(&p, b"{}").unwrap_err();
/// assert_eq!(e.error.kind(), std::io::ErrorKind::AlreadyExists);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct AtomicWrite<'a> {
    mode: Mode,
    replace: bool,
    fsync: bool,
    hook: Option<Hook<'a>>,
}

impl std::fmt::Debug for AtomicWrite<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicWrite")
            .field("mode", &self.mode)
            .field("replace", &self.replace)
            .field("fsync", &self.fsync)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

impl<'a> AtomicWrite<'a> {
    /// A write that replaces the target, fsynced, with this mode.
    pub fn new(mode: Mode) -> Self {
        AtomicWrite {
            mode,
            replace: true,
            fsync: true,
            hook: None,
        }
    }

    /// Publishes with `link(2)` instead of `rename(2)`: an existing target
    /// is never replaced, and the write fails with
    /// [`io::ErrorKind::AlreadyExists`].
    pub fn no_replace(mut self) -> Self {
        self.replace = false;
        self
    }

    /// Whether to fsync the file and the directory (on by default; off is
    /// a benchmark mode: the rename is still atomic, but not durable).
    pub fn fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }

    /// Calls `hook` before each step (crash testing).
    pub fn hook(mut self, hook: Hook<'a>) -> Self {
        self.hook = Some(hook);
        self
    }

    fn step(&self, s: Step, op: &'static str, path: &Path) -> Result<(), WriteError> {
        match self.hook {
            Some(h) => h(s, path).map_err(WriteError::new(op, path)),
            None => Ok(()),
        }
    }

    /// Writes `data` to `path`: temp file, write, fsync, rename (or link),
    /// fsync the directory. On failure the temp file is removed and the
    /// target is as it was.
    pub fn write(&self, path: &Path, data: &[u8]) -> Result<(), WriteError> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = tmp_path(dir);
        let r = self
            .write_tmp(&tmp, data)
            .and_then(|()| self.publish(&tmp, path));
        if r.is_err() || !self.replace {
            let _ = fs::remove_file(&tmp);
        }
        r?;
        if self.fsync {
            self.step(Step::SyncDir, "fsync directory", dir)?;
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(WriteError::new("fsync directory", dir))?;
        }
        Ok(())
    }

    fn write_tmp(&self, tmp: &Path, data: &[u8]) -> Result<(), WriteError> {
        self.step(Step::CreateTemp, "create temp file", tmp)?;
        let (create_mode, exact) = match self.mode {
            Mode::Exact(m) => (m, Some(m)),
            Mode::Umask(m) => (m, None),
        };
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(create_mode)
            .open(tmp)
            .map_err(WriteError::new("create temp file", tmp))?;
        if let Some(m) = exact {
            // The umask may have taken bits away; the mode is exact.
            f.set_permissions(fs::Permissions::from_mode(m))
                .map_err(WriteError::new("chmod", tmp))?;
        }
        self.step(Step::WriteTemp, "write temp file", tmp)?;
        f.write_all(data)
            .map_err(WriteError::new("write temp file", tmp))?;
        if self.fsync {
            self.step(Step::SyncTemp, "fsync temp file", tmp)?;
            f.sync_all()
                .map_err(WriteError::new("fsync temp file", tmp))?;
        }
        Ok(())
    }

    fn publish(&self, tmp: &Path, path: &Path) -> Result<(), WriteError> {
        if !self.replace {
            self.step(Step::Publish, "link", path)?;
            return fs::hard_link(tmp, path).map_err(WriteError::new("link", path));
        }
        // The file replaced may have been readable by others: say so.
        let before = match self.mode {
            Mode::Exact(m) => fs::symlink_metadata(path)
                .ok()
                .filter(|old| old.is_file())
                .map(|old| old.permissions().mode() & 0o7777)
                .filter(|old| old & !m & 0o077 != 0)
                .map(|old| (old, m)),
            Mode::Umask(_) => None,
        };
        self.step(Step::Publish, "rename", path)?;
        fs::rename(tmp, path).map_err(WriteError::new("rename", path))?;
        if let Some((from, to)) = before {
            report(Tightened {
                path: path.to_path_buf(),
                from,
                to,
            });
        }
        Ok(())
    }
}

/// Writes `data` to `path` atomically and durably with `mode`: see
/// [`AtomicWrite::write`].
pub fn atomic_write(path: &Path, data: &[u8], mode: Mode) -> Result<(), WriteError> {
    AtomicWrite::new(mode).write(path, data)
}

/// [`atomic_write`] without the fsyncs, as Helm's `AtomicWriteFile`:
/// readers see the old file or the new one whole, never a part, but the
/// new one may not survive a crash. For files that are checked when read
/// (the chart cache, by digest) or that a command can write again
/// (downloaded charts and indexes): an fsync costs a few milliseconds a
/// file, more than the download of a small chart.
pub fn replace_file(path: &Path, data: &[u8], mode: Mode) -> Result<(), WriteError> {
    AtomicWrite::new(mode).fsync(false).write(path, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warning sink is process-wide: tests that set it take turns.
    static SINK_TESTS: Mutex<()> = Mutex::new(());

    /// Runs `f` with a sink that collects the warnings about `under`.
    fn collect_warnings(under: &Path, f: impl FnOnce()) -> Vec<Tightened> {
        let _turn = SINK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        // Other tests may write private files at the same time: keep ours.
        let mine = under.to_path_buf();
        set_warning_sink(Some(Arc::new(move |t: &Tightened| {
            if t.path.starts_with(&mine) {
                s.lock().unwrap().push(t.clone());
            }
        })));
        f();
        set_warning_sink(None);
        let seen = seen.lock().unwrap().clone();
        seen
    }

    #[test]
    fn threads_tightening_one_directory_warn_once() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("store");
        fs::create_dir(&dir).unwrap();
        let rounds = 200;
        let seen = collect_warnings(d.path(), || {
            for _ in 0..rounds {
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
                let start = std::sync::Barrier::new(8);
                std::thread::scope(|s| {
                    for _ in 0..8 {
                        s.spawn(|| {
                            start.wait();
                            private_dir(&dir).unwrap()
                        });
                    }
                })
            }
        });
        assert_eq!(seen.len(), rounds, "one warning per round");
        assert!(seen.iter().all(|t| (t.from, t.to) == (0o755, 0o700)));
    }

    #[test]
    fn a_replaced_file_is_private_and_its_old_mode_reported() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        let seen = collect_warnings(&p, || atomic_write(&p, b"new", Mode::PRIVATE).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].from, seen[0].to), (0o644, 0o600));
        // No temp file is left.
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_step_leaves_the_old_file_and_no_temp_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        fs::write(&p, b"old").unwrap();
        for fail in [
            Step::CreateTemp,
            Step::WriteTemp,
            Step::SyncTemp,
            Step::Publish,
        ] {
            let hook = move |s: Step, _: &Path| {
                if s == fail {
                    Err(io::Error::other("injected"))
                } else {
                    Ok(())
                }
            };
            let e = AtomicWrite::new(Mode::PRIVATE)
                .hook(&hook)
                .write(&p, b"new")
                .unwrap_err();
            assert_eq!(e.error.to_string(), "injected");
            assert_eq!(fs::read(&p).unwrap(), b"old", "{fail:?}");
            assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1, "{fail:?}");
        }
    }

    #[test]
    fn private_dirs_and_files_are_created_owner_only_and_tightened() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("a/b");
        private_dir(&sub).unwrap();
        for p in [d.path().join("a"), sub.clone()] {
            assert_eq!(
                fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&sub).unwrap();
        assert_eq!(
            fs::metadata(&sub).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let f = sub.join("j");
        fs::write(&f, b"x").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o666)).unwrap();
        open_private(&f, OpenOptions::new().append(true)).unwrap();
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn shared_files_keep_the_umask_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.tgz");
        atomic_write(&p, b"x", Mode::SHARED).unwrap();
        let m = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        // 0666 less whatever the test process's umask is: never more.
        assert_eq!(m & !0o666, 0);
        assert_ne!(m & 0o600, 0);
    }
}
