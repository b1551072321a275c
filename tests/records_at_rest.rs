//! What rudder keeps on disk, at rest (issue 33, items 2, 7 and 8):
//! owner-only modes whatever the umask, records checked against their
//! keys, journals read strictly. Every case runs the `rudder` binary as a
//! child process, so that the umask is the child's own.
#[path = "release_common/mod.rs"]
mod release_common;

use rudder::release::codec;
use rudder::release::store::file::RecordFile;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A chart whose Secret carries a value, so a changed value writes.
fn chart(dir: &Path, name: &str) -> PathBuf {
    let c = dir.join(name);
    std::fs::create_dir_all(c.join("templates")).unwrap();
    std::fs::write(
        c.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n"),
    )
    .unwrap();
    std::fs::write(
        c.join("templates/s.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-pw\nstringData:\n  password: hunter2\n  x: \"{{ .Values.x }}\"\n",
    )
    .unwrap();
    c
}

/// A scratch directory with two charts and a releases file for them.
struct Scene {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        chart(&dir, "web");
        chart(&dir, "api");
        let s = Scene { _tmp: tmp, dir };
        s.releases(1);
        s
    }

    fn releases(&self, x: u32) {
        std::fs::write(
            self.dir.join("releases.yaml"),
            format!(
                "releases:\n- name: web\n  namespace: default\n  chart: web\n  set: {{x: {x}}}\n- name: api\n  namespace: default\n  chart: api\n  set: {{x: {x}}}\n"
            ),
        )
        .unwrap();
    }

    fn store(&self) -> PathBuf {
        self.dir.join("st")
    }

    /// Runs rudder with this scene's store and cluster, under `umask`.
    fn rudder_umask(&self, umask: &str, args: &[&str]) -> Output {
        let store = format!("file:{}", self.store().display());
        let cluster = format!("sim:{}", self.store().join("cluster").display());
        Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_rudder"))
            .args(args)
            .args(["--store", &store, "--cluster", &cluster])
            .current_dir(&self.dir)
            .output()
            .expect("rudder runs")
    }

    fn apply(&self) -> Output {
        self.rudder_umask("022", &["apply", "releases.yaml"])
    }

    fn record(&self, key: &str) -> PathBuf {
        self.store().join("default").join(key)
    }

    /// Every file and directory under the store, with its permission bits.
    fn modes(&self) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        let root = self.store();
        let mut stack = vec![root.clone()];
        while let Some(p) = stack.pop() {
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(&root).unwrap().display().to_string();
            out.insert(
                if rel.is_empty() { ".".into() } else { rel },
                meta.permissions().mode() & 0o7777,
            );
            if meta.is_dir() {
                for e in std::fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
            }
        }
        out
    }

    /// Every record file of the store: (file name, status in its body).
    fn records(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(self.store().join("default")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("sh.helm.release.v1.") {
                continue;
            }
            let rec: RecordFile =
                serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
            let rel = codec::decode(&rec.body).unwrap();
            out.insert(name, rel.info.status.as_str().to_string());
        }
        out
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Rewrites a record file's body with `edit`.
fn edit_record(path: &Path, edit: impl FnOnce(&mut rudder::Release)) {
    let mut rec: RecordFile = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut rel = codec::decode(&rec.body).unwrap();
    edit(&mut rel);
    rec.body = codec::encode(&rel).unwrap();
    std::fs::write(path, serde_json::to_vec(&rec).unwrap()).unwrap();
}

/// Sets the `version` of a record file's body to `version`, written as
/// that exact JSON number (as an editor would), the body as plain base64
/// JSON (which Helm's decoder also reads).
fn edit_version_text(path: &Path, version: &str) {
    use base64::Engine;
    use std::io::Read;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut rec: RecordFile = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(&b64.decode(&rec.body).unwrap()[..])
        .read_to_string(&mut json)
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["version"] = serde_json::Value::from(0);
    let text = serde_json::to_string(&v)
        .unwrap()
        .replace("\"version\":0", &format!("\"version\":{version}"));
    rec.body = b64.encode(text);
    std::fs::write(path, serde_json::to_vec(&rec).unwrap()).unwrap();
}

#[test]
fn everything_under_the_store_is_owner_only_under_umask_022_and_000() {
    for umask in ["022", "000"] {
        let s = Scene::new();
        let o = s.rudder_umask(umask, &["apply", "releases.yaml"]);
        assert!(o.status.success(), "umask {umask}: {}", stderr(&o));
        s.releases(2);
        let o = s.rudder_umask(umask, &["apply", "releases.yaml"]);
        assert!(o.status.success(), "umask {umask}: {}", stderr(&o));
        let modes = s.modes();
        // The store, its namespace, the journal and the simulated cluster.
        for want in [
            "default/sh.helm.release.v1.web.v2",
            "default/.lock",
            "journal/default/web.journal",
            "journal/default/web.lock",
            "cluster/state.json",
            "cluster/log.jsonl",
            "cluster/.lock",
        ] {
            assert!(
                modes.contains_key(want),
                "umask {umask}: no {want} in {modes:?}"
            );
        }
        for (p, m) in &modes {
            let dir = s.store().join(p).is_dir();
            let want = if dir { 0o700 } else { 0o600 };
            assert_eq!(*m, want, "umask {umask}: {p} is {m:04o}, want {want:04o}");
        }
        // Nothing had to be tightened: it was created right.
        assert!(!stderr(&o).contains("tightened"), "{}", stderr(&o));
    }
}

#[test]
fn a_store_written_0644_is_tightened_on_the_next_write_with_a_warning() {
    let s = Scene::new();
    assert!(s.apply().status.success());
    // As rudder before owner-only modes left it under umask 022.
    for p in s.modes().keys() {
        let path = s.store().join(p);
        let m = if path.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
    }
    s.releases(2);
    let o = s.apply();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    for (p, m) in s.modes() {
        let path = s.store().join(&p);
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        // Untouched older revisions stay as they were, but behind a 0700
        // directory; everything this upgrade wrote or opened is tight.
        // The store's root may be a directory the user keeps other things
        // in: rudder creates it private but leaves an existing one as it is.
        if p == "." {
            assert_eq!(m, 0o755, "{p}: {m:04o}");
            continue;
        }
        if p == "default/sh.helm.release.v1.api.v1" || p == "default/sh.helm.release.v1.web.v1" {
            assert!(m == want || m == 0o644, "{p}: {m:04o}");
            continue;
        }
        assert_eq!(m, want, "{p}: {m:04o}\n{err}");
    }
    // Each tightening is said once, on stderr, with the old and new mode.
    for (p, from, to) in [
        ("default", "0755", "0700"),
        ("default/.lock", "0644", "0600"),
        ("journal", "0755", "0700"),
        ("journal/default/web.journal", "0644", "0600"),
        ("cluster", "0755", "0700"),
        ("cluster/state.json", "0644", "0600"),
    ] {
        let path = s.store().join(p);
        let path = path.to_str().unwrap().trim_end_matches("/.");
        let line = format!("warning: tightened mode of {path} from {from} to {to}");
        assert_eq!(err.matches(&line).count(), 1, "{line}\n{err}");
    }
    assert!(
        !err.contains(&format!("tightened mode of {} ", s.store().display())),
        "{err}"
    );
    // The next write has nothing left to tighten.
    s.releases(3);
    let o = s.apply();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("tightened"), "{}", stderr(&o));
}

