//! The `--set` family's grammar against real Helm 3.
//!
//! `fixtures/helm-answers/strvals.json` holds what Helm v3.17.2 answered for
//! a few hundred systematically generated inputs per flag (written by
//! `scripts/gen-strvals-table`, which runs Helm). Every row is checked
//! against rudder's parser here without Helm; a sample of rows and a bounded
//! number of random inputs from the same grammar are also re-checked against
//! live Helm when it is installed.
mod common;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use rudder::render::strvals::{parse_into, parse_literal_into, Mode};
use rudder::yaml::Node;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The files `--set-file` rows can name (the generator's working directory).
const FILES: &[(&str, &str)] = &[("f1", "one"), ("f2", "two\nlines\n")];

#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// Exit 0 with the values as `toJson` prints them.
    Values(String),
    /// Exit 0 with values JSON too long for the table: its SHA-256 and length.
    Digest(String, usize),
    /// Exit 1 with this error line (without `Error: `).
    Error(String),
}

struct Row {
    flag: String,
    input: String,
    answer: Answer,
}

fn table() -> Vec<Row> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/helm-answers/strvals.json");
    let text = std::fs::read_to_string(&path).expect("strvals table");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&text).expect("table is JSON");
    let header = &rows[0];
    let n = header["rows"].as_u64().expect("header row count") as usize;
    let rows: Vec<Row> = rows[1..]
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().map(str::to_string);
            let answer = match r["exit"].as_i64() {
                Some(0) => match s("values") {
                    Some(v) => Answer::Values(v),
                    None => Answer::Digest(
                        s("values_sha256").expect("sha"),
                        r["values_len"].as_u64().expect("len") as usize,
                    ),
                },
                _ => Answer::Error(s("error").expect("error text")),
            };
            Row {
                flag: s("flag").expect("flag"),
                input: s("input").expect("input"),
                answer,
            }
        })
        .collect();
    assert_eq!(rows.len(), n, "table header and rows disagree");
    rows
}

fn file_reader(p: &str) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    rudder::render::strvals::check_file_url(p)?;
    Ok(FILES
        .iter()
        .find(|(n, _)| *n == p)
        .map(|(_, c)| c.to_string())
        .ok_or_else(|| format!("open {p}: no such file or directory"))?)
}

/// What `rudder template` does with `--<flag>=<input>`, in the table's terms.
fn rudder_answer(flag: &str, input: &str) -> Answer {
    let mut m = BTreeMap::new();
    let r = match flag {
        "set" => parse_into(input, &mut m, Mode::Typed, None),
        "set-string" => parse_into(input, &mut m, Mode::String, None),
        "set-json" => parse_into(input, &mut m, Mode::Json, None),
        "set-file" => parse_into(input, &mut m, Mode::File, Some(&file_reader)),
        "set-literal" => parse_literal_into(input, &mut m),
        other => panic!("unknown flag {other}"),
    };
    match r {
        Ok(()) => Answer::Values(rudder::yaml::to_json(&Node::Map(m), true)),
        // Helm 3 drops the JSON parser's reason.
        Err(_) if flag == "set-json" => {
            Answer::Error(format!("failed parsing --set-json data {input}"))
        }
        Err(e) => Answer::Error(format!("failed parsing --{flag} data: {e}")),
    }
}

fn matches(want: &Answer, got: &Answer) -> bool {
    match (want, got) {
        (Answer::Digest(sha, len), Answer::Values(v)) => {
            v.len() == *len && format!("{:x}", Sha256::digest(v.as_bytes())) == *sha
        }
        _ => want == got,
    }
}

