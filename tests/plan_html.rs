//! `rudder-upgrader plan -o html` opened in headless Chromium: one graph
//! node per release in the plan's order, a screenshot that is not blank,
//! no console errors, and nothing loaded from outside the page.
//!
//! Chromium is Debian's `chromium` (or `$CHROMIUM_BIN`); `.ci/run`
//! installs it when missing. Without it the tests skip, or fail under
//! `RUDDER_REQUIRE_ORACLE=1`.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long one Chromium run may take before it is killed.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);

fn upgrader(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder-upgrader"))
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .env_remove("RUDDER_SIM_READY_DELAY_MS")
        .args(args)
        .output()
        .expect("runs")
}

/// `$CHROMIUM_BIN`, or `chromium` on `PATH`.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM_BIN").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
        return common::missing(&format!(
            "Chromium (CHROMIUM_BIN={} is not a file)",
            p.display()
        ));
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("chromium"))
                .find(|p| p.is_file())
        })
        .or_else(|| common::missing("Chromium (`chromium` on PATH, or CHROMIUM_BIN)"))
}

/// A `file://` URL for an absolute path.
fn file_url(p: &Path) -> String {
    let mut url = String::from("file://");
    for b in p.to_str().expect("utf-8 path").bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// What one Chromium run printed, and how long it took.
struct Run {
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs headless Chromium with a fresh profile and `args`, killing it (and
/// the processes it started, its process group) after
/// [`CHROMIUM_TIMEOUT`].
fn run_chromium(bin: &Path, work: &Path, args: &[String]) -> Run {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    let profile = work.join(format!("chromium-profile-{n}"));
    std::fs::create_dir_all(&profile).unwrap();
    let (out_path, err_path) = (
        work.join(format!("chromium-{n}.stdout")),
        work.join(format!("chromium-{n}.stderr")),
    );
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .env("HOME", &profile)
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out_path).unwrap())
    .stderr(std::fs::File::create(&err_path).unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("chromium starts");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for chromium") {
            break s;
        }
        if start.elapsed() > CHROMIUM_TIMEOUT {
            // The whole group: the browser and its renderer, GPU and
            // zygote processes.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium {args:?} took more than {CHROMIUM_TIMEOUT:?}; stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = start.elapsed();
    let run = Run {
        stdout: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap()).into_owned(),
        took,
    };
    assert!(
        status.success(),
        "chromium {args:?}: {status}\nstderr:\n{}",
        run.stderr
    );
    run
}

/// The page's console messages and uncaught exceptions in Chromium's log
/// (`--enable-logging=stderr --v=0`): Chromium 156 writes them as
/// `[...:INFO:CONSOLE:1] "message", source: URL (1)` (older versions
/// `INFO:CONSOLE(1)]`), at INFO whatever the console level, and an
/// uncaught exception as a console message starting `Uncaught`. Nothing
/// but the page runs in the fresh profile, so every such line is the
/// page's; the rest of stderr (D-Bus, GPU, sandbox warnings) is Chromium's
/// own noise and is not counted.
fn console_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

/// Loads `page` and returns the DOM after load and the console messages.
fn dump_dom(bin: &Path, work: &Path, page: &Path) -> (String, Vec<String>, Duration) {
    let r = run_chromium(
        bin,
        work,
        &[
            "--enable-logging=stderr".into(),
            "--v=0".into(),
            "--dump-dom".into(),
            file_url(page),
        ],
    );
    (r.stdout, console_messages(&r.stderr), r.took)
}

/// A 1200x900 screenshot of `page`, as 8-bit RGB pixels.
fn screenshot(bin: &Path, work: &Path, page: &Path) -> (u32, u32, Vec<[u8; 3]>, Duration) {
    let png_path = work.join("page.png");
    let r = run_chromium(
        bin,
        work,
        &[
            format!("--screenshot={}", png_path.display()),
            "--window-size=1200,900".into(),
            file_url(page),
        ],
    );
    let file = std::fs::File::open(&png_path).expect("the screenshot was written");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let step = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("screenshot colour type {other:?}"),
    };
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels, r.took)
}

