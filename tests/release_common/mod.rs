//! Fixtures for the release tests: a throwaway PostgreSQL database, a tiny
//! Kubernetes discovery server, real Helm pointed at both, a NOTES-only chart.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../common/mod.rs"]
pub mod common;

pub const PG_ADMIN: &str = "host=127.0.0.1 port=5432 user=postgres dbname=postgres";

/// A fresh database, dropped on drop.
pub struct TestDb {
    pub name: String,
}

impl TestDb {
    pub fn new(tag: &str) -> Option<TestDb> {
        let mut c = match postgres::Client::connect(PG_ADMIN, postgres::NoTls) {
            Ok(c) => c,
            Err(e) => return common::missing(&format!("PostgreSQL at 127.0.0.1:5432 ({e})")),
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!(
            "rudder_{tag}_{}_{}",
            std::process::id(),
            nanos % 1_000_000_000
        );
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Some(TestDb { name })
    }

    /// The DSN Helm's SQL driver takes.
    pub fn url(&self) -> String {
        format!(
            "postgresql://postgres@127.0.0.1:5432/{}?sslmode=disable",
            self.name
        )
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(
            &format!(
                "host=127.0.0.1 port=5432 user=postgres dbname={}",
                self.name
            ),
            postgres::NoTls,
        )
        .unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(PG_ADMIN, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// Serves Kubernetes discovery (`/version`, `/api`, `/api/v1`, `/apis`) on
/// a loopback port for as long as the test runs.
pub fn start_fake_apiserver() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let method = line.split_whitespace().next().unwrap_or("GET").to_string();
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let mut clen = 0usize;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" || h == "\n" {
                            break;
                        }
                        let lower = h.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            clen = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; clen];
                    let _ = r.read_exact(&mut body);
                    let p = path.split('?').next().unwrap_or("");
                    // ConfigMaps exist in discovery but every write is
                    // refused: a chart that renders one fails to install.
                    let (code, json) = if method != "GET" {
                        (
                            403,
                            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"writes are refused by the test API server","reason":"Forbidden","code":403}"#,
                        )
                    } else {
                        match p {
                            "/version" => (
                                200,
                                r#"{"major":"1","minor":"32","gitVersion":"v1.32.0","gitCommit":"","gitTreeState":"","buildDate":"","goVersion":"","compiler":"gc","platform":"linux/amd64"}"#,
                            ),
                            "/api" => (
                                200,
                                r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}"#,
                            ),
                            "/api/v1" => (
                                200,
                                r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["cm"]}]}"#,
                            ),
                            "/apis" => (
                                200,
                                r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[]}"#,
                            ),
                            _ => (
                                404,
                                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"not found","reason":"NotFound","code":404}"#,
                            ),
                        }
                    };
                    let msg = match code {
                        200 => "OK",
                        403 => "Forbidden",
                        _ => "Not Found",
                    };
                    let resp = format!(
                        "HTTP/1.1 {code} {msg}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
                        json.len()
                    );
                    if s.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Real Helm with the SQL driver on a test database and a fake cluster.
pub struct HelmEnv {
    pub bin: PathBuf,
    pub major: u8,
    pub home: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub dsn: String,
}

/// What a command printed, and whether it succeeded.
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub ok: bool,
}

impl Out {
    /// Runs `cmd` to the end.
    pub fn of(cmd: &mut Command) -> Out {
        let out = cmd.output().unwrap();
        Out {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            ok: out.status.success(),
        }
    }
}

impl HelmEnv {
    pub fn new(major: u8, port: u16, dsn: &str) -> Option<HelmEnv> {
        let bin = common::helm(major)?;
        let home = tempfile::tempdir().unwrap();
        let kubeconfig = home.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: http://127.0.0.1:{port}\n  name: fake\ncontexts:\n- context:\n    cluster: fake\n    user: fake\n    namespace: default\n  name: fake\ncurrent-context: fake\nusers:\n- name: fake\n  user: {{}}\n"
            ),
        )
        .unwrap();
        Some(HelmEnv {
            bin,
            major,
            home,
            kubeconfig,
            dsn: dsn.to_string(),
        })
    }

    pub fn run(&self, args: &[&str]) -> Out {
        Out::of(
            common::helm_command(&self.bin, self.home.path())
                .args(args)
                .env("KUBECONFIG", &self.kubeconfig)
                .env("HELM_DRIVER", "sql")
                .env("HELM_DRIVER_SQL_CONNECTION_STRING", &self.dsn)
                .env_remove("HELM_NAMESPACE")
                .env_remove("HELM_MAX_HISTORY"),
        )
    }

    /// Runs and insists on success.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.ok, "helm{} {:?} failed: {}", self.major, args, o.stderr);
        o.stdout
    }
}

