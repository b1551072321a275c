//! The upgrader's library: charts of every component (single-controller and
//! HA), the order and its reasons, bad input, helm lint/template of every
//! chart, and runs on the simulated cluster.
mod common;

// The binary's demo, for its config writer and targets.
#[allow(dead_code)]
#[path = "../src/bin/rudder-upgrader/demo.rs"]
mod demo;

use rudder::chart::snapshot::snapshot_text;
use rudder::chart::{chart_from_component, Component};
use rudder::upgrader::config::{ClusterConfigError, Loaded};
use rudder::upgrader::control_plane::Kind;
use rudder::upgrader::{self, Options, UpgraderError};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A config in `dir`: the demo's, with `controllers` and edits.
fn config(dir: &Path, name: &str, controllers: u32, edit: &[(&str, &str)]) -> Loaded {
    let p = demo::write_config(dir, name, "v1.21.4", false).expect("writes");
    let mut t = std::fs::read_to_string(&p).unwrap();
    t = t.replace("controllers: 1\n", &format!("controllers: {controllers}\n"));
    for (a, b) in edit {
        assert!(t.contains(a), "{a}");
        t = t.replace(a, b);
    }
    std::fs::write(&p, t).unwrap();
    Loaded::from_file(&p).expect("valid config")
}

fn kubelets() -> Options {
    Options {
        upgrade_kubelets: true,
        ..Options::default()
    }
}

#[test]
fn charts_single_controller() {
    let d = tempfile::tempdir().unwrap();
    let l = config(d.path(), "single", 1, &[]);
    for r in upgrader::desired_releases(&l, &kubelets()).unwrap() {
        insta::assert_snapshot!(format!("single_{}", r.name), snapshot_text(&r.chart));
    }
}

#[test]
fn charts_ha() {
    let d = tempfile::tempdir().unwrap();
    let l = config(
        d.path(),
        "ha",
        3,
        &[("serviceCIDR: 10.3.0.0/16", "serviceCIDR: 10.96.0.0/16")],
    );
    for r in upgrader::desired_releases(&l, &kubelets()).unwrap() {
        insta::assert_snapshot!(format!("ha_{}", r.name), snapshot_text(&r.chart));
    }
}

fn objects_of(text: &str) -> Vec<Value> {
    let mut v: Vec<Value> = rudder::manifest::split::split_manifests(text)
        .into_iter()
        .filter_map(|doc| {
            let n = rudder::yaml::parse_yaml_to_json(doc).expect("parses");
            let v = serde_json::to_value(&n).unwrap();
            (!v.is_null()).then_some(v)
        })
        .collect();
    v.sort_by_key(|o| o.to_string());
    v
}

