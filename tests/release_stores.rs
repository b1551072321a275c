//! Store guarantees: crash safety of the file store (a crash at any write
//! step leaves the old or the new state), concurrent writers (exactly one
//! wins, nothing is lost), the decoder never panics, and the lifecycle
//! writes what Helm writes.
mod release_common;

use proptest::prelude::*;
use rudder::release::store::file::{FaultInjector, FileStore};
use rudder::release::store::memory::MemoryStore;
use rudder::release::{
    codec, HistoryMax, Release, Releases, RevisionContent, Status, Store, StoreError,
};
use std::sync::{Arc, Barrier};

fn rel(name: &str, version: u64, status: Status, desc: &str) -> Release {
    let mut r = Release {
        name: name.into(),
        namespace: "default".into(),
        version,
        ..Release::default()
    };
    r.info.status = status;
    r.info.description = desc.into();
    r
}

/// What a reader sees: (version, status, description) of every revision.
fn snapshot(dir: &std::path::Path) -> Vec<(u64, Status, String)> {
    let s = FileStore::open(dir).unwrap();
    s.history("default", "web")
        .unwrap()
        .into_iter()
        .map(|r| (r.version, r.info.status, r.info.description))
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Create,
    Update,
    Delete,
}

/// Runs one write with a crash injected at `fail_at`; returns whether it completed.
fn write_with_crash(dir: &std::path::Path, op: Op, fail_at: usize) -> bool {
    let s = FileStore::open_with_faults(dir, FaultInjector::fail_at(fail_at)).unwrap();
    match op {
        Op::Create => s
            .create(&rel("web", 3, Status::PendingUpgrade, "Preparing upgrade"))
            .is_ok(),
        Op::Update => {
            let cur = FileStore::open(dir)
                .unwrap()
                .get("default", "web", 2)
                .unwrap();
            let mut n = cur.clone();
            n.info.status = Status::Superseded;
            n.info.description = "new".into();
            s.update(&cur, &n).is_ok()
        }
        Op::Delete => s.delete("default", "web", 1).is_ok(),
    }
}

fn seed(dir: &std::path::Path) {
    let s = FileStore::open(dir).unwrap();
    s.create(&rel("web", 1, Status::Superseded, "Install complete"))
        .unwrap();
    s.create(&rel("web", 2, Status::Deployed, "Upgrade complete"))
        .unwrap();
}