#[test]
fn every_table_row_matches_helm() {
    let rows = table();
    assert!(rows.len() > 1000, "table too small: {}", rows.len());
    let mut bad = Vec::new();
    for row in &rows {
        let got = rudder_answer(&row.flag, &row.input);
        if !matches(&row.answer, &got) {
            bad.push(format!(
                "--{}={:?}\n   helm:   {:?}\n   rudder: {:?}",
                row.flag, row.input, row.answer, got
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} rows differ from Helm:\n{}",
        bad.len(),
        rows.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_issue_cases_fail_like_helm() {
    for input in ["a[=1,b=2", "a[0", "a[", "a[1=2", "x.a[0"] {
        for flag in ["set", "set-string", "set-file", "set-literal"] {
            assert_eq!(
                rudder_answer(flag, input),
                Answer::Error(format!(
                    "failed parsing --{flag} data: error parsing index: EOF"
                )),
                "--{flag}={input}"
            );
        }
        assert_eq!(
            rudder_answer("set-json", input),
            Answer::Error(format!("failed parsing --set-json data {input}"))
        );
        let mut m = BTreeMap::new();
        let e = parse_into(input, &mut m, Mode::Typed, None).unwrap_err();
        assert_eq!(e.0, "error parsing index: EOF");
    }
    let mut m = BTreeMap::new();
    let e = parse_into("a[70000]=1", &mut m, Mode::Typed, None).unwrap_err();
    assert_eq!(
        e.0,
        "index of 70000 is greater than maximum supported index of 65536"
    );
}

fn chart_dir(root: &Path) -> std::path::PathBuf {
    let chart = root.join("chart");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: x\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "").unwrap();
    std::fs::write(chart.join("templates/v.yaml"), "{{ toJson .Values }}\n").unwrap();
    for (n, c) in FILES {
        std::fs::write(root.join(n), c).unwrap();
    }
    chart
}

/// An exit code and the values line or the error line, from a `template` run.
fn answer_of(out: &std::process::Output) -> Answer {
    if out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout);
        let last = text.lines().rfind(|l| !l.is_empty()).unwrap_or("");
        let v = if last.starts_with('#') { "" } else { last };
        Answer::Values(v.to_string())
    } else {
        let e = String::from_utf8_lossy(&out.stderr);
        let e = e.trim_end_matches('\n');
        Answer::Error(e.strip_prefix("Error: ").unwrap_or(e).to_string())
    }
}

#[test]
fn cli_rejects_unterminated_indices() {
    let dir = tempfile::tempdir().unwrap();
    let chart = chart_dir(dir.path());
    for (flag, input, want) in [
        (
            "set",
            "a[=1,b=2",
            "failed parsing --set data: error parsing index: EOF",
        ),
        (
            "set",
            "x.a[0",
            "failed parsing --set data: error parsing index: EOF",
        ),
        (
            "set-string",
            "a[1=2",
            "failed parsing --set-string data: error parsing index: EOF",
        ),
        (
            "set-file",
            "a[0",
            "failed parsing --set-file data: error parsing index: EOF",
        ),
        (
            "set-literal",
            "a[=1",
            "failed parsing --set-literal data: error parsing index: EOF",
        ),
        ("set-json", "a[", "failed parsing --set-json data a["),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .current_dir(dir.path())
            .arg("template")
            .arg("x")
            .arg(&chart)
            .arg(format!("--{flag}={input}"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "--{flag}={input}");
        assert_eq!(answer_of(&out), Answer::Error(want.to_string()));
    }
}

/// Runs real Helm on each (flag, input), a few processes at a time.
fn helm_answers(helm: &Path, cases: &[(String, String)]) -> Vec<Answer> {
    let dir = tempfile::tempdir().unwrap();
    let chart = chart_dir(dir.path());
    let chunks: Vec<_> = cases.chunks(cases.len().div_ceil(4).max(1)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                let (chart, root) = (&chart, dir.path());
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|(flag, input)| {
                            let out = common::helm_command(helm, root)
                                .current_dir(root)
                                .env("HOME", root)
                                .arg("template")
                                .arg("x")
                                .arg(chart)
                                .arg(format!("--{flag}={input}"))
                                .output()
                                .unwrap();
                            answer_of(&out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn table_sample_still_matches_live_helm() {
    let Some(helm) = common::helm(3) else { return };
    let rows = table();
    let sample: Vec<&Row> = rows.iter().step_by(37).collect();
    let cases: Vec<(String, String)> = sample
        .iter()
        .map(|r| (r.flag.clone(), r.input.clone()))
        .collect();
    let live = helm_answers(&helm, &cases);
    for (row, got) in sample.iter().zip(&live) {
        assert!(
            matches(&row.answer, got),
            "table row --{}={:?} is stale: table {:?}, live Helm {:?}",
            row.flag,
            row.input,
            row.answer,
            got
        );
    }
}

/// Inputs from the strvals grammar: keys, escapes, indices, values, commas.
fn grammar() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just(String::new()),
        Just("é".to_string()),
        Just(r"a\.b".to_string()),
        Just(r"x\,".to_string()),
        Just(" k".to_string()),
    ];
    let index = prop_oneof![
        (0u32..4).prop_map(|i| format!("[{i}]")),
        Just("[-1]".to_string()),
        Just("[65537]".to_string()),
        Just("[x]".to_string()),
        Just("[".to_string()),
        Just("[0".to_string()),
        Just("[]".to_string()),
    ];
    let segment =
        (key, prop::collection::vec(index, 0..3)).prop_map(|(k, ix)| format!("{k}{}", ix.concat()));
    let path = prop::collection::vec(segment, 1..4).prop_map(|s| s.join("."));
    let value = prop_oneof![
        Just(String::new()),
        Just("1".to_string()),
        Just("x".to_string()),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("007".to_string()),
        Just("{1,2}".to_string()),
        Just("{a".to_string()),
        Just(r"x\,y".to_string()),
        Just("f1".to_string()),
        Just(r#"{"k":[1,null]}"#.to_string()),
        Just("[1,".to_string()),
        Just("1x".to_string()),
    ];
    let eq = prop_oneof![Just("="), Just("=="), Just("")];
    let pair = (path, eq, value).prop_map(|(p, e, v)| format!("{p}{e}{v}"));
    (prop::collection::vec(pair, 1..4), any::<bool>()).prop_map(|(pairs, trailing)| {
        let mut s = pairs.join(",");
        if trailing {
            s.push(',');
        }
        s
    })
}

const FLAGS: &[&str] = &["set", "set-string", "set-json", "set-file", "set-literal"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random grammar inputs never panic, and the answer is deterministic.
    #[test]
    fn random_inputs_are_total(input in grammar(), flag in 0usize..5) {
        let a = rudder_answer(FLAGS[flag], &input);
        let b = rudder_answer(FLAGS[flag], &input);
        prop_assert_eq!(a, b);
    }
}

#[test]
fn random_inputs_match_live_helm() {
    let Some(helm) = common::helm(3) else { return };
    let mut runner = TestRunner::new(Config::default());
    let strategy = (grammar(), 0usize..FLAGS.len());
    let cases: Vec<(String, String)> = (0..60)
        .map(|_| {
            let (input, flag) = strategy.new_tree(&mut runner).unwrap().current();
            (FLAGS[flag].to_string(), input)
        })
        .collect();
    let live = helm_answers(&helm, &cases);
    let bad: Vec<String> = cases
        .iter()
        .zip(&live)
        .filter_map(|((flag, input), want)| {
            let got = rudder_answer(flag, input);
            (!matches(want, &got))
                .then(|| format!("--{flag}={input:?}\n   helm:   {want:?}\n   rudder: {got:?}"))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "rudder differs from Helm:\n{}",
        bad.join("\n")
    );
}

/// Values inputs that are not UTF-8 (a values file, Chart.yaml): Helm's YAML
/// reader error, not U+FFFD. Checked against live Helm when present.
#[test]
fn invalid_utf8_values_are_refused_like_helm() {
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "values.yaml",
            b"a: \"\xff\"\n",
            "cannot load values.yaml: error converting YAML to JSON: yaml: invalid leading UTF-8 octet",
        ),
        (
            "values.yaml",
            b"a: \"\xe2\x82",
            "cannot load values.yaml: error converting YAML to JSON: yaml: incomplete UTF-8 octet sequence",
        ),
        (
            "Chart.yaml",
            b"apiVersion: v2\nname: x\nversion: 0.1.0\ndescription: \"\xff\"\n",
            "cannot load Chart.yaml: error converting YAML to JSON: yaml: invalid leading UTF-8 octet",
        ),
        (
            "-f",
            b"b: \"\xc3\"\n",
            "failed to parse v.yaml: error converting YAML to JSON: yaml: invalid trailing UTF-8 octet",
        ),
    ];
    let helm = common::helm(3);
    for (file, bytes, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let chart = chart_dir(dir.path());
        let mut extra = Vec::new();
        if *file == "-f" {
            std::fs::write(dir.path().join("v.yaml"), bytes).unwrap();
            extra = vec!["-f".to_string(), "v.yaml".to_string()];
        } else {
            std::fs::write(chart.join(file), bytes).unwrap();
        }
        let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .current_dir(dir.path())
            .args(["template", "x"])
            .arg(&chart)
            .args(&extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{file}");
        assert_eq!(answer_of(&out), Answer::Error(want.to_string()), "{file}");
        if let Some(helm) = &helm {
            let out = common::helm_command(helm, dir.path())
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .args(["template", "x"])
                .arg(&chart)
                .args(&extra)
                .output()
                .unwrap();
            assert_eq!(
                answer_of(&out),
                Answer::Error(want.to_string()),
                "helm {file}"
            );
        }
    }
}

/// Bytes that are not UTF-8 where `helm lint` and `helm template` read
/// text: Chart.yaml and values.yaml under lint, and template files, whose
/// bytes reach the output as they are (Go strings are bytes) and make the
/// rendered YAML fail to parse, in a document, a comment or an `include`;
/// in a template comment, a partial or NOTES.txt they never reach a
/// parser. `.Files.Get`, `.Files.Lines`, `tpl` and `--set-file` keep the
/// bytes; `toJson`, `toYaml` and `.Files.AsConfig` write U+FFFD for them,
/// as Go's JSON encoder does. Stdout, stderr and exit code are compared
/// with Helm 3.17.
#[test]
fn invalid_utf8_in_charts_lints_and_renders_like_helm() {
    let Some(helm) = common::helm(3) else { return };
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
    type Case<'a> = (&'a str, &'a [u8]);
    let cases: &[(&str, &[Case])] = &[
        ("chart-yaml", &[("Chart.yaml", b"description: \xff\xfe\n")]),
        ("values-yaml", &[("values.yaml", b"b: \"\xc3\"\n")]),
        (
            "document",
            &[("templates/cm.yaml", b"data:\n  k: \"\xe2\x82\"\n")],
        ),
        (
            "yaml-comment",
            &[("templates/cm.yaml", b"# \xff comment\n")],
        ),
        (
            "template-comment",
            &[("templates/cm.yaml", b"{{/* \xff */}}\n")],
        ),
        ("notes", &[("templates/NOTES.txt", b"x: \xff\n")]),
        ("partial", &[("templates/_h.tpl", b"\xff")]),
        (
            "include-b64enc",
            &[
                ("templates/_h.tpl", b"{{ define \"x\" }}\xc3{{ end }}"),
                (
                    "templates/cm.yaml",
                    b"data:\n  k: {{ include \"x\" . | b64enc }}\n",
                ),
            ],
        ),
        (
            "files-get",
            &[
                ("f.bin", b"a\xffb\xc3\nline2\xfe\n"),
                (
                    "templates/cm.yaml",
                    b"data:\n  k: {{ .Files.Get \"f.bin\" | b64enc }}\n  n: {{ .Files.Get \"f.bin\" | len }}\n  q: {{ .Files.Get \"f.bin\" | quote }}\n  y: {{ .Files.Get \"f.bin\" | toYaml | quote }}\n  j: {{ dict \"k\" (.Files.Get \"f.bin\") | toJson | quote }}\n  l: {{ .Files.Lines \"f.bin\" | toJson | quote }}\n  p: {{ .Files.Get \"f.bin\" | toPrettyJson | b64enc }}\n  r: {{ .Files.Get \"f.bin\" | toRawJson | b64enc }}\n  c: {{ .Files.AsConfig | b64enc }}\n  ln: {{ index (.Files.Lines \"f.bin\") 0 | b64enc }}\n",
                ),
            ],
        ),
        (
            "string-functions",
            &[
                ("f.bin", b"a\xffb"),
                (
                    "templates/cm.yaml",
                    b"data:\n  q: {{ printf \"%q\" (.Files.Get \"f.bin\") | squote }}\n  pq: {{ printf \"%+q\" (.Files.Get \"f.bin\") | squote }}\n  x: {{ printf \"%x\" (.Files.Get \"f.bin\") | squote }}\n  s: {{ printf \"%.2s|%s\" (.Files.Get \"f.bin\") \"\\ufffd\" | b64enc }}\n  fffd: {{ printf \"%q\" \"\\ufffd\" | squote }}\n  u: {{ .Files.Get \"f.bin\" | upper | b64enc }}\n  r: {{ .Files.Get \"f.bin\" | replace \"b\" \"c\" | b64enc }}\n  t: {{ dict \"k\" (.Files.Get \"f.bin\") | toToml | b64enc }}\n",
                ),
            ],
        ),
        (
            "tpl",
            &[
                ("f.bin", b"{{ \"a\" }}\xff"),
                ("templates/cm.yaml", b"data:\n  k: {{ tpl (.Files.Get \"f.bin\") . | b64enc }}\n"),
            ],
        ),
        (
            "include-raw",
            &[
                ("templates/_h.tpl", b"{{ define \"x\" }}\xc3\xff{{ end }}"),
                ("templates/cm.yaml", b"data:\n  k: {{ include \"x\" . }}\n"),
            ],
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    for (name, files) in cases {
        let chart = dir.path().join(name);
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        let mut base: Vec<(String, Vec<u8>)> = vec![
            (
                "Chart.yaml".into(),
                format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n").into_bytes(),
            ),
            ("values.yaml".into(), b"a: 1\n".to_vec()),
            ("templates/cm.yaml".into(), cm.as_bytes().to_vec()),
            // What --set-file gives: raw bytes, and the values as JSON.
            (
                "templates/set.yaml".into(),
                b"{{ with .Values.s }}s: {{ b64enc . }}\nj: {{ toJson $.Values | quote }}{{ end }}\n".to_vec(),
            ),
        ];
        for (f, extra) in files.iter() {
            match base.iter_mut().find(|(n, _)| n == f) {
                // Appended to the file the base chart has.
                Some((_, data)) => data.extend_from_slice(extra),
                None => base.push((f.to_string(), extra.to_vec())),
            }
        }
        for (f, data) in &base {
            std::fs::write(chart.join(f), data).unwrap();
        }
        std::fs::write(dir.path().join("raw.bin"), b"ab\xff").unwrap();
        for args in [
            vec!["lint", name],
            vec!["template", "x", name],
            vec!["template", "x", name, "--set-file", "s=raw.bin"],
        ] {
            let h = common::helm_command(&helm, dir.path())
                .current_dir(dir.path())
                .args(&args)
                .output()
                .unwrap();
            let r = Command::new(env!("CARGO_BIN_EXE_rudder"))
                .current_dir(dir.path())
                .args(&args)
                .output()
                .unwrap();
            compared += 1;
            if (h.status.code(), &h.stdout, &h.stderr) != (r.status.code(), &r.stdout, &r.stderr) {
                failures.push(format!(
                    "{args:?}:\n  helm:   {:?} {:?} {:?}\n  rudder: {:?} {:?} {:?}",
                    h.status.code(),
                    String::from_utf8_lossy(&h.stdout),
                    String::from_utf8_lossy(&h.stderr),
                    r.status.code(),
                    String::from_utf8_lossy(&r.stdout),
                    String::from_utf8_lossy(&r.stderr)
                ));
            }
        }
    }
    eprintln!(
        "{}/{compared} lint and template runs on charts with bytes that are not UTF-8 identical to helm",
        compared - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
