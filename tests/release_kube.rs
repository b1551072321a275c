//! Helm's Secrets and ConfigMaps drivers on a real API server (the shared
//! test bed, `scripts/testbed`): real Helm and rudder read each other's
//! release records, two writers of one revision cannot both win, and
//! oversized records are refused before anything is written.
//!
//! Without the test bed or Helm every test prints `SKIPPED: ...` and
//! passes, unless `RUDDER_REQUIRE_ORACLE=1`, which makes them fail.
#[path = "release_common/mod.rs"]
mod release_common;
mod testbed_common;
// tests/common/mod.rs, which testbed_common reaches as `crate::common`
// (release_common already includes it).
use release_common::common;

use release_common::{json_diff, notes_chart, tricky_values};
use rudder::cluster::kube::{KubeCluster, KubeOptions};
use rudder::cluster::Cluster;
use rudder::release::store::objects::{Driver, ObjectStore};
use rudder::release::{HistoryMax, Release, Releases, RevisionContent, Status, Store, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};

struct Out {
    stdout: String,
    stderr: String,
    ok: bool,
}

fn out(o: std::process::Output) -> Out {
    Out {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        ok: o.status.success(),
    }
}

/// Real Helm against the test bed with one of its drivers.
struct Helm {
    bin: PathBuf,
    major: u8,
    home: tempfile::TempDir,
    kubeconfig: PathBuf,
    /// `HELM_DRIVER` (`None`: unset, Helm's default Secrets driver).
    driver: Option<&'static str>,
}

impl Helm {
    fn new(major: u8, kubeconfig: &Path, driver: Option<&'static str>) -> Option<Helm> {
        Some(Helm {
            bin: common::helm(major)?,
            major,
            home: tempfile::tempdir().unwrap(),
            kubeconfig: kubeconfig.to_path_buf(),
            driver,
        })
    }

    fn run(&self, args: &[&str]) -> Out {
        let mut cmd = common::helm_command(&self.bin, self.home.path());
        cmd.args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .env_remove("KUBECONFIG")
            .env_remove("HELM_NAMESPACE")
            .env_remove("HELM_MAX_HISTORY")
            .env_remove("HELM_KUBECONTEXT");
        match self.driver {
            Some(d) => cmd.env("HELM_DRIVER", d),
            None => cmd.env_remove("HELM_DRIVER"),
        };
        out(cmd.output().unwrap())
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.ok,
            "helm{} {args:?} failed: {}{}",
            self.major, o.stdout, o.stderr
        );
        o.stdout
    }
}

