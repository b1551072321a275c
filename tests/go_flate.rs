//! `rudder::gostd::flate` and `gostd::gzip` against Go's own
//! `compress/flate` and `compress/gzip`, byte for byte.
//!
//! `scripts/go-flate` (a stdlib-only Go program) is built with the `go` on
//! PATH (or `$GO`) into the test's temp dir, and fed the same input, split
//! into the same `Write` calls, as rudder's writer: Go's output depends on
//! that split, so the tests vary it. Inputs: the empty input, one byte,
//! every corpus chart as a tar stream (written in the calls Go's
//! `archive/tar` makes), noise, repeats, a 5 MB mixed input, and random
//! vectors under proptest; every level from -2 to 9; raw deflate and gzip
//! with Helm's header fields. Without Go the tests print a skip (a failure
//! under `RUDDER_REQUIRE_ORACLE=1`).
mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rudder::gostd::{flate, gzip};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

const ALL_LEVELS: [i32; 12] = [-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
const HELM_EXTRA: &[u8] = b"+aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=";

/// One call on the writer.
#[derive(Debug, Clone)]
enum Op {
    Write(Vec<u8>),
    Flush,
}

/// The Go helper, built once per test binary.
fn go_helper() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let go = std::env::var_os("GO").unwrap_or_else(|| "go".into());
        let found = Command::new(&go)
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return None;
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/go-flate");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-flate");
        let build = Command::new(&go)
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(&src)
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "")
            .env("CGO_ENABLED", "0")
            .output()
            .expect("run go build");
        assert!(
            build.status.success(),
            "go build scripts/go-flate failed: {}",
            String::from_utf8_lossy(&build.stderr)
        );
        Some(out)
    });
    match bin {
        Some(p) => Some(p.clone()),
        None => common::missing("Go (`go` on PATH or $GO), the compress/flate oracle"),
    }
}

/// A running helper: requests in, compressed bytes out.
struct GoFlate {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl GoFlate {
    fn start() -> Option<GoFlate> {
        let bin = go_helper()?;
        let mut child = Command::new(bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start go-flate");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        Some(GoFlate {
            child,
            stdin,
            stdout,
        })
    }

    /// Go's bytes for `ops` then `Close`, as raw deflate (`header` None) or
    /// gzip.
    fn run(&mut self, level: i32, header: Option<&gzip::Header>, ops: &[Op]) -> Vec<u8> {
        let mut req = Vec::new();
        req.push(if header.is_some() { b'g' } else { b'f' });
        req.push(level as i8 as u8);
        if let Some(h) = header {
            req.extend_from_slice(&h.mod_time.to_le_bytes());
            match &h.extra {
                Some(e) => {
                    req.extend_from_slice(&(e.len() as u32).to_le_bytes());
                    req.extend_from_slice(e);
                }
                None => req.extend_from_slice(&(-1i32).to_le_bytes()),
            }
            for s in [&h.name, &h.comment] {
                req.extend_from_slice(&(s.len() as u32).to_le_bytes());
                req.extend_from_slice(s.as_bytes());
            }
            req.push(h.os);
        }
        for op in ops {
            match op {
                Op::Write(d) => {
                    req.push(b'w');
                    req.extend_from_slice(&(d.len() as u32).to_le_bytes());
                    req.extend_from_slice(d);
                }
                Op::Flush => req.push(b's'),
            }
        }
        req.push(b'c');
        self.stdin.write_all(&req).expect("write to go-flate");
        self.stdin.flush().expect("flush go-flate");
        let mut n = [0u8; 4];
        self.stdout.read_exact(&mut n).expect("go-flate answer");
        let mut out = vec![0u8; u32::from_le_bytes(n) as usize];
        self.stdout.read_exact(&mut out).expect("go-flate answer");
        out
    }
}

impl Drop for GoFlate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// rudder's bytes for the same calls.
fn ours(level: i32, header: Option<&gzip::Header>, ops: &[Op]) -> Vec<u8> {
    match header {
        None => {
            let mut w = flate::Writer::new(Vec::new(), level).expect("level");
            for op in ops {
                match op {
                    Op::Write(d) => w.write_chunk(d).expect("write"),
                    Op::Flush => w.sync_flush().expect("flush"),
                }
            }
            w.finish().expect("close")
        }
        Some(h) => {
            let mut w = gzip::Writer::new(Vec::new(), level, h.clone()).expect("level");
            for op in ops {
                match op {
                    Op::Write(d) => w.write_chunk(d).expect("write"),
                    Op::Flush => w.sync_flush().expect("flush"),
                }
            }
            w.finish().expect("close")
        }
    }
}

