//! Every case of every chart in `../shared/conformance/charts`, rendered by
//! the `rudder` binary with the flags of the case's meta.json command
//! (`rudder` in place of `helm3`, `--output-dir` into a scratch directory).
//!
//! * `ok` cases must give a byte-identical tree; lines that meta.json lists
//!   as non-deterministic are compared by shape (same key, same length and
//!   alphabet, or the same PEM block types when the value is base64 PEM).
//! * error cases must fail; how many error texts equal Helm's is reported.
//! * Rendering a case twice gives the same bytes (non-deterministic lines
//!   aside).
//!
//! A mismatch fails the test unless the case is in [`KNOWN_FAILURES`], which
//! is printed with the reason.
mod common;

use base64::Engine as _;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cases that are known not to match yet: `chart/case` and why.
const KNOWN_FAILURES: &[(&str, &str)] = &[
    (
        "prom-kube-prometheus-stack/default",
        "the corpus copy lacks the vendored subcharts (kube-state-metrics, prometheus-node-exporter, grafana, prometheus-windows-exporter) that its expected output was rendered with; helm 3 fails on it the same way",
    ),
    (
        "prom-kube-prometheus-stack/ci-03-non-defaults-values",
        "the corpus copy lacks the vendored subcharts; helm 3 fails on it the same way",
    ),
];

fn rudder() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rudder"))
}

/// Files under `dir`, relative path -> bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if let Ok(data) = std::fs::read(&p) {
                let rel = p
                    .strip_prefix(base)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, data);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn alphabet(s: &str) -> BTreeSet<&'static str> {
    s.chars()
        .map(|c| {
            if c.is_ascii_digit() {
                "digit"
            } else if c.is_ascii_lowercase() {
                "lower"
            } else if c.is_ascii_uppercase() {
                "upper"
            } else if c == '+' || c == '/' || c == '=' {
                "b64"
            } else {
                "other"
            }
        })
        .collect()
}

fn pem_types(value: &str) -> Option<Vec<String>> {
    let v = value.trim().trim_matches('"');
    let bytes = base64::engine::general_purpose::STANDARD.decode(v).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let types: Vec<String> = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("-----BEGIN ")
                .and_then(|r| r.strip_suffix("-----"))
        })
        .map(str::to_string)
        .collect();
    (!types.is_empty()).then_some(types)
}

/// Whether two random lines have the same shape.
fn same_shape(a: &str, b: &str) -> bool {
    let split = |l: &str| -> (String, String) {
        match l.split_once(": ") {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (String::new(), l.to_string()),
        }
    };
    let (ka, va) = split(a);
    let (kb, vb) = split(b);
    if ka != kb {
        return false;
    }
    if let (Some(pa), Some(pb)) = (pem_types(&va), pem_types(&vb)) {
        return pa == pb;
    }
    let (aa, ab) = (alphabet(&va), alphabet(&vb));
    va.len() == vb.len() && (aa.is_subset(&ab) || ab.is_subset(&aa))
}

/// Compares a produced file with the expected one; `random` lists 1-based
/// line numbers to compare by shape.
fn file_matches(got: &[u8], want: &[u8], random: Option<&BTreeSet<usize>>) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let Some(random) = random else {
        return Err(first_difference(got, want));
    };
    let g = String::from_utf8_lossy(got);
    let w = String::from_utf8_lossy(want);
    let gl: Vec<&str> = g.split('\n').collect();
    let wl: Vec<&str> = w.split('\n').collect();
    if gl.len() != wl.len() {
        return Err(format!("{} lines, expected {}", gl.len(), wl.len()));
    }
    for (i, (a, b)) in gl.iter().zip(wl.iter()).enumerate() {
        if a == b {
            continue;
        }
        if random.contains(&(i + 1)) && same_shape(a, b) {
            continue;
        }
        return Err(format!("line {}: got {:?}, expected {:?}", i + 1, a, b));
    }
    Ok(())
}

fn first_difference(got: &[u8], want: &[u8]) -> String {
    let g = String::from_utf8_lossy(got);
    let w = String::from_utf8_lossy(want);
    for (i, (a, b)) in g.split('\n').zip(w.split('\n')).enumerate() {
        if a != b {
            return format!("line {}: got {:?}, expected {:?}", i + 1, a, b);
        }
    }
    format!(
        "length differs: got {} lines, expected {}",
        g.split('\n').count(),
        w.split('\n').count()
    )
}

struct CaseResult {
    ok: bool,
    detail: String,
    error_text_match: Option<bool>,
}

/// Runs the case's command with rudder; returns (status ok, stderr, out dir).
fn run_case(chart_dir: &Path, command: &str, out: &Path) -> (bool, String) {
    let mut words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    if let Some(i) = words.iter().position(|w| w == "--output-dir") {
        if i + 1 < words.len() {
            words[i + 1] = out.display().to_string();
        }
    }
    let output = Command::new(rudder())
        .args(&words[1..])
        .current_dir(chart_dir)
        .env("TZ", "UTC")
        .output();
    match output {
        Ok(o) => (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ),
        Err(e) => (false, e.to_string()),
    }
}

