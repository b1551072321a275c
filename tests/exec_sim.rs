//! The executor on the simulated cluster (in process, driven clock).
mod plan_common;

use plan_common::*;
use rudder::cluster::{Cluster, ObjectKey};
use rudder::exec::{DrivenClock, ExecError, Executor, Journal};
use rudder::plan::ReleaseAction;
use rudder::release::{Status, Store};

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: blue\n";
const CM2: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: green\n";
const EXTRA: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-extra\ndata:\n  a: b\n";

fn exec<'a>(w: &'a World, clock: &'a DrivenClock, journal: Journal) -> Executor<'a> {
    Executor::new(&w.store, "memory:", &w.cluster, journal, clock)
}

fn statuses(w: &World, ns: &str, name: &str) -> Vec<(u64, Status, String)> {
    let mut h = w.store.history(ns, name).unwrap();
    h.sort_by_key(|r| r.version);
    h.into_iter()
        .map(|r| (r.version, r.info.status, r.info.description))
        .collect()
}

#[test]
fn install_upgrade_and_noop() {
    let w = World::new();
    let clock = DrivenClock::new();
    let d1 = desired("web", "prod", chart("web", "1.0.0", &[("cm.yaml", CM)]));
    let p = w.plan(std::slice::from_ref(&d1));
    let r = exec(&w, &clock, Journal::in_memory()).apply(&p).unwrap();
    assert!(r.success(), "{r:?}");
    let d2 = desired(
        "web",
        "prod",
        chart("web", "1.1.0", &[("cm.yaml", CM2), ("extra.yaml", EXTRA)]),
    );
    let p = w.plan(std::slice::from_ref(&d2));
    let r = exec(&w, &clock, Journal::in_memory()).apply(&p).unwrap();
    assert!(r.success(), "{r:?}");
    assert_eq!(
        statuses(&w, "prod", "web"),
        vec![
            (1, Status::Superseded, "Install complete".into()),
            (2, Status::Deployed, "Upgrade complete".into())
        ]
    );
    let live = w
        .cluster
        .get(&ObjectKey::new("", "ConfigMap", "prod", "web-config"))
        .unwrap()
        .unwrap();
    assert_eq!(live["data"]["color"], "green");
    assert_eq!(
        live["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    // Replanning after success: noop, no new revision.
    let p = w.plan(std::slice::from_ref(&d2));
    assert_eq!(p.releases[0].action, ReleaseAction::Noop);
    // Executing the same (old) plan again is refused as stale.
    let stale = w.plan(std::slice::from_ref(&d1));
    exec(&w, &clock, Journal::in_memory())
        .apply(&stale)
        .unwrap();
    match exec(&w, &clock, Journal::in_memory()).apply(&stale) {
        Err(ExecError::Stale(msg)) => assert!(msg.contains("revision 3"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn edited_and_foreign_plans_are_refused() {
    let w = World::new();
    let clock = DrivenClock::new();
    let d1 = desired("web", "prod", chart("web", "1.0.0", &[("cm.yaml", CM)]));
    let mut p = w.plan(std::slice::from_ref(&d1));
    p.releases[0].options.timeout = std::time::Duration::from_secs(1);
    assert!(matches!(
        exec(&w, &clock, Journal::in_memory()).apply(&p),
        Err(ExecError::Tampered(_))
    ));
    let p = w.plan(std::slice::from_ref(&d1));
    let other = World::new();
    let e = Executor::new(
        &w.store,
        "file:elsewhere",
        &w.cluster,
        Journal::in_memory(),
        &clock,
    )
    .apply(&p);
    assert!(
        matches!(e, Err(ExecError::WrongTarget { what: "store", .. })),
        "{e:?}"
    );
    let e = Executor::new(
        &w.store,
        "memory:",
        &other.cluster,
        Journal::in_memory(),
        &clock,
    )
    .apply(&p);
    assert!(
        matches!(
            e,
            Err(ExecError::WrongTarget {
                what: "cluster",
                ..
            })
        ),
        "{e:?}"
    );
    // Nothing was written.
    assert!(w.store.history("prod", "web").unwrap().is_empty());
}

#[test]
fn a_held_release_is_refused_naming_the_holder() {
    let w = World::new();
    let clock = DrivenClock::new();
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::at(dir.path());
    let _held = journal.lock("prod", "web").unwrap();
    let d1 = desired("web", "prod", chart("web", "1.0.0", &[("cm.yaml", CM)]));
    let p = w.plan(std::slice::from_ref(&d1));
    let err = exec(&w, &clock, journal.clone())
        .apply(&p)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("being changed by another process (pid"),
        "{err}"
    );
    assert!(w.store.history("prod", "web").unwrap().is_empty());
}