/// Applies twice after a tampering and checks that each apply is refused
/// with `want` and the file named, and that nothing was written.
fn refused_twice(s: &Scene, file: &Path, want: &str) {
    let before = s.records();
    s.releases(2);
    for attempt in 1..=2 {
        let o = s.apply();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "attempt {attempt}: {err}");
        assert!(
            err.contains(&file.display().to_string()),
            "attempt {attempt}: {err}"
        );
        assert!(err.contains(want), "attempt {attempt}: {err}");
        // Nothing new, nothing pending.
        assert_eq!(s.records(), before, "attempt {attempt}");
        assert!(
            !before.values().any(|st| st.starts_with("pending")),
            "{before:?}"
        );
    }
}

#[test]
fn a_record_edited_to_a_revision_past_int32_is_refused_naming_the_file() {
    let s = Scene::new();
    assert!(s.apply().status.success());
    let file = s.record("sh.helm.release.v1.web.v1");
    edit_version_text(&file, "9223372036854775808");
    refused_twice(
        &s,
        &file,
        "it holds revision 9223372036854775808, but its key is revision 1",
    );
}

#[test]
fn a_record_renamed_to_a_revision_past_int32_is_refused_naming_the_file() {
    let s = Scene::new();
    assert!(s.apply().status.success());
    let old = s.record("sh.helm.release.v1.web.v1");
    let file = s.record("sh.helm.release.v1.web.v9223372036854775808");
    edit_record(&old, |r| r.version = 9_223_372_036_854_775_808);
    std::fs::rename(&old, &file).unwrap();
    refused_twice(
        &s,
        &file,
        "revision 9223372036854775808 is out of range (revisions are 1 to 2147483647)",
    );
    // Digits past any u64 are reported too, not ignored.
    let huge = s.record("sh.helm.release.v1.web.v99999999999999999999");
    std::fs::rename(&file, &huge).unwrap();
    refused_twice(&s, &huge, "is out of range");
}