/// How rudder is pointed at the records.
#[derive(Debug, Clone, Copy)]
enum Via {
    /// `--store VALUE --kubeconfig F`.
    Store(&'static str),
    /// `HELM_DRIVER=VALUE --kubeconfig F`.
    HelmDriver(&'static str),
    /// `KUBECONFIG=F` alone: a real cluster, so the Secrets driver.
    Default,
}

fn rudder(kubeconfig: &Path, via: Via, args: &[&str]) -> Out {
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
    cmd.args(args)
        .current_dir(cwd.path())
        .env("TZ", "UTC")
        .env_remove("HELM_DRIVER")
        .env_remove("KUBECONFIG");
    match via {
        Via::Store(s) => {
            cmd.arg("--store")
                .arg(s)
                .arg("--kubeconfig")
                .arg(kubeconfig);
        }
        Via::HelmDriver(d) => {
            cmd.env("HELM_DRIVER", d)
                .arg("--kubeconfig")
                .arg(kubeconfig);
        }
        Via::Default => {
            cmd.env("KUBECONFIG", kubeconfig);
        }
    }
    out(cmd.output().unwrap())
}

/// Compares `rudder ARGS` with `helm ARGS`: stdout byte for byte, success,
/// and the last line of the error.
fn compare(helm: &Helm, via: Via, args: &[&str], failures: &mut Vec<String>) -> bool {
    let h = helm.run(args);
    let r = rudder(&helm.kubeconfig, via, args);
    if h.ok != r.ok {
        failures.push(format!(
            "{via:?} {args:?}: helm ok={} but rudder ok={} (helm stderr {:?}, rudder stderr {:?})",
            h.ok, r.ok, h.stderr, r.stderr
        ));
        return false;
    }
    let mut ok = true;
    if !h.ok {
        let he = h.stderr.lines().last().unwrap_or("");
        let re = r.stderr.lines().last().unwrap_or("");
        if he != re {
            failures.push(format!("{via:?} {args:?}: error {he:?} vs rudder {re:?}"));
            ok = false;
        }
    }
    if h.stdout != r.stdout {
        failures.push(format!(
            "{via:?} {args:?}: helm printed:\n{}\n--- rudder printed:\n{}",
            h.stdout, r.stdout
        ));
        ok = false;
    } else if h.ok && args.windows(2).any(|w| w == ["-o", "json"]) {
        let hv: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
        let rv: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let mut d = Vec::new();
        json_diff("$", &hv, &rv, &mut d);
        if !d.is_empty() {
            failures.push(format!("{via:?} {args:?}: JSON differs: {d:?}"));
            ok = false;
        }
    }
    ok
}

/// The read-side commands compared, in namespace `ns` (release r1 with
/// `revisions`, r3 uninstalled) and `ns2` (release r2).
fn read_commands(ns: &str, ns2: &str, revisions: &[u64]) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<&str>> = vec![
        vec!["list", "-a"],
        vec!["list"],
        vec!["list", "-a", "-o", "json"],
        vec!["list", "-a", "-o", "yaml"],
        vec!["list", "--superseded"],
        vec!["list", "--failed"],
        vec!["list", "--uninstalled", "-o", "json"],
        vec!["list", "-q", "-a"],
        vec!["list", "-a", "-r", "--no-headers"],
        vec!["history", "r1"],
        vec!["history", "r1", "-o", "json"],
        vec!["history", "r1", "-o", "yaml"],
        vec!["history", "r1", "--max", "2"],
        vec!["history", "r3"],
        vec!["history", "missing"],
        vec!["status", "r1"],
        vec!["status", "r1", "--show-desc"],
        vec!["status", "r1", "-o", "json"],
        vec!["status", "r1", "-o", "yaml"],
        vec!["status", "r3", "-o", "json"],
        vec!["status", "missing"],
        vec!["get", "values", "r1"],
        vec!["get", "values", "r1", "-a"],
        vec!["get", "values", "r1", "-o", "json"],
        vec!["get", "values", "r1", "-a", "-o", "yaml"],
        vec!["get", "manifest", "r1"],
        vec!["get", "notes", "r1"],
        vec!["get", "hooks", "r1"],
        vec!["get", "all", "r1"],
        vec!["get", "metadata", "r1"],
        vec!["get", "metadata", "r1", "-o", "json"],
        vec!["get", "notes", "r3"],
        vec!["get", "values", "r1", "--revision", "99"],
    ];
    let mut out: Vec<Vec<String>> = v
        .drain(..)
        .map(|a| {
            let mut a: Vec<String> = a.into_iter().map(String::from).collect();
            a.push("-n".into());
            a.push(ns.into());
            a
        })
        .collect();
    for a in [
        vec!["history", "r2"],
        vec!["status", "r2"],
        vec!["get", "values", "r2", "-a"],
        vec!["list", "-a"],
    ] {
        let mut a: Vec<String> = a.into_iter().map(String::from).collect();
        a.push("-n".into());
        a.push(ns2.into());
        out.push(a);
    }
    for r in revisions {
        let r = r.to_string();
        for a in [
            vec!["get", "values", "r1", "--revision", &r],
            vec!["get", "values", "r1", "-a", "--revision", &r],
            vec!["get", "manifest", "r1", "--revision", &r],
            vec!["get", "notes", "r1", "--revision", &r],
            vec!["get", "metadata", "r1", "--revision", &r],
            vec!["status", "r1", "--revision", &r, "-o", "json"],
        ] {
            let mut a: Vec<String> = a.into_iter().map(String::from).collect();
            a.push("-n".into());
            a.push(ns.into());
            out.push(a);
        }
    }
    out
}

fn run_all(
    helm: &Helm,
    via: Via,
    cmds: &[Vec<String>],
    failures: &mut Vec<String>,
) -> (usize, usize) {
    let mut passed = 0;
    for args in cmds {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        passed += compare(helm, via, &a, failures) as usize;
    }
    (passed, cmds.len())
}

/// The notes chart of the release tests, plus a ConfigMap that the API
/// server refuses (invalid name) when `bad` is set: a failing upgrade.
fn charts(dir: &Path) -> (PathBuf, PathBuf) {
    let c1 = notes_chart(dir, "0.1.0");
    let c2 = notes_chart(&dir.join("v2"), "0.2.0");
    for c in [&c1, &c2] {
        std::fs::write(
            c.join("templates/bad.yaml"),
            "{{- if .Values.bad }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\ndata:\n  a: b\n{{- end }}\n",
        )
        .unwrap();
    }
    (c1, c2)
}

/// Helm (`major`, with `driver`) writes a history; rudder reads it through
/// `vias` and prints what helm v3 prints.
fn helm_writes_rudder_reads(major: u8, driver: Option<&'static str>, vias: &[Via]) {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let Some(writer) = Helm::new(major, &tb.kubeconfig, driver) else {
        return;
    };
    let Some(helm3) = Helm::new(3, &tb.kubeconfig, driver) else {
        return;
    };
    let t0 = std::time::Instant::now();
    let ns = tb.fresh_namespace(&format!("h{major}w-{}", driver.unwrap_or("secret")));
    let ns2 = tb.fresh_namespace(&format!("h{major}w2-{}", driver.unwrap_or("secret")));
    let dir = tempfile::tempdir().unwrap();
    let (c1, c2) = charts(dir.path());
    let (c1, c2) = (c1.to_str().unwrap(), c2.to_str().unwrap());
    let n = ["-n", ns.as_str()];
    let w = |args: &[&str]| writer.ok(&[args, &n[..]].concat());
    w(&[
        "install",
        "r1",
        c1,
        "--set",
        "b=2,cm=true",
        "--labels",
        "team=a",
        "--create-namespace",
    ]);
    w(&[
        "upgrade",
        "r1",
        c1,
        "--reuse-values",
        "--set",
        "c=3.5,nested.x=null",
    ]);
    w(&["upgrade", "r1", c2, "--reuse-values", "--set", "d=4"]);
    let f = writer.run(
        &[
            &["upgrade", "r1", c2, "--reuse-values", "--set", "bad=true"][..],
            &n[..],
        ]
        .concat(),
    );
    assert!(!f.ok, "the upgrade should fail: {}", f.stdout);
    w(&["rollback", "r1", "2"]);
    let tricky = tricky_values(dir.path());
    w(&[
        "upgrade",
        "r1",
        c2,
        "--reuse-values",
        "-f",
        tricky.to_str().unwrap(),
    ]);
    w(&["install", "r3", c1]);
    w(&["uninstall", "r3", "--keep-history"]);
    writer.ok(&[
        "install",
        "r2",
        c1,
        "-n",
        &ns2,
        "--set",
        "name=other",
        "--create-namespace",
    ]);
    let written = t0.elapsed();