/// Compares rudder's output with Go's; on a mismatch, says where.
fn same(go: &mut GoFlate, what: &str, level: i32, header: Option<&gzip::Header>, ops: &[Op]) {
    let want = go.run(level, header, ops);
    let got = ours(level, header, ops);
    if got != want {
        let at = got
            .iter()
            .zip(&want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        panic!(
            "{what}, level {level}, {}: rudder wrote {} bytes, Go {}; first difference at byte {at}",
            if header.is_some() { "gzip" } else { "flate" },
            got.len(),
            want.len()
        );
    }
}

fn helm_header() -> gzip::Header {
    gzip::Header {
        extra: Some(HELM_EXTRA.to_vec()),
        comment: "Helm".into(),
        ..gzip::Header::default()
    }
}

/// xorshift noise.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Text with long-range repeats, runs, noise and tar-like zero blocks.
fn mixed(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let words = noise(4096, 99);
    let mut i = 0u64;
    while out.len() < n {
        i += 1;
        match i % 7 {
            0 => out.extend_from_slice(&noise(3000, i)),
            1 => out.extend(std::iter::repeat_n(0u8, 512 * (i as usize % 5))),
            2 => {
                let s = (i as usize * 131) % 3000;
                out.extend_from_slice(&words[s..s + 1000]);
            }
            3 => out.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, i as usize % 700)),
            _ => out.extend_from_slice(
                format!("  key{}: value-{} # line {}\n", i % 50, i % 13, i).as_bytes(),
            ),
        }
    }
    out.truncate(n);
    out
}

/// `data` cut into calls of the given sizes, cycling.
fn split(data: &[u8], sizes: &[usize]) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut at = 0;
    for &s in sizes.iter().cycle() {
        if at >= data.len() {
            break;
        }
        let end = (at + s.max(1)).min(data.len());
        ops.push(Op::Write(data[at..end].to_vec()));
        at = end;
    }
    ops
}

/// A chart directory as a tar stream in the calls Go's `archive/tar` makes
/// (header block, contents, padding; two zero blocks at the end), files in
/// sorted path order.
fn chart_tar_calls(dir: &Path, name: &str) -> Vec<Op> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read chart dir")
            .map(|e| e.expect("entry"))
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let n = e.file_name().to_string_lossy().into_owned();
            let r = format!("{rel}/{n}");
            let t = e.file_type().expect("type");
            if t.is_dir() {
                walk(&e.path(), &r, out);
            } else if t.is_file() {
                out.push((r, e.path()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, name, &mut files);
    let mut ops = Vec::new();
    for (path, file) in files {
        let data = std::fs::read(&file).expect("read chart file");
        let mut h = tar::Header::new_ustar();
        if h.set_path(&path).is_err() {
            continue;
        }
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_700_000_000);
        h.set_cksum();
        ops.push(Op::Write(h.as_bytes().to_vec()));
        let pad = (512 - data.len() % 512) % 512;
        if !data.is_empty() {
            ops.push(Op::Write(data));
        }
        if pad > 0 {
            ops.push(Op::Write(vec![0; pad]));
        }
    }
    ops.push(Op::Write(vec![0; 512]));
    ops.push(Op::Write(vec![0; 512]));
    ops
}

fn joined(ops: &[Op]) -> Vec<u8> {
    let mut v = Vec::new();
    for op in ops {
        if let Op::Write(d) = op {
            v.extend_from_slice(d);
        }
    }
    v
}

#[test]
fn empty_and_one_byte_inputs_match_go() {
    let Some(mut go) = GoFlate::start() else {
        return;
    };
    for level in ALL_LEVELS {
        for header in [None, Some(gzip::Header::default()), Some(helm_header())] {
            let h = header.as_ref();
            same(&mut go, "no calls", level, h, &[]);
            same(&mut go, "an empty call", level, h, &[Op::Write(vec![])]);
            same(&mut go, "one byte", level, h, &[Op::Write(vec![b'x'])]);
            same(&mut go, "flush only", level, h, &[Op::Flush]);
        }
    }
}

#[test]
fn gzip_headers_match_go() {
    let Some(mut go) = GoFlate::start() else {
        return;
    };
    let headers = [
        gzip::Header::default(),
        helm_header(),
        gzip::Header {
            name: "chart-1.0.0.tgz".into(),
            comment: "caf\u{e9}".into(),
            extra: Some(Vec::new()),
            mod_time: 1_700_000_000,
            os: 3,
        },
        gzip::Header {
            mod_time: -5,
            ..gzip::Header::default()
        },
    ];
    let data = mixed(20_000);
    for h in &headers {
        for level in [-2, -1, 0, 1, 6, 9] {
            same(
                &mut go,
                "header",
                level,
                Some(h),
                &[Op::Write(data.clone())],
            );
        }
    }
}

