//! `rudder cluster ...` against the simulated cluster, through the binary.
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn rudder(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
    cmd.current_dir(dir).args(args);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rudder");
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = rudder(dir, args, None);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(dir, args)).unwrap()
}

const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: x
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
---
# an empty document
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  versions: [{name: v1, served: true, storage: true}]
"#;

#[test]
fn apply_get_list_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(
        d.join("ns.json"),
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}"#,
    )
    .unwrap();
    std::fs::write(d.join("objs.yaml"), OBJECTS).unwrap();
    // Nothing is created by reads.
    let list = json(d, &["cluster", "list", "ns", "-o", "json"]);
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    assert!(!d.join(".rudder").exists());

    assert_eq!(
        ok(d, &["cluster", "apply", "-f", "ns.json"]),
        "namespace/team serverside-applied\n"
    );
    assert_eq!(
        ok(d, &["cluster", "apply", "-f", "objs.yaml"]),
        "configmap/x serverside-applied\ndeployment.apps/web serverside-applied\n\
         customresourcedefinition.apiextensions.k8s.io/widgets.example.com serverside-applied\n"
    );
    assert!(d.join(".rudder/cluster/state.json").exists());
    let cm = json(d, &["cluster", "get", "cm", "x", "-o", "json"]);
    assert_eq!(cm["data"]["a"], "1");
    assert_eq!(cm["metadata"]["namespace"], "default");
    assert_eq!(cm["metadata"]["managedFields"][0]["manager"], "kubectl");
    for spelling in ["configmap", "configmaps", "cm", "ConfigMap", "CONFIGMAPS"] {
        let o = json(d, &["cluster", "get", spelling, "x", "-o", "json"]);
        assert_eq!(o["metadata"]["uid"], cm["metadata"]["uid"], "{spelling}");
    }
    for spelling in ["deployment", "deploy", "deployments.apps", "Deployment"] {
        let o = json(
            d,
            &[
                "cluster", "get", spelling, "web", "-n", "team", "-o", "json",
            ],
        );
        assert_eq!(o["spec"]["replicas"], 2, "{spelling}");
        assert_eq!(o["metadata"]["generation"], 1);
    }
    let yaml = ok(
        d,
        &[
            "cluster", "get", "deploy", "web", "-n", "team", "-o", "yaml",
        ],
    );
    assert!(yaml.contains("kind: Deployment"), "{yaml}");
    let table = ok(d, &["cluster", "get", "deploy", "web", "-n", "team"]);
    assert!(table.starts_with("NAME   AGE\nweb    "), "{table}");

    // A custom resource of the CRD's kind, from stdin, by its short name.
    let w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n";
    let o = rudder(d, &["cluster", "apply", "-f", "-", "-n", "team"], Some(w));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "widget.example.com/w1 serverside-applied\n"
    );
    let got = json(
        d,
        &["cluster", "get", "wd", "w1", "-n", "team", "-o", "json"],
    );
    assert_eq!(got["spec"]["size"], 3);
    assert!(got["spec"]["size"].is_i64());

    // Listing: one kind across namespaces; everything.
    let all = json(d, &["cluster", "list", "-A", "-o", "json"]);
    assert_eq!(all["kind"], "List");
    assert_eq!(all["apiVersion"], "v1");
    assert_eq!(all["metadata"]["resourceVersion"], "");
    let kinds: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    for k in [
        "Namespace",
        "ConfigMap",
        "CustomResourceDefinition",
        "Deployment",
        "Widget",
    ] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    let deploys = json(d, &["cluster", "list", "deploy", "-A", "-o", "json"]);
    assert_eq!(deploys["items"].as_array().unwrap().len(), 1);
    let in_default = json(d, &["cluster", "list", "deploy", "-o", "json"]);
    assert_eq!(in_default["items"].as_array().unwrap().len(), 0);

    // NotFound: kubectl's wording and exit code.
    let o = rudder(d, &["cluster", "get", "deploy", "nope", "-n", "team"], None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        r#"Error from server (NotFound): deployments.apps "nope" not found"#
    );
    let o = rudder(d, &["cluster", "get", "cm", "nope"], None);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        r#"Error from server (NotFound): configmaps "nope" not found"#
    );
    let o = rudder(d, &["cluster", "get", "gizmo", "x"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(r#"doesn't have a resource type "gizmo""#));

    // Delete.
    assert_eq!(
        ok(d, &["cluster", "delete", "cm", "x"]),
        "configmap \"x\" deleted\n"
    );
    let o = rudder(d, &["cluster", "delete", "configmap", "x"], None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        r#"Error from server (NotFound): configmaps "x" not found"#
    );
    assert_eq!(
        ok(
            d,
            &["cluster", "delete", "deployments.apps", "web", "-n", "team"]
        ),
        "deployment.apps \"web\" deleted\n"
    );
    // Deleting the CRD takes its objects along.
    ok(d, &["cluster", "delete", "crd", "widgets.example.com"]);
    let o = rudder(d, &["cluster", "get", "widgets", "w1", "-n", "team"], None);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn apply_conflicts_and_force() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata: {{k: {v:?}}}\n")
    };
    let o = rudder(
        d,
        &["cluster", "apply", "-f", "-", "--field-manager", "alice"],
        Some(&cm("1")),
    );
    assert!(o.status.success());
    let o = rudder(d, &["cluster", "apply", "-f", "-"], Some(&cm("2")));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Conflict") && err.contains("alice") && err.contains(".data.k"),
        "{err}"
    );
    let o = rudder(
        d,
        &["cluster", "apply", "-f", "-", "--force-conflicts"],
        Some(&cm("2")),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = json(d, &["cluster", "get", "cm", "c", "-o", "json"]);
    assert_eq!(got["data"]["k"], "2");
    // A custom --cluster directory.
    let o = rudder(
        d,
        &["cluster", "--cluster", "sim:elsewhere", "apply", "-f", "-"],
        Some(&cm("3")),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.join("elsewhere/state.json").exists());
    let o = rudder(
        d,
        &["cluster", "apply", "-f", "-", "-n", "nope"],
        Some(&cm("3")),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NotFound"));
}
