//! Preflight warnings in plans: a node selector no node matches, a missing
//! StorageClass, ServiceAccount, Secret, ConfigMap and image pull secret,
//! as data in the plan's JSON, in the table and in the HTML page; what
//! another release of the plan creates does not count as missing.
mod plan_common;

use plan_common::*;
use regex::Regex;
use rudder::plan::{view, Plan};
use serde_json::{json, Value};

const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {node.kubernetes.io/controller: \"true\"}
      serviceAccountName: web
      imagePullSecrets: [{name: regcred}]
      volumes:
      - {name: tls, secret: {secretName: web-tls}}
      - {name: shared, secret: {secretName: shared-creds}}
      - {name: opt, secret: {secretName: maybe, optional: true}}
      - {name: conf, configMap: {name: web-conf}}
      containers:
      - name: web
        image: nginx:1.27
";
const DB: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: kubernetes.io/os, operator: In, values: [linux]}
      containers:
      - name: db
        image: postgres:17
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: fast-ssd
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
";
const SHARED: &str =
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shared-creds\nstringData:\n  a: b\n";

fn mask(plan: &Plan, text: &str) -> String {
    let mut s = text.replace(&plan.id, "[plan-id]");
    let short = plan.id.strip_prefix("sha256:").unwrap_or(&plan.id);
    s = s.replace(&short[..12], "[plan-id]");
    s = s.replace(&plan.cluster.id, "[cluster-id]");
    s = s.replace(
        &plan.cluster.id[..plan.cluster.id.len().min(12)],
        "[cluster-id]",
    );
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        .unwrap()
        .replace_all(&s, "[uuid]")
        .into_owned()
}

fn world() -> World {
    let w = World::new();
    for i in 0..3 {
        w.kubectl_apply(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{i}"), "labels": {"kubernetes.io/os": "linux"}}}));
    }
    // The namespace and its ConfigMap exist already; nothing else does.
    w.kubectl_apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}));
    w.kubectl_apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web-conf", "namespace": "apps"}, "data": {"a": "b"}}));
    w
}

fn releases() -> Vec<rudder::plan::DesiredRelease> {
    vec![
        desired(
            "secrets",
            "apps",
            chart("secrets", "1.0.0", &[("s.yaml", SHARED)]),
        ),
        desired("web", "apps", chart("web", "1.0.0", &[("web.yaml", WEB)])),
        desired("db", "apps", chart("db", "1.0.0", &[("db.yaml", DB)])),
    ]
}

#[test]
fn preflight_warnings_are_plan_data_and_shown() {
    let w = world();
    let plan = w.plan(&releases());
    let shown = plan.redact();
    let json: Value = serde_json::from_str(&view::json(&shown)).unwrap();
    let warnings: Value = json["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"release": r["name"], "preflight": r.get("preflight").cloned().unwrap_or(json!([]))}))
        .collect();
    insta::assert_snapshot!(
        "preflight_json",
        serde_json::to_string_pretty(&warnings).unwrap()
    );
    insta::assert_snapshot!("preflight_human", mask(&plan, &view::human(&shown, false)));
    let html = view::html(&shown);
    assert!(html.contains("preflight: Deployment apps/web: no node matches its node selector node.kubernetes.io/controller=true (3 node(s) in the cluster)"));
    // The warnings are part of what the plan's id covers.
    assert!(plan.verify_id());
    // A node that carries the label, and the objects, clear them.
    w.kubectl_apply(json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "controller", "labels": {"node.kubernetes.io/controller": "true"}}}));
    for (kind, name) in [
        ("ServiceAccount", "web"),
        ("Secret", "web-tls"),
        ("Secret", "regcred"),
    ] {
        w.kubectl_apply(json!({"apiVersion": "v1", "kind": kind,
            "metadata": {"name": name, "namespace": "apps"}}));
    }
    w.kubectl_apply(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "fast-ssd"}, "provisioner": "example.com/ssd"}),
    );
    let plan = w.plan(&releases());
    for r in &plan.releases {
        assert!(r.preflight.is_empty(), "{}: {:?}", r.name, r.preflight);
    }
}
