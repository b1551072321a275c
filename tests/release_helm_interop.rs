//! Real Helm (3 and 4, `HELM_DRIVER=sql`) and rudder share release history
//! through PostgreSQL: each reads what the other wrote, and prints it the way
//! helm v3.17.2 does.
mod release_common;

use release_common::*;
use rudder::release::store::postgres::PgStore;
use rudder::release::{codec, HistoryMax, Releases, RevisionContent, Store};
use std::collections::BTreeMap;

/// Compares `rudder ARGS` with `helm ARGS` on the same records: stdout
/// byte for byte, success, and the error message.
fn compare(helm: &HelmEnv, dsn: &str, args: &[&str], failures: &mut Vec<String>) -> bool {
    let h = helm.run(args);
    let r = rudder(dsn, args);
    let mut ok = true;
    if h.ok != r.ok {
        failures.push(format!(
            "helm{} {args:?}: exit ok={} but rudder ok={} (helm stderr {:?}, rudder stderr {:?})",
            helm.major, h.ok, r.ok, h.stderr, r.stderr
        ));
        return false;
    }
    if !h.ok {
        let he = h.stderr.lines().last().unwrap_or("").to_string();
        let re = r.stderr.lines().last().unwrap_or("").to_string();
        if he != re {
            failures.push(format!(
                "helm{} {args:?}: error {he:?} vs rudder {re:?}",
                helm.major
            ));
            ok = false;
        }
    }
    if h.stdout != r.stdout {
        failures.push(format!(
            "helm{} {args:?} printed:\n{}\n--- rudder printed:\n{}",
            helm.major, h.stdout, r.stdout
        ));
        ok = false;
    }
    if ok && args.windows(2).any(|w| w == ["-o", "json"]) && h.ok {
        let hv: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
        let rv: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let mut d = Vec::new();
        json_diff("$", &hv, &rv, &mut d);
        if !d.is_empty() {
            failures.push(format!(
                "helm{} {args:?} JSON fields differ: {d:?}",
                helm.major
            ));
            ok = false;
        }
    }
    ok
}

/// The read-side commands compared, for a history with releases r1
/// (several revisions), r2 (namespace `other`) and r3 (uninstalled).
fn read_commands(revisions: &[u64]) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<&str>> = vec![
        vec!["history", "r1"],
        vec!["history", "r1", "-o", "json"],
        vec!["history", "r1", "-o", "yaml"],
        vec!["history", "r1", "--max", "2"],
        vec!["history", "r2", "-n", "other"],
        vec!["history", "r3"],
        vec!["history", "missing"],
        vec!["list"],
        vec!["list", "-a"],
        vec!["list", "-a", "-A"],
        vec!["list", "-A", "-o", "json"],
        vec!["list", "-a", "-o", "yaml"],
        vec!["list", "--superseded"],
        vec!["list", "--uninstalled", "-o", "json"],
        vec!["list", "-q", "-a"],
        vec!["list", "-a", "--no-headers"],
        vec!["list", "-a", "-r"],
        // (`-d` is not compared: Helm sorts by whole seconds over an order
        // that comes from a Go map, so releases made within one second come
        // out in random order.)
        vec!["list", "-a", "--max", "1", "--offset", "1"],
        vec!["list", "-a", "--offset", "9"],
        vec!["list", "-a", "--filter", "^r[13]$"],
        vec!["status", "r1"],
        vec!["status", "r1", "--show-desc"],
        vec!["status", "r1", "-o", "json"],
        vec!["status", "r1", "-o", "yaml"],
        vec!["status", "r3", "-o", "json"],
        vec!["status", "r2", "-n", "other"],
        vec!["status", "missing"],
        vec!["status", "r4", "--show-desc"],
        vec!["history", "r4", "-o", "json"],
        vec!["get", "manifest", "r4"],
        vec!["list", "--failed"],
        vec!["get", "values", "r1"],
        vec!["get", "values", "r1", "-a"],
        vec!["get", "values", "r1", "-o", "json"],
        vec!["get", "values", "r1", "-a", "-o", "json"],
        vec!["get", "values", "r1", "-a", "-o", "yaml"],
        vec!["get", "values", "r2", "-n", "other"],
        vec!["get", "manifest", "r1"],
        vec!["get", "notes", "r1"],
        vec!["get", "hooks", "r1"],
        vec!["get", "all", "r1"],
        vec!["get", "metadata", "r1"],
        vec!["get", "metadata", "r1", "-o", "json"],
        vec!["get", "metadata", "r2", "-n", "other", "-o", "yaml"],
        vec!["get", "notes", "r3"],
        vec!["get", "values", "r1", "--revision", "99"],
    ];
    let mut out: Vec<Vec<String>> = v
        .drain(..)
        .map(|a| a.into_iter().map(String::from).collect())
        .collect();
    for r in revisions {
        let r = r.to_string();
        for a in [
            vec!["get", "values", "r1", "--revision", &r],
            vec!["get", "values", "r1", "-a", "--revision", &r],
            vec!["get", "values", "r1", "-o", "json", "--revision", &r],
            vec!["get", "notes", "r1", "--revision", &r],
            vec!["get", "manifest", "r1", "--revision", &r],
            vec!["status", "r1", "--revision", &r, "-o", "json"],
        ] {
            out.push(a.into_iter().map(String::from).collect());
        }
    }
    out
}