#[test]
fn file_store_crash_at_every_step_leaves_old_or_new_state() {
    let mut checked = 0;
    for op in [Op::Create, Op::Update, Op::Delete] {
        // Learn the new state and how many steps the write takes.
        let t = tempfile::tempdir().unwrap();
        seed(t.path());
        let old = snapshot(t.path());
        assert!(write_with_crash(t.path(), op, usize::MAX));
        let new = snapshot(t.path());
        assert_ne!(old, new);
        let steps = {
            let t2 = tempfile::tempdir().unwrap();
            seed(t2.path());
            let f = FaultInjector::fail_at(usize::MAX);
            let s = FileStore::open_with_faults(t2.path(), f.clone()).unwrap();
            match op {
                Op::Create => s
                    .create(&rel("web", 3, Status::PendingUpgrade, "Preparing upgrade"))
                    .unwrap(),
                Op::Update => {
                    let cur = s.get("default", "web", 2).unwrap();
                    let mut n = cur.clone();
                    n.info.status = Status::Superseded;
                    n.info.description = "new".into();
                    s.update(&cur, &n).unwrap()
                }
                Op::Delete => {
                    s.delete("default", "web", 1).unwrap();
                }
            }
            f.steps()
        };
        assert!(steps >= 2, "{op:?} has {steps} steps");
        for k in 0..steps {
            let t = tempfile::tempdir().unwrap();
            seed(t.path());
            let done = write_with_crash(t.path(), op, k);
            assert!(!done, "{op:?} step {k} should have crashed");
            // "Reboot": a fresh store reads the directory.
            let after = snapshot(t.path());
            assert!(
                after == old || after == new,
                "{op:?} crash at step {k}: {after:?} is neither {old:?} nor {new:?}"
            );
            // The store stays usable after the crash.
            let s = FileStore::open(t.path()).unwrap();
            s.create(&rel("web", 9, Status::Failed, "later")).unwrap();
            checked += 1;
        }
    }
    eprintln!("crash points checked: {checked}");
    assert!(checked >= 12);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random sequences of writes, each crashing at a random step: after
    /// every crash the store holds exactly the state before or after it.
    #[test]
    fn file_store_random_crashes(ops in proptest::collection::vec((0u8..3, 0usize..8, 0u64..4), 1..8)) {
        let t = tempfile::tempdir().unwrap();
        let mut model: std::collections::BTreeMap<u64, String> = Default::default();
        for (i, (kind, fail_at, v)) in ops.into_iter().enumerate() {
            let version = v + 1;
            let s = FileStore::open_with_faults(t.path(), FaultInjector::fail_at(fail_at)).unwrap();
            let desc = format!("w{i}");
            let before = model.clone();
            let mut after = model.clone();
            let res = match kind {
                0 => {
                    after.entry(version).or_insert(desc.clone());
                    s.create(&rel("web", version, Status::Deployed, &desc))
                }
                1 => match FileStore::open(t.path()).unwrap().get("default", "web", version) {
                    Ok(cur) => {
                        after.insert(version, desc.clone());
                        let mut n = cur.clone();
                        n.info.description = desc.clone();
                        s.update(&cur, &n)
                    }
                    Err(_) => Ok(()),
                },
                _ => {
                    after.remove(&version);
                    s.delete("default", "web", version).map(|_| ())
                }
            };
            let seen: std::collections::BTreeMap<u64, String> = FileStore::open(t.path())
                .unwrap()
                .history("default", "web")
                .unwrap()
                .into_iter()
                .map(|r| (r.version, r.info.description))
                .collect();
            prop_assert!(seen == before || seen == after, "{seen:?} vs {before:?} / {after:?} ({res:?})");
            model = seen;
        }
    }

    /// The decoder returns an error, never panics, on arbitrary input.
    #[test]
    fn decoder_never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = codec::decode_bytes(&b);
        let _ = codec::decode(&String::from_utf8_lossy(&b));
        use base64::Engine;
        let _ = codec::decode(&base64::engine::general_purpose::STANDARD.encode(&b));
        let mut gz = vec![0x1f, 0x8b, 0x08];
        gz.extend_from_slice(&b);
        let _ = codec::decode_bytes(&gz);
    }

    /// Also on almost-valid bodies: a real record with bytes flipped.
    #[test]
    fn decoder_never_panics_on_mutated_records(pos in 0usize..4096, byte in any::<u8>(), cut in 0usize..4096) {
        use base64::Engine;
        let body = codec::encode(&rel("web", 1, Status::Deployed, "Install complete")).unwrap();
        let mut raw = base64::engine::general_purpose::STANDARD.decode(body).unwrap();
        let p = pos % raw.len();
        raw[p] = byte;
        raw.truncate(cut.max(1));
        let _ = codec::decode_bytes(&raw);
        let json = serde_json::to_vec(&rel("web", 1, Status::Deployed, "x")).unwrap();
        let mut j = json.clone();
        let p = pos % j.len();
        j[p] = byte;
        let _ = codec::decode_bytes(&j);
    }

    /// Timestamps never panic either.
    #[test]
    fn time_parser_never_panics(s in ".{0,40}") {
        let _ = rudder::release::HelmTime::parse(&s);
    }
}

fn two_writers(store: Arc<dyn Store>) {
    let r = Releases::new(store.as_ref());
    let p = r
        .begin_install("default", "web", RevisionContent::default(), false)
        .unwrap();
    r.finish_install(&p, Ok(()), None).unwrap();
    // Two upgraders race from the same starting point.
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let store = store.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let r = Releases::new(store.as_ref());
                let base = r.upgrade_base("default", "web").unwrap();
                barrier.wait();
                let rendered = RevisionContent {
                    notes: format!("writer {i}"),
                    ..RevisionContent::default()
                };
                r.begin_upgrade(&base, rendered, HistoryMax(0))
                    .and_then(|p| r.finish_upgrade(&base, &p, Ok(()), None))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "exactly one upgrader wins: {results:?}");
    let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert!(
        matches!(
            loser,
            rudder::release::OpError::Store(
                StoreError::AlreadyExists | StoreError::Conflict { .. }
            )
        ),
        "{loser}"
    );
    let h = r.history("default", "web").unwrap();
    let states: Vec<_> = h.iter().map(|x| (x.version, x.info.status)).collect();
    assert_eq!(states, vec![(1, Status::Superseded), (2, Status::Deployed)]);
    let winner = results.iter().find_map(|r| r.as_ref().ok()).unwrap();
    assert_eq!(
        h[1].info.notes, winner.info.notes,
        "the winner's record is the one stored"
    );

    // A stale writer (read before another update) gets a conflict.
    let stale = r.get("default", "web", 2).unwrap();
    let mut a = stale.clone();
    a.info.description = "first".into();
    store.update(&stale, &a).unwrap();
    let mut b = stale.clone();
    b.info.description = "second".into();
    assert!(matches!(
        store.update(&stale, &b),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        r.get("default", "web", 2).unwrap().info.description,
        "first"
    );
}

