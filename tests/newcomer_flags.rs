//! What a newcomer meets first, against real Helm 3.17: `helm template`'s
//! release-name flags (`--name-template`, `-g`), `--skip-crds`, `--labels`,
//! `--description`, `--post-renderer` (and its args), the usage errors of
//! the Helm-shaped commands (argument counts, unknown flags, missing
//! values: Helm's words and exit code 1) and the global `--debug`.
//!
//! Every case runs the same command line through `helm` and `rudder` in
//! the same directory and compares the exit code, stdout and stderr byte
//! for byte; with `--debug`, Helm also logs timestamped `[debug]` lines
//! and Go stack traces to stderr, which rudder does not write, so those
//! cases compare stdout and the `Error:` line.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rudder() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rudder"))
}

/// A chart with a template, a hook and a CRD, and two post-renderers.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let ch = dir.path().join("ch");
    std::fs::create_dir_all(ch.join("templates")).expect("mkdir");
    std::fs::create_dir_all(ch.join("crds")).expect("mkdir");
    std::fs::write(
        ch.join("Chart.yaml"),
        "apiVersion: v2\nname: ch\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(ch.join("values.yaml"), "a: 1\n").expect("values");
    std::fs::write(
        ch.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  labels: {{ toJson .Release }}\n",
    )
    .expect("cm");
    std::fs::write(
        ch.join("templates/hook.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: pre-install\n",
    )
    .expect("hook");
    std::fs::write(
        ch.join("crds/crd.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n",
    )
    .expect("crd");
    // The same without CRDs and hooks, to install on the simulated cluster.
    let app = dir.path().join("app");
    std::fs::create_dir_all(app.join("templates")).expect("mkdir");
    for f in ["Chart.yaml", "values.yaml", "templates/cm.yaml"] {
        std::fs::copy(ch.join(f), app.join(f)).expect("copy");
    }
    // Invalid YAML for the --debug cases.
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(bad.join("templates")).expect("mkdir");
    std::fs::write(
        bad.join("Chart.yaml"),
        "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(bad.join("templates/a.yaml"), "a: [x\n").expect("a");
    std::fs::write(bad.join("templates/b.yaml"), "b: {{ .Release.Name }}\n").expect("b");
    // A parent whose dependency has a non-bool condition and tag, and
    // import-values naming tables that are not there.
    let dep = dir.path().join("dep");
    std::fs::create_dir_all(dep.join("charts/sub/templates")).expect("mkdir");
    std::fs::write(
        dep.join("Chart.yaml"),
        "apiVersion: v2\nname: dep\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n  condition: sub.enabled,other.on\n  tags: [t1, t2]\n  import-values:\n  - child: nothere\n    parent: x\n  - child: cfg.deep\n    parent: yy\n  - missing\n",
    )
    .expect("Chart.yaml");
    std::fs::write(
        dep.join("values.yaml"),
        "sub:\n  enabled: \"yes\"\n  cfg: 3\nother:\n  on: 1\ntags:\n  t1: \"no\"\n  t2: {}\n",
    )
    .expect("values");
    std::fs::write(
        dep.join("charts/sub/Chart.yaml"),
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    )
    .expect("sub Chart.yaml");
    std::fs::write(
        dep.join("charts/sub/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n",
    )
    .expect("sub cm");
    script(
        dir.path(),
        "pr.sh",
        "#!/bin/sh\necho \"ignored: $*\" >&2\nsed s/ConfigMap/CM/\necho \"# args: $#:$*\"\n",
    );
    script(dir.path(), "fail.sh", "#!/bin/sh\necho bad >&2\nexit 3\n");
    std::fs::write(dir.path().join("noexec.sh"), "#!/bin/sh\ncat\n").expect("noexec");
    dir
}

fn script(dir: &Path, name: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, text).expect("script");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn run(mut cmd: Command, dir: &Path, args: &[&str]) -> Output {
    cmd.args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .env("TZ", "UTC");
    cmd.output().expect("command runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `args` through Helm and rudder; returns the mismatches.
fn compare(helm: &Path, dir: &Path, args: &[&str], debug_logs: bool) -> Option<String> {
    let home = dir.join(".helm-home");
    let h = run(common::helm_command(helm, &home), dir, args);
    let r = run(Command::new(rudder()), dir, args);
    let (he, re) = (text(&h.stderr), text(&r.stderr));
    // With --debug Helm interleaves its log; the `Error:` line must match.
    let (he, re) = if debug_logs {
        let error_line = |s: &str| {
            s.lines()
                .filter(|l| l.starts_with("Error: ") || l.starts_with("WARNING"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        (error_line(&he), error_line(&re))
    } else {
        (he, re)
    };
    // Helm prints the files of a render with invalid YAML in Go's map
    // order, which changes from run to run: compare them as a set.
    let docs = |b: &[u8]| {
        let t = text(b);
        let mut d: Vec<String> = t.split("---\n# Source: ").map(str::to_string).collect();
        if debug_logs {
            // The last file is not followed by the blank line.
            d = d.iter().map(|x| x.trim_end().to_string()).collect();
            d.sort();
        }
        d
    };
    let mut why = Vec::new();
    if h.status.code() != r.status.code() {
        why.push(format!(
            "exit: helm {:?}, rudder {:?}",
            h.status.code(),
            r.status.code()
        ));
    }
    if he != re {
        why.push(format!("stderr:\n  helm:   {he:?}\n  rudder: {re:?}"));
    }
    if docs(&h.stdout) != docs(&r.stdout) {
        why.push(format!(
            "stdout:\n  helm:   {:?}\n  rudder: {:?}",
            text(&h.stdout),
            text(&r.stdout)
        ));
    }
    (!why.is_empty()).then(|| format!("{args:?}: {}", why.join("; ")))
}

fn check_all(cases: &[&[&str]], debug_logs: bool) {
    let Some(helm) = common::helm(3) else { return };
    let dir = workdir();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|args| compare(&helm, dir.path(), args, debug_logs))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from helm:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Argument counts, unknown flags, missing and invalid values: Helm's
/// message and exit code 1 for every Helm-shaped command.
#[test]
fn usage_errors_read_as_helm() {
    check_all(
        &[
            &["template"],
            &["template", "a", "b", "c"],
            &["template", "--foo", "x"],
            &["template", "ch", "--bogus=3"],
            &["template", "x", "--namespace"],
            &["template", "ch", "-n"],
            &["template", "-x", "ch"],
            &["template", "-xn", "ch"],
            &["template", "ch", "-gx"],
            &["template", "ch", "-s"],
            &["template", "ch", "--set"],
            &["template", "ch", "--include-crds=foo"],
            &["template", "ch", "---x"],
            &["template", "--generate-name"],
            &["install"],
            &["install", "a"],
            &["install", "a", "b", "c"],
            &["install", "a", "b", "--foo"],
            &["upgrade"],
            &["upgrade", "a"],
            &["upgrade", "a", "b", "c"],
            &["upgrade", "a", "b", "--timeout"],
            &["rollback"],
            &["rollback", "a", "b"],
            &["uninstall"],
            &["uninstall", "a", "--foo"],
            &["uninstall", "a", "-x"],
            &["un"],
            &["list", "x"],
            &["ls", "x"],
            &["list", "-aq", "x"],
            &["list", "--foo"],
            &["list", "-m", "abc"],
            &["list", "--max", "abc"],
            &["history"],
            &["hist"],
            &["history", "a", "b"],
            &["history", "a", "--max"],
            &["history", "a", "--max", "abc"],
            &["status"],
            &["status", "a", "b", "--foo"],
            &["status", "a", "--revision", "x"],
            &["get", "manifest"],
            &["get", "values", "a", "b"],
            &["get", "all"],
            &["get", "hooks"],
            &["get", "notes"],
            &["get", "metadata"],
            &["lint", "a", "b", "--foo"],
            &["lint", "-n"],
            &["package"],
            &["package", "ch", "-d"],
            &["show", "chart"],
            &["show", "chart", "a", "b"],
            &["show", "values"],
            &["show", "readme"],
            &["show", "crds", "a", "b"],
            &["--foo"],
        ],
        false,
    );
}

/// The release-name flags, the flags without effect on `helm template`'s
/// output, and `--labels`' checks.
#[test]
fn template_name_and_record_flags_match_helm() {
    check_all(
        &[
            &["template", "ch"],
            &["template", "--name-template", "foo", "ch"],
            &[
                "template",
                "--name-template",
                "r-{{ \"X\" | lower }}-{{ add 1 2 }}",
                "ch",
            ],
            &["template", "--name-template", "{{ .Chart }}", "ch"],
            &["template", "--name-template", "x{{ .Foo.Bar }}", "ch"],
            &["template", "--name-template", "{{ \"\" }}", "ch"],
            &["template", "--name-template", "{{ \"A\" }}", "ch"],
            &["template", "--name-template", "{{ bad", "ch"],
            &["template", "--name-template", "{{ toYaml . }}", "ch"],
            &["template", "--name-template", "{{ include \"x\" . }}", "ch"],
            &[
                "template",
                "--name-template",
                "{{ randAlpha | lower }}",
                "ch",
            ],
            &["template", "--name-template", "{{ fail \"boom\" }}", "ch"],
            &[
                "template",
                "--name-template",
                "{{ env \"NO_SUCH_VAR_X\" }}x",
                "ch",
            ],
            &[
                "template",
                "--name-template",
                "{{ expandenv \"a-${NO_SUCH_VAR_X}b\" }}",
                "ch",
            ],
            &["template", "--name-template=", "ch"],
            &["template", "--name-template", "x"],
            &["template", "r", "ch", "--name-template", "x"],
            &["template", "ch", "a", "b", "--name-template", "x"],
            &["template", "-g", "ch"],
            &["template", "--generate-name", "ch"],
            &["template", "r", "ch", "-g"],
            &["template", "Bad_Name", "ch"],
            &["template", &"a".repeat(54), "ch"],
            &["template", "--skip-crds", "ch"],
            &["template", "--include-crds", "--skip-crds", "ch"],
            &["template", "--description", "hi", "ch"],
            &["template", "ch", "--labels", "a=b"],
            &["template", "ch", "-l", "a=b,c=d", "--labels", "e=f"],
            &["template", "ch", "--labels", "a=b,c"],
            &["template", "ch", "--labels", "a"],
            &["template", "ch", "--labels", "a=b,c"],
            &["template", "ch", "--labels", "a=\"b,c=d"],
            &["template", "ch", "--labels", "owner=x"],
            &["template", "ch", "--labels", "name=x,c=d"],
            &["template", "ch", "--labels", ""],
            &["template", "ch", "--namespace", "--foo"],
            &[
                "template",
                "ch",
                "--namespace=",
                "--is-upgrade=true",
                "--skip-tests=false",
            ],
        ],
        false,
    );
}

/// `--post-renderer`: the manifests (and CRDs, not the hooks) go through
/// the executable; lookups and failures read as Helm's.
#[test]
fn post_renderer_matches_helm() {
    check_all(
        &[
            &["template", "ch", "--post-renderer", "cat"],
            &["template", "ch", "--post-renderer", "cat", "--include-crds"],
            &["template", "ch", "--post-renderer", "./pr.sh"],
            &[
                "template",
                "ch",
                "--post-renderer-args",
                "a,b",
                "--post-renderer",
                "./pr.sh",
                "--post-renderer-args",
                "",
                "--post-renderer-args",
                "c",
            ],
            &[
                "template",
                "ch",
                "--post-renderer",
                "./pr.sh",
                "-s",
                "templates/cm.yaml",
            ],
            &["template", "ch", "--post-renderer", "true"],
            &["template", "ch", "--post-renderer", "false"],
            &["template", "ch", "--post-renderer", "./fail.sh"],
            &["template", "ch", "--post-renderer", "no-such-renderer-xyz"],
            &["template", "ch", "--post-renderer", "./no-such.sh"],
            &["template", "ch", "--post-renderer", "./noexec.sh"],
            &["template", "ch", "--post-renderer-args", "x"],
        ],
        false,
    );
}

/// `--debug` is global: accepted before and after every subcommand; for
/// `template` it prints the rendered files on invalid YAML (and the empty
/// manifest and hooks when the post-renderer fails).
#[test]
fn debug_is_global_and_template_debug_matches_helm() {
    check_all(
        &[
            &["template", "--debug", "ch"],
            &["--debug", "template", "ch"],
            &["template", "bad", "--debug"],
            &["template", "bad"],
            &["--debug", "template", "bad"],
            &["template", "--debug", "ch", "--post-renderer", "false"],
            &["template", "--debug", "ch", "--labels", "owner=x"],
            &["template", "--debug", "ch", "--set", "a"],
            &["template", "--debug"],
            &["list", "--debug", "x"],
            &["--debug", "list", "x"],
            &["history", "--debug"],
            &["status", "--debug"],
            &["lint", "--debug", "a", "--foo"],
        ],
        true,
    );
    // Without Helm too: rudder takes --debug everywhere.
    let dir = workdir();
    for args in [
        &["--debug", "lint", "ch"][..],
        &["lint", "ch", "--debug"],
        &["list", "--debug"],
        &["package", "ch", "--debug", "-d", "out"],
    ] {
        let r = run(Command::new(rudder()), dir.path(), args);
        assert!(r.status.success(), "{args:?}: {}", text(&r.stderr));
    }
    // Helm's install and upgrade print their status with `settings.Debug`:
    // the values, hooks and manifest (on the simulated cluster here, as
    // Helm needs a cluster for this).
    let r = run(
        Command::new(rudder()),
        dir.path(),
        &["install", "r", "app", "--set", "a=2", "--debug"],
    );
    let out = text(&r.stdout);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(
        out.contains("USER-SUPPLIED VALUES:\na: 2\n\nCOMPUTED VALUES:\na: 2\n")
            && out.contains("HOOKS:\nMANIFEST:\n---\n# Source: ch/templates/cm.yaml"),
        "{out}"
    );
    let r = run(Command::new(rudder()), dir.path(), &["upgrade", "r", "app"]);
    assert!(!text(&r.stdout).contains("USER-SUPPLIED VALUES:"));
}

/// Dependency warnings (non-bool conditions and tags, import-values with
/// no such table) carry Helm's `dependencies.go:LINE:` log prefix and its
/// wording, in template and lint.
#[test]
fn dependency_warnings_match_helm() {
    check_all(
        &[
            &["template", "x", "dep"],
            &["template", "x", "dep", "--set", "sub.enabled=false"],
            &["template", "x", "dep", "--set", "tags.t1=true"],
            &["template", "x", "dep", "--set", "sub.cfg.deep.a=1"],
            &["lint", "dep"],
            &["lint", "dep", "--strict", "--set", "other.on=true"],
        ],
        false,
    );
}
