//! Hostile input: archives and manifests crafted to escape the chart, exhaust
//! memory or crash the loader. Every case must be a clear error, quickly.
use proptest::prelude::*;
use rudder::chart::{self, LoadError};
use std::io::Write;
use std::time::{Duration, Instant};

/// One raw tar entry: name, type flag, link target, data.
struct Entry<'a> {
    name: &'a str,
    kind: u8,
    link: &'a str,
    data: &'a [u8],
    size: Option<u64>,
}

fn file<'a>(name: &'a str, data: &'a [u8]) -> Entry<'a> {
    Entry {
        name,
        kind: b'0',
        link: "",
        data,
        size: None,
    }
}

/// A tar stream with exactly the given headers (no path validation).
fn tar(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = tar::Header::new_ustar();
        {
            let raw = h.as_old_mut();
            let n = e.name.as_bytes();
            raw.name[..n.len()].copy_from_slice(n);
            let l = e.link.as_bytes();
            raw.linkname[..l.len()].copy_from_slice(l);
        }
        h.set_mode(0o644);
        h.set_size(e.size.unwrap_or(e.data.len() as u64));
        h.set_entry_type(tar::EntryType::new(e.kind));
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(e.data);
        let pad = (512 - e.data.len() % 512) % 512;
        out.resize(out.len() + pad, 0);
    }
    out.extend([0u8; 1024]);
    out
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("compress");
    enc.finish().expect("compress")
}

const CHART_YAML: &[u8] = b"apiVersion: v2\nname: m\nversion: 0.1.0\n";