    let mut failures = Vec::new();
    let cmds = read_commands(&ns, &ns2, &[1, 2, 3, 4, 5, 6]);
    for via in vias {
        let (p, total) = run_all(&helm3, *via, &cmds, &mut failures);
        eprintln!(
            "helm{major} ({}) wrote in {written:?}; rudder via {via:?}: {p}/{total} commands print as helm v3",
            driver.unwrap_or("secret")
        );
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn helm3_secrets_rudder_reads() {
    helm_writes_rudder_reads(3, None, &[Via::Store("secret"), Via::Default]);
}

#[test]
fn helm3_configmaps_rudder_reads() {
    helm_writes_rudder_reads(
        3,
        Some("configmap"),
        &[Via::HelmDriver("configmap"), Via::Store("configmaps")],
    );
}

#[test]
fn helm4_secrets_rudder_reads() {
    helm_writes_rudder_reads(4, Some("secret"), &[Via::Store("secrets")]);
}

fn kube() -> Option<(&'static testbed_common::Testbed, Arc<dyn Cluster>)> {
    let tb = testbed_common::testbed()?;
    let c = KubeCluster::connect(&KubeOptions {
        kubeconfig: Some(tb.kubeconfig.to_str().unwrap().to_string()),
        context: None,
    })
    .unwrap();
    Some((tb, Arc::new(c)))
}

fn rendered(chart_dir: &Path, config: &str, notes: &str) -> RevisionContent {
    let chart = rudder::chart::load(chart_dir).unwrap();
    let config: BTreeMap<String, rudder::yaml::Node> = serde_json::from_str(config).unwrap();
    let hook = rudder::release::Hook {
        name: "r1-test".into(),
        kind: "Pod".into(),
        path: "notes/templates/test.yaml".into(),
        manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"r1-test\"\n  annotations:\n    \"helm.sh/hook\": test\n    \"helm.sh/hook-weight\": \"2\"\nspec:\n  containers: [{name: t, image: busybox}]".into(),
        events: vec!["test".into()],
        weight: 2,
        ..Default::default()
    };
    RevisionContent {
        chart,
        config,
        manifest: String::new(),
        hooks: vec![hook],
        notes: notes.into(),
        labels: BTreeMap::new(),
    }
}

/// Writes a history with rudder's library, as install, upgrade (one
/// failing), rollback and uninstall record it.
fn rudder_writes(store: &dyn Store, ns: &str, ns2: &str, chart: &Path) {
    let rel = Releases::new(store);
    let p = rel
        .begin_install(
            ns,
            "r1",
            rendered(chart, r#"{"b":2}"#, "Notes for r1 rev 1\n"),
            false,
        )
        .unwrap();
    rel.finish_install(&p, Ok(()), None).unwrap();
    for (config, ok) in [(r#"{"c":"3.5"}"#, true), (r#"{"c":"3.5","d":4}"#, false)] {
        let base = rel.upgrade_base(ns, "r1").unwrap();
        let notes = format!("Notes for r1 rev {}\n", base.last.version + 1);
        let p = rel
            .begin_upgrade(
                &base,
                rendered(chart, config, &notes),
                HistoryMax::default(),
            )
            .unwrap();
        let res = if ok {
            Ok(())
        } else {
            Err("injected failure".into())
        };
        rel.finish_upgrade(&base, &p, res, None).unwrap();
    }
    let (last, p) = rel
        .begin_rollback(ns, "r1", 1, HistoryMax::default())
        .unwrap();
    rel.finish_rollback(&last, &p, Ok(())).unwrap();
    let p = rel
        .begin_install(
            ns2,
            "r2",
            rendered(chart, r#"{"name":"other"}"#, "Notes for r2 rev 1\n"),
            false,
        )
        .unwrap();
    rel.finish_install(&p, Ok(()), None).unwrap();
    let p = rel
        .begin_install(
            ns,
            "r3",
            rendered(chart, "{}", "Notes for r3 rev 1\n"),
            false,
        )
        .unwrap();
    rel.finish_install(&p, Ok(()), None).unwrap();
    let u = rel.begin_uninstall(ns, "r3", true).unwrap().unwrap();
    rel.finish_uninstall(&u, true, None).unwrap();
}

fn rudder_writes_helm_reads(driver: Driver) {
    let Some((tb, cluster)) = kube() else { return };
    let helm_driver = match driver {
        Driver::Secret => None,
        Driver::ConfigMap => Some("configmap"),
    };
    let Some(helm) = Helm::new(3, &tb.kubeconfig, helm_driver) else {
        return;
    };
    let tag = format!("{driver:?}").to_ascii_lowercase();
    // The store alone writes here, as Helm's drivers do, into namespaces
    // that exist: creating them is an install's work, not a store's.
    let ns = tb.create_namespace(&format!("rw-{tag}"));
    let ns2 = tb.create_namespace(&format!("rw2-{tag}"));
    let dir = tempfile::tempdir().unwrap();
    let chart = notes_chart(dir.path(), "0.1.0");
    let store = ObjectStore::new(cluster, driver);
    let t0 = std::time::Instant::now();
    rudder_writes(&store, &ns, &ns2, &chart);
    eprintln!("rudder wrote 8 records in {:?}", t0.elapsed());
    // The objects are Helm's: name, type, labels.
    let objs = tb.kubectl_ok(&["get", &tag, "-n", &ns, "-l", "owner=helm", "-o", "json"]);
    let objs: serde_json::Value = serde_json::from_str(&objs).unwrap();
    let items = objs["items"].as_array().unwrap();
    assert_eq!(items.len(), 5, "r1 v1-v4 and r3 v1, nothing else");
    for o in items {
        let l = &o["metadata"]["labels"];
        let name = o["metadata"]["name"].as_str().unwrap();
        assert_eq!(
            name,
            format!(
                "sh.helm.release.v1.{}.v{}",
                l["name"].as_str().unwrap(),
                l["version"].as_str().unwrap()
            )
        );
        assert!(
            l.get("status").is_some()
                && (l.get("createdAt").is_some() || l.get("modifiedAt").is_some()),
            "{l}"
        );
        if driver == Driver::Secret {
            assert_eq!(o["type"], "helm.sh/release.v1");
        }
    }

    let via = match driver {
        Driver::Secret => Via::Store("secret"),
        Driver::ConfigMap => Via::HelmDriver("configmap"),
    };
    let mut failures = Vec::new();
    let cmds = read_commands(&ns, &ns2, &[1, 2, 3, 4]);
    let (p, total) = run_all(&helm, via, &cmds, &mut failures);
    eprintln!("rudder-written {tag} records: {p}/{total} commands print identically with helm3");

    // Helm takes over: upgrades and rolls back what rudder wrote.
    let c = chart.to_str().unwrap();
    helm.ok(&[
        "upgrade",
        "r1",
        c,
        "--reuse-values",
        "--set",
        "z=1",
        "-n",
        &ns,
    ]);
    helm.ok(&["rollback", "r1", "2", "-n", &ns]);
    helm.ok(&["upgrade", "r2", c, "-n", &ns2]);
    let after = helm.ok(&["history", "r1", "-n", &ns]);
    assert!(after.contains("Rollback to 2"), "{after}");
    for args in [
        vec!["history", "r1", "-n", &ns],
        vec!["status", "r1", "-n", &ns],
        vec!["list", "-a", "-n", &ns],
        vec!["get", "values", "r1", "--revision", "5", "-n", &ns],
        vec!["history", "r2", "-n", &ns2],
    ] {
        compare(&helm, via, &args, &mut failures);
    }
    // And rudder's library reads Helm's records back.
    let h = Releases::new(&store).history(&ns, "r1").unwrap();
    assert_eq!(h.len(), 6);
    assert_eq!(h[5].info.status, Status::Deployed);
    assert_eq!(h[5].info.description, "Rollback to 2");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn rudder_writes_secrets_helm3_reads() {
    rudder_writes_helm_reads(Driver::Secret);
}

#[test]
fn rudder_writes_configmaps_helm3_reads() {
    rudder_writes_helm_reads(Driver::ConfigMap);
}

fn record(ns: &str, name: &str, version: u64, status: Status) -> Release {
    let mut r = Release {
        name: name.into(),
        namespace: ns.into(),
        version,
        ..Release::default()
    };
    r.info.status = status;
    r.info.description = format!("written as {status:?}");
    r
}

/// Which writer, its create, its update.
type RaceResult = (usize, Result<(), StoreError>, Result<(), StoreError>);

/// Two writers with their own clients race for one revision, many times:
/// exactly one create and one compare-and-swap update win each round, the
/// loser is told (409), and the winner's record is what is stored.
#[test]
fn concurrent_writers_one_wins() {
    let Some((tb, _)) = kube() else { return };
    let ns = tb.create_namespace("race");
    let kc = tb.kubeconfig.to_str().unwrap().to_string();
    for driver in [Driver::Secret, Driver::ConfigMap] {
        let stores: Vec<Arc<ObjectStore>> = (0..2)
            .map(|_| {
                let c = KubeCluster::connect(&KubeOptions {
                    kubeconfig: Some(kc.clone()),
                    context: None,
                })
                .unwrap();
                Arc::new(ObjectStore::new(Arc::new(c), driver))
            })
            .collect();
        for round in 1..=8u64 {
            let name = format!("race-{}", round);
            let barrier = Arc::new(Barrier::new(2));
            let results: Vec<RaceResult> = (0..2)
                .map(|i| {
                    let s = stores[i].clone();
                    let b = barrier.clone();
                    let ns = ns.clone();
                    let name = name.clone();
                    std::thread::spawn(move || {
                        let mut mine = record(&ns, &name, 1, Status::PendingInstall);
                        mine.info.description = format!("writer {i}");
                        b.wait();
                        let created = s.create(&mine);
                        b.wait();
                        // Both read the same stored copy, then race to update it.
                        let cur = s.get(&ns, &name, 1).unwrap();
                        b.wait();
                        let mut new = cur.clone();
                        new.info.status = Status::Deployed;
                        new.info.description = format!("updated by writer {i}");
                        let updated = s.update(&cur, &new);
                        (i, created, updated)
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect();
            let created: Vec<usize> = results
                .iter()
                .filter(|r| r.1.is_ok())
                .map(|r| r.0)
                .collect();
            assert_eq!(
                created.len(),
                1,
                "{driver:?} round {round}: creates {results:?}"
            );
            for r in &results {
                if r.1.is_err() {
                    assert!(matches!(r.1, Err(StoreError::AlreadyExists)), "{:?}", r.1);
                }
            }
            let updated: Vec<usize> = results
                .iter()
                .filter(|r| r.2.is_ok())
                .map(|r| r.0)
                .collect();
            assert_eq!(
                updated.len(),
                1,
                "{driver:?} round {round}: updates {results:?}"
            );
            for r in &results {
                if r.2.is_err() {
                    assert!(matches!(r.2, Err(StoreError::Conflict { .. })), "{:?}", r.2);
                }
            }
            let stored = stores[0].get(&ns, &name, 1).unwrap();
            assert_eq!(stored.info.status, Status::Deployed);
            assert_eq!(
                stored.info.description,
                format!("updated by writer {}", updated[0])
            );
            assert_eq!(stores[1].history(&ns, &name).unwrap().len(), 1);
        }
    }
}

/// A record over the 1 MiB object limit is refused before any request
/// writes anything, with the release, revision and size in the message.
#[test]
fn oversized_record_is_refused_before_writing() {
    let Some((tb, cluster)) = kube() else { return };
    let ns = tb.create_namespace("big");
    for driver in [Driver::Secret, Driver::ConfigMap] {
        let store = ObjectStore::new(cluster.clone(), driver);
        let mut r = record(&ns, "big", 1, Status::PendingInstall);
        let mut x: u64 = 7;
        r.manifest = (0..1_100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'!' + (x % 90) as u8)
            })
            .collect();
        let e = store.create(&r).unwrap_err().to_string();
        assert!(e.contains("release big revision 1"), "{e}");
        assert!(e.contains("byte Kubernetes object limit"), "{e}");
        assert!(
            cluster
                .list("", driver.kind(), Some(&ns), &[])
                .unwrap()
                .iter()
                .all(|o| {
                    o["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| !n.starts_with("sh.helm"))
                }),
            "nothing was written"
        );
        assert!(matches!(
            store.get(&ns, "big", 1),
            Err(StoreError::NotFound)
        ));
    }
}

/// Connection problems are one line naming the server and context.
#[test]
fn connection_errors_are_one_line() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&tb.kubeconfig).unwrap();
    // Nothing listens on port 1.
    let down = dir.path().join("down");
    let re = regex::Regex::new(r"server: https://127\.0\.0\.1:\d+").unwrap();
    std::fs::write(
        &down,
        re.replace(&text, "server: https://127.0.0.1:1").as_ref(),
    )
    .unwrap();
    let o = rudder(&down, Via::Store("secret"), &["list"]);
    assert!(!o.ok);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "cannot reach the Kubernetes API server https://127.0.0.1:1 (context testbed)"
        ),
        "{}",
        o.stderr
    );
    // A token the server does not know: 401.
    let bad = dir.path().join("bad");
    let re = regex::Regex::new(r"token: \S+").unwrap();
    std::fs::write(&bad, re.replace(&text, "token: not-a-valid-token").as_ref()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args([
            "list",
            "--kubeconfig",
            bad.to_str().unwrap(),
            "--kube-context",
            "testbed-token",
        ])
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .output()
        .unwrap();
    let o = out(o);
    assert!(!o.ok);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("401 Unauthorized: the credentials of context testbed-token were rejected"),
        "{}",
        o.stderr
    );
    // An unknown context.
    let o = rudder(
        &tb.kubeconfig,
        Via::Store("secret"),
        &["list", "--kube-context", "nope"],
    );
    assert_eq!(
        o.stderr.trim(),
        format!(
            "Error: context \"nope\" not found in kubeconfig {}",
            tb.kubeconfig.display()
        )
    );
}

/// `--store secret` on the simulated cluster keeps records as Secrets in it.
#[test]
fn secret_store_on_the_simulated_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let sim = format!("sim:{}", dir.path().join("cluster").display());
    let cluster: Arc<dyn Cluster> = Arc::from(rudder::cluster::open(&sim).unwrap());
    let store = rudder::release::store::open_in("secrets", cluster.clone()).unwrap();
    store
        .create(&record("default", "web", 1, Status::Deployed))
        .unwrap();
    let secrets = cluster.list("", "Secret", Some("default"), &[]).unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0]["type"], "helm.sh/release.v1");
    let o = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["history", "web", "--store", "secret", "--cluster", &sim])
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .output()
        .unwrap();
    let o = out(o);
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stdout.contains("written as Deployed"), "{}", o.stdout);
}

