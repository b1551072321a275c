//! The template-engine conformance cases (every family that does not start
//! with `sprig_`) run through the built `rudder template` binary, with the
//! sentinel technique the cases were captured with (see
//! `../shared/conformance/templates/README.md`):
//!
//! * output cases: the case file is `@@CONF_BEGIN@@<template>@@CONF_END@@`,
//!   a second file `00-force-error.txt` holds `[force-error`, and `--debug`
//!   makes the binary dump every rendered file before failing on the invalid
//!   YAML; the text between the sentinels must equal Helm's output;
//! * error cases: the plain template without `--debug` must fail; how many
//!   stderr texts equal Helm's is reported;
//! * non-deterministic cases must give the same kind of result.
//!
//! A mismatch fails the test unless the case is listed in
//! [`KNOWN_FAILURES`] (printed with the reason).
mod common;

use base64::Engine as _;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cases known not to match yet, with the reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

const BEGIN: &str = "@@CONF_BEGIN@@";
const END: &str = "@@CONF_END@@";

fn rudder() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rudder"))
}

fn write_chart(dir: &Path, case: &Json, template: &str, force_error: bool) {
    let chart_yaml = case["chart_yaml"]
        .as_str()
        .unwrap_or("apiVersion: v2\nname: conf\nversion: 0.1.0\n");
    std::fs::create_dir_all(dir.join("templates")).expect("mkdir");
    std::fs::write(dir.join("Chart.yaml"), chart_yaml).expect("Chart.yaml");
    std::fs::write(
        dir.join("values.yaml"),
        case["values_yaml"].as_str().unwrap_or(""),
    )
    .expect("values");
    if let Some(files) = case["files"].as_object() {
        for (name, content) in files {
            let p = dir.join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(p, content.as_str().unwrap_or("")).expect("file");
        }
    }
    let id = case["id"].as_str().unwrap_or("case");
    std::fs::write(dir.join(format!("templates/{id}.txt")), template).expect("template");
    if force_error {
        std::fs::write(dir.join("templates/00-force-error.txt"), "[force-error").expect("force");
    }
}

fn run(dir: &Path, debug: bool) -> (bool, Vec<u8>, String) {
    let mut cmd = Command::new(rudder());
    cmd.arg("template")
        .arg("rel")
        .arg(dir)
        .args(["--namespace", "ns1", "--kube-version", "1.31.0"])
        .env("TZ", "UTC");
    if debug {
        cmd.arg("--debug");
    }
    match cmd.output() {
        Ok(o) => (
            o.status.success(),
            o.stdout,
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ),
        Err(e) => (false, Vec::new(), e.to_string()),
    }
}

fn between(out: &[u8]) -> Option<Vec<u8>> {
    let b = out
        .windows(BEGIN.len())
        .position(|w| w == BEGIN.as_bytes())?
        + BEGIN.len();
    let e = out[b..]
        .windows(END.len())
        .position(|w| w == END.as_bytes())?
        + b;
    Some(out[b..e].to_vec())
}

enum Outcome {
    Pass,
    PassErrorTextDiffers(String),
    Fail(String),
}

fn check(case: &Json) -> Outcome {
    let template = case["template"].as_str().unwrap_or("");
    let expect = &case["expect"];
    let nondet = case["nondeterministic"].as_bool().unwrap_or(false);
    let scratch = tempfile::tempdir().expect("tempdir");
    if expect.get("error").is_some() {
        let dir = scratch.path().join("conf");
        write_chart(&dir, case, template, false);
        let (ok, _, stderr) = run(&dir, false);
        if ok {
            return Outcome::Fail("expected an error, rudder succeeded".into());
        }
        let want = expect["error"].as_str().unwrap_or("").trim();
        return if nondet || stderr.trim() == want {
            Outcome::Pass
        } else {
            Outcome::PassErrorTextDiffers(stderr.trim().to_string())
        };
    }
    let want: Vec<u8> = if let Some(b) = expect["output_b64"].as_str() {
        base64::engine::general_purpose::STANDARD
            .decode(b)
            .unwrap_or_default()
    } else {
        expect["output"].as_str().unwrap_or("").as_bytes().to_vec()
    };
    let dir = scratch.path().join("conf");
    write_chart(&dir, case, &format!("{BEGIN}{template}{END}"), true);
    let (_, stdout, stderr) = run(&dir, true);
    let Some(got) = between(&stdout) else {
        return Outcome::Fail(format!("no sentinel output; stderr: {}", stderr.trim()));
    };
    if nondet || got == want {
        Outcome::Pass
    } else {
        Outcome::Fail(format!(
            "got {:?}, expected {:?}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        ))
    }
}

#[test]
fn template_cases_through_the_binary_match_helm() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let text = std::fs::read_to_string(shared.join("conformance/templates/cases.json"))
        .expect("cases.json");
    let cases: Vec<Json> = serde_json::from_str(&text).expect("cases.json parses");
    let known: std::collections::BTreeMap<&str, &str> = KNOWN_FAILURES.iter().copied().collect();
    let mut per_family: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let (mut run_count, mut passed, mut err_total, mut err_match) = (0, 0, 0, 0);
    let mut unexpected = Vec::new();
    for case in &cases {
        let family = case["family"].as_str().unwrap_or("");
        if family.starts_with("sprig_") {
            continue;
        }
        let id = case["id"].as_str().unwrap_or("");
        run_count += 1;
        let is_err = case["expect"].get("error").is_some();
        let entry = per_family.entry(family.to_string()).or_default();
        entry.1 += 1;
        let outcome = check(case);
        if is_err {
            err_total += 1;
        }
        match outcome {
            Outcome::Pass | Outcome::PassErrorTextDiffers(_) => {
                if let Outcome::PassErrorTextDiffers(got) = &outcome {
                    println!(
                        "  {id}: error text differs: {}",
                        got.chars().take(300).collect::<String>()
                    );
                }
                passed += 1;
                entry.0 += 1;
                if is_err && matches!(outcome, Outcome::Pass) {
                    err_match += 1;
                }
                if known.contains_key(id) {
                    println!("  now passing (remove from KNOWN_FAILURES): {id}");
                }
            }
            Outcome::Fail(why) => {
                println!("  {id}: {}", why.chars().take(300).collect::<String>());
                if !known.contains_key(id) {
                    unexpected.push(id.to_string());
                }
            }
        }
    }
    for (f, (p, t)) in &per_family {
        println!("{f}: {p}/{t}");
    }
    println!(
        "TOTAL: {passed}/{run_count} cases through `rudder template`; error texts matching Helm: {err_match}/{err_total}"
    );
    assert!(run_count >= 100, "only {run_count} cases ran");
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}
