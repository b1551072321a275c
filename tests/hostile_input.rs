//! The hostile-input table (issue 33): every entry point of the command line
//! that reads YAML or JSON gets an alias bomb, 100,000-deep nesting,
//! 250-deep nesting and a 200 MB input.
//!
//! Each row runs the real binary in a fresh directory, under an
//! address-space limit of 256 MiB (so a refusal that needs more memory
//! fails here) and a generous wall-clock guard (two minutes, against a
//! hang; times are printed, never asserted). The table (exit code, wall
//! time, peak RSS from `wait4`) is printed with `--nocapture`; every
//! mismatch is collected and reported at the end, so one run shows the
//! whole table.
//!
//! 250-deep nesting is what Helm reads and renders (its limit is 10,000
//! levels); where Helm has the entry point rudder must accept it too.
//! `RUDDER_HOSTILE_BIN` / `RUDDER_HOSTILE_UPGRADER_BIN` run the table against
//! other binaries (how the "before" figures of issue 33 were taken).
//!
//! The 200 MB input is generated at test time (once, hard-linked into each
//! case) and refused by size before it is read, so the rows stay fast in
//! debug builds too.
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space (and so the memory) one run may use, in MiB
/// (`RUDDER_HOSTILE_MEM_MB` overrides it, to measure other binaries).
fn mem_limit() -> u64 {
    std::env::var("RUDDER_HOSTILE_MEM_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256u64)
        << 20
}
/// Kills a run that takes longer than this (a hang guard, not a timing
/// test; `RUDDER_HOSTILE_KILL_SECS` overrides it).
fn kill_after() -> Duration {
    Duration::from_secs(
        std::env::var("RUDDER_HOSTILE_KILL_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(120),
    )
}
/// The size of the big input.
const BIG: u64 = 200 * 1000 * 1000;

/// The hostile inputs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Input {
    /// Ten levels of anchors of ten aliases each (10^10 nodes expanded).
    AliasBomb,
    /// 100,000 nested flow sequences.
    Deep100k,
    /// 250 nested maps with a value at the bottom, which Helm reads.
    Deep250,
    /// 200 MB.
    Big,
}

const INPUTS: [Input; 4] = [
    Input::AliasBomb,
    Input::Deep100k,
    Input::Deep250,
    Input::Big,
];

impl Input {
    fn name(self) -> &'static str {
        match self {
            Input::AliasBomb => "alias bomb",
            Input::Deep100k => "100,000 deep",
            Input::Deep250 => "250 deep",
            Input::Big => "200 MB",
        }
    }

    /// The input as one line of YAML flow (a value for `key: `).
    fn yaml_value(self) -> String {
        match self {
            Input::AliasBomb => {
                let mut s =
                    String::from("{a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]");
                for i in 1..10 {
                    let prev = format!("*a{}", i - 1);
                    s.push_str(&format!(", a{i}: &a{i} [{}]", vec![prev; 10].join(", ")));
                }
                s.push('}');
                s
            }
            Input::Deep100k => format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            Input::Deep250 => format!("{}1{}", "{a: ".repeat(250), "}".repeat(250)),
            Input::Big => unreachable!("the big input is a file"),
        }
    }

    /// The input as JSON (JSON has no aliases: the alias bomb's YAML text,
    /// which is not JSON).
    fn json_value(self) -> String {
        match self {
            Input::AliasBomb => Input::AliasBomb.yaml_value(),
            Input::Deep100k => Input::Deep100k.yaml_value(),
            Input::Deep250 => format!("{}1{}", "{\"a\":".repeat(250), "}".repeat(250)),
            Input::Big => unreachable!("the big input is a file"),
        }
    }
}

/// What a row must do.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Exit 0.
    Ok,
    /// Exit non-zero with this text in stderr.
    Refuse(&'static str),
    /// Finish inside the limits (no signal, no limit hit), any exit code:
    /// entry points whose messages another change owns.
    Bounded,
}

