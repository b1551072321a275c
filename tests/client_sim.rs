//! The facade as a user meets it: `rudder::Client` (async) and
//! `rudder::blocking::Client` on the simulated cluster, from current-thread
//! and multi-thread runtimes and from plain code, through documented names
//! only.
use rudder::plan::DesiredRelease;
use rudder::release::Status;
use rudder::{Chart, Error};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A chart of one ConfigMap and one Deployment; the Deployment carries
/// `annotations` (the simulated cluster's readiness knobs) and reads
/// `.Values.replicas`.
fn chart(annotations: &str) -> Chart {
    let mut files = BTreeMap::new();
    files.insert(
        "cm.yaml".to_string(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n"
            .to_string(),
    );
    files.insert(
        "deploy.yaml".to_string(),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations: {annotations}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n"
        ),
    );
    rudder::chart::chart_from_manifests("web", "apps", &files).expect("chart")
}

fn targets(dir: &std::path::Path) -> (String, String) {
    (
        format!("file:{}", dir.join("store").display()),
        format!("sim:{}", dir.join("cluster").display()),
    )
}

fn release(annotations: &str) -> DesiredRelease {
    let mut d = DesiredRelease::new("web", "apps", chart(annotations));
    d.options.timeout = Duration::from_secs(10);
    d
}

/// A ticker task keeps ticking through a 2 s readiness wait on a
/// current-thread runtime: the wait does not hold the runtime's only
/// thread.
#[test]
fn current_thread_runtime_keeps_running_during_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cluster) = targets(dir.path());
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
        let client = rudder::Client::builder()
            .store(store)
            .cluster(cluster)
            .build()
            .await
            .unwrap();
        let start = Instant::now();
        let before = ticks.load(Ordering::SeqCst);
        let plan = client
            .plan(&[release("{sim.rudder.io/ready-after: 2s}")])
            .await
            .unwrap();
        client.apply(&plan).await.unwrap();
        let elapsed = start.elapsed();
        let counted = ticks.load(Ordering::SeqCst) - before;
        ticker.abort();
        let history = client.history("apps", "web").await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].info.status, Status::Deployed);
        (elapsed, counted)
    });
    assert!(
        elapsed >= Duration::from_secs(2),
        "the wait took {elapsed:?}"
    );
    assert!(
        counted >= 10,
        "the ticker ticked {counted} times during a {elapsed:?} apply"
    );
}

/// The whole lifecycle through the async client on a multi-thread runtime,
/// with progress events and Helm's actions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_lifecycle_with_progress() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cluster) = targets(dir.path());
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let client = rudder::Client::builder()
        .store(store.clone())
        .cluster(cluster)
        .on_progress(move |e| seen.lock().unwrap().push(e.clone()))
        .build()
        .await
        .unwrap();
    assert_eq!(client.store_url(), store);

    // install, then an install of the same name is refused.
    let rel = client.install(release("{}")).await.unwrap();
    assert_eq!((rel.version, rel.info.status), (1, Status::Deployed));
    match client.install(release("{}")).await {
        Err(Error::NameInUse { release, status }) => {
            assert_eq!(release, "apps/web");
            assert_eq!(status, Status::Deployed);
        }
        other => panic!("want NameInUse, got {other:?}"),
    }
    assert!(!events.lock().unwrap().is_empty(), "no progress events");

    // A plan of the unchanged release is a noop and writes nothing.
    let plan = client.plan(&[release("{}")]).await.unwrap();
    assert!(plan
        .releases
        .iter()
        .all(|r| r.action == rudder::plan::ReleaseAction::Noop));
    client.apply(&plan).await.unwrap();
    assert_eq!(client.history("apps", "web").await.unwrap().len(), 1);

    // Values reach the record; upgrade writes revision 2.
    let mut d = release("{}");
    d.values
        .insert("replicas".into(), rudder::yaml::Node::Int(3));
    let rel = client.upgrade(d).await.unwrap();
    assert_eq!(rel.version, 2);
    let vals = client.get_values("apps", "web", false).await.unwrap();
    assert_eq!(vals.get("replicas"), Some(&rudder::yaml::Node::Int(3)));

    // rollback to 1 writes revision 3; status and list see it.
    let rel = client
        .rollback("apps", "web", Some(1), Default::default())
        .await
        .unwrap();
    assert_eq!(rel.version, 3);
    assert_eq!(client.status("apps", "web").await.unwrap().version, 3);
    let list = client.list(Some("apps")).await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].version, 3);

    client.uninstall("apps", "web", true).await.unwrap();
    let last = client.status("apps", "web").await.unwrap();
    assert_eq!(last.info.status, Status::Uninstalled);
    // Upgrading what is not installed is a typed error.
    match client.upgrade(release("{}")).await {
        Err(Error::NotDeployed { release }) => assert_eq!(release, "apps/web"),
        other => panic!("want NotDeployed, got {other:?}"),
    }
    // ... and upgrade_or_install installs it again.
    let rel = client.upgrade_or_install(release("{}")).await.unwrap();
    assert_eq!(rel.info.status, Status::Deployed);
}

