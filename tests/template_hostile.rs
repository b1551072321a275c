//! Hostile templates: no single value may grow past the output limit
//! (100 MiB), and `rudder template` must fail on each of these with a clear
//! error while its peak memory stays under 512 MB.
//!
//! Helm has no such cap: on `repeat 1000000000 "x" | repeat 1000000000` it
//! takes about 1 GB before Go's `strings.Repeat` overflow panic, and it
//! builds the others in full. These cases are rudder's own limits, so they are
//! not compared with Helm's output.
use std::path::Path;
use std::process::{Command, Stdio};

/// Peak resident memory allowed to one `rudder template` run.
const MAX_RSS_BYTES: u64 = 512 * 1024 * 1024;

/// The hostile templates, by name.
const CASES: &[(&str, &str)] = &[
    (
        "repeat-chain",
        r#"{{ repeat 1000000000 "x" | repeat 1000000000 }}"#,
    ),
    (
        "printf-width",
        r#"{{ $s := printf "%*d" 1000000 1 }}{{ repeat 1000 $s }}"#,
    ),
    (
        "indent",
        r#"{{ $s := repeat 1000000 "\n" }}{{ indent 100000 $s }}"#,
    ),
    (
        "nindent",
        r#"{{ $s := repeat 1000000 "\n" }}{{ nindent 100000 $s }}"#,
    ),
    (
        "replace",
        r#"{{ $s := repeat 10000000 "a" }}{{ replace "a" (repeat 100 "b") $s }}"#,
    ),
    (
        "join",
        r#"{{ $s := repeat 60000000 "x" }}{{ join "," (list $s $s $s $s $s $s $s $s) }}"#,
    ),
    (
        "tpl-concat",
        r#"{{ $s := repeat 60000000 "x" }}{{ tpl "{{ .s }}{{ .s }}{{ .s }}{{ .s }}" (dict "s" $s) }}"#,
    ),
    (
        "doubling",
        r#"{{ $s := "x" }}{{ range until 64 }}{{ $s = print $s $s }}{{ end }}{{ $s }}"#,
    ),
    (
        "toJson",
        r#"{{ $s := repeat 60000000 "x" }}{{ toJson (list $s $s $s $s) }}"#,
    ),
    ("until", r#"{{ len (until 1000000000) }}"#),
    ("randAlpha", r#"{{ randAlpha 1000000000 }}"#),
];

fn chart(dir: &Path, template: &str) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: hostile\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("templates/x.yaml"), template).unwrap();
}

/// Runs `rudder template x DIR`; returns exit code, stderr and peak RSS in bytes.
/// The child is reaped by `wait4` (for its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run(dir: &Path) -> (i32, String, u64) {
    let err_path = dir.join("stderr");
    let child = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["template", "x"])
        .arg(dir.join("chart"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unwaited child; both pointers are valid.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    // ru_maxrss is in KiB on Linux.
    let rss = usage.ru_maxrss as u64 * 1024;
    (code, std::fs::read_to_string(&err_path).unwrap(), rss)
}

#[test]
fn hostile_templates_fail_clearly_in_little_memory() {
    let mut report = Vec::new();
    let mut bad = Vec::new();
    for (name, template) in CASES {
        let dir = tempfile::tempdir().unwrap();
        chart(&dir.path().join("chart"), template);
        let (code, stderr, rss) = run(dir.path());
        let mib = rss as f64 / (1024.0 * 1024.0);
        report.push(format!("{name}: exit {code}, peak {mib:.0} MiB"));
        let clear = stderr.starts_with("Error: ")
            && stderr.contains("hostile/templates/x.yaml")
            && (stderr.contains("would exceed the limit of 104857600 bytes")
                || stderr.contains("rendering output exceeded the limit of 104857600 bytes")
                || stderr
                    .contains("rendering output exceeded the render's budget of 67108864 bytes"));
        if code != 1 || !clear || rss >= MAX_RSS_BYTES {
            bad.push(format!(
                "{name}: exit {code}, peak {mib:.0} MiB, stderr {stderr:?}"
            ));
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Just under the cap still renders: the limit is on size, not on the
/// functions.
#[test]
fn a_large_value_under_the_cap_renders() {
    let dir = tempfile::tempdir().unwrap();
    chart(
        &dir.path().join("chart"),
        r#"{{ $s := repeat 20000000 "x" }}a: {{ len (print $s $s) }}"#,
    );
    let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["template", "x"])
        .arg(dir.path().join("chart"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("a: 40000000"));
}