struct Row {
    entry: &'static str,
    input: Input,
    want: Want,
    code: i32,
    secs: f64,
    rss_mb: f64,
    stderr: String,
}

fn rudder_bin() -> PathBuf {
    std::env::var_os("RUDDER_HOSTILE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_rudder")))
}

fn upgrader_bin() -> PathBuf {
    std::env::var_os("RUDDER_HOSTILE_UPGRADER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_rudder-upgrader")))
}

/// Runs `cmd` in `dir` under the limits; exit code (negative: the signal),
/// wall seconds, peak RSS in MB and stderr.
#[allow(clippy::zombie_processes)]
fn run(mut cmd: Command, dir: &Path) -> (i32, f64, f64, String) {
    let err_path = dir.join(".stderr");
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let limit = mem_limit();
    let kill_after = kill_after();
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing
    // else of the parent's state.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: pid is our own unwaited child; both pointers are valid.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        if !killed && start.elapsed() > kill_after {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let secs = start.elapsed().as_secs_f64();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    let rss_mb = usage.ru_maxrss as f64 * 1024.0 / 1e6;
    // The start of stderr only: a message may quote a whole input, and a
    // big harness would count in the next child's peak (forked from it).
    let mut head = Vec::new();
    if let Ok(f) = std::fs::File::open(&err_path) {
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, 64 * 1024), &mut head);
    }
    let _ = std::fs::remove_file(&err_path);
    let mut stderr = String::from_utf8_lossy(&head).into_owned();
    if killed {
        stderr.push_str("\n[killed by the test's wall-clock guard]");
    }
    (code, secs, rss_mb, stderr)
}

fn write(path: &Path, text: &str) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// A 200 MB file: one YAML (and JSON) string.
fn make_big(path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let chunk = vec![b'a'; 1 << 20];
    f.write_all(b"\"").unwrap();
    let mut left = BIG - 2;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    f.write_all(b"\"").unwrap();
    f.flush().unwrap();
}

/// Puts the big file at `path` (a hard link: no copy).
fn place_big(big: &Path, path: &Path) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let _ = std::fs::remove_file(path);
    std::fs::hard_link(big, path).unwrap();
}

const CHART_YAML: &str = "apiVersion: v2\nname: c\nversion: 0.1.0\n";
const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: {{ .Values | toJson | len | quote }}\n";

/// A chart at `dir/c` whose one template prints the length of its values.
fn chart(dir: &Path) {
    write(&dir.join("c/Chart.yaml"), CHART_YAML);
    write(&dir.join("c/values.yaml"), "{}\n");
    write(&dir.join("c/templates/cm.yaml"), CM);
}

fn rudder(args: &[&str]) -> Command {
    let mut c = Command::new(rudder_bin());
    c.args(args);
    c
}