/// The rudder binary on a store, with `args`, in UTC, not yet run.
pub fn rudder_command(store: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
    cmd.args(args).arg("--store").arg(store).env("TZ", "UTC");
    cmd
}

/// The rudder binary on a store.
pub fn rudder(store: &str, args: &[&str]) -> Out {
    Out::of(&mut rudder_command(store, args))
}

/// Writes `files` (path under `dir`, contents), creating their directories.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, contents).unwrap();
    }
}

/// A chart with only NOTES.txt and a test hook: nothing for a cluster to create.
pub fn notes_chart(dir: &Path, version: &str) -> PathBuf {
    let c = dir.join("notes");
    let chart_yaml = format!("apiVersion: v2\nname: notes\ndescription: NOTES only\nversion: {version}\nappVersion: \"1.0\"\n\
home: https://example.com/notes\nsources: [https://example.com/src]\nkeywords: [notes, test]\n\
maintainers:\n- name: Ann\n  email: ann@example.com\n- name: Bob\n  url: https://bob.example.com\n\
icon: https://example.com/icon.png\nkubeVersion: \">=1.20.0-0\"\ntype: application\n\
annotations:\n  category: Testing\n  example.com/x: \"1\"\n");
    write_files(
        &c,
        &[
            ("Chart.yaml", chart_yaml.as_str()),
            (
                "templates/cm.yaml",
                "{{- if .Values.cm }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  a: {{ .Values.a | quote }}\n{{- end }}\n",
            ),
            (
                "README.md",
                "# notes\n\nA chart with <only> notes & a test hook.\n",
            ),
            (
                "values.schema.json",
                "{\"$schema\": \"http://json-schema.org/draft-07/schema#\", \"type\": \"object\"}\n",
            ),
            (
                "values.yaml",
                "a: 1\nnested:\n  x: 1\n  y: two\n  keep: [1, 2]\nname: web\n",
            ),
            (
                "templates/NOTES.txt",
                "Notes for {{ .Release.Name }} rev {{ .Release.Revision }}\na={{ .Values.a }} <&>\n{{ toYaml .Values.nested }}\n",
            ),
            (
                "templates/test.yaml",
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"{{ .Release.Name }}-test\"\n  annotations:\n    \"helm.sh/hook\": test\n    \"helm.sh/hook-weight\": \"2\"\nspec:\n  containers: [{name: t, image: busybox}]\n",
            ),
        ],
    );
    c
}

/// A values file with what trips up YAML and JSON printers: long strings
/// (yaml.v2 folds at 80 columns), numbers past 2^53, tiny floats, strings
/// that look like other types, quoting triggers, multi-line text.
pub fn tricky_values(dir: &Path) -> PathBuf {
    let p = dir.join("tricky.yaml");
    std::fs::write(
        &p,
        r#"long: "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss tttt uuuu"
deep: {deeper: {deepest: "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr"}}
longquoted: "- aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr"
longnospace: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
list: ["aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr", {k: v}]
f1: 1.5
f2: 1e6
f4: 0.000001
f5: 12345678901234567890
f7: 1e-9
f8: 1e300
i1: 9007199254740993
neg: -3
nul: null
empty: ""
sp: " lead"
colon: "a: b"
hash: "a #b"
dash: "- x"
star: "*x"
quote: "it's"
dq: 'say "hi"'
multi: "line1
line2
"
multi2: "line1
  line2"
multi3: "trail

"
tab: "a	b"
uni: "héllo ✓ <&>"
ts: "2020-01-01"
oct: "0777"
hex: "0x1F"
yes: "yes"
tilde: "~"
bools: [true, false, "true"]
nested: {deep: {deeper: [1, {x: y}, [a, b], []]}, em: {}}
"key with space": 1
"123": numkey
ver: 1.10
pct: "50%"
brace: "{x}"
trailingcolon: "x:"
"#,
    )
    .unwrap();
    p
}

/// Lists the JSON paths where two values differ ("field by field").
pub fn json_diff(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => json_diff(&p, u, v, out),
                    (u, v) => out.push(format!("{p}: {u:?} vs {v:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                json_diff(&format!("{path}[{i}]"), u, v, out);
            }
        }
        _ => {
            if a != b {
                out.push(format!("{path}: {a} vs {b}"));
            }
        }
    }
}