/// The `Cluster` operations against the API server, with each error mapped
/// to its `ClusterError` variant.
#[test]
fn kube_cluster_operations() {
    use rudder::cluster::{ApplyOptions, ClusterError, ObjectKey};
    use serde_json::json;
    let Some((tb, c)) = kube() else { return };
    let ns = tb.create_namespace("ops");
    let id = c.identity().unwrap();
    assert_eq!(id.kind, "kube");
    assert_eq!(id.id.len(), 64);
    assert!(id.server_version.starts_with("v1."), "{id:?}");
    let again = KubeCluster::connect(&KubeOptions {
        kubeconfig: Some(tb.kubeconfig.to_str().unwrap().into()),
        context: Some("testbed-token".into()),
    })
    .unwrap();
    assert_eq!(again.identity().unwrap().id, id.id, "same server, same id");
    let res = c.api_resources().unwrap();
    let dep = res
        .iter()
        .find(|r| r.group == "apps" && r.kind == "Deployment")
        .unwrap();
    assert!(dep.namespaced && dep.plural == "deployments");
    assert!(res.iter().any(|r| r.kind == "ClusterRole" && !r.namespaced));

    let cm = |data: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "x", "namespace": ns, "labels": {"app": "x"}}, "data": data})
    };
    let key = ObjectKey::new("", "ConfigMap", &ns, "x");
    assert!(c.get(&key).unwrap().is_none());
    let created = c.create(&cm(json!({"a": "1"}))).unwrap();
    assert!(matches!(
        c.create(&cm(json!({"a": "1"}))),
        Err(ClusterError::AlreadyExists { .. })
    ));
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut upd = cm(json!({"a": "2"}));
    upd["metadata"]["resourceVersion"] = json!(rv);
    c.replace(&upd).unwrap();
    assert!(
        matches!(c.replace(&upd), Err(ClusterError::Conflict { .. })),
        "a stale resourceVersion is a conflict"
    );
    let labels = [("app".to_string(), "x".to_string())];
    assert_eq!(
        c.list("", "ConfigMap", Some(&ns), &labels).unwrap().len(),
        1
    );
    let none = [("app".to_string(), "y".to_string())];
    assert!(c
        .list("", "ConfigMap", Some(&ns), &none)
        .unwrap()
        .is_empty());
    let listed = c.list("", "ConfigMap", Some(&ns), &labels).unwrap();
    assert_eq!(listed[0]["kind"], "ConfigMap");
    assert_eq!(listed[0]["apiVersion"], "v1");

    // Server-side apply: ownership, conflicts, force, dry run.
    let a = |m: &str| ApplyOptions {
        field_manager: m.into(),
        ..ApplyOptions::default()
    };
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "s", "namespace": ns}, "data": {"k": "one"}});
    c.apply(&applied, &a("alice")).unwrap();
    let mut other = applied.clone();
    other["data"]["k"] = json!("two");
    match c.apply(&other, &a("bob")) {
        Err(ClusterError::FieldConflict { fields, .. }) => {
            assert_eq!(fields, vec![(".data.k".to_string(), "alice".to_string())]);
        }
        r => panic!("want a field conflict, got {r:?}"),
    }
    let dry = ApplyOptions {
        force: true,
        dry_run: true,
        ..a("bob")
    };
    assert_eq!(c.apply(&other, &dry).unwrap()["data"]["k"], "two");
    let skey = ObjectKey::new("", "ConfigMap", &ns, "s");
    assert_eq!(c.get(&skey).unwrap().unwrap()["data"]["k"], "one");
    let forced = ApplyOptions {
        force: true,
        ..a("bob")
    };
    c.apply(&other, &forced).unwrap();
    assert_eq!(c.get(&skey).unwrap().unwrap()["data"]["k"], "two");
    let mut unknown_field = applied.clone();
    unknown_field["spec"] = json!({"nope": 1});
    let r = c.apply(&unknown_field, &forced);
    assert!(
        matches!(&r, Err(ClusterError::Invalid { message, .. }) if message.contains("spec")),
        "fieldValidation=Strict refuses unknown fields: {r:?}"
    );

    // Errors.
    let mut elsewhere = cm(json!({}));
    elsewhere["metadata"]["namespace"] = json!("no-such-namespace-here");
    assert!(matches!(
        c.create(&elsewhere),
        Err(ClusterError::NamespaceNotFound { .. })
    ));
    let mut bad = cm(json!({}));
    bad["metadata"]["name"] = json!("Bad_Name");
    assert!(matches!(c.create(&bad), Err(ClusterError::Invalid { .. })));
    assert!(matches!(
        c.create(&json!({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "n", "namespace": ns}})),
        Err(ClusterError::UnknownKind { .. })
    ));

    // Delete: preconditions, then gone.
    assert!(matches!(
        c.delete(&key, Some("1")),
        Err(ClusterError::Conflict { .. })
    ));
    let gone = c.delete(&key, None).unwrap().unwrap();
    assert_eq!(gone["data"]["a"], "2");
    assert!(c.delete(&key, None).unwrap().is_none());
    assert!(c.get(&key).unwrap().is_none());
}