#[test]
fn two_writers_memory() {
    two_writers(Arc::new(MemoryStore::new()));
}

#[test]
fn two_writers_file() {
    let t = tempfile::tempdir().unwrap();
    two_writers(Arc::new(FileStore::open(t.path()).unwrap()));
}

#[test]
fn two_writers_postgres() {
    let Some(db) = release_common::TestDb::new("cc") else {
        return;
    };
    let s = rudder::release::store::postgres::PgStore::connect(&db.url()).unwrap();
    two_writers(Arc::new(s));
}

/// Many concurrent writers on the file store in separate processes' worth
/// of handles: every create lands exactly once, nothing is lost.
#[test]
fn concurrent_creates_lose_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().to_path_buf();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let s = FileStore::open(&dir).unwrap();
                let mut won = Vec::new();
                for v in 1..=20u64 {
                    if s.create(&rel("web", v, Status::Deployed, &format!("w{i}")))
                        .is_ok()
                    {
                        won.push(v);
                    }
                }
                won
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort();
    assert_eq!(
        all,
        (1..=20).collect::<Vec<_>>(),
        "each revision created exactly once"
    );
    assert_eq!(
        FileStore::open(&dir)
            .unwrap()
            .history("default", "web")
            .unwrap()
            .len(),
        20
    );
}

/// Helm's verified pruning example: revisions 1-4 (4 deployed) and 5
/// failed, upgrade with --history-max 3 leaves 4, 5, 6.
#[test]
fn history_max_keeps_the_deployed_revision() {
    let s = MemoryStore::new();
    for v in 1..=3 {
        s.create(&rel("web", v, Status::Superseded, "")).unwrap();
    }
    s.create(&rel("web", 4, Status::Deployed, "")).unwrap();
    s.create(&rel("web", 5, Status::Failed, "")).unwrap();
    let r = Releases::new(&s);
    let base = r.upgrade_base("default", "web").unwrap();
    assert_eq!(base.current.version, 4);
    let p = r
        .begin_upgrade(&base, RevisionContent::default(), HistoryMax(3))
        .unwrap();
    r.finish_upgrade(&base, &p, Ok(()), None).unwrap();
    let h: Vec<_> = r
        .history("default", "web")
        .unwrap()
        .iter()
        .map(|x| (x.version, x.info.status))
        .collect();
    assert_eq!(
        h,
        vec![
            (4, Status::Superseded),
            (5, Status::Failed),
            (6, Status::Deployed)
        ]
    );
}

#[test]
fn lifecycle_errors_are_helms() {
    let s = MemoryStore::new();
    let r = Releases::new(&s);
    assert_eq!(
        r.history("default", "x").unwrap_err().to_string(),
        "release: not found"
    );
    assert_eq!(
        r.upgrade_base("default", "x").unwrap_err().to_string(),
        "\"x\" has no deployed releases"
    );
    let p = r
        .begin_install("default", "x", RevisionContent::default(), false)
        .unwrap();
    assert_eq!(
        r.upgrade_base("default", "x").unwrap_err().to_string(),
        "another operation (install/upgrade/rollback) is in progress"
    );
    r.finish_install(&p, Err("boom".into()), None).unwrap();
    assert_eq!(
        r.last("default", "x").unwrap().info.description,
        "Release \"x\" failed: boom"
    );
    assert_eq!(
        r.begin_install("default", "x", RevisionContent::default(), false)
            .unwrap_err()
            .to_string(),
        "cannot re-use a name that is still in use"
    );
    assert_eq!(
        r.begin_rollback("default", "x", 7, HistoryMax(0))
            .unwrap_err()
            .to_string(),
        "release has no 7 version"
    );
    let mut labels = std::collections::BTreeMap::new();
    labels.insert("owner".to_string(), "me".to_string());
    let bad = RevisionContent {
        labels,
        ..RevisionContent::default()
    };
    assert!(r
        .begin_install("default", "y", bad, false)
        .unwrap_err()
        .to_string()
        .contains("system reserved label name"));
}