/// Every tag of the page (text and attribute values are escaped, so a raw
/// `<` always opens one).
fn tags(page: &str) -> Vec<&str> {
    let re = regex::Regex::new(r"<[A-Za-z!][^>]*>").unwrap();
    re.find_iter(page).map(|m| m.as_str()).collect()
}

/// What in the page could load anything: scripts, stylesheets, images,
/// frames, `src`/`srcset`, links that leave the page, `url(...)` other
/// than to an id in the page, `@import`. Empty for a self-contained page.
fn external_loads(page: &str) -> Vec<String> {
    let element = regex::Regex::new(
        r"^<(script|link|img|image|iframe|frame|object|embed|use|audio|video|source|base|form)\b",
    )
    .unwrap();
    let href = regex::Regex::new(r#"\bhref="([^"]*)""#).unwrap();
    let mut bad = Vec::new();
    for t in tags(page) {
        let external_href = href.captures_iter(t).any(|c| !c[1].starts_with('#'));
        if element.is_match(t)
            || t.contains(" src=")
            || t.contains(" srcset=")
            || external_href
            || t.matches("url(").count() != t.matches("url(#").count()
        {
            bad.push(t.to_string());
        }
    }
    match page
        .split_once("<style>")
        .and_then(|(_, s)| s.split_once("</style>"))
    {
        Some((style, _)) if style.contains("url(") || style.contains("@import") => {
            bad.push(format!("<style>{style}</style>"))
        }
        _ => {}
    }
    bad
}

/// `(data-order, data-release, data-action)` of the graph's nodes, in
/// document order.
fn nodes(dom: &str) -> Vec<(usize, String, String)> {
    let re = regex::Regex::new(
        r#"<g class="node [^"]*" data-order="(\d+)" data-release="([^"]*)" data-action="([^"]*)""#,
    )
    .unwrap();
    re.captures_iter(dom)
        .map(|c| (c[1].parse().unwrap(), c[2].to_string(), c[3].to_string()))
        .collect()
}

/// The node fill of each release action (the page's CSS).
fn fill(action: &str) -> [u8; 3] {
    match action {
        "install" => [0xc8, 0xe6, 0xc9],
        "upgrade" => [0xff, 0xe0, 0xb2],
        "recover" => [0xe1, 0xbe, 0xe7],
        "uninstall" => [0xff, 0xcd, 0xd2],
        "noop" => [0xec, 0xef, 0xf1],
        other => panic!("action {other:?}"),
    }
}

/// The page of a real plan: the demo's cluster (left at v1.22.2 by
/// `rudder-upgrader demo`) planned back to the demo's v1.21.4 config, so
/// two releases upgrade and five are unchanged.
#[test]
fn plan_page_in_chromium() {
    let Some(bin) = chromium() else { return };
    let d = tempfile::tempdir().unwrap();
    let demo = d.path().join("demo");
    let o = upgrader(d.path(), &["demo", demo.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "demo: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let store = format!("file:{}", demo.join("store").display());
    let cluster = format!("sim:{}", demo.join("cluster").display());
    let cfg = demo.join("config-install.yaml");
    let base = [
        "--store",
        &store,
        "--cluster",
        &cluster,
        "--config",
        cfg.to_str().unwrap(),
    ];
    let plan = |format: &str| {
        let mut a = base.to_vec();
        a.extend(["plan", "-o", format]);
        let o = upgrader(d.path(), &a);
        assert!(
            o.status.success(),
            "plan -o {format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).expect("utf-8")
    };
    let json: serde_json::Value = serde_json::from_str(&plan("json")).unwrap();
    let want: Vec<(usize, String, String)> = json["releases"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (ns, name) = (r["namespace"].as_str(), r["name"].as_str());
            let action = r["action"].as_str().unwrap().to_string();
            (i + 1, format!("{}/{}", ns.unwrap(), name.unwrap()), action)
        })
        .collect();
    assert_eq!(want.len(), 7, "{want:?}");
    let mut actions: Vec<&str> = want.iter().map(|(_, _, a)| a.as_str()).collect();
    actions.sort();
    actions.dedup();
    assert_eq!(actions, ["noop", "upgrade"], "{want:?}");
    let edges = json["releaseEdges"].as_array().unwrap().len();
    assert!(edges > 0);

    let html = plan("html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(external_loads(&html), Vec::<String>::new());
    assert_eq!(html, plan("html"), "two runs differ");
    let page = d.path().join("plan.html");
    std::fs::write(&page, &html).unwrap();

    let (dom, console, dom_took) = dump_dom(&bin, d.path(), &page);
    assert!(dom.contains("</html>"), "no DOM dumped:\n{dom}");
    assert_eq!(nodes(&dom), want, "graph nodes in the browser's DOM");
    assert_eq!(dom.matches("<g class=\"edge\"").count(), edges);
    for (i, _, action) in &want {
        let section = format!("<section class=\"release {action}\" id=\"release-{i}\">");
        assert!(dom.contains(&section), "no {section}");
    }
    // The upgrades' diffs made it to the page.
    assert!(dom.contains("<span class=\"add\">+"), "no diff lines");
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );

    let (w, h, pixels, shot_took) = screenshot(&bin, d.path(), &page);
    assert_eq!((w, h), (1200, 900));
    let mut counts = std::collections::HashMap::new();
    for p in &pixels {
        *counts.entry(*p).or_insert(0usize) += 1;
    }
    let (background, _) = counts.iter().max_by_key(|(_, n)| **n).unwrap();
    assert_eq!(*background, [255, 255, 255], "the page's white background");
    let other = pixels.iter().filter(|p| *p != background).count();
    assert!(
        other * 100 > pixels.len(),
        "screenshot nearly blank: {other} of {} pixels differ from the background",
        pixels.len()
    );
    assert!(counts.len() >= 3, "{} colours", counts.len());
    // Each node is 340x40 pixels, mostly its action's fill.
    for action in actions {
        let n = want.iter().filter(|(_, _, a)| a == action).count();
        let c = fill(action);
        let seen = pixels
            .iter()
            .filter(|p| p.iter().zip(c).all(|(a, b)| a.abs_diff(b) <= 2))
            .count();
        assert!(
            seen >= n * 8_000,
            "{seen} pixels of the {action} fill for {n} node(s)"
        );
    }
    eprintln!(
        "chromium: --dump-dom {:.2} s, --screenshot {:.2} s; {} colours, {:.1}% not background",
        dom_took.as_secs_f64(),
        shot_took.as_secs_f64(),
        counts.len(),
        other as f64 * 100.0 / pixels.len() as f64
    );
}

/// The console check can fail: a page that logs an error and throws is
/// caught by the same helpers.
#[test]
fn console_check_catches_a_broken_page() {
    let Some(bin) = chromium() else { return };
    let d = tempfile::tempdir().unwrap();
    let page = d.path().join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>broken</p><script>console.error(\"planted error\");throw new Error(\"planted exception\")</script></body></html>",
    )
    .unwrap();
    let (dom, console, _) = dump_dom(&bin, d.path(), &page);
    assert!(dom.contains("<p>broken</p>"), "{dom}");
    assert_eq!(console.len(), 2, "{console:#?}");
    assert!(console[0].contains("planted error"), "{console:#?}");
    assert!(
        console[1].contains("Uncaught Error: planted exception"),
        "{console:#?}"
    );
}

/// The self-containment check can fail, too.
#[test]
fn self_contained_check_catches_external_loads() {
    let ok = "<!DOCTYPE html><html><head><style>p{}</style></head><body><a href=\"#x\">x</a><pre>&lt;script src=\"http://e\"&gt;</pre></body></html>";
    assert_eq!(external_loads(ok), Vec::<String>::new());
    for bad in [
        "<script src=\"https://cdn.example/x.js\"></script>",
        "<script>fetch(\"x\")</script>",
        "<link rel=\"stylesheet\" href=\"x.css\">",
        "<a href=\"https://example.com\">x</a>",
        "<div style=\"background: url(x.png)\"></div>",
        "<img alt=\"\" src=\"x.png\">",
    ] {
        let page = ok.replace("<body>", &format!("<body>{bad}"));
        let found = external_loads(&page);
        assert!(
            found.len() == 1 && bad.starts_with(&found[0]),
            "{bad}: {found:?}"
        );
    }
    let page = ok.replace("p{}", "@import \"x.css\";");
    assert_eq!(external_loads(&page).len(), 1);
}
