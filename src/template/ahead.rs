//! Template files parsed ahead, on helper threads that outlive the call
//! that starts them: a render hands its likely files to the engine as soon
//! as the chart is loaded, prepares its values meanwhile, then adds and
//! executes the files as their parses arrive (see
//! [`Engine::parse_ahead`](super::Engine::parse_ahead) and
//! [`Engine::add_templates_visiting`](super::Engine::add_templates_visiting)).
use super::ast::{Source, Tree};
use super::funcs::Registry;
use super::parse;
use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// A file's parse: its trees, or its error.
pub(super) type ParseResult = Result<Vec<Tree>, parse::ParseError>;

/// What identifies a file's bytes while they are shared: the same address
/// and length are the same text.
fn bytes_id(source: &Source) -> (usize, usize) {
    (source.bytes().as_ptr() as usize, source.len())
}

/// Whether a template text may define templates: `define` and `block` are
/// the only actions that do, and each needs its keyword in the text.
pub(super) fn may_define(source: &Source) -> bool {
    let b = source.bytes();
    memchr::memmem::find(b, b"define").is_some() || memchr::memmem::find(b, b"block").is_some()
}

/// One queued file's state.
enum Slot {
    Pending,
    Ready(ParseResult),
    /// Taken by the owner (taking it again gives no trees).
    Taken,
}

impl Slot {
    fn take(&mut self) -> Option<ParseResult> {
        match std::mem::replace(self, Slot::Taken) {
            Slot::Ready(r) => Some(r),
            Slot::Taken => Some(Ok(Vec::new())),
            Slot::Pending => {
                *self = Slot::Pending;
                None
            }
        }
    }
}

/// Files to parse, claimed one at a time by whichever thread is free.
struct Queue {
    /// In the order given (positions name the files everywhere).
    files: Vec<(String, Source)>,
    /// The claim order, worked out by the first thread that claims a file
    /// (a helper, normally, so that scanning every file for `define` does
    /// not hold up the thread that started the parse).
    plan: OnceLock<Plan>,
    /// How many files have been claimed (an index into the plan's order).
    next: AtomicUsize,
    /// Set when the owner is gone: helpers stop claiming.
    stop: AtomicBool,
    /// Results by position in `files`, until taken.
    done: Mutex<Vec<Slot>>,
    /// Signalled whenever a result is stored.
    ready: Condvar,
    registry: Arc<Registry>,
}

/// In what order a queue's files are parsed.
struct Plan {
    /// Positions: the files that may define templates first, then the
    /// others, each group in the given order.
    order: Vec<usize>,
    /// By position: whether the file may define templates ([`may_define`]).
    defines: Vec<bool>,
}

impl Queue {
    fn plan(&self) -> &Plan {
        self.plan.get_or_init(|| {
            let defines: Vec<bool> = self.files.iter().map(|(_, s)| may_define(s)).collect();
            let (mut order, rest): (Vec<usize>, Vec<usize>) =
                (0..self.files.len()).partition(|&k| defines[k]);
            order.extend(rest);
            Plan { order, defines }
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Slot>> {
        // Nothing panics while holding the lock.
        self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Parses the next unclaimed file; `None` once all are claimed (or,
    /// for a helper, once the owner is gone).
    fn parse_next(&self, helper: bool) -> Option<()> {
        if helper && self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let claim = self.next.fetch_add(1, Ordering::Relaxed);
        let k = *self.plan().order.get(claim)?;
        let (name, source) = self.files.get(k)?;
        let registry = &self.registry;
        // A panic would leave the file's owner waiting forever; it becomes
        // this file's error instead.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            parse::parse_source(name, source, &|f| registry.get(f).is_some())
        }))
        .unwrap_or_else(|_| {
            Err(parse::ParseError {
                name: name.clone(),
                line: 0,
                column: 0,
                msg: "internal error: the template parser panicked".into(),
            })
        });
        if let Some(slot) = self.lock().get_mut(k) {
            *slot = Slot::Ready(result);
        }
        self.ready.notify_all();
        Some(())
    }

    /// The result for position `k`, moved out: parses other files while it
    /// is not ready, and waits once every file is claimed.
    fn take(&self, k: usize) -> ParseResult {
        loop {
            if let Some(r) = self.lock().get_mut(k).and_then(Slot::take) {
                return r;
            }
            if self.parse_next(false).is_none() {
                let mut done = self.lock();
                loop {
                    match done.get_mut(k) {
                        Some(slot) => {
                            if let Some(r) = slot.take() {
                                return r;
                            }
                        }
                        None => return Ok(Vec::new()),
                    }
                    done = self
                        .ready
                        .wait(done)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// Files being parsed ahead for an engine. Dropping it stops the helpers
/// after the files they are parsing.
pub(super) struct Ahead {
    queue: Arc<Queue>,
    /// Position in the queue by file name.
    index: HashMap<String, usize>,
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.queue.stop.store(true, Ordering::Relaxed);
    }
}

impl Ahead {
    /// Starts `helpers` threads parsing `files`, those that may define
    /// templates first, the others in the given order.
    pub(super) fn start(
        registry: Arc<Registry>,
        files: Vec<(String, Source)>,
        helpers: usize,
    ) -> Ahead {
        let index = files
            .iter()
            .enumerate()
            .map(|(k, (name, _))| (name.clone(), k))
            .collect();
        let queue = Arc::new(Queue {
            done: Mutex::new(files.iter().map(|_| Slot::Pending).collect()),
            files,
            plan: OnceLock::new(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            ready: Condvar::new(),
            registry,
        });
        for _ in 0..helpers {
            let q = queue.clone();
            // Without a helper, the owner parses every file itself.
            let _ =
                std::thread::Builder::new().spawn(move || while q.parse_next(true).is_some() {});
        }
        Ahead { queue, index }
    }

    /// The queue position of `name` when it is queued with these bytes.
    pub(super) fn find(&self, name: &str, source: &Source) -> Option<usize> {
        let &k = self.index.get(name)?;
        let (_, queued) = self.queue.files.get(k)?;
        (bytes_id(queued) == bytes_id(source)).then_some(k)
    }

    /// Whether `files` are exactly the queued files (same names, same
    /// bytes), in any order.
    pub(super) fn holds_exactly(&self, files: &[(String, Source)]) -> bool {
        files.len() == self.queue.files.len()
            && files
                .iter()
                .all(|(name, source)| self.find(name, source).is_some())
    }

    /// Whether the file at queue position `k` may define templates (as
    /// [`may_define`] finds).
    pub(super) fn may_define(&self, k: usize) -> bool {
        self.queue.plan().defines.get(k).copied().unwrap_or(true)
    }

    /// The parse of queue position `k` (see [`Queue::take`]); each position
    /// can be taken once.
    pub(super) fn take(&self, k: usize) -> ParseResult {
        self.queue.take(k)
    }
}
