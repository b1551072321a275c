//! Plans across dependent releases: release `b` holds custom resources of
//! kinds whose CRDs release `a`, which `b` needs, installs (and later
//! upgrades with a new version and field) in the same plan (helmfile#2238,
//! helm-diff#804). The same story runs on the simulated cluster and on the
//! test bed, from namespaces that do not exist:
//!
//! - the plan succeeds: `b`'s custom resources are creates planned against
//!   `a`'s CRDs (`plannedCrd`), a cluster-scoped kind has no namespace;
//! - a custom resource that breaks the CRD's schema blocks `b` in the plan,
//!   with the server's words, and `apply` refuses it;
//! - `apply` installs both; then `a` adds version v2 with a new field and
//!   `b` moves its resource to it: planned as an update against the
//!   upgraded CRD (the server could not dry-run it), applied, and a replan
//!   is a noop.
mod common;
mod testbed_common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Where the story runs.
enum Target<'a> {
    /// The simulated cluster in the work directory (`sim:.rudder/cluster`).
    Sim,
    /// The test bed.
    Kube(&'a testbed_common::Testbed),
}

struct World<'a> {
    target: Target<'a>,
    dir: tempfile::TempDir,
    /// A group of its own per run: CRDs are cluster-wide and outlive namespaces.
    group: String,
    ns_a: String,
    ns_b: String,
}

impl World<'_> {
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
        if let Target::Kube(tb) = &self.target {
            cmd.arg("--kubeconfig").arg(&tb.kubeconfig);
        }
        let o = cmd
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("HELM_DRIVER")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "rudder {args:?}:\n{out}\n{err}");
        out
    }

    fn plan(&self, file: &str) -> Value {
        serde_json::from_str(&self.ok(&["plan", file, "-o", "json"])).unwrap()
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn write(&self, p: &str, text: &str) {
        let p = self.path(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A live custom resource, `None` when absent.
    fn live(&self, kind: &str, plural: &str, ns: &str, name: &str) -> Option<Value> {
        match &self.target {
            Target::Sim => {
                let url = format!("sim:{}", self.path(".rudder/cluster").display());
                let c = rudder::cluster::open(&url).unwrap();
                c.get(&rudder::cluster::ObjectKey::new(
                    &self.group,
                    kind,
                    ns,
                    name,
                ))
                .unwrap()
            }
            Target::Kube(tb) => {
                let mut args = vec!["get", plural, name, "-o", "json"];
                let resource = format!("{plural}.{}", self.group);
                args[1] = &resource;
                if !ns.is_empty() {
                    args.extend(["-n", ns]);
                }
                let o = tb.kubectl().args(&args).output().unwrap();
                o.status
                    .success()
                    .then(|| serde_json::from_slice(&o.stdout).unwrap())
            }
        }
    }
}

fn crd(group: &str, kind: &str, plural: &str, scope: &str, versions: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n  scope: {scope}\n  names: {{plural: {plural}, singular: {}, kind: {kind}}}\n  versions:\n{versions}",
        kind.to_lowercase()
    )
}

/// A version entry of the Widget CRD; `color` adds that field.
fn widget_version(name: &str, storage: bool, color: bool) -> String {
    format!(
        "  - name: {name}\n    served: true\n    storage: {storage}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            required: [size]\n            properties:\n              size: {{type: integer, minimum: 1}}\n              mode: {{type: string, enum: [fast, slow]}}\n{}",
        if color {
            "              color: {type: string}\n"
        } else {
            ""
        }
    )
}

fn chart(w: &World, name: &str, files: &[(&str, String)]) {
    w.write(
        &format!("{name}/Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    );
    for (f, text) in files {
        w.write(&format!("{name}/{f}"), text);
    }
}

/// Release `a` (the CRDs: Widget among its templates, Gadget, cluster-scoped,
/// in its crds/) and release `b`, which needs `a`, with `widget` as its
/// Widget's spec, into file `file`.
fn releases(w: &World, file: &str, b_chart: &str, widget: &str, widget_version: &str) {
    releases_with(w, file, b_chart, widget, widget_version, true)
}

fn releases_with(
    w: &World,
    file: &str,
    b_chart: &str,
    widget: &str,
    widget_version: &str,
    needs: bool,
) {
    chart(
        w,
        b_chart,
        &[
            (
                "templates/widget.yaml",
                format!(
                    "apiVersion: {}/{widget_version}\nkind: Widget\nmetadata:\n  name: w1\nspec:\n{widget}",
                    w.group
                ),
            ),
            (
                "templates/gadget.yaml",
                format!(
                    "apiVersion: {}/v1\nkind: Gadget\nmetadata:\n  name: {}-g1\nspec:\n  enabled: true\n",
                    w.group, w.ns_b
                ),
            ),
        ],
    );
    w.write(
        file,
        &format!(
            "releases:\n- name: a\n  namespace: {}\n  chart: a\n  atomic: false\n  wait: false\n- name: b\n  namespace: {}\n  chart: {b_chart}\n{}",
            w.ns_a,
            w.ns_b,
            if needs {
                format!(
                    "  needs:\n  - release: {}/a\n    reason: its custom resources need a's CRDs\n",
                    w.ns_a
                )
            } else {
                String::new()
            }
        ),
    );
}

fn release<'p>(plan: &'p Value, name: &str) -> &'p Value {
    plan["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no release {name} in {plan:#}"))
}