/// Installs release `r1` of the chart in `dir` (store and simulated
/// cluster under `dir/.rudder`).
fn installed(dir: &Path) {
    chart(dir);
    let out = rudder(&["install", "r1", "c"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Replaces the first `from` in the file with `to`.
fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} has no {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// The message Helm gives (and rudder must give) for each YAML input that
/// is refused for its shape.
fn yaml_refusal(input: Input) -> Want {
    match input {
        Input::AliasBomb => Want::Refuse("document contains excessive aliasing"),
        Input::Deep100k => Want::Refuse("exceeded max depth of 10000"),
        Input::Deep250 => Want::Ok,
        Input::Big => Want::Refuse("larger than"),
    }
}

/// Sets up one row in `dir`; returns the command and what it must do.
fn setup(entry: &str, input: Input, dir: &Path, big: &Path) -> (Command, Want) {
    let value = |json: bool| {
        if json {
            input.json_value()
        } else {
            input.yaml_value()
        }
    };
    match entry {
        "values.yaml" => {
            chart(dir);
            if input == Input::Big {
                place_big(big, &dir.join("c/values.yaml"));
            } else {
                write(
                    &dir.join("c/values.yaml"),
                    &format!("x: {}\n", value(false)),
                );
            }
            (rudder(&["template", "c"]), yaml_refusal(input))
        }
        "-f" => {
            chart(dir);
            if input == Input::Big {
                place_big(big, &dir.join("in.yaml"));
            } else {
                write(&dir.join("in.yaml"), &format!("x: {}\n", value(false)));
            }
            (
                rudder(&["template", "c", "-f", "in.yaml"]),
                yaml_refusal(input),
            )
        }
        "--set-file" => {
            chart(dir);
            if input == Input::Big {
                place_big(big, &dir.join("in.txt"));
            } else {
                write(&dir.join("in.txt"), &value(false));
            }
            // The file's text is a string value: only its size matters.
            let want = match input {
                Input::Big => Want::Refuse("larger than"),
                _ => Want::Ok,
            };
            (rudder(&["template", "c", "--set-file", "x=in.txt"]), want)
        }
        "Chart.yaml" => {
            chart(dir);
            if input == Input::Big {
                place_big(big, &dir.join("c/Chart.yaml"));
            } else {
                write(
                    &dir.join("c/Chart.yaml"),
                    &format!("{CHART_YAML}x: {}\n", value(false)),
                );
            }
            (rudder(&["template", "c"]), yaml_refusal(input))
        }
        "rendered template" => {
            chart(dir);
            if input == Input::Big {
                place_big(big, &dir.join("c/templates/big.yaml"));
            } else {
                write(
                    &dir.join("c/templates/cm.yaml"),
                    &format!(
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\nx: {}\n",
                        value(false)
                    ),
                );
            }
            (rudder(&["template", "c"]), yaml_refusal(input))
        }
        "rendered output" => {
            // The template is small; what it writes is not.
            chart(dir);
            let t = match input {
                Input::Big => {
                    // One template writing 200 MB.
                    r#"{{ $s := repeat 1000000 "a" }}{{ range until 200 }}{{ $s }}{{ end }}"#
                        .to_string()
                }
                _ => return (rudder(&["--version"]), Want::Ok),
            };
            write(&dir.join("c/templates/big.yaml"), &t);
            (
                rudder(&["template", "c"]),
                Want::Refuse("c/templates/big.yaml"),
            )
        }
        "releases file" => {
            chart(dir);
            let text = if input == Input::Big {
                place_big(big, &dir.join("rel.yaml"));
                None
            } else {
                Some(format!(
                    "releases:\n- name: r\n  namespace: default\n  chart: c\n  set:\n    x: {}\n",
                    value(false)
                ))
            };
            if let Some(t) = text {
                write(&dir.join("rel.yaml"), &t);
            }
            (rudder(&["plan", "rel.yaml"]), yaml_refusal(input))
        }
        "cluster apply -f" => {
            if input == Input::Big {
                place_big(big, &dir.join("obj.yaml"));
            } else {
                write(
                    &dir.join("obj.yaml"),
                    &format!(
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\nx: {}\n",
                        value(false)
                    ),
                );
            }
            (
                rudder(&["cluster", "apply", "-f", "obj.yaml"]),
                yaml_refusal(input),
            )
        }
        "upgrader --config" => {
            if input == Input::Big {
                place_big(big, &dir.join("cluster.yaml"));
            } else {
                write(
                    &dir.join("cluster.yaml"),
                    &format!("kubernetesVersion: v1.21.4\nx: {}\n", value(false)),
                );
            }
            let mut c = Command::new(upgrader_bin());
            c.args(["--config", "cluster.yaml", "plan"]);
            let want = match input {
                // The config has no field `x`: read, then refused for that.
                Input::Deep250 => Want::Refuse("unknown field `x`"),
                other => yaml_refusal(other),
            };
            (c, want)
        }
        "store record" => {
            installed(dir);
            let path = dir.join(".rudder/default/sh.helm.release.v1.r1.v1");
            if input == Input::Big {
                place_big(big, &path);
            } else {
                // The release's values (`config`) become the hostile value.
                let text = std::fs::read_to_string(&path).unwrap();
                let mut rec: serde_json::Value = serde_json::from_str(&text).unwrap();
                let body = rec["body"].as_str().unwrap().to_string();
                let rel = rudder::release::codec::decode(&body).unwrap();
                let json = serde_json::to_string(&rel).unwrap();
                let json = json.replacen(
                    "{\"name\":\"r1\",",
                    &format!("{{\"name\":\"r1\",\"config\":{{\"x\":{}}},", value(true)),
                    1,
                );
                rec["body"] = gzip_base64(json.as_bytes()).into();
                std::fs::write(&path, serde_json::to_string(&rec).unwrap()).unwrap();
            }
            let want = match input {
                Input::Deep250 => Want::Ok,
                _ => Want::Bounded,
            };
            (rudder(&["get", "values", "r1", "-o", "json"]), want)
        }
        "journal line" => {
            installed(dir);
            let path = dir.join(".rudder/journal/default/r1.journal");
            if input == Input::Big {
                place_big(big, &path);
            } else {
                edit(
                    &path,
                    "{\"event\":\"begin\"",
                    &format!("{{\"x\":{},\"event\":\"begin\"", value(true)),
                );
            }
            (rudder(&["upgrade", "r1", "c"]), Want::Bounded)
        }
        "sim state" => {
            installed(dir);
            let path = dir.join(".rudder/cluster/state.json");
            if input == Input::Big {
                place_big(big, &path);
            } else {
                edit(
                    &path,
                    "\"data\":{",
                    &format!("\"x\":{},\"data\":{{", value(true)),
                );
            }
            (
                rudder(&["cluster", "get", "configmaps", "-A"]),
                Want::Bounded,
            )
        }
        "sim log" => {
            installed(dir);
            let path = dir.join(".rudder/cluster/log.jsonl");
            if input == Input::Big {
                place_big(big, &path);
            } else {
                // The next write after the state: a put of an object
                // holding the hostile value.
                let state: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(dir.join(".rudder/cluster/state.json")).unwrap(),
                )
                .unwrap();
                let seq = state["seq"].as_u64().unwrap() + 1;
                let rv = state["resourceVersion"].as_u64().unwrap() + 1;
                write(
                    &path,
                    &format!(
                        "{{\"seq\":{seq},\"resourceVersion\":{rv},\"put\":[{{\"writtenAt\":1,\"object\":\
                         {{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":\
                         {{\"name\":\"y\",\"namespace\":\"default\"}},\"x\":{}}}}}]}}\n",
                        value(true)
                    ),
                );
            }
            (
                rudder(&["cluster", "get", "configmaps", "-A"]),
                Want::Bounded,
            )
        }
        other => panic!("unknown entry point {other}"),
    }
}

fn gzip_base64(data: &[u8]) -> String {
    use base64::Engine;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap())
}

const ENTRIES: &[&str] = &[
    "values.yaml",
    "-f",
    "--set-file",
    "Chart.yaml",
    "rendered template",
    "rendered output",
    "releases file",
    "cluster apply -f",
    "upgrader --config",
    "store record",
    "journal line",
    "sim state",
    "sim log",
];

/// Prints one row of the table (the message: the first line that is not
/// a progress line).
fn print_row(r: &Row) {
    let msg: String = r
        .stderr
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with("Using ") && !l.starts_with("Planning "))
        .unwrap_or("")
        .chars()
        .take(110)
        .collect();
    println!(
        "| {} | {} | {} | {:.2} | {:.0} | {} |",
        r.entry,
        r.input.name(),
        r.code,
        r.secs,
        r.rss_mb,
        msg.replace('|', "\\|")
    );
}

fn check(row: &Row) -> Option<String> {
    let signalled = row.code < 0;
    let limited = row.stderr.contains("memory allocation")
        || row.stderr.contains("out of memory")
        || row.stderr.contains("killed by the test");
    if signalled || limited {
        return Some(format!("died or hit a limit (exit {})", row.code));
    }
    match row.want {
        Want::Ok if row.code != 0 => Some(format!("want exit 0, got {}", row.code)),
        Want::Refuse(_) if row.code == 0 => Some("want a refusal, got exit 0".into()),
        Want::Refuse(text) if !row.stderr.contains(text) => {
            Some(format!("want {text:?} in the message"))
        }
        _ => None,
    }
}

#[test]
fn hostile_inputs_at_every_entry_point() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big.txt");
    make_big(&big);
    let only = std::env::var("RUDDER_HOSTILE_ONLY").ok();
    println!("| entry point | input | exit | time (s) | peak RSS (MB) | message |");
    println!("|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for (i, entry) in ENTRIES.iter().enumerate() {
        if only.as_deref().is_some_and(|o| !entry.contains(o)) {
            continue;
        }
        for (j, input) in INPUTS.iter().enumerate() {
            if *entry == "rendered output" && *input != Input::Big {
                continue;
            }
            let dir = tmp.path().join(format!("case-{i}-{j}"));
            std::fs::create_dir_all(&dir).unwrap();
            let (cmd, want) = setup(entry, *input, &dir, &big);
            let (code, secs, rss_mb, stderr) = run(cmd, &dir);
            let row = Row {
                entry,
                input: *input,
                want,
                code,
                secs,
                rss_mb,
                stderr,
            };
            print_row(&row);
            rows.push(row);
            // The case's copies of the big file go (the link count drops).
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    let mut bad = Vec::new();
    for r in &rows {
        if let Some(why) = check(r) {
            bad.push(format!(
                "{} / {}: {why}\n  stderr: {}",
                r.entry,
                r.input.name(),
                r.stderr.chars().take(400).collect::<String>()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} rows wrong:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// A render's output budget counts all templates together: twelve
/// templates of 8 MB each (96 MB) stop at the one that crosses 64 MiB,
/// named in the error, in little memory (Helm renders them all).
#[test]
fn render_budget_names_the_template_that_crossed_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    chart(dir);
    for i in 0..12 {
        write(
            &dir.join(format!("c/templates/t{i:02}.yaml")),
            r#"{{ $s := repeat 1000000 "a" }}{{ range until 8 }}{{ $s }}{{ end }}"#,
        );
    }
    let (code, secs, rss_mb, stderr) = run(rudder(&["template", "c"]), dir);
    println!("12 x 8 MB templates: exit {code}, {secs:.2} s, {rss_mb:.0} MB: {stderr}");
    assert_eq!(code, 1, "{stderr}");
    // Eight templates write 64,000,000 bytes; the ninth crosses (which one
    // is the ninth follows Helm's order of templates).
    assert!(
        stderr.contains("Error: template: c/templates/t")
            && stderr
                .contains(".yaml: rendering output exceeded the render's budget of 67108864 bytes"),
        "{stderr}"
    );
}

/// Values at Helm's depth limit render as Helm renders them: 9,999 levels
/// (a map, then 9,998 nested sequences) through toJson and toYaml, in a
/// debug build too (the walkers grow their stack). helm v3.17.2 prints
/// `j: "20006"` and `y: "20003"` for this chart.
#[test]
fn values_at_helms_depth_render_as_helm_renders_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(&dir.join("c/Chart.yaml"), CHART_YAML);
    write(
        &dir.join("c/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  j: {{ .Values | toJson | len | quote }}\n  y: {{ .Values | toYaml | len | quote }}\n",
    );
    write(
        &dir.join("deep.yaml"),
        &format!("x:\n{}y\n", "- ".repeat(9_998)),
    );
    let out = rudder(&["template", "c", "-f", "deep.yaml"])
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("  j: \"20006\"\n  y: \"20003\"\n"),
        "{stdout}"
    );
}