/// `rudder install`/`upgrade`/`rollback` on the API server (objects applied
/// with server-side apply, records in Secrets by default) and real Helm
/// carrying on from there.
#[test]
fn rudder_cli_releases_on_the_api_server() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let Some(helm) = Helm::new(3, &tb.kubeconfig, None) else {
        return;
    };
    let ns = tb.fresh_namespace("cli");
    let dir = tempfile::tempdir().unwrap();
    let (c1, _) = charts(dir.path());
    let c1 = c1.to_str().unwrap();
    for args in [
        vec![
            "install",
            "web",
            c1,
            "--set",
            "cm=true,a=7",
            "-n",
            &ns,
            "--create-namespace",
        ],
        vec!["upgrade", "web", c1, "--set", "cm=true,a=8", "-n", &ns],
        vec!["rollback", "web", "1", "-n", &ns],
    ] {
        let o = rudder(&tb.kubeconfig, Via::Default, &args);
        assert!(o.ok, "rudder {args:?}: {}{}", o.stdout, o.stderr);
    }
    let live = tb.kubectl_ok(&["get", "cm", "web-cm", "-n", &ns, "-o", "jsonpath={.data.a}"]);
    assert_eq!(live, "7", "rolled back to revision 1's object");
    let mut failures = Vec::new();
    for args in [
        vec!["history", "web", "-n", &ns],
        vec!["list", "-a", "-n", &ns],
        vec!["status", "web", "-n", &ns],
        vec!["get", "values", "web", "--revision", "2", "-n", &ns],
        vec!["get", "manifest", "web", "-n", &ns],
    ] {
        compare(&helm, Via::Default, &args, &mut failures);
    }
    helm.ok(&[
        "upgrade",
        "web",
        c1,
        "--reuse-values",
        "--set",
        "a=9",
        "-n",
        &ns,
    ]);
    helm.ok(&["rollback", "web", "2", "-n", &ns]);
    compare(
        &helm,
        Via::Store("secret"),
        &["history", "web", "-n", &ns],
        &mut failures,
    );
    let live = tb.kubectl_ok(&["get", "cm", "web-cm", "-n", &ns, "-o", "jsonpath={.data.a}"]);
    assert_eq!(live, "8");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A user's first releases, each into a namespace that does not exist yet:
