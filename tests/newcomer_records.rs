//! Unreadable release records are reported, never silently dropped, and
//! reads of the file store create nothing.
use rudder::release::store::file::FileStore;
use rudder::release::{OpError, Release, Releases, Status, Store};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rel(name: &str, version: u64, status: Status) -> Release {
    let mut r = Release {
        name: name.into(),
        namespace: "default".into(),
        version,
        ..Release::default()
    };
    r.info.status = status;
    r.info.description = format!("revision {version}");
    r
}

/// A store with `web` at revisions 1 (superseded), 2 (superseded), 3 (deployed).
fn store(root: &Path) -> PathBuf {
    let dir = root.join("store");
    let s = FileStore::open(&dir).unwrap();
    s.create(&rel("web", 1, Status::Superseded)).unwrap();
    s.create(&rel("web", 2, Status::Superseded)).unwrap();
    s.create(&rel("web", 3, Status::Deployed)).unwrap();
    dir
}

fn record(dir: &Path, version: u64) -> PathBuf {
    dir.join("default")
        .join(format!("sh.helm.release.v1.web.v{version}"))
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Truncated,
    Empty,
    NotJson,
    BadBody,
}

const DAMAGES: [Damage; 4] = [
    Damage::Truncated,
    Damage::Empty,
    Damage::NotJson,
    Damage::BadBody,
];

fn damage(path: &Path, how: Damage) {
    let data = std::fs::read(path).unwrap();
    let new: Vec<u8> = match how {
        Damage::Truncated => data[..data.len() / 2].to_vec(),
        Damage::Empty => Vec::new(),
        Damage::NotJson => b"\x00\x01 not a record".to_vec(),
        Damage::BadBody => {
            let mut v: serde_json::Value = serde_json::from_slice(&data).unwrap();
            v["body"] = serde_json::Value::String("!!not base64!!".into());
            serde_json::to_vec(&v).unwrap()
        }
    };
    std::fs::write(path, new).unwrap();
}

