//! Runs every case of `../shared/conformance/templates/cases.json` (captured
//! from real Helm v3.17.2) through the template engine.
//!
//! * Output cases must match byte for byte (after Helm's `<no value>` removal).
//! * Error cases must fail with exactly `expect.error_core` as the error text.
//! * All of this is enforced for every case outside [`NOT_YET_ENFORCED`].
//! * Nondeterministic cases are checked for shape only (success vs failure).
//!
//! `RUDDER_CASE_FILTER` (a family name or an id prefix) narrows the run.
mod common;

use base64::Engine as _;
use rudder::render::{render_with, RenderError, RenderOptions};
use rudder::template::{Engine, EngineOptions};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Cases whose failures are reported but do not fail the test yet, each with
/// the reason and where the fix belongs. Every other case is enforced: its
/// output must match byte for byte, or its error text must equal
/// `expect.error_core` exactly. The list is printed on every run, and an entry
/// that starts passing is reported so it can be removed.
const NOT_YET_ENFORCED: &[(&str, &str)] = &[];

fn not_yet_enforced(id: &str) -> bool {
    NOT_YET_ENFORCED.iter().any(|(c, _)| *c == id)
}

enum Outcome {
    Output(Vec<u8>),
    Error(String),
}

/// Writes the case as a chart directory, loads it with the chart loader and
/// renders it with render's pipeline, as `helm template rel ./conf -n ns1
/// --kube-version 1.31.0` does; the case file's text is cut out of the result.
fn run_case(case: &Json) -> Outcome {
    let id = case["id"].as_str().unwrap_or("");
    let Ok(dir) = tempfile::tempdir() else {
        return Outcome::Error("cannot create a temporary directory".into());
    };
    let root = dir.path().join("conf");
    let chart_yaml = case["chart_yaml"]
        .as_str()
        .unwrap_or("apiVersion: v2\nname: conf\nversion: 0.1.0\n");
    let mut files: Vec<(String, String)> = vec![
        ("Chart.yaml".into(), chart_yaml.into()),
        (
            "values.yaml".into(),
            case["values_yaml"].as_str().unwrap_or("").into(),
        ),
        (
            format!("templates/{id}.txt"),
            case["template"].as_str().unwrap_or("").into(),
        ),
    ];
    if let Some(extra) = case["files"].as_object() {
        for (k, v) in extra {
            files.push((k.clone(), v.as_str().unwrap_or("").into()));
        }
    }
    for (name, text) in &files {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if std::fs::write(&path, text).is_err() {
            return Outcome::Error(format!("cannot write {name}"));
        }
    }
    let chart = match rudder::chart::loader::load_dir(&root) {
        Ok(c) => c,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let opts = RenderOptions {
        release_name: "rel".into(),
        namespace: "ns1".into(),
        kube_version: Some("1.31.0".into()),
        ..RenderOptions::default()
    };
    let mut set = Engine::new(EngineOptions::default());
    let name = format!("conf/templates/{id}.txt");
    let files = match render_with(&mut set, &chart, &BTreeMap::new(), &opts) {
        Ok(r) => r.files,
        Err(RenderError::Manifest { files, .. }) => files,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    match files.get(&name) {
        // Stray (non-UTF-8) bytes come out raw, as Helm writes them.
        Some(s) => Outcome::Output(rudder::template::output_bytes(s).into_owned()),
        None => Outcome::Error(format!("{name} was not rendered")),
    }
}

#[derive(Default)]
struct Tally {
    pass: usize,
    fail: usize,
    err_exact: usize,
    err_total: usize,
}

#[test]
fn template_conformance() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let path = shared.join("conformance/templates/cases.json");
    let text = std::fs::read_to_string(&path).expect("read cases.json");
    let cases: Vec<Json> = serde_json::from_str(&text).expect("parse cases.json");
    let filter = std::env::var("RUDDER_CASE_FILTER").unwrap_or_default();
    let verbose = std::env::var("RUDDER_CASE_VERBOSE").is_ok();

    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut enforced_failures = Vec::new();
    let mut now_passing = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap_or("");
        let family = case["family"].as_str().unwrap_or("");
        if !filter.is_empty() && family != filter && !id.starts_with(&filter) {
            continue;
        }
        let expect = &case["expect"];
        let nondet = case["nondeterministic"].as_bool().unwrap_or(false);
        let got = run_case(case);
        let t = tallies.entry(family.to_string()).or_default();
        let (ok, detail) = match (&got, expect.get("error_core")) {
            (Outcome::Error(e), Some(want)) => {
                let want = want.as_str().unwrap_or("");
                t.err_total += 1;
                if e == want {
                    t.err_exact += 1;
                }
                (
                    e == want,
                    if e == want {
                        String::new()
                    } else {
                        format!(
                            "error text differs:\n  got:  {}\n  want: {}",
                            trunc(e),
                            trunc(want)
                        )
                    },
                )
            }
            (Outcome::Output(o), Some(want)) => (
                false,
                format!(
                    "expected error {}, got output {:?}",
                    trunc(want.as_str().unwrap_or("")),
                    trunc(&String::from_utf8_lossy(o))
                ),
            ),
            (Outcome::Error(e), None) => (false, format!("unexpected error: {}", trunc(e))),
            (Outcome::Output(o), None) => {
                let want: Vec<u8> =
                    if let Some(b) = expect.get("output_b64").and_then(|v| v.as_str()) {
                        base64::engine::general_purpose::STANDARD
                            .decode(b)
                            .unwrap_or_default()
                    } else {
                        expect["output"].as_str().unwrap_or("").as_bytes().to_vec()
                    };
                if nondet || *o == want {
                    (true, String::new())
                } else {
                    (
                        false,
                        format!(
                            "output differs:\n  got:  {:?}\n  want: {:?}",
                            trunc(&String::from_utf8_lossy(o)),
                            trunc(&String::from_utf8_lossy(&want))
                        ),
                    )
                }
            }
        };
        if ok {
            t.pass += 1;
            if not_yet_enforced(id) {
                now_passing.push(id.to_string());
            }
        } else {
            t.fail += 1;
            if !not_yet_enforced(id) {
                enforced_failures.push(id.to_string());
            }
        }
        if verbose && !detail.is_empty() {
            eprintln!("[FAIL] {id}: {detail}");
        }
    }
    let mut total = Tally::default();
    eprintln!(
        "{:<18} {:>5} {:>5} {:>12}",
        "family", "pass", "fail", "err-exact"
    );
    for (fam, t) in &tallies {
        eprintln!(
            "{fam:<18} {:>5} {:>5} {:>7}/{:<4}",
            t.pass, t.fail, t.err_exact, t.err_total
        );
        total.pass += t.pass;
        total.fail += t.fail;
        total.err_exact += t.err_exact;
        total.err_total += t.err_total;
    }
    eprintln!(
        "{:<18} {:>5} {:>5} {:>7}/{:<4}",
        "TOTAL", total.pass, total.fail, total.err_exact, total.err_total
    );
    eprintln!("not enforced yet ({}):", NOT_YET_ENFORCED.len());
    for (id, why) in NOT_YET_ENFORCED {
        eprintln!("  {id}: {why}");
    }
    if !now_passing.is_empty() {
        eprintln!(
            "now passing, remove from NOT_YET_ENFORCED: {}",
            now_passing.join(", ")
        );
    }
    assert!(
        enforced_failures.is_empty(),
        "{} enforced cases failed (RUDDER_CASE_VERBOSE=1 for details): {}",
        enforced_failures.len(),
        enforced_failures.join(", ")
    );
}

fn trunc(s: &str) -> String {
    if s.len() > 300 {
        let mut end = 300;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}... ({} bytes)", &s[..end], s.len())
    } else {
        s.to_string()
    }
}
