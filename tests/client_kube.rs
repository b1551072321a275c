//! The facade on a real API server (the shared test bed): an operator-style
//! program with its own `kube::Client` installs into a namespace that does
//! not exist yet, and the Kubernetes client is created, used and dropped on
//! async tasks and plain threads without a panic, blocking client inside a
//! runtime included. Real Helm reads the records.
//!
//! Without the test bed or Helm every test prints `SKIPPED: ...` and
//! passes, unless `RUDDER_REQUIRE_ORACLE=1`, which makes them fail.
mod common;
mod testbed_common;

use rudder::cluster::kube::{KubeCluster, KubeOptions};
use rudder::cluster::Cluster;
use rudder::plan::{DesiredRelease, ReleaseAction};
use rudder::release::Status;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A namespace name that does not exist on the bed yet.
fn new_namespace(prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000_000;
    format!(
        "{prefix}-{}-{stamp}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A chart of a ConfigMap and a Deployment that the bed's kwok nodes make
/// ready.
fn chart(replicas: u32) -> rudder::Chart {
    let mut files = BTreeMap::new();
    files.insert(
        "cm.yaml".to_string(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: op-config\ndata:\n  a: b\n"
            .to_string(),
    );
    files.insert(
        "deploy.yaml".to_string(),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: op}}\n  template:\n    metadata:\n      labels: {{app: op}}\n    spec:\n      containers:\n      - name: op\n        image: busybox:1.36\n"
        ),
    );
    rudder::chart::chart_from_manifests("op", "default", &files).unwrap()
}

/// The caller's own kube::Client from the bed's kubeconfig.
async fn kube_client(kubeconfig: &Path) -> rudder::kube::Client {
    let kc = rudder::kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let cfg = rudder::kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    rudder::kube::Client::try_from(cfg).unwrap()
}

fn helm_history(kubeconfig: &Path, major: u8, ns: &str, name: &str) -> Option<String> {
    let bin = common::helm(major)?;
    let home = tempfile::tempdir().unwrap();
    let out = common::helm_command(&bin, home.path())
        .args(["history", name, "-n", ns, "--kubeconfig"])
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "helm{major} history failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An operator passes its own kube::Client, on a current-thread runtime,
/// and installs into a namespace that does not exist; a ticker task keeps
/// ticking through the rollout's wait; Helm 3 and 4 read the records.
#[test]
fn operator_with_its_own_kube_client_installs_into_a_new_namespace() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let ns = new_namespace("facade-op");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicUsize::new(0));
    let (elapsed, counted) = rt.block_on(async {
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(100));
            loop {
                iv.tick().await;
                t.fetch_add(1, Ordering::SeqCst);
            }
        });
        let kube = kube_client(&tb.kubeconfig).await;
        let client = rudder::Client::builder()
            .kube_client(kube)
            .build()
            .await
            .unwrap();
        assert_eq!(client.store_url(), "secret");
        let mut d = DesiredRelease::new("op", &ns, chart(2));
        d.options.timeout = Duration::from_secs(120);
        let start = Instant::now();
        let before = ticks.load(Ordering::SeqCst);
        let plan = client.plan(std::slice::from_ref(&d)).await.unwrap();
        assert_eq!(plan.releases[0].action, ReleaseAction::Install);
        let report = client.apply(&plan).await.unwrap();
        assert!(report.success());
        let elapsed = start.elapsed();
        let counted = ticks.load(Ordering::SeqCst) - before;
        // Unchanged: a noop plan.
        let again = client.plan(&[d]).await.unwrap();
        assert_eq!(again.releases[0].action, ReleaseAction::Noop);
        let h = client.history(&ns, "op").await.unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].info.status, Status::Deployed);
        ticker.abort();
        drop(client);
        (elapsed, counted)
    });
    // At least one tick per 100 ms of the apply, less a little slack.
    let want = (elapsed.as_millis() / 100).saturating_sub(2) as usize;
    assert!(
        counted >= want,
        "{counted} ticks during a {elapsed:?} apply (want {want})"
    );
    for major in [3, 4] {
        let Some(h) = helm_history(&tb.kubeconfig, major, &ns, "op") else {
            return;
        };
        assert!(h.contains("deployed"), "helm{major} history:\n{h}");
        assert!(h.contains("Install complete"), "helm{major} history:\n{h}");
    }
}