/// Helm 4 prints a few things differently from v3: `list` has no `-a`
/// (every state flag instead) and `status` always shows the description.
fn helm4_equivalent(args: &[String]) -> Option<Vec<String>> {
    let mut a: Vec<String> = args.to_vec();
    const STATES: [&str; 6] = [
        "--deployed",
        "--failed",
        "--superseded",
        "--uninstalled",
        "--uninstalling",
        "--pending",
    ];
    if a[0] == "list" && !a.iter().any(|x| x == "-a" || STATES.contains(&x.as_str())) {
        // v4's default listing shows every state; v3's only deployed and failed.
        a.push("--deployed".into());
        a.push("--failed".into());
    }
    if a[0] == "list" {
        if let Some(i) = a.iter().position(|x| x == "-a") {
            a.remove(i);
            for f in STATES {
                a.push(f.into());
            }
        }
    }
    // v4 prints DESCRIPTION in status tables and get all, LABELS and
    // APPLY_METHOD in get metadata, and its status JSON/YAML follows Helm 4's
    // record format: compared only on v3.
    if a[0] == "status" && !a.iter().any(|x| x == "-o") {
        let i = a.iter().position(|x| x == "--show-desc")?;
        a.remove(i);
    } else if a[0] == "status" || (a[0] == "get" && (a[1] == "all" || a[1] == "metadata")) {
        return None;
    }
    Some(a)
}

/// Every stored row decodes, and re-encodes to the same JSON fields.
fn check_rows(db: &TestDb, writer_major: u8, failures: &mut Vec<String>) -> usize {
    let mut c = db.client();
    let rows = c
        .query("SELECT key, body FROM releases_v1 ORDER BY key", &[])
        .unwrap();
    for row in &rows {
        let key: String = row.get(0);
        let body: String = row.get(1);
        let rel = match codec::decode(&body) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{key}: rudder cannot decode: {e}"));
                continue;
            }
        };
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&body)
            .unwrap();
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut json).unwrap();
        let mut theirs: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let mut ours: serde_json::Value =
            serde_json::from_str(&rudder::gostd::json::marshal(&rel).unwrap()).unwrap();
        if writer_major == 4 {
            // Helm 4 additions rudder does not model in the chart, and its
            // omitzero times (rudder writes v3's `""`).
            if let Some(ch) = theirs.get_mut("chart").and_then(|c| c.as_object_mut()) {
                ch.remove("modtime");
                ch.remove("schemamodtime");
                for list in ["templates", "files"] {
                    if let Some(ts) = ch.get_mut(list).and_then(|t| t.as_array_mut()) {
                        for t in ts {
                            t.as_object_mut().unwrap().remove("modtime");
                        }
                    }
                }
            }
            let info = ours["info"].as_object_mut().unwrap();
            if theirs["info"].get("deleted").is_none() {
                info.remove("deleted");
            }
            for h in ours
                .get_mut("hooks")
                .and_then(|h| h.as_array_mut())
                .into_iter()
                .flatten()
            {
                let lr = h["last_run"].as_object_mut().unwrap();
                lr.retain(|_, v| v != "");
                lr.insert("phase".into(), "".into());
            }
        }
        let mut d = Vec::new();
        json_diff(&key, &theirs, &ours, &mut d);
        if !d.is_empty() {
            failures.push(format!("helm{writer_major} record {key}: {d:?}"));
        }
    }
    rows.len()
}