#[test]
fn corpus_chart_tars_match_go_at_every_level() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let Some(mut go) = GoFlate::start() else {
        return;
    };
    let charts = shared.join("conformance/charts");
    let mut names: Vec<String> = std::fs::read_dir(&charts)
        .expect("corpus")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("chart/Chart.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 20, "corpus charts: {names:?}");
    let mut total = 0;
    for name in &names {
        let calls = chart_tar_calls(&charts.join(name).join("chart"), name);
        let whole = [Op::Write(joined(&calls))];
        total += joined(&calls).len();
        for level in ALL_LEVELS {
            same(
                &mut go,
                &format!("{name} as tar calls"),
                level,
                None,
                &calls,
            );
        }
        // One call, and Helm's own gzip layer at Helm's level.
        same(&mut go, &format!("{name} in one call"), 6, None, &whole);
        same(&mut go, &format!("{name} in one call"), 9, None, &whole);
        same(
            &mut go,
            &format!("{name} gzip"),
            -1,
            Some(&helm_header()),
            &calls,
        );
    }
    eprintln!(
        "{} charts, {total} tar bytes, all levels match Go",
        names.len()
    );
}

#[test]
fn noise_repeats_and_large_inputs_match_go() {
    let Some(mut go) = GoFlate::start() else {
        return;
    };
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("noise 300 KB", noise(300_000, 1)),
        ("one byte repeated 300 KB", vec![b'z'; 300_000]),
        (
            "a 7-byte cycle 200 KB",
            b"abcdefg".iter().copied().cycle().take(200_000).collect(),
        ),
        ("zeros 100 KB", vec![0; 100_000]),
        ("16 bytes", b"0123456789abcdef".to_vec()),
        ("17 bytes", b"0123456789abcdefg".to_vec()),
        ("127 bytes", mixed(127)),
        ("128 bytes", mixed(128)),
        ("65535 bytes", mixed(65535)),
        ("65536 bytes", mixed(65536)),
        ("200 KB mixed", mixed(200_000)),
    ];
    for (what, data) in &inputs {
        for level in ALL_LEVELS {
            same(&mut go, what, level, None, &[Op::Write(data.clone())]);
            same(
                &mut go,
                what,
                level,
                None,
                &split(data, &[1000, 7, 4096, 333]),
            );
        }
    }
    // 5 MB: window slides, the BestSpeed table's offsets, many blocks;
    // in one call and in uneven calls with a sync flush in between.
    let big = mixed(5 << 20);
    let mut flushed = split(&big, &[100_000, 65_536, 512, 12_345]);
    flushed.insert(7, Op::Flush);
    flushed.insert(40, Op::Flush);
    for level in ALL_LEVELS {
        same(
            &mut go,
            "5 MB in one call",
            level,
            None,
            &[Op::Write(big.clone())],
        );
        same(&mut go, "5 MB in calls and flushes", level, None, &flushed);
    }
    same(
        &mut go,
        "5 MB gzip",
        9,
        Some(&gzip::Header::default()),
        &[Op::Write(big)],
    );
}

#[test]
fn random_inputs_match_go() {
    let Some(go) = GoFlate::start() else {
        return;
    };
    let go = std::cell::RefCell::new(go);
    let mut runner = TestRunner::new(Config {
        cases: 128,
        ..Config::default()
    });
    let byte = prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), any::<u8>()];
    let input = (
        prop::collection::vec(byte, 0..20_000),
        prop::sample::select(ALL_LEVELS.to_vec()),
        prop::collection::vec(1usize..10_000, 1..6),
        any::<bool>(),
        any::<bool>(),
    );
    runner
        .run(&input, |(data, level, sizes, flush, gz)| {
            let mut ops = split(&data, &sizes);
            if flush && !ops.is_empty() {
                ops.insert(ops.len() / 2, Op::Flush);
            }
            let h = gz.then(helm_header);
            let want = go.borrow_mut().run(level, h.as_ref(), &ops);
            let got = ours(level, h.as_ref(), &ops);
            prop_assert!(
                got == want,
                "level {level}: rudder {} bytes, Go {}",
                got.len(),
                want.len()
            );
            Ok(())
        })
        .expect("rudder's deflate matches Go's");
}