/// `install --create-namespace`, `upgrade --install --create-namespace` and
/// `apply` of a releases file (two releases sharing one new namespace,
/// `createNamespace` by default), with the default store (Helm's Secrets,
/// in the release namespace) and with ConfigMaps. Helm 3 and Helm 4 read
/// every record (`helm history`, `helm list -n NS`), and Helm 3 prints what
/// rudder prints. A failed atomic install into a new namespace leaves
/// neither the namespace nor a record.
#[test]
fn first_releases_into_new_namespaces_are_read_by_helm() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let Some(helm3) = Helm::new(3, &tb.kubeconfig, None) else {
        return;
    };
    let Some(helm4) = Helm::new(4, &tb.kubeconfig, None) else {
        return;
    };
    let helm3_cm = Helm::new(3, &tb.kubeconfig, Some("configmap")).unwrap();
    let helm4_cm = Helm::new(4, &tb.kubeconfig, Some("configmap")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (c1, c2) = charts(dir.path());
    let (c1, c2) = (c1.to_str().unwrap(), c2.to_str().unwrap());
    let ns_install = tb.fresh_namespace("first-install");
    let ns_upgrade = tb.fresh_namespace("first-upgrade-install");
    let ns_apply = tb.fresh_namespace("first-apply");
    let ns_cm = tb.fresh_namespace("first-configmaps");
    let ns_failed = tb.fresh_namespace("first-failed");
    let ok = |via: Via, args: &[&str]| {
        let o = rudder(&tb.kubeconfig, via, args);
        assert!(o.ok, "rudder {args:?}: {}{}", o.stdout, o.stderr);
        o
    };

    // install --create-namespace, then an upgrade.
    ok(
        Via::Default,
        &[
            "install",
            "a1",
            c1,
            "-n",
            &ns_install,
            "--create-namespace",
            "--set",
            "cm=true,a=1",
        ],
    );
    ok(
        Via::Default,
        &[
            "upgrade",
            "a1",
            c2,
            "-n",
            &ns_install,
            "--set",
            "cm=true,a=2",
        ],
    );
    // upgrade --install --create-namespace, twice.
    for a in ["1", "2"] {
        ok(
            Via::Default,
            &[
                "upgrade",
                "--install",
                "b1",
                c1,
                "-n",
                &ns_upgrade,
                "--create-namespace",
                "--set",
                &format!("cm=true,a={a}"),
            ],
        );
    }
    // apply of a releases file: two releases, one new namespace.
    let file = dir.path().join("releases.yaml");
    std::fs::write(
        &file,
        format!(
            "defaults:\n  namespace: {ns_apply}\n  timeout: 60s\nreleases:\n\
- name: c1\n  chart: {c1}\n  set: {{cm: true}}\n\
- name: c2\n  chart: {c2}\n  set: {{cm: true, name: other}}\n"
        ),
    )
    .unwrap();
    ok(Via::Default, &["apply", file.to_str().unwrap()]);
    // The ConfigMaps driver, into a new namespace too.
    ok(
        Via::Store("configmaps"),
        &[
            "install",
            "d1",
            c1,
            "-n",
            &ns_cm,
            "--create-namespace",
            "--set",
            "cm=true",
        ],
    );

    let mut failures = Vec::new();
    for (h3, h4, via, ns, names, revisions) in [
        (&helm3, &helm4, Via::Default, &ns_install, &["a1"][..], 2),
        (&helm3, &helm4, Via::Default, &ns_upgrade, &["b1"][..], 2),
        (
            &helm3,
            &helm4,
            Via::Default,
            &ns_apply,
            &["c1", "c2"][..],
            1,
        ),
        (
            &helm3_cm,
            &helm4_cm,
            Via::HelmDriver("configmap"),
            &ns_cm,
            &["d1"][..],
            1,
        ),
    ] {
        assert!(tb.namespace_exists(ns), "{ns}");
        for helm in [h3, h4] {
            let list = helm.ok(&["list", "-n", ns, "-q"]);
            let mut listed: Vec<&str> = list.lines().collect();
            listed.sort();
            assert_eq!(listed, names, "helm{} list -n {ns}", helm.major);
            for name in names {
                let h: Vec<serde_json::Value> =
                    serde_json::from_str(&helm.ok(&["history", name, "-n", ns, "-o", "json"]))
                        .unwrap();
                assert_eq!(h.len(), revisions, "helm{} history {ns}/{name}", helm.major);
                assert_eq!(
                    h.last().unwrap()["status"],
                    "deployed",
                    "helm{} history {ns}/{name}: {h:?}",
                    helm.major
                );
            }
        }
        compare(h3, via, &["list", "-n", ns], &mut failures);
        for name in names {
            compare(h3, via, &["history", name, "-n", ns], &mut failures);
            compare(h3, via, &["status", name, "-n", ns], &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );

    // A failed atomic install that created its namespace removes it.
    let o = rudder(
        &tb.kubeconfig,
        Via::Default,
        &[
            "install",
            "e1",
            c1,
            "-n",
            &ns_failed,
            "--create-namespace",
            "--atomic",
            "--timeout",
            "60s",
            "--set",
            "cm=true,bad=true",
        ],
    );
    assert!(!o.ok, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("uninstalled due to atomic being set"),
        "{}",
        o.stderr
    );
    assert!(
        !tb.namespace_exists(&ns_failed),
        "the namespace the failed install created is still there"
    );
    assert_eq!(helm3.ok(&["list", "-a", "-n", &ns_failed, "-q"]), "");
    for ns in [&ns_install, &ns_upgrade, &ns_apply, &ns_cm] {
        tb.kubectl_ok(&["delete", "namespace", ns, "--wait=false"]);
    }
}