fn opts(kubeconfig: &Path) -> KubeOptions {
    KubeOptions {
        kubeconfig: Some(kubeconfig.display().to_string()),
        context: None,
    }
}

fn cluster_url(kubeconfig: &Path) -> String {
    rudder::cluster::kube::url_for(&opts(kubeconfig))
}

/// Created, used and dropped on plain threads, async tasks and
/// blocking-pool threads, in every combination that a program meets: no
/// panic, and every call answers.
#[test]
fn kube_client_is_created_used_and_dropped_anywhere() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let kc: PathBuf = tb.kubeconfig.clone();

    // 1. Connected and used on a plain thread, dropped on an async task.
    let plain = KubeCluster::connect(&opts(&kc)).unwrap();
    plain.identity().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        tokio::spawn(async move { drop(plain) }).await.unwrap();
    });

    // 2. Connected inside an async fn (on the runtime's only thread), used
    //    from spawn_blocking, dropped on the runtime thread.
    rt.block_on(async {
        let c = Arc::new(KubeCluster::connect(&opts(&kc)).unwrap());
        let c2 = c.clone();
        let id = tokio::task::spawn_blocking(move || c2.identity().map_err(|e| e.to_string()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(id.kind, "kube");
        drop(c);
    });

    // 3. Connected on the caller's multi-thread runtime, used from a plain
    //    thread, dropped on a task.
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let c = mt
        .block_on(KubeCluster::connect_on(&opts(&kc), mt.handle().clone()))
        .unwrap();
    let c = std::thread::spawn(move || {
        c.api_resources().unwrap();
        c
    })
    .join()
    .unwrap();
    mt.block_on(async move { tokio::spawn(async move { drop(c) }).await.unwrap() });

    // 4. The blocking client on a current-thread runtime's only thread.
    let url = cluster_url(&kc);
    rt.block_on(async {
        let b = rudder::blocking::Client::builder()
            .cluster(url.clone())
            .build()
            .unwrap();
        assert!(b.list(Some("kube-system")).unwrap().is_empty());
        drop(b);
    });

    // 5. The async client from a kubeconfig URL, dropped on a task of a
    //    multi-thread runtime, and one dropped outside any runtime.
    let a = mt.block_on(async {
        let a = rudder::Client::builder()
            .cluster(url.clone())
            .build()
            .await
            .unwrap();
        a.list(None).await.unwrap();
        let b = a.clone();
        tokio::spawn(async move { drop(b) }).await.unwrap();
        a
    });
    drop(mt);
    // Its runtime is gone: a call fails cleanly instead of hanging or
    // panicking.
    let rt2 = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt2.block_on(a.list(None));
    assert!(r.is_err(), "a call on a shut-down runtime answered {r:?}");
    drop(a);
}

/// `examples/operator.rs` against the bed, as `cargo run --example
/// operator` would run it: four rounds, an install, a noop, an upgrade, a
/// noop; Helm reads both revisions.
#[test]
fn operator_example_runs_on_the_test_bed() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let ns = new_namespace("facade-example");
    let bin = common::built_example("operator", &["kube"]);
    let out = Command::new(bin)
        .args([ns.as_str(), "4"])
        .env("KUBECONFIG", &tb.kubeconfig)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = [
        "round 0: installed (revision 1)",
        "round 1: up to date",
        "round 2: upgraded (revision 2)",
        "round 3: up to date",
        "revisions: 2",
    ];
    assert_eq!(stdout.lines().collect::<Vec<_>>(), want, "{stdout}");
    if let Some(h) = helm_history(&tb.kubeconfig, 3, &ns, "hello") {
        assert!(h.contains("superseded") && h.contains("deployed"), "{h}");
    }
}