fn object<'p>(rel: &'p Value, kind: &str) -> &'p Value {
    rel["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {rel:#}"))
}

/// A plan's releases and objects, one line each, for failure messages.
fn summary(plan: &Value) -> String {
    let mut out = String::new();
    for r in plan["releases"].as_array().unwrap() {
        out += &format!("{} {}: {}\n", r["name"], r["action"], r["reason"]);
        for o in r["objects"].as_array().unwrap() {
            out += &format!(
                "  {} {}/{}: {} {}\n",
                o["action"], o["key"]["kind"], o["key"]["name"], o["reason"], o["changed"]
            );
        }
    }
    out
}

/// The CRD `name` in a release's plan.
fn crd_object<'p>(rel: &'p Value, name: &str) -> &'p Value {
    rel["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"]["kind"] == "CustomResourceDefinition" && o["key"]["name"] == name)
        .unwrap_or_else(|| panic!("no CRD {name} in {rel:#}"))
}

fn story(target: Target<'_>, ns_a: String, ns_b: String) {
    let pid = std::process::id();
    let w = World {
        target,
        dir: tempfile::tempdir().unwrap(),
        group: format!("x{pid}.{}.rudder.example", ns_b.replace('-', "")),
        ns_a,
        ns_b,
    };
    let g = w.group.clone();
    chart(
        &w,
        "a",
        &[
            (
                "templates/widget-crd.yaml",
                crd(&g, "Widget", "widgets", "Namespaced", &widget_version("v1", true, false)),
            ),
            (
                "crds/gadget.yaml",
                crd(
                    &g,
                    "Gadget",
                    "gadgets",
                    "Cluster",
                    "  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n",
                ),
            ),
        ],
    );

    // 1. The plan succeeds: b's resources are creates against a's CRDs.
    releases(&w, "good.yaml", "b", "  size: 3\n  mode: fast\n", "v1");
    let plan = w.plan("good.yaml");
    let b = release(&plan, "b");
    assert_eq!(b["action"], "install");
    assert!(b.get("blocked").is_none(), "{b:#}");
    let widget = object(b, "Widget");
    assert_eq!(widget["action"], "create", "{widget:#}");
    assert_eq!(widget["key"]["namespace"], w.ns_b.as_str());
    let p = &widget["plannedCrd"];
    assert_eq!(p["name"], format!("widgets.{g}"));
    assert_eq!(p["release"]["name"], "a");
    assert_eq!(p["release"]["namespace"], w.ns_a.as_str());
    assert_eq!(p["action"], "create");
    assert_eq!(p["version"], "v1");
    assert_eq!(p["schemaChecked"], true);
    assert!(p.get("violations").is_none(), "{p:#}");
    let reason = widget["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("which release {}/a creates first", w.ns_a)),
        "{reason}"
    );
    // The cluster-scoped kind of a's crds/ has no namespace.
    let gadget = object(b, "Gadget");
    assert_eq!(gadget["action"], "create");
    assert_eq!(gadget["key"]["namespace"], "");
    assert_eq!(gadget["plannedCrd"]["name"], format!("gadgets.{g}"));
    // a creates both CRDs: the one of its crds/ in stage crds. a does not
    // wait, so its plan has no wait rule for the CRD of its templates: the
    // executor waits for it to be Established anyway, before b starts.
    let a = release(&plan, "a");
    let wcrd = crd_object(a, &format!("widgets.{g}"));
    assert_eq!(wcrd["action"], "create");
    assert!(wcrd.get("wait").is_none(), "{wcrd:#}");
    let gcrd = crd_object(a, &format!("gadgets.{g}"));
    assert_eq!(
        (&gcrd["action"], &gcrd["stage"]),
        (&"create".into(), &"crds".into())
    );

    // Without the need, b's resources are not planned against a's CRDs
    // (a is not applied first, and may run at the same time): b is warned.
    releases_with(&w, "unordered.yaml", "b", "  size: 3\n", "v1", false);
    let plan = w.plan("unordered.yaml");
    let b = release(&plan, "b");
    assert!(object(b, "Widget").get("plannedCrd").is_none());
    let warnings: Vec<&str> = b["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[1].starts_with(&format!(
            "Widget.{g} w1: its kind comes from CRD widgets.{g}, which release {}/a applies, but this release does not need {}/a",
            w.ns_a, w.ns_a
        )),
        "{warnings:?}"
    );
    assert!(
        warnings[0].starts_with(&format!("Gadget.{g} ")),
        "{warnings:?}"
    );

    // 2. A schema violation is in the plan, and blocks b.
    releases(
        &w,
        "bad.yaml",
        "bbad",
        "  size: three\n  mode: medium\n  color: red\n",
        "v1",
    );
    let (ok, out, err) = w.run(&["plan", "bad.yaml", "-o", "json"]);
    assert!(
        !ok,
        "a plan with a schema violation must fail:\n{out}\n{err}"
    );
    let bad: Value = serde_json::from_str(&out).unwrap();
    let bb = release(&bad, "b");
    let bw = object(bb, "Widget");
    assert_eq!(bw["action"], "skip", "{bw:#}");
    let violations: Vec<&str> = bw["plannedCrd"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        violations,
        [
            ".spec.color: field not declared in schema",
            r#"spec.mode: Unsupported value: "medium": supported values: "fast", "slow""#,
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "three""#,
        ]
    );
    let blocked = bb["blocked"].as_str().unwrap();
    assert!(
        blocked.contains(&format!(
            "Widget.{g} \"w1\" in namespace {:?} is invalid",
            w.ns_b
        )),
        "{blocked}"
    );
    assert!(
        err.contains("spec.size in body must be of type integer"),
        "{err}"
    );
    // The valid release a is not blocked by b's violation, but nothing is applied.
    assert!(release(&bad, "a").get("blocked").is_none());
    let (ok, _, err) = w.run(&["apply", "bad.yaml"]);
    assert!(!ok, "apply of a blocked plan must fail");
    assert!(err.contains("is invalid"), "{err}");
    assert!(w.live("Widget", "widgets", &w.ns_b, "w1").is_none());

    // 3. Apply installs both; the server took the resources.
    w.ok(&["apply", "good.yaml"]);
    let live = w
        .live("Widget", "widgets", &w.ns_b, "w1")
        .expect("Widget w1");
    assert_eq!(live["spec"]["size"], 3);
    let gname = format!("{}-g1", w.ns_b);
    let live = w.live("Gadget", "gadgets", "", &gname).expect("Gadget");
    assert_eq!(live["spec"]["enabled"], true);
    let again = w.plan("good.yaml");
    for r in ["a", "b"] {
        assert_eq!(release(&again, r)["action"], "noop", "{}", summary(&again));
    }

    // 4. a adds version v2 with a new field; b moves its Widget to v2 and
    // sets the field. The server serves neither yet: planned as an update
    // against the upgraded CRD, not dry-run.
    chart(
        &w,
        "a",
        &[(
            "templates/widget-crd.yaml",
            crd(
                &g,
                "Widget",
                "widgets",
                "Namespaced",
                &format!(
                    "{}{}",
                    // Both versions get the field: with conversion None,
                    // the server converts to the version of the last apply.
                    widget_version("v1", false, true),
                    widget_version("v2", true, true)
                ),
            ),
        )],
    );
    releases(
        &w,
        "good.yaml",
        "b",
        "  size: 4\n  mode: slow\n  color: red\n",
        "v2",
    );
    let plan = w.plan("good.yaml");
    let a = release(&plan, "a");
    assert_eq!(crd_object(a, &format!("widgets.{g}"))["action"], "update");
    assert_eq!(crd_object(a, &format!("gadgets.{g}"))["action"], "skip");
    let b = release(&plan, "b");
    let widget = object(b, "Widget");
    assert_eq!(widget["action"], "update", "{widget:#}");
    assert_eq!(widget["plannedCrd"]["action"], "update");
    assert_eq!(widget["plannedCrd"]["version"], "v2");
    assert!(widget["plannedCrd"].get("violations").is_none());
    // The Gadget's CRD (crds/) exists and is never updated: the server
    // answers for it as for any object.
    let gadget = object(b, "Gadget");
    assert_eq!(gadget["action"], "unchanged", "{gadget:#}");
    assert!(gadget.get("plannedCrd").is_none());
    let out = w.ok(&["apply", "good.yaml", "-o", "json"]);
    let live = w
        .live("Widget", "widgets", &w.ns_b, "w1")
        .expect("Widget w1");
    assert_eq!(live["spec"]["color"], "red");
    assert!(w.live("Gadget", "gadgets", "", &gname).is_some(), "{out}");
    assert_eq!(live["spec"]["size"], 4);
    let again = w.plan("good.yaml");
    for r in ["a", "b"] {
        assert_eq!(release(&again, r)["action"], "noop", "{}", summary(&again));
    }

    if let Target::Kube(tb) = &w.target {
        for r in [("b", &w.ns_b), ("a", &w.ns_a)] {
            w.ok(&["uninstall", r.0, "-n", r.1, "--wait"]);
        }
        // The uninstall deleted the CRD of a's templates; crds/ are kept.
        tb.kubectl_ok(&["delete", "crd", &format!("gadgets.{g}"), "--wait=false"]);
        for ns in [&w.ns_a, &w.ns_b] {
            tb.kubectl_ok(&["delete", "namespace", ns, "--wait=false"]);
        }
    }
}

#[test]
fn crds_across_releases_on_the_simulated_cluster() {
    story(Target::Sim, "crd-a".into(), "crd-b".into());
}

#[test]
fn crds_across_releases_on_the_test_bed() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let ns_a = tb.fresh_namespace("crda");
    let ns_b = tb.fresh_namespace("crdb");
    story(Target::Kube(tb), ns_a, ns_b);
}