#[test]
fn single_controller_apiserver_is_a_surge_deployment_with_a_pdb() {
    let d = tempfile::tempdir().unwrap();
    let l = config(d.path(), "single", 1, &[]);
    let m = rudder::upgrader::control_plane::ControlPlaneComponent::new(&l, Kind::KubeApiserver)
        .render_manifests()
        .unwrap();
    let all: Vec<Value> = m.values().flat_map(|t| objects_of(t)).collect();
    let dep = all
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("a Deployment");
    assert_eq!(dep["spec"]["replicas"], 1);
    assert_eq!(
        dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
    let containers = dep["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert!(containers.iter().any(|c| c["name"] == "haproxy"));
    // No hostPort: the surge pod must fit beside the old one.
    assert!(containers.iter().all(|c| c.get("ports").is_none()));
    let args = containers[0]["command"].to_string();
    assert!(args.contains("--advertise-address=$(HOST_IP)"), "{args}");
    assert!(args.contains("/run/kube-apiserver/address"), "{args}");
    let pdb = all
        .iter()
        .find(|o| o["kind"] == "PodDisruptionBudget")
        .expect("a PDB");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(!all.iter().any(|o| o["kind"] == "DaemonSet"));

    let l = config(d.path(), "ha", 3, &[]);
    let m = rudder::upgrader::control_plane::ControlPlaneComponent::new(&l, Kind::KubeApiserver)
        .render_manifests()
        .unwrap();
    let all: Vec<Value> = m.values().flat_map(|t| objects_of(t)).collect();
    assert!(all.iter().any(|o| o["kind"] == "DaemonSet"));
    assert!(!all
        .iter()
        .any(|o| o["kind"] == "Deployment" || o["kind"] == "PodDisruptionBudget"));
}

#[test]
fn order_and_reasons() {
    let d = tempfile::tempdir().unwrap();
    let l = config(d.path(), "o", 1, &[]);
    let names = |o: &Options| -> Vec<(String, Vec<(String, String)>)> {
        upgrader::desired_releases(&l, o)
            .unwrap()
            .into_iter()
            .map(|r| {
                let needs = r
                    .needs
                    .iter()
                    .map(|n| (n.release.to_string(), n.reason.clone()))
                    .collect();
                (r.name, needs)
            })
            .collect()
    };
    let with = names(&kubelets());
    let order: Vec<&str> = with.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        order,
        [
            "bootstrap-secrets",
            "pod-checkpointer",
            "kube-apiserver",
            "kubernetes",
            "calico",
            "kubelet",
            "node-local-dns",
            "metrics-server"
        ]
    );
    assert!(with[0].1.is_empty());
    for w in with.windows(2) {
        assert_eq!(w[1].1.len(), 1, "{} has one need", w[1].0);
        assert_eq!(w[1].1[0].0, format!("kube-system/{}", w[0].0));
    }
    let reason = |i: usize| with[i].1[0].1.as_str();
    assert!(reason(1).contains("bootstrapping"), "{}", reason(1));
    assert!(reason(2).contains("pod-checkpointer") && reason(2).contains("API available"));
    assert!(reason(3).contains("version-skew") && reason(3).contains("kube-controller-manager"));
    assert!(reason(4).contains("kube-proxy"));
    assert!(reason(5).contains("version-skew") && reason(5).contains("kubelets"));
    assert!(reason(6).contains("pod networking"));
    assert!(reason(7).contains("pod networking"));

    let without: Vec<String> = names(&Options::default())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(!without.iter().any(|n| n == "kubelet"));
    assert_eq!(without[5], "node-local-dns");

    // The planner keeps that order, and shows each edge with its reason.
    let t = rudder::targets::Targets::with_cluster(
        "memory:",
        "sim:mem",
        std::sync::Arc::new(rudder::cluster::sim::SimCluster::in_memory()),
    )
    .unwrap();
    let plan =
        upgrader::plan_only(&t, &upgrader::desired_releases(&l, &kubelets()).unwrap()).unwrap();
    let planned: Vec<&str> = plan.releases.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(planned, order);
    assert_eq!(plan.release_edges.len(), 7);
    assert!(plan.release_edges.iter().all(|e| !e.reason.is_empty()));
}

#[test]
fn kubelets_need_a_self_hosted_kubelet() {
    let d = tempfile::tempdir().unwrap();
    let l = config(
        d.path(),
        "k",
        1,
        &[("selfHostedKubelet: true", "selfHostedKubelet: false")],
    );
    let e = upgrader::desired_releases(&l, &kubelets()).unwrap_err();
    assert!(matches!(e, UpgraderError::NoKubelet), "{e}");
}

#[test]
fn bad_input_is_reported_with_field_and_line() {
    let d = tempfile::tempdir().unwrap();
    let p = demo::write_config(d.path(), "bad", "v1.21.4", false).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let write = |t: &str| {
        std::fs::write(&p, t).unwrap();
        Loaded::from_file(&p).unwrap_err()
    };

    std::fs::remove_file(d.path().join("certs/apiserver.key")).unwrap();
    let e = Loaded::from_file(&p).unwrap_err();
    assert!(
        matches!(&e, ClusterConfigError::Certificate { field, .. } if field == "apiserverKey"),
        "{e}"
    );
    assert!(e.to_string().contains("certificates.apiserverKey"), "{e}");
    assert!(e.to_string().contains("apiserver.key"), "{e}");

    let e = write(&text.replace(
        "components: [node-local-dns, metrics-server]",
        "components: [node-local-dns, grafana]",
    ));
    let s = e.to_string();
    assert!(
        matches!(e, ClusterConfigError::Parse { line: 10, .. }),
        "{s}"
    );
    assert!(s.contains("grafana") && s.contains("metrics-server"), "{s}");

    let e = write(&text.replace("controllers: 1", "controllers: three"));
    let s = e.to_string();
    assert!(
        matches!(e, ClusterConfigError::Parse { line: 3, .. }),
        "{s}"
    );
    assert!(s.contains("controllers") && s.contains("invalid"), "{s}");

    let e = write(&text.replace(
        "networkPlugin: calico",
        "networkPlugin: calico\nnetworkMTU: 1500",
    ));
    assert!(e.to_string().contains("unknown field `networkMTU`"), "{e}");

    let e = write(&text.replace("serviceCIDR: 10.3.0.0/16", "serviceCIDR: 10.3.0.0"));
    assert!(e.to_string().contains("field serviceCIDR"), "{e}");

    let e = write(&format!("{text}podLabels:\n  grafana:\n    a: b\n"));
    assert!(e.to_string().contains("podLabels.grafana"), "{e}");
    let e = write(&format!("{text}podLabels:\n  calico:\n    a b: c\n"));
    assert!(e.to_string().contains("podLabels.calico"), "{e}");
    assert!(e.to_string().contains("not a valid label key"), "{e}");
    let e = write(&format!("{text}podLabels:\n  calico:\n    a: \"x y\"\n"));
    assert!(e.to_string().contains("podLabels.calico.a"), "{e}");
}

#[test]
fn pod_labels_go_on_every_pod_template_of_their_component() {
    let d = tempfile::tempdir().unwrap();
    let l = config(
        d.path(),
        "labels",
        1,
        &[(
            "components:",
            "podLabels:\n  kubernetes:\n    testbed.kwok.io/behavior: never-ready\ncomponents:",
        )],
    );
    for kind in [Kind::Kubernetes, Kind::Calico] {
        let m = rudder::upgrader::control_plane::ControlPlaneComponent::new(&l, kind)
            .render_manifests()
            .unwrap();
        let workloads: Vec<Value> = m
            .values()
            .flat_map(|t| objects_of(t))
            .filter(|o| o["spec"]["template"].is_object())
            .collect();
        assert!(!workloads.is_empty());
        for w in workloads {
            let label = &w["spec"]["template"]["metadata"]["labels"]["testbed.kwok.io/behavior"];
            if kind == Kind::Kubernetes {
                assert_eq!(label, "never-ready", "{}", w["metadata"]["name"]);
                // the selector still matches the template
                for (k, v) in w["spec"]["selector"]["matchLabels"].as_object().unwrap() {
                    assert_eq!(&w["spec"]["template"]["metadata"]["labels"][k], v);
                }
            } else {
                assert!(label.is_null(), "{}", w["metadata"]["name"]);
            }
        }
    }
}

#[test]
fn helm_lints_and_renders_every_chart_back() {
    let Some(helm) = common::helm(3) else { return };
    let d = tempfile::tempdir().unwrap();
    for (name, controllers) in [("single", 1), ("ha", 3)] {
        let l = config(d.path(), name, controllers, &[]);
        for c in upgrader::components(&l, &kubelets()).unwrap() {
            let chart = chart_from_component(&c).unwrap();
            let dir = d.path().join(format!("charts-{name}")).join(c.name());
            rudder::chart::save_dir(&chart, &dir).unwrap();
            let home = d.path().join("helm-home");
            let lint = common::helm_command(&helm, &home)
                .args(["lint", "--strict"])
                .arg(&dir)
                .output()
                .unwrap();
            assert!(
                lint.status.success(),
                "{name}/{}: helm lint --strict failed:\n{}{}",
                c.name(),
                String::from_utf8_lossy(&lint.stdout),
                String::from_utf8_lossy(&lint.stderr)
            );
            let out = common::helm_command(&helm, &home)
                .args([
                    "template",
                    c.name(),
                    "--namespace",
                    "kube-system",
                    "--include-crds",
                ])
                .arg(&dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let rendered = objects_of(&String::from_utf8_lossy(&out.stdout));
            let want: Vec<Value> = {
                let mut v: Vec<Value> = c
                    .render_manifests()
                    .unwrap()
                    .values()
                    .flat_map(|t| objects_of(t))
                    .collect();
                v.sort_by_key(|o| o.to_string());
                v
            };
            assert_eq!(rendered.len(), want.len(), "{name}/{}", c.name());
            assert!(
                rendered == want,
                "{name}/{}: helm template differs from the component's manifests",
                c.name()
            );
        }
    }
}

fn fast() -> demo::Timing {
    demo::Timing {
        ready_delay: Duration::from_millis(100),
        timeout: Duration::from_secs(2),
    }
}

fn run(t: &rudder::targets::Targets, l: &Loaded, o: &Options) -> (String, upgrader::RunResult) {
    let plan = upgrader::plan(t, &upgrader::desired_releases(l, o).unwrap()).unwrap();
    let mut out: Vec<u8> = Vec::new();
    let r = upgrader::apply(t, &plan, o, &mut out, None, false, "RETRY").unwrap();
    (String::from_utf8(out).unwrap(), r)
}

#[test]
fn install_then_noop_then_missing_component_is_reinstalled() {
    let d = tempfile::tempdir().unwrap();
    let t = demo::targets(d.path(), fast()).unwrap();
    let l = config(d.path(), "c", 1, &[]);
    let o = Options {
        timeout: fast().timeout,
        ..Options::default()
    };
    let (out, r) = run(&t, &l, &o);
    assert!(r.success(), "{out}");
    assert_eq!(
        out,
        "Ensuring that cluster controlplane is up to date.\n\
         Controlplane component 'bootstrap-secrets' is missing, reinstalling... Done.\n\
         Controlplane component 'pod-checkpointer' is missing, reinstalling... Done.\n\
         Controlplane component 'kube-apiserver' is missing, reinstalling... Done.\n\
         Controlplane component 'kubernetes' is missing, reinstalling... Done.\n\
         Controlplane component 'calico' is missing, reinstalling... Done.\n\
         Installing component 'node-local-dns'...\n\
         Successfully installed component 'node-local-dns'!\n\
         Installing component 'metrics-server'...\n\
         Successfully installed component 'metrics-server'!\n"
    );
    let (out, r) = run(&t, &l, &o);
    assert!(r.success());
    assert!(
        out.contains("Ensuring controlplane component 'kube-apiserver' is up to date... Done.\n"),
        "{out}"
    );
    assert!(out.contains("Applying component 'metrics-server'...\nSuccessfully applied component 'metrics-server' configuration!\n"), "{out}");
    assert!(r
        .report
        .releases
        .iter()
        .all(|o| o.outcome == rudder::exec::Outcome::Noop));

    // calico's release is lost: it is reinstalled, the rest stays.
    t.store.delete("kube-system", "calico", 1).unwrap();
    let (out, r) = run(&t, &l, &o);
    assert!(r.success(), "{out}");
    assert!(out.contains("Ensuring controlplane component 'kubernetes' is up to date... Done.\nControlplane component 'calico' is missing, reinstalling... Done.\n"), "{out}");
}

#[test]
fn a_never_ready_apiserver_is_rolled_back_and_the_rest_not_attempted() {
    let d = tempfile::tempdir().unwrap();
    let t = demo::targets(d.path(), fast()).unwrap();
    let o = Options {
        timeout: fast().timeout,
        upgrade_kubelets: true,
        ..Options::default()
    };
    let good = config(d.path(), "good", 3, &[]);
    let (_, r) = run(&t, &good, &o);
    assert!(r.success());
    let bad = config(
        d.path(),
        "bad",
        3,
        &[("components:", "apiserverExtraFlags: [--bad]\nworkloadAnnotations:\n  kube-apiserver:\n    sim.rudder.io/ready: never\ncomponents:")],
    );
    let (out, r) = run(&t, &bad, &o);
    assert!(!r.success());
    assert_eq!(r.failed.as_deref(), Some("kube-apiserver"));
    assert!(
        out.contains("Ensuring controlplane component 'kube-apiserver' is up to date... Failed!\n"),
        "{out}"
    );
    assert!(
        out.contains("Error: controlplane component 'kube-apiserver' failed."),
        "{out}"
    );
    assert!(
        out.contains("Not ready: DaemonSet kube-system/kube-apiserver"),
        "{out}"
    );
    assert!(
        out.contains("was rolled back to revision 1 (recorded as revision 3)"),
        "{out}"
    );
    assert!(out.contains("Components that stay upgraded: none.\nComponents already up to date: bootstrap-secrets, pod-checkpointer.\n"), "{out}");
    assert!(out.contains("Components not attempted: kubernetes, calico, kubelet, node-local-dns, metrics-server.\n"), "{out}");
    assert!(
        out.contains("To retry, fix the cause and run: RETRY\n"),
        "{out}"
    );
    assert!(!out.contains("kubernetes' is up to date"), "{out}");
}

#[test]
fn history_and_rollback() {
    let d = tempfile::tempdir().unwrap();
    let t = demo::targets(d.path(), fast()).unwrap();
    let o = Options {
        timeout: fast().timeout,
        ..Options::default()
    };
    let (_, r) = run(&t, &config(d.path(), "a", 1, &[]), &o);
    assert!(r.success());
    let (_, r) = run(
        &t,
        &config(
            d.path(),
            "b",
            1,
            &[("kubernetesVersion: v1.21.4", "kubernetesVersion: v1.22.2")],
        ),
        &o,
    );
    assert!(r.success());
    let (to, v) = upgrader::rollback(&t, "kube-apiserver", None, &o).unwrap();
    assert_eq!((to, v), (1, 3));
    let h = upgrader::history(&t, "kube-apiserver").unwrap();
    assert!(h.contains("Rollback to 1"), "{h}");
    assert!(matches!(
        upgrader::history(&t, "grafana"),
        Err(UpgraderError::UnknownComponent(_))
    ));
}