/// A release that never becomes ready: the atomic apply rolls it back and
/// the error carries the report; `history` shows Helm's words.
#[tokio::test]
async fn failed_release_is_a_typed_error_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cluster) = targets(dir.path());
    let client = rudder::Client::builder()
        .store(store)
        .cluster(cluster)
        .build()
        .await
        .unwrap();
    client.install(release("{}")).await.unwrap();
    let mut d = release("{sim.rudder.io/ready: never}");
    d.options.timeout = Duration::from_secs(1);
    let plan = client.plan(&[d]).await.unwrap();
    let err = client.apply(&plan).await.unwrap_err();
    match &err {
        Error::Failed {
            release, report, ..
        } => {
            assert_eq!(release, "apps/web");
            let report = report.as_ref().expect("a report");
            assert!(!report.success());
        }
        other => panic!("want Failed, got {other:?}"),
    }
    assert!(err.report().is_some());
    assert!(err.cluster_error().is_none());
    let h = client.history("apps", "web").await.unwrap();
    let statuses: Vec<Status> = h.iter().map(|r| r.info.status).collect();
    assert_eq!(
        statuses,
        [Status::Superseded, Status::Failed, Status::Deployed]
    );
    assert_eq!(h[2].info.description, "Rollback to 1");
}

/// The blocking client from plain code, and from inside a runtime (on a
/// current-thread runtime's only thread): it works and never panics.
#[test]
fn blocking_client_works_outside_and_inside_a_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cluster) = targets(dir.path());
    let client = rudder::blocking::Client::builder()
        .store(store.clone())
        .cluster(cluster.clone())
        .build()
        .unwrap();
    let plan = client.plan(&[release("{}")]).unwrap();
    client.apply(&plan).unwrap();
    assert_eq!(client.history("apps", "web").unwrap().len(), 1);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let inner = rudder::blocking::Client::builder()
            .store(store)
            .cluster(cluster)
            .build()
            .unwrap();
        let mut d = release("{}");
        d.values
            .insert("replicas".into(), rudder::yaml::Node::Int(2));
        let rel = inner.upgrade(d).unwrap();
        assert_eq!(rel.version, 2);
        // Dropped inside the runtime, and the outer one outside it.
        drop(inner);
    });
    assert_eq!(client.status("apps", "web").unwrap().version, 2);
}

/// Errors cross threads and reach the specific error underneath.
#[tokio::test]
async fn errors_are_send_sync_and_specific() {
    fn send_sync<T: Send + Sync + 'static>(_: &T) {}
    let err = rudder::Client::builder()
        .store("file:/tmp/x")
        .cluster("nosuch:cluster")
        .build()
        .await
        .unwrap_err();
    send_sync(&err);
    assert!(
        matches!(
            err.cluster_error(),
            Some(rudder::cluster::ClusterError::Setup(_))
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "invalid cluster \"nosuch:cluster\": want sim:DIR or kube"
    );
}