fn check_case(chart_dir: &Path, case: &Json) -> CaseResult {
    let name = case["name"].as_str().unwrap_or_default();
    let command = case["command"].as_str().unwrap_or_default();
    let case_dir = chart_dir.join("cases").join(name);
    let scratch = tempfile::tempdir().expect("tempdir");
    let out = scratch.path().join("out");
    let (success, stderr) = run_case(chart_dir, command, &out);
    if case["result"].as_str() != Some("ok") {
        let want = std::fs::read_to_string(case_dir.join("expected_error.txt")).unwrap_or_default();
        let matched = stderr.trim() == want.trim();
        return CaseResult {
            ok: !success,
            detail: if success {
                "expected an error, rudder succeeded".into()
            } else if matched {
                String::new()
            } else {
                format!("error text differs: got {:?}", stderr.trim())
            },
            error_text_match: Some(matched),
        };
    }
    if !success {
        return CaseResult {
            ok: false,
            detail: format!("rudder failed: {}", stderr.trim()),
            error_text_match: None,
        };
    }
    let got = tree(&out);
    let want = tree(&case_dir.join("expected"));
    let mut random: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    if let Some(d) = case["nondeterministic_detail"].as_object() {
        for (file, info) in d {
            let lines = info["differing_lines"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64())
                        .map(|x| x as usize)
                        .collect()
                })
                .unwrap_or_default();
            random.insert(file.clone(), lines);
        }
    }
    let gk: BTreeSet<_> = got.keys().collect();
    let wk: BTreeSet<_> = want.keys().collect();
    if gk != wk {
        let extra: Vec<_> = gk.difference(&wk).collect();
        let missing: Vec<_> = wk.difference(&gk).collect();
        return CaseResult {
            ok: false,
            detail: format!("file sets differ: extra {extra:?}, missing {missing:?}"),
            error_text_match: None,
        };
    }
    for (k, w) in &want {
        if let Err(e) = file_matches(&got[k], w, random.get(k)) {
            return CaseResult {
                ok: false,
                detail: format!("{k}: {e}"),
                error_text_match: None,
            };
        }
    }
    // Determinism: a second render gives the same bytes (random lines aside).
    let out2 = scratch.path().join("out2");
    let (success2, _) = run_case(chart_dir, command, &out2);
    let again = tree(&out2);
    if !success2 || again.len() != got.len() {
        return CaseResult {
            ok: false,
            detail: "second render differs".into(),
            error_text_match: None,
        };
    }
    for (k, g) in &got {
        if let Err(e) = file_matches(&again[k], g, random.get(k)) {
            return CaseResult {
                ok: false,
                detail: format!("second render differs: {k}: {e}"),
                error_text_match: None,
            };
        }
    }
    CaseResult {
        ok: true,
        detail: String::new(),
        error_text_match: None,
    }
}

#[test]
fn every_corpus_chart_case_renders_like_helm() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let charts = shared.join("conformance/charts");
    let mut ids: Vec<PathBuf> = std::fs::read_dir(&charts)
        .expect("charts dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    ids.sort();
    let known: BTreeMap<&str, &str> = KNOWN_FAILURES.iter().copied().collect();
    let (mut total, mut passed, mut err_cases, mut err_matched) = (0, 0, 0, 0);
    let mut unexpected = Vec::new();
    let mut known_hit = Vec::new();
    for dir in &ids {
        let id = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let meta: Json = serde_json::from_str(
            &std::fs::read_to_string(dir.join("meta.json")).expect("meta.json"),
        )
        .expect("meta.json parses");
        let cases = meta["cases"].as_array().cloned().unwrap_or_default();
        let mut chart_pass = 0;
        for case in &cases {
            let name = case["name"].as_str().unwrap_or_default();
            let key = format!("{id}/{name}");
            let r = check_case(dir, case);
            total += 1;
            if let Some(m) = r.error_text_match {
                err_cases += 1;
                if m {
                    err_matched += 1;
                }
            }
            if r.ok {
                chart_pass += 1;
                passed += 1;
                if known.contains_key(key.as_str()) {
                    println!("  now passing (remove from KNOWN_FAILURES): {key}");
                }
            } else if let Some(why) = known.get(key.as_str()) {
                known_hit.push(format!("{key}: {why} ({})", r.detail));
            } else {
                unexpected.push(format!("{key}: {}", r.detail));
            }
            if !r.ok || !r.detail.is_empty() {
                println!(
                    "  {key}: {}",
                    if r.detail.is_empty() {
                        "FAIL"
                    } else {
                        &r.detail
                    }
                );
            }
        }
        println!("{id}: {chart_pass}/{} cases pass", cases.len());
    }
    println!(
        "TOTAL: {passed}/{total} cases pass; error texts matching Helm: {err_matched}/{err_cases}"
    );
    println!("known failures ({}):", known_hit.len());
    for k in &known_hit {
        println!("  {k}");
    }
    assert!(
        unexpected.is_empty(),
        "unexpected failures:\n{}",
        unexpected.join("\n")
    );
}