fn load(entries: &[Entry<'_>]) -> Result<chart::Chart, LoadError> {
    chart::load_archive(&gz(&tar(entries)))
}

#[test]
fn a_valid_crafted_archive_loads() {
    let c = load(&[
        file("m/Chart.yaml", CHART_YAML),
        file("m/templates/a.yaml", b"a: 1\n"),
    ])
    .expect("loads");
    assert_eq!(c.templates.len(), 1);
}

#[test]
fn path_traversal_is_rejected() {
    for name in [
        "m/../../etc/passwd",
        "m/templates/../../x",
        "m/..",
        "m/../Chart.yaml",
    ] {
        let e = load(&[file("m/Chart.yaml", CHART_YAML), file(name, b"x")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "chart illegally references parent directory",
            "{name}"
        );
    }
    let e = load(&[file("m\\..\\..\\x", b"x")]).unwrap_err();
    assert!(matches!(e, LoadError::ParentDirectory), "{e}");
}

#[test]
fn absolute_and_odd_paths_are_rejected() {
    let e = load(&[file("m//etc/passwd", b"x")]).unwrap_err();
    assert_eq!(e.to_string(), "chart illegally contains absolute paths");
    let e = load(&[file("Chart.yaml", CHART_YAML)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "chart illegally contains content outside the base directory: \"Chart.yaml\""
    );
    let e = load(&[file("m/c:/windows", b"x")]).unwrap_err();
    assert_eq!(e.to_string(), "chart contains illegally named files");
}

#[test]
fn link_and_special_entries_are_rejected() {
    for (kind, what) in [
        (b'2', "symbolic link"),
        (b'1', "hard link"),
        (b'3', "character device"),
        (b'6', "fifo"),
    ] {
        let e = load(&[
            file("m/Chart.yaml", CHART_YAML),
            Entry {
                name: "m/templates/x.yaml",
                kind,
                link: "/etc/passwd",
                data: b"",
                size: None,
            },
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("chart archive entry \"m/templates/x.yaml\" is a {what}; links and special files are not allowed in chart archives")
        );
    }
}

#[test]
fn oversize_files_are_rejected() {
    let big = vec![b'a'; 5 * 1024 * 1024 + 1];
    let e = load(&[file("m/Chart.yaml", CHART_YAML), file("m/big.txt", &big)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decompressed chart file \"m/big.txt\" is larger than the maximum file size 5242880"
    );
    // A header that claims a huge size is refused before anything is read.
    let e = load(&[Entry {
        name: "m/huge",
        kind: b'0',
        link: "",
        data: b"",
        size: Some(1 << 40),
    }])
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "decompressed chart is larger than the maximum file size 104857600"
    );
}

#[test]
fn gzip_bombs_stop_at_the_chart_limit() {
    // One 4 MiB entry, compressed once and repeated as concatenated gzip
    // members: 30 of them decompress to 120 MiB.
    let block = vec![0u8; 4 * 1024 * 1024];
    let mut one = tar(&[file("m/zeros", &block)]);
    one.truncate(one.len() - 1024); // no end-of-archive marker between members
    let member = gz(&one);
    let mut bomb = gz(&tar(&[file("m/Chart.yaml", CHART_YAML)])[..512 + 512]);
    for _ in 0..30 {
        bomb.extend_from_slice(&member);
    }
    assert!(bomb.len() < 2 * 1024 * 1024, "bomb is {} bytes", bomb.len());
    let start = Instant::now();
    let e = chart::load_archive(&bomb).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decompressed chart is larger than the maximum file size 104857600"
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn too_many_bytes_in_total_are_rejected() {
    let block = vec![b'x'; 5 * 1024 * 1024];
    let names: Vec<String> = (0..21).map(|i| format!("m/f{i}")).collect();
    let mut entries = vec![file("m/Chart.yaml", CHART_YAML)];
    entries.extend(names.iter().map(|n| file(n, &block)));
    let e = load(&entries).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decompressed chart is larger than the maximum file size 104857600"
    );
}

#[test]
fn non_gzip_and_truncated_data_fail_cleanly() {
    let e = chart::load_archive(b"hello, world").unwrap_err();
    assert!(e.to_string().contains("gzip: invalid header"), "{e}");
    let e = chart::load_archive(b"").unwrap_err();
    assert!(e.to_string().contains("gzip: invalid header"), "{e}");
    let good = gz(&tar(&[
        file("m/Chart.yaml", CHART_YAML),
        file("m/templates/a.yaml", &[b'a'; 5000]),
    ]));
    for cut in [3, 10, 20, good.len() / 2, good.len() - 9] {
        let Err(e) = chart::load_archive(&good[..cut]) else {
            panic!("cut at {cut} of {} loaded", good.len())
        };
        let s = e.to_string();
        assert!(
            s.contains("not appear to be a valid chart file") || s.contains("truncated or corrupt"),
            "cut {cut}: {s}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("x.tgz");
    std::fs::write(&p, b"plain text").expect("write");
    let e = chart::load(&p).unwrap_err();
    // Helm sniffs a 512-byte buffer: a short file is padded with NULs, so
    // it reads as binary; a longer text file reads as text.
    assert!(
        e.to_string()
            .ends_with("does not appear to be a gzipped archive; got 'application/octet-stream'"),
        "{e}"
    );
    std::fs::write(&p, "plain text\n".repeat(60)).expect("write");
    let e = chart::load(&p).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("does not appear to be a gzipped archive; got 'text/plain; charset=utf-8'"),
        "{e}"
    );
    let p = dir.path().join("values.yaml");
    std::fs::write(&p, b"a: 1").expect("write");
    let e = chart::load(&p).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("seems to be a YAML file, but expected a gzipped archive"),
        "{e}"
    );
    let e = chart::load_archive(&gz(b"")).unwrap_err();
    assert_eq!(e.to_string(), "no files in chart archive");
}

#[test]
fn malformed_chart_yaml_is_a_clear_error() {
    for (text, want) in [
        (&b"name: [unclosed"[..], "cannot load Chart.yaml: error converting YAML to JSON: "),
        (b"- a\n- b\n", "cannot load Chart.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type chart.Metadata"),
        (b"name: {a: 1}\nversion: 1\n", "cannot load Chart.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go struct field Metadata.name of type string"),
        (b"version: 1.0.0\n", "validation: chart.metadata.name is required"),
        (b"name: m\nversion: one\n", "validation: chart.metadata.version \"one\" is invalid"),
        (b"\xff\xfe\x00", "cannot load Chart.yaml"),
    ] {
        let e = load(&[file("m/Chart.yaml", text)]).unwrap_err();
        assert!(e.to_string().starts_with(want), "{:?}: {e}", String::from_utf8_lossy(text));
    }
    let e = load(&[file("m/values.yaml", b"a: 1")]).unwrap_err();
    assert_eq!(e.to_string(), "Chart.yaml file is missing");
}

#[test]
fn non_mapping_documents_are_refused_with_file_and_index() {
    for (text, idx, what) in [
        ("- a\n- b\n", 1, "a sequence"),
        (
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n42\n",
            2,
            "a number",
        ),
        ("bar", 1, "a string"),
    ] {
        let mut m = std::collections::BTreeMap::new();
        m.insert("dir/x.yaml".to_string(), text.to_string());
        let e = chart::chart_from_manifests("c", "ns", &m).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("dir/x.yaml: document {idx}: the document is {what}, not a mapping (a Kubernetes object)")
        );
    }
}

#[test]
fn nested_subchart_archives_are_bounded() {
    let mut inner = gz(&tar(&[file("m/Chart.yaml", CHART_YAML)]));
    for _ in 0..40 {
        inner = gz(&tar(&[
            file("m/Chart.yaml", CHART_YAML),
            file("m/charts/m.tgz", &inner),
        ]));
    }
    let e = chart::load_archive(&inner).unwrap_err();
    let mut s = e.to_string();
    assert!(
        s.contains("nested more than 32 levels"),
        "{}",
        &s[s.len().saturating_sub(200)..]
    );
    s.truncate(0);
}

#[cfg(unix)]
#[test]
fn directories_follow_symlinks_and_refuse_cycles() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let outside = tmp.path().join("outside.yaml");
    std::fs::write(&outside, "kind: X\n").expect("write");
    let c = tmp.path().join("c");
    std::fs::create_dir_all(c.join("templates")).expect("mkdir");
    std::fs::write(c.join("Chart.yaml"), CHART_YAML).expect("write");
    std::os::unix::fs::symlink(&outside, c.join("templates/linked.yaml")).expect("symlink");
    let loaded = chart::load(&c).expect("loads");
    assert_eq!(loaded.templates[0].data, b"kind: X\n");
    std::os::unix::fs::symlink(&c, c.join("templates/loop")).expect("symlink");
    let e = chart::load(&c).unwrap_err();
    assert!(matches!(e, LoadError::SymlinkCycle(_)), "{e}");
    std::fs::remove_file(c.join("templates/loop")).expect("rm");
    std::os::unix::fs::symlink(tmp.path().join("nowhere"), c.join("templates/broken.yaml"))
        .expect("symlink");
    let e = chart::load(&c).unwrap_err();
    assert!(e.to_string().starts_with("error evaluating symlink"), "{e}");
}

/// `check_archive` (the check of a downloaded chart, which keeps no
/// files) and `load_archive_files` (which keeps them) say the same of
/// `data`: both accept it, or both refuse it with the same error.
fn check_agrees(data: &[u8]) -> Result<(), TestCaseError> {
    let checked = chart::loader::check_archive(data).map_err(|e| e.to_string());
    let loaded = chart::loader::load_archive_files(data)
        .map(|_| ())
        .map_err(|e| e.to_string());
    prop_assert_eq!(checked, loaded);
    Ok(())
}

#[test]
fn checking_an_archive_refuses_what_loading_it_refuses() {
    let big = vec![b'a'; 5 * 1024 * 1024 + 1];
    let block = vec![b'x'; 5 * 1024 * 1024];
    let names: Vec<String> = (0..21).map(|i| format!("m/f{i}")).collect();
    let mut too_many = vec![file("m/Chart.yaml", CHART_YAML)];
    too_many.extend(names.iter().map(|n| file(n, &block)));
    let good = gz(&tar(&[
        file("m/Chart.yaml", CHART_YAML),
        file("m/templates/a.yaml", b"a: 1\n"),
    ]));
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("good", good.clone()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("not gzip", b"hello, world".to_vec()),
        ("empty", gz(&tar(&[]))),
        ("traversal", gz(&tar(&[file("m/../../etc/x", b"x")]))),
        ("absolute", gz(&tar(&[file("/m/Chart.yaml", CHART_YAML)]))),
        (
            "symlink",
            gz(&tar(&[Entry {
                name: "m/l",
                kind: b'2',
                link: "/etc/passwd",
                data: b"",
                size: None,
            }])),
        ),
        (
            "oversize file",
            gz(&tar(&[
                file("m/Chart.yaml", CHART_YAML),
                file("m/big", &big),
            ])),
        ),
        (
            "huge header",
            gz(&tar(&[Entry {
                name: "m/huge",
                kind: b'0',
                link: "",
                data: b"",
                size: Some(1 << 40),
            }])),
        ),
        ("too many bytes", gz(&tar(&too_many))),
    ];
    let mut trailing = good.clone();
    trailing.extend_from_slice(&good[..20]);
    cases.push(("corrupt trailing member", trailing));
    for (name, data) in cases {
        if let Err(e) = check_agrees(&data) {
            panic!("{name}: {e}");
        }
    }
    assert!(chart::loader::check_archive(&good).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn checking_agrees_with_loading_on_mutated_archives(
        flips in proptest::collection::vec((0usize..3000, any::<u8>()), 1..8),
        gz_flips in proptest::collection::vec((0usize..400, any::<u8>()), 0..3),
    ) {
        let mut t = tar(&[file("m/Chart.yaml", CHART_YAML), file("m/templates/a.yaml", b"a: {{ x }}\n")]);
        for (i, b) in flips {
            let n = t.len();
            t[i % n] = b;
        }
        let mut data = gz(&t);
        for (i, b) in gz_flips {
            let n = data.len();
            data[i % n] = b;
        }
        check_agrees(&data)?;
    }

    #[test]
    fn loader_never_panics_on_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = chart::load_archive(&data);
    }

    #[test]
    fn loader_never_panics_on_arbitrary_gzipped_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = chart::load_archive(&gz(&data));
    }

    #[test]
    fn loader_never_panics_on_mutated_archives(
        flips in proptest::collection::vec((0usize..3000, any::<u8>()), 1..8),
    ) {
        let mut t = tar(&[file("m/Chart.yaml", CHART_YAML), file("m/templates/a.yaml", b"a: {{ x }}\n"), file("m/charts/s/Chart.yaml", CHART_YAML)]);
        for (i, b) in flips {
            let n = t.len();
            t[i % n] = b;
        }
        let _ = chart::load_archive(&gz(&t));
    }

    #[test]
    fn loader_never_panics_on_arbitrary_chart_yaml(text in "\\PC{0,200}") {
        let _ = chart::load_files(vec![chart::ChartFile { name: "Chart.yaml".into(), data: text.into_bytes().into() }]);
    }
}