fn rudder(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder"))
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The warning a read prints for an unreadable record.
fn warning_prefix(url: &str, path: &Path, version: u64) -> String {
    format!(
        "warning: store {url}: skipped unreadable release record sh.helm.release.v1.web.v{version} ({}): ",
        path.display()
    )
}

#[test]
fn broken_newest_record_is_reported_and_refused() {
    for how in DAMAGES {
        let tmp = tempfile::tempdir().unwrap();
        let dir = store(tmp.path());
        let broken = record(&dir, 3);
        damage(&broken, how);
        let url = format!("file:{}", dir.display());
        let warn = warning_prefix(&url, &broken, 3);

        // history: the readable revisions, and a warning naming the record.
        let o = rudder(tmp.path(), &["history", "web", "--store", &url]);
        assert_eq!(o.status.code(), Some(0), "{how:?}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(
            out.contains("revision 2") && !out.contains("revision 3"),
            "{out}"
        );
        let err = text(&o.stderr);
        assert!(err.starts_with(&warn), "{how:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");

        // list: likewise warns.
        let o = rudder(tmp.path(), &["list", "-a", "--store", &url]);
        assert_eq!(o.status.code(), Some(0));
        assert!(text(&o.stderr).starts_with(&warn), "{}", text(&o.stderr));

        // status and get of the newest fail naming the record.
        let want = format!(
            "Error: release record sh.helm.release.v1.web.v3 ({}) cannot be read: ",
            broken.display()
        );
        for args in [
            &["status", "web"][..],
            &["get", "values", "web"][..],
            &["get", "manifest", "web"][..],
        ] {
            let mut a = args.to_vec();
            a.extend(["--store", &url]);
            let o = rudder(tmp.path(), &a);
            assert_eq!(o.status.code(), Some(1), "{how:?} {args:?}");
            assert!(o.stdout.is_empty());
            assert!(
                text(&o.stderr).starts_with(&want),
                "{how:?}: {}",
                text(&o.stderr)
            );
        }
        // ... and of that revision by number, naming the file.
        let o = rudder(
            tmp.path(),
            &["status", "web", "--revision", "3", "--store", &url],
        );
        assert_eq!(o.status.code(), Some(1));
        let want = format!("Error: decode record {}: ", broken.display());
        assert!(text(&o.stderr).starts_with(&want), "{}", text(&o.stderr));
        // A readable revision by number still works.
        let o = rudder(
            tmp.path(),
            &["status", "web", "--revision", "2", "--store", &url],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(text(&o.stdout).contains("REVISION: 2"));

        // Library: the planner's check refuses, the reporting reads say why.
        let s = FileStore::open(&dir).unwrap();
        let r = Releases::new(&s);
        match r.history_checked("default", "web") {
            Err(OpError::Unreadable(sk)) => {
                assert_eq!(sk.key, "sh.helm.release.v1.web.v3");
                assert_eq!(sk.version, 3);
                assert_eq!(sk.location, broken.display().to_string());
                assert!(!sk.reason.is_empty());
            }
            other => panic!("{how:?}: history_checked gave {other:?}"),
        }
        assert!(matches!(
            r.last("default", "web"),
            Err(OpError::Unreadable(_))
        ));
        assert!(matches!(
            r.upgrade_base("default", "web"),
            Err(OpError::Unreadable(_))
        ));
        let (h, skipped) = r.history_reporting("default", "web").unwrap();
        assert_eq!(h.iter().map(|r| r.version).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(skipped.len(), 1);
        let (_, skipped) = s.list_all_reporting(None).unwrap();
        assert_eq!(skipped.len(), 1);
    }
}

#[test]
fn broken_older_record_warns_but_newest_is_served() {
    for how in DAMAGES {
        let tmp = tempfile::tempdir().unwrap();
        let dir = store(tmp.path());
        let broken = record(&dir, 1);
        damage(&broken, how);
        let url = format!("file:{}", dir.display());
        let warn = warning_prefix(&url, &broken, 1);
        for args in [&["history", "web"][..], &["status", "web"][..]] {
            let mut a = args.to_vec();
            a.extend(["--store", &url]);
            let o = rudder(tmp.path(), &a);
            assert_eq!(o.status.code(), Some(0), "{how:?} {args:?}");
            assert!(text(&o.stderr).starts_with(&warn), "{}", text(&o.stderr));
        }
        let s = FileStore::open(&dir).unwrap();
        let h = Releases::new(&s).history_checked("default", "web").unwrap();
        assert_eq!(h.iter().map(|r| r.version).collect::<Vec<_>>(), [2, 3]);
    }
}

#[test]
fn only_record_broken_is_an_error_not_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let s = FileStore::open(&dir).unwrap();
    s.create(&rel("web", 1, Status::Deployed)).unwrap();
    damage(&record(&dir, 1), Damage::Empty);
    let url = format!("file:{}", dir.display());
    let o = rudder(tmp.path(), &["history", "web", "--store", &url]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        format!(
            "Error: release record sh.helm.release.v1.web.v1 ({}) cannot be read: the file is empty\n",
            record(&dir, 1).display()
        )
    );
}

#[test]
fn reads_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    for args in [
        &["list"][..],
        &["list", "-A"][..],
        &["history", "x"][..],
        &["status", "x"][..],
        &["get", "values", "x"][..],
        &["history", "x", "--store", "file:no/such/dir"][..],
        &["list", "--store", "file:no/such/dir"][..],
        &["status", "x", "--store", "no/such/dir2"][..],
    ] {
        let o = rudder(cwd, args);
        assert!(
            o.status.code() == Some(0) || text(&o.stderr) == "Error: release: not found\n",
            "{args:?}: {}",
            text(&o.stderr)
        );
        let entries: Vec<_> = std::fs::read_dir(cwd).unwrap().collect();
        assert!(entries.is_empty(), "{args:?} created {entries:?}");
    }
    // The library too: opening and reading a missing store creates nothing,
    // the first write creates it.
    let dir = cwd.join("lib");
    let s = FileStore::open(&dir).unwrap();
    assert!(s.history("default", "x").unwrap().is_empty());
    assert!(s.list_all(None).unwrap().is_empty());
    assert!(s.get("default", "x", 1).is_err());
    assert!(!dir.exists());
    s.create(&rel("x", 1, Status::Deployed)).unwrap();
    assert!(record(&dir, 1)
        .with_file_name("sh.helm.release.v1.x.v1")
        .is_file());
}