fn helm_writes_rudder_reads(major: u8) {
    let Some(db) = TestDb::new(&format!("h{major}w")) else {
        return;
    };
    let port = start_fake_apiserver();
    let Some(helm) = HelmEnv::new(major, port, &db.url()) else {
        return;
    };
    let Some(helm3) = HelmEnv::new(3, port, &db.url()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chart = notes_chart(dir.path(), "0.1.0");
    let chart2 = notes_chart(&dir.path().join("v2"), "0.2.0");
    let c1 = chart.to_str().unwrap();
    let c2 = chart2.to_str().unwrap();

    helm.ok(&["install", "r1", c1, "--set", "b=2", "--labels", "team=a"]);
    helm.ok(&["upgrade", "r1", c1, "--set", "c=3.5,nested.x=null"]);
    helm.ok(&["upgrade", "r1", c2, "--reuse-values", "--set", "d=4"]);
    helm.ok(&["rollback", "r1", "1"]);
    helm.ok(&["upgrade", "r1", c2, "--history-max", "3", "--set", "e=x<y>"]);
    let tricky = tricky_values(dir.path());
    helm.ok(&[
        "upgrade",
        "r1",
        c2,
        "--reuse-values",
        "--history-max",
        "4",
        "-f",
        tricky.to_str().unwrap(),
    ]);
    helm.ok(&["install", "r2", c1, "-n", "other", "--set", "name=other"]);
    helm.ok(&["install", "r3", c1]);
    helm.ok(&["uninstall", "r3", "--keep-history"]);
    // Failures the fake API server causes: a refused ConfigMap write.
    let f = helm.run(&[
        "upgrade",
        "r1",
        c2,
        "--reuse-values",
        "--set",
        "cm=true",
        "--disable-openapi-validation",
    ]);
    assert!(!f.ok, "upgrade should fail: {}", f.stdout);
    let f = helm.run(&[
        "install",
        "r4",
        c1,
        "--set",
        "cm=true",
        "--disable-openapi-validation",
    ]);
    assert!(!f.ok, "install should fail: {}", f.stdout);

    let mut failures = Vec::new();
    let rows = check_rows(&db, major, &mut failures);
    let revs: Vec<u64> = Releases::new(&PgStore::connect(&db.url()).unwrap())
        .history("default", "r1")
        .unwrap()
        .iter()
        .map(|r| r.version)
        .collect();
    assert_eq!(
        revs,
        vec![3, 4, 5, 6, 7],
        "history-max pruning as Helm did it"
    );

    let mut n = 0;
    let mut passed = 0;
    for args in read_commands(&revs) {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        n += 1;
        passed += compare(&helm3, &db.url(), &a, &mut failures) as usize;
    }
    eprintln!("helm{major}-written records ({rows} rows): {passed}/{n} commands print as helm v3");
    if major == 4 {
        let (mut n4, mut p4) = (0, 0);
        for args in read_commands(&revs) {
            let Some(h4) = helm4_equivalent(&args) else {
                continue;
            };
            let h4: Vec<&str> = h4.iter().map(String::as_str).collect();
            let r: Vec<&str> = args.iter().map(String::as_str).collect();
            n4 += 1;
            let ho = helm.run(&h4);
            let ro = rudder(&db.url(), &r);
            if ho.stdout == ro.stdout && ho.ok == ro.ok {
                p4 += 1;
            } else {
                failures.push(format!(
                    "helm4 {h4:?}:\n{}\n--- rudder {r:?}:\n{}",
                    ho.stdout, ro.stdout
                ));
            }
        }
        eprintln!(
            "helm4-written records: {p4}/{n4} commands print as helm v4 (where v4 prints like v3)"
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
fn helm3_writes_rudder_reads() {
    helm_writes_rudder_reads(3);
}

#[test]
fn helm4_writes_rudder_reads() {
    helm_writes_rudder_reads(4);
}

fn rendered(chart_dir: &std::path::Path, config: &str, notes: &str) -> RevisionContent {
    use rudder::chart::{Chart, ChartFile, Metadata};
    let mut tpls = Vec::new();
    for f in ["NOTES.txt", "test.yaml"] {
        tpls.push(ChartFile {
            name: format!("templates/{f}"),
            data: std::fs::read(chart_dir.join("templates").join(f))
                .unwrap()
                .into(),
        });
    }
    let values: rudder::yaml::Node =
        serde_json::from_str(r#"{"a":1,"name":"web","nested":{"keep":[1,2],"true":"two","x":1}}"#)
            .unwrap();
    let chart = Chart {
        metadata: Metadata {
            name: "notes".into(),
            version: "0.1.0".into(),
            description: "NOTES only".into(),
            api_version: "v2".into(),
            app_version: "1.0".into(),
            ..Metadata::default()
        },
        templates: tpls,
        values: Some(values),
        ..Chart::default()
    };
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

/// Writes a history with rudder's library, the way install, upgrade,
/// rollback and uninstall record it.
fn rudder_writes(store: &dyn Store, chart: &std::path::Path) {
    let rel = Releases::new(store);
    let p = rel
        .begin_install(
            "default",
            "r1",
            rendered(chart, r#"{"b":2}"#, "Notes for r1 rev 1\n"),
            false,
        )
        .unwrap();
    rel.finish_install(&p, Ok(()), None).unwrap();
    let base = rel.upgrade_base("default", "r1").unwrap();
    let p = rel
        .begin_upgrade(
            &base,
            rendered(chart, r#"{"c":"3.5"}"#, "Notes for r1 rev 2\n"),
            HistoryMax::default(),
        )
        .unwrap();
    rel.finish_upgrade(&base, &p, Ok(()), None).unwrap();
    let base = rel.upgrade_base("default", "r1").unwrap();
    let p = rel
        .begin_upgrade(
            &base,
            rendered(chart, r#"{"c":"3.5","d":4}"#, "Notes for r1 rev 3\n"),
            HistoryMax::default(),
        )
        .unwrap();
    rel.finish_upgrade(&base, &p, Err("injected failure".into()), None)
        .unwrap();
    let (last, p) = rel
        .begin_rollback("default", "r1", 1, HistoryMax::default())
        .unwrap();
    rel.finish_rollback(&last, &p, Ok(())).unwrap();
    let p = rel
        .begin_install(
            "other",
            "r2",
            rendered(chart, r#"{"name":"other"}"#, "Notes for r2 rev 1\n"),
            false,
        )
        .unwrap();
    rel.finish_install(&p, Ok(()), None).unwrap();
    let p = rel
        .begin_install(
            "default",
            "r3",
            rendered(chart, "{}", "Notes for r3 rev 1\n"),
            false,
        )
        .unwrap();
    rel.finish_install(&p, Ok(()), None).unwrap();
    let u = rel.begin_uninstall("default", "r3", true).unwrap().unwrap();
    rel.finish_uninstall(&u, true, None).unwrap();
}

fn rudder_writes_helm_reads(major: u8) {
    let Some(db) = TestDb::new(&format!("r{major}")) else {
        return;
    };
    let port = start_fake_apiserver();
    let Some(helm) = HelmEnv::new(major, port, &db.url()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chart = notes_chart(dir.path(), "0.1.0");
    {
        let store = PgStore::connect(&db.url()).unwrap();
        rudder_writes(&store, &chart);
    }
    let mut failures = Vec::new();
    let revs = [1, 2, 3, 4];
    let (mut n, mut passed) = (0, 0);
    for args in read_commands(&revs) {
        let cmd = if major == 3 {
            Some(args.clone())
        } else {
            helm4_equivalent(&args)
        };
        let Some(cmd) = cmd else { continue };
        let h: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let r: Vec<&str> = args.iter().map(String::as_str).collect();
        n += 1;
        let ho = helm.run(&h);
        let ro = rudder(&db.url(), &r);
        if ho.stdout == ro.stdout && ho.ok == ro.ok {
            passed += 1;
        } else {
            failures.push(format!(
                "helm{major} {h:?} (ok={}, {}):\n{}\n--- rudder {r:?} (ok={}, {}):\n{}",
                ho.ok, ho.stderr, ho.stdout, ro.ok, ro.stderr, ro.stdout
            ));
        }
    }
    eprintln!("rudder-written records: {passed}/{n} commands print identically with helm{major}");

    // The same records copied into the embedded file store print the same.
    if major == 3 {
        let fdir = tempfile::tempdir().unwrap();
        let file = rudder::release::store::file::FileStore::open(fdir.path()).unwrap();
        let pg = PgStore::connect(&db.url()).unwrap();
        for r in pg.list_all(None).unwrap() {
            file.create(&r).unwrap();
        }
        let store = format!("file:{}", fdir.path().display());
        let (mut nf, mut pf) = (0, 0);
        for args in read_commands(&revs) {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            nf += 1;
            let ho = helm.run(&a);
            let ro = rudder(&store, &a);
            if ho.stdout == ro.stdout && ho.ok == ro.ok {
                pf += 1;
            } else {
                failures.push(format!(
                    "file store {a:?}:\n{}\n--- rudder:\n{}",
                    ho.stdout, ro.stdout
                ));
            }
        }
        eprintln!("same records in the file store: {pf}/{nf} commands print as helm3");
    }

    // Helm takes over: upgrade and roll back the release rudder wrote.
    let c = chart.to_str().unwrap();
    helm.ok(&["upgrade", "r1", c, "--reuse-values", "--set", "z=1"]);
    helm.ok(&["rollback", "r1", "2"]);
    helm.ok(&["upgrade", "r2", c, "-n", "other"]);
    let after = helm.ok(&["history", "r1"]);
    assert!(after.contains("Rollback to 2"), "{after}");
    for args in [
        vec!["history", "r1"],
        vec!["get", "values", "r1", "--revision", "5"],
        vec!["history", "r2", "-n", "other"],
    ] {
        let ho = helm.run(&args);
        let ro = rudder(&db.url(), &args);
        if ho.stdout != ro.stdout {
            failures.push(format!(
                "after helm{major} took over, {args:?}:\n{}\n--- rudder:\n{}",
                ho.stdout, ro.stdout
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn rudder_writes_helm3_reads() {
    rudder_writes_helm_reads(3);
}

#[test]
fn rudder_writes_helm4_reads() {
    rudder_writes_helm_reads(4);
}