#[test]
fn a_record_copied_under_another_releases_key_is_refused_naming_the_file() {
    let s = Scene::new();
    assert!(s.apply().status.success());
    let file = s.record("sh.helm.release.v1.api.v1");
    std::fs::copy(s.record("sh.helm.release.v1.web.v1"), &file).unwrap();
    refused_twice(
        &s,
        &file,
        "it holds release \"web\", but its key is release \"api\"'s",
    );
    // `history` and `list` say which record they skip, and why.
    let o = s.rudder_umask("022", &["history", "api", "-n", "default"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(&file.display().to_string()),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_revision_after_the_last_one_is_never_written() {
    let s = Scene::new();
    assert!(s.apply().status.success());
    // The highest revision there is, consistently in name and body.
    let old = s.record("sh.helm.release.v1.web.v1");
    let file = s.record("sh.helm.release.v1.web.v2147483647");
    edit_record(&old, |r| r.version = 2_147_483_647);
    std::fs::rename(&old, &file).unwrap();
    let before = s.records();
    s.releases(2);
    let o = s.apply();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("release \"web\" is at revision 2147483647, the highest there is"),
        "{err}"
    );
    assert_eq!(s.records(), before);
}

#[test]
fn a_garbled_journal_line_is_an_error_naming_the_file_and_line() {
    let s = Scene::new();
    assert!(s.apply().status.success());
    let journal = s.store().join("journal/default/web.journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .rposition(|l| l.contains("\"event\":\"end\""))
        .expect("an end line");
    // The run's `end` line, garbled (its newline kept: not a torn write).
    let garbled: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == end {
                l.replace("\"end\"", "\"emd\"")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&journal, garbled.join("\n") + "\n").unwrap();
    let before = s.records();
    s.releases(2);
    for _ in 0..2 {
        let o = s.apply();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        let want = format!(
            "journal {}: line {} is not a journal entry",
            journal.display(),
            end + 1
        );
        assert!(err.contains(&want), "{want}\n{err}");
        assert!(!err.contains("recovered"), "{err}");
        assert_eq!(s.records(), before);
    }
}

#[test]
fn tampered_sql_rows_are_refused_naming_the_row() {
    use rudder::release::{Releases, Status};
    let Some(db) = release_common::TestDb::new("at_rest") else {
        return;
    };
    let store = rudder::release::open(&db.url()).unwrap();
    for name in ["web", "api"] {
        let mut r = rudder::Release {
            name: name.into(),
            namespace: "default".into(),
            version: 1,
            ..Default::default()
        };
        r.info.status = Status::Deployed;
        store.create(&r).unwrap();
    }
    let mut c = db.client();
    // web's row copied under api's key.
    c.batch_execute(
        "UPDATE releases_v1 SET body = (SELECT body FROM releases_v1 WHERE key = 'sh.helm.release.v1.web.v1') WHERE key = 'sh.helm.release.v1.api.v1'",
    )
    .unwrap();
    let e = Releases::new(store.as_ref())
        .history_checked("default", "api")
        .unwrap_err()
        .to_string();
    assert!(e.contains("key \"sh.helm.release.v1.api.v1\""), "{e}");
    assert!(e.contains("it holds release \"web\""), "{e}");
    // web's body edited to a revision past int32.
    let mut r = store.get("default", "web", 1).unwrap();
    r.version = 9_223_372_036_854_775_808;
    let body = codec::encode(&r).unwrap();
    c.execute(
        "UPDATE releases_v1 SET body = $1 WHERE key = 'sh.helm.release.v1.web.v1'",
        &[&body],
    )
    .unwrap();
    let e = Releases::new(store.as_ref())
        .history_checked("default", "web")
        .unwrap_err()
        .to_string();
    assert!(e.contains("key \"sh.helm.release.v1.web.v1\""), "{e}");
    // (rudder's Go-style JSON writes 2^63 as 9223372036854776000.)
    assert!(e.contains("it holds revision 922337203685477"), "{e}");
    let e = store.get("default", "web", 1).unwrap_err().to_string();
    // (rudder's Go-style JSON writes 2^63 as 9223372036854776000.)
    assert!(e.contains("it holds revision 922337203685477"), "{e}");
}
