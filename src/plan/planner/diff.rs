//! The per-object comparison: which fields of a live object an apply of
//! the desired one changes ([`managed_diff`]), whether a live object is
//! provably as the last apply left it (the dry-run shortcut), and the
//! unified diff a plan shows, with Secret values redacted.
use super::FIELD_MANAGER;
use crate::cluster::ObjectKey;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The fields that differ between the live object and the dry-run result,
/// on the fields the release sets (`desired`) and those its last manifest
/// set that an apply would remove. Returns the JSON pointers and the live
/// object projected on those fields.
pub fn managed_diff(
    dry: &Value,
    desired: &Value,
    live: &Value,
    old_applied: Option<&Value>,
) -> (Vec<String>, Value) {
    let mut changed = Vec::new();
    let mut ptr = String::new();
    let projected = project(dry, desired, live, &mut ptr, &mut changed);
    let before = changed.len();
    removed_anywhere(dry, desired, live, old_applied, &mut changed);
    let mut projected = projected.unwrap_or(Value::Null);
    // Removed fields are outside the desired object's shape: show them
    // from the live object, so the diff has their `-` lines.
    for p in &changed[before..] {
        if let Some(v) = live.pointer(p) {
            insert_at(&mut projected, p, v.clone());
        }
    }
    (changed, projected)
}

/// Sets `value` at JSON pointer `ptr` inside `root`, creating the objects
/// on the way (pointers here only walk objects).
fn insert_at(root: &mut Value, ptr: &str, value: Value) {
    let mut cur = root;
    let segs: Vec<String> = ptr
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if i + 1 == segs.len() {
            m.insert(seg.clone(), value);
            return;
        }
        cur = m
            .entry(seg.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Whether the live object of a document the last successful apply set
/// from the same text provably equals what an apply of `desired` would
/// make it, on the fields the plan compares, without the server's dry run:
///
/// - rudder's server-side apply set it (a `rudder` `Apply` entry in its
///   managedFields);
/// - no other manager owns a field the desired object sets that rudder
///   does not own too (a `kubectl edit`, `patch`, `scale` or client-side
///   `apply`, and another manager's forced server-side apply, take the
///   fields they change from rudder, so a changed field has another owner
///   and not rudder; the status subresource and map-presence `.` entries
///   are no such fields);
/// - every field the desired object sets has that value live, and rudder
///   owns no field live that the desired object lacks (an apply would
///   remove it).
///
/// The server's dry run of an object already stored with the desired
/// values leaves them as they are (its defaults fill absent fields only,
/// and its normal forms are what the live object holds), so the dry run's
/// comparison would find nothing either. Anything else (a Secret's
/// `stringData`, values in another spelling than the server stores, a
/// removed field) fails the value test, and takes the dry run.
pub(super) fn provably_unchanged(desired: &Value, live: &Value) -> bool {
    let entries: &[Value] = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);

    let is_rudder = |e: &Value| e["manager"] == FIELD_MANAGER && e["operation"] == "Apply";
    let Some(rudder) = entries.iter().find(|e| is_rudder(e)) else {
        return false;
    };
    let rudder = fields_v1(rudder);
    for e in entries {
        if is_rudder(e) || e.get("subresource").and_then(Value::as_str) == Some("status") {
            continue;
        }
        if let Some(f) = fields_v1(e) {
            if owns_desired_field(f, Some(desired), rudder) {
                return false;
            }
        }
    }
    changed_fields(desired, desired, live, None).is_empty()
}

/// An entry's `fieldsV1` tree.
fn fields_v1(entry: &Value) -> Option<&Map<String, Value>> {
    entry.get("fieldsV1").and_then(Value::as_object)
}

/// Whether a managedFields `fieldsV1` tree names a field that `desired`
/// sets and rudder's own tree does not (a field shared with rudder has
/// rudder's value: changing it would have taken it from rudder). Inside a
/// list the desired object sets (`desired` is `None` there) every field
/// counts; `.`, the presence of a map or list item, is not a field.
fn owns_desired_field(
    owned: &Map<String, Value>,
    desired: Option<&Value>,
    rudder: Option<&Map<String, Value>>,
) -> bool {
    owned.iter().any(|(k, sub)| {
        if k == "." {
            return false;
        }
        let desired_sub = match (k.strip_prefix("f:"), desired) {
            (Some(name), Some(d)) => match d.get(name) {
                None => return false,
                Some(v) => Some(v),
            },
            // A list item, or a field inside one.
            _ => None,
        };
        let rudder_sub = rudder.and_then(|r| r.get(k)).and_then(Value::as_object);
        match sub {
            Value::Object(m) if !m.is_empty() => {
                owns_desired_field(m, desired_sub.filter(|v| v.is_object()), rudder_sub)
            }
            _ => rudder_sub.is_none(),
        }
    })
}

/// The pointers of [`managed_diff`] alone, without projecting the live
/// object (most objects are unchanged and need no diff).
pub(super) fn changed_fields(
    dry: &Value,
    desired: &Value,
    live: &Value,
    old_applied: Option<&Value>,
) -> Vec<String> {
    let mut changed = Vec::new();
    let mut ptr = String::new();
    walk(dry, desired, live, &mut ptr, &mut changed, false);
    removed_anywhere(dry, desired, live, old_applied, &mut changed);
    changed
}

/// The fields an apply of `desired` removes from `live`: those the last
/// manifest set, and those rudder's own applies own on the live object.
fn removed_anywhere(
    dry: &Value,
    desired: &Value,
    live: &Value,
    old_applied: Option<&Value>,
    changed: &mut Vec<String>,
) {
    if let Some(old) = old_applied {
        let mut ptr = String::new();
        removed_fields(old, desired, live, &mut ptr, changed);
    }
    // The fields rudder's own applies set (managedFields, manager rudder,
    // operation Apply): an apply that no longer sets one removes it,
    // whichever revision set it. After a failed upgrade the last deployed
    // manifest does not know the fields the failed one added.
    let entries = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    let mut removed = Vec::new();
    for e in entries.into_iter().flatten() {
        if e["manager"] != FIELD_MANAGER || e["operation"] != "Apply" {
            continue;
        }
        if let Some(Value::Object(f)) = e.get("fieldsV1") {
            let mut ptr = String::new();
            removed_owned(f, desired, live, &mut ptr, &mut removed);
        }
    }
    // Only what the server's dry run drops: a Secret's stringData lands in
    // data, which rudder then owns although the desired object never names it.
    for p in removed {
        if dry.pointer(&p).is_none() && !changed.contains(&p) {
            changed.push(p);
        }
    }
}

/// Appends a JSON-pointer segment (`~` as `~0`, `/` as `~1`).
fn push_escaped(ptr: &mut String, seg: &str) {
    if !seg.contains(['~', '/']) {
        ptr.push_str(seg);
        return;
    }
    for c in seg.chars() {
        match c {
            '~' => ptr.push_str("~0"),
            '/' => ptr.push_str("~1"),
            c => ptr.push(c),
        }
    }
}

fn skip_top(ptr: &str, key: &str) -> bool {
    ptr.is_empty() && key == "status"
}

/// Walks the shape of `desired`, comparing `dry` (the server's view of the
/// desired object) with `live`; returns `live` restricted to that shape.
fn project(
    dry: &Value,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    changed: &mut Vec<String>,
) -> Option<Value> {
    walk(dry, desired, live, ptr, changed, true)
}

/// [`project`]; with `build` false only `changed` is filled (the returned
/// value is a placeholder), which spares copying the live object.
fn walk(
    dry: &Value,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    changed: &mut Vec<String>,
    build: bool,
) -> Option<Value> {
    let copy = |v: &Value| if build { v.clone() } else { Value::Null };
    match desired {
        Value::Object(dm) => {
            let Value::Object(lm) = live else {
                changed.push(ptr_or_root(ptr));
                return Some(copy(live));
            };
            let empty = Map::new();
            let drym = dry.as_object().unwrap_or(&empty);
            let mut out = Map::new();
            for (k, dv) in dm {
                if skip_top(ptr, k) {
                    continue;
                }
                let len = ptr.len();
                ptr.push('/');
                push_escaped(ptr, k);
                // The server may drop or rename a desired field (Secret
                // stringData); compare what the dry run kept.
                let dryv = drym.get(k);
                match (dryv, lm.get(k)) {
                    (None, None) => {}
                    (None, Some(lv)) => {
                        // The dry run removed the field: nothing to compare.
                        let _ = lv;
                    }
                    (Some(_), None) => changed.push(ptr.clone()),
                    (Some(dv2), Some(lv)) => {
                        // A Secret's stringData lands in data: compare all of it.
                        let shape =
                            if k == "data" && ptr == "/data" && dm.contains_key("stringData") {
                                dv2
                            } else {
                                dv
                            };
                        if let Some(p) = walk(dv2, shape, lv, ptr, changed, build) {
                            if build {
                                out.insert(k.clone(), p);
                            }
                        }
                    }
                }
                ptr.truncate(len);
            }
            // Fields the dry run added beside the desired ones (stringData -> data).
            for (k, dv2) in drym {
                if dm.contains_key(k) || !ptr.is_empty() || !matches!(k.as_str(), "data") {
                    continue;
                }
                let len = ptr.len();
                ptr.push('/');
                push_escaped(ptr, k);
                match lm.get(k) {
                    None => changed.push(ptr.clone()),
                    Some(lv) => {
                        if let Some(p) = walk(dv2, dv2, lv, ptr, changed, build) {
                            if build {
                                out.insert(k.clone(), p);
                            }
                        }
                    }
                }
                ptr.truncate(len);
            }
            Some(Value::Object(out))
        }
        Value::Array(da) => {
            let Value::Array(la) = live else {
                changed.push(ptr_or_root(ptr));
                return Some(copy(live));
            };
            let drya = dry.as_array();
            if la.len() != da.len() || drya.map(Vec::len) != Some(da.len()) {
                changed.push(ptr_or_root(ptr));
                return Some(copy(live));
            }
            let mut out = Vec::with_capacity(if build { la.len() } else { 0 });
            for (i, (dv, lv)) in da.iter().zip(la).enumerate() {
                let len = ptr.len();
                ptr.push('/');
                {
                    use std::fmt::Write as _;
                    let _ = write!(ptr, "{i}");
                }
                let dv2 = drya.and_then(|a| a.get(i)).unwrap_or(dv);
                if let Some(p) = walk(dv2, dv, lv, ptr, changed, build) {
                    if build {
                        out.push(p);
                    }
                }
                ptr.truncate(len);
            }
            Some(Value::Array(out))
        }
        _ => {
            if !same_scalar(dry, live) {
                changed.push(ptr_or_root(ptr));
            }
            Some(copy(live))
        }
    }
}

fn ptr_or_root(ptr: &str) -> String {
    if ptr.is_empty() {
        "/".into()
    } else {
        ptr.to_string()
    }
}

fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Fields that `owned` (a managedFields `fieldsV1` tree) names, the
/// desired object lacks and live still has. Only `f:name` entries are
/// followed; list items (`k:`, `v:`, `i:`) are left out, since a list the
/// desired object still sets is compared whole. The same walk as
/// [`removed_fields`], over the server's record of what an apply set.
fn removed_owned(
    owned: &Map<String, Value>,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    out: &mut Vec<String>,
) {
    let Value::Object(lm) = live else { return };
    for (k, sub) in owned {
        let Some(name) = k.strip_prefix("f:") else {
            continue;
        };
        if skip_top(ptr, name) {
            continue;
        }
        let Some(lv) = lm.get(name) else { continue };
        let len = ptr.len();
        ptr.push('/');
        push_escaped(ptr, name);
        match (desired.get(name), sub) {
            (None, _) if !out.iter().any(|c| c == ptr) => out.push(ptr.clone()),
            (None, _) => {}
            (Some(dv), Value::Object(m)) if dv.is_object() => {
                removed_owned(m, dv, lv, ptr, out);
            }
            _ => {}
        }
        ptr.truncate(len);
    }
}

/// Leaves the last manifest set, the new one lacks, and live still has:
/// an apply removes them.
fn removed_fields(
    old: &Value,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    changed: &mut Vec<String>,
) {
    let (Value::Object(om), Value::Object(lm)) = (old, live) else {
        return;
    };
    for (k, ov) in om {
        if skip_top(ptr, k) || (ptr.is_empty() && k == "metadata" && !ov.is_object()) {
            continue;
        }
        let Some(lv) = lm.get(k) else { continue };
        let len = ptr.len();
        ptr.push('/');
        push_escaped(ptr, k);
        match desired.get(k) {
            None => {
                if !changed.iter().any(|c| c == ptr) {
                    changed.push(ptr.clone());
                }
            }
            Some(dv) if ov.is_object() && dv.is_object() => {
                removed_fields(ov, dv, lv, ptr, changed);
            }
            Some(_) => {}
        }
        ptr.truncate(len);
    }
}

/// The dry-run result restricted to the desired object's shape (what the
/// apply will make those fields).
pub(super) fn dry_projection(dry: &Value, desired: &Value) -> Value {
    let mut sink = Vec::new();
    let mut ptr = String::new();
    project(dry, desired, dry, &mut ptr, &mut sink).unwrap_or(Value::Null)
}

/// What a redacted secret value shows. No digest of the value: a digest
/// lets anyone who reads the plan check a guessed value offline, and a
/// keyed one needs a key kept beside every store (the Secrets, ConfigMaps
/// and SQL drivers have no such place). Diffs still say which values
/// change ([`REDACTED_CHANGED`]).
pub const REDACTED: &str = "(redacted)";

/// A redacted secret value that differs from the live one, in a diff.
pub const REDACTED_CHANGED: &str = "(redacted, changed)";

/// A Secret's values by key, as bytes: `data` base64-decoded, then
/// `stringData` over it (as the API server folds it in).
fn secret_values(obj: &Value) -> BTreeMap<String, Vec<u8>> {
    use base64::Engine;
    let mut out = BTreeMap::new();
    for field in ["data", "stringData"] {
        if let Some(m) = obj.get(field).and_then(Value::as_object) {
            for (k, v) in m {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let bytes = if field == "data" {
                    base64::engine::general_purpose::STANDARD
                        .decode(text.as_bytes())
                        .unwrap_or_else(|_| text.clone().into_bytes())
                } else {
                    text.into_bytes()
                };
                out.insert(k.clone(), bytes);
            }
        }
    }
    out
}

/// Replaces a Secret's `data` and `stringData` values by [`REDACTED`], or
/// by [`REDACTED_CHANGED`] where `live` (the other side of a diff) has no
/// such value or another one.
fn redact_against(obj: &mut Value, live: Option<&BTreeMap<String, Vec<u8>>>) {
    if obj.get("kind").and_then(Value::as_str) != Some("Secret") {
        return;
    }
    let mine = secret_values(obj);
    for field in ["data", "stringData"] {
        if let Some(m) = obj.get_mut(field).and_then(Value::as_object_mut) {
            for (k, v) in m.iter_mut() {
                let changed = live.is_some_and(|l| l.get(k) != mine.get(k));
                *v = Value::String(if changed { REDACTED_CHANGED } else { REDACTED }.into());
            }
        }
    }
}

/// Replaces a Secret's `data` and `stringData` values by [`REDACTED`].
pub fn redact_secret(obj: &mut Value) {
    redact_against(obj, None);
}

pub(super) fn unified_diff(
    live: &Value,
    desired: &Value,
    key: &ObjectKey,
    show_secrets: bool,
) -> String {
    let (mut a, mut b) = (live.clone(), desired.clone());
    if !show_secrets && key.kind == "Secret" && key.group.is_empty() {
        a["kind"] = Value::String("Secret".into());
        b["kind"] = Value::String("Secret".into());
        let live = secret_values(&a);
        redact_secret(&mut a);
        redact_against(&mut b, Some(&live));
    }
    let ya = serde_yaml::to_string(&a).unwrap_or_default();
    let yb = serde_yaml::to_string(&b).unwrap_or_default();
    let d = similar::TextDiff::from_lines(&ya, &yb);
    d.unified_diff()
        .context_radius(3)
        .header(&format!("live {key}"), &format!("desired {key}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_compares_only_managed_fields() {
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "uid": "u", "resourceVersion": "3"}, "data": {"a": "1"}});
        let (changed, _) = managed_diff(&desired, &desired, &live, None);
        assert!(changed.is_empty(), "{changed:?}");
        let live2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "2"}});
        let (changed, _) = managed_diff(&desired, &desired, &live2, None);
        assert_eq!(changed, vec!["/data/a"]);
    }

    #[test]
    fn fields_rudder_applied_and_the_desired_object_lacks_count_as_changes() {
        // A failed upgrade applied annotation x; the last deployed manifest
        // never had it, so only the live object's managedFields tell.
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"keep": "1"}}, "data": {"a": "1"}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"keep": "1", "x": "never", "y": "kubectl"},
                "managedFields": [
                    {"manager": "rudder", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:annotations":
                        {"f:keep": {}, "f:x": {}}}, "f:data": {".": {}, "f:a": {}}}},
                    {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:annotations":
                        {"f:y": {}}}}},
                    {"manager": "rudder", "operation": "Update", "fieldsV1": {"f:metadata": {"f:annotations":
                        {"f:z": {}}}}}
                ]},
            "data": {"a": "1"}});
        let (changed, _) = managed_diff(&desired, &desired, &live, None);
        assert_eq!(changed, vec!["/metadata/annotations/x"]);
        assert_eq!(
            changed_fields(&desired, &desired, &live, None),
            vec!["/metadata/annotations/x"]
        );
        // Once the apply dropped it, nothing is left to change.
        let mut after = live.clone();
        after["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("x");
        assert!(changed_fields(&desired, &desired, &after, None).is_empty());
    }

    #[test]
    fn only_fields_taken_from_rudder_stop_the_shortcut() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"a": "1"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "i"}]}}}});
        let mut live = desired.clone();
        live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
        let rudder = json!({"manager": "rudder", "operation": "Apply", "fieldsV1": {
            "f:metadata": {"f:annotations": {"f:a": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}});
        // A controller's own annotation, and an applier that shares the
        // container's name with rudder: nothing was taken from rudder.
        let controller = json!({"manager": "kube-controller-manager", "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}}}});
        let sharer = json!({"manager": "other", "operation": "Apply", "fieldsV1": {"f:spec": {
            "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}}}}}}}});
        let status = json!({"manager": "kube-controller-manager", "operation": "Update",
            "subresource": "status", "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        live["metadata"]["managedFields"] = json!([rudder, controller, sharer, status]);
        assert!(provably_unchanged(&desired, &live));
        // kubectl scale took replicas (same value again, but not rudder's).
        let mut scaled = live.clone();
        scaled["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
            .as_object_mut()
            .unwrap()
            .remove("f:replicas");
        scaled["metadata"]["managedFields"]
            .as_array_mut()
            .unwrap()
            .push(
                json!({"manager": "kubectl", "operation": "Update", "subresource": "scale",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}}),
            );
        assert!(!provably_unchanged(&desired, &scaled));
        // Another value, with rudder's fields as they were: the values tell.
        let mut edited = live.clone();
        edited["spec"]["replicas"] = json!(3);
        assert!(!provably_unchanged(&desired, &edited));
        // Not applied by rudder at all.
        let mut foreign = live.clone();
        foreign["metadata"]["managedFields"][0]["manager"] = json!("helm");
        assert!(!provably_unchanged(&desired, &foreign));
    }

    #[test]
    fn removed_fields_count_as_changes() {
        let old = json!({"data": {"a": "1", "b": "2"}});
        let desired = json!({"data": {"a": "1"}});
        let live = json!({"data": {"a": "1", "b": "2"}});
        let (changed, _) = managed_diff(&desired, &desired, &live, Some(&old));
        assert_eq!(changed, vec!["/data/b"]);
    }

    #[test]
    fn secrets_redact_without_digests_and_diffs_mark_changes() {
        let mut s = json!({"kind": "Secret", "data": {"p": "c2VjcmV0"}});
        redact_secret(&mut s);
        assert_eq!(s["data"]["p"], REDACTED);
        // A diff: the same value in data (live) and stringData (desired)
        // is unchanged; another value, or a new key, is changed.
        let live = json!({"kind": "Secret", "metadata": {"name": "s"}, "data": {"p": "c2VjcmV0", "q": "YQ=="}});
        let desired = json!({"kind": "Secret", "metadata": {"name": "s"}, "stringData": {"p": "secret", "q": "b", "r": "c"}});
        let key = ObjectKey::new("", "Secret", "ns", "s");
        let d = unified_diff(&live, &desired, &key, false);
        assert!(!d.contains("secret\n") && !d.contains("c2VjcmV0"), "{d}");
        assert!(d.contains("+  p: (redacted)\n"), "{d}");
        assert!(d.contains("+  q: (redacted, changed)\n"), "{d}");
        assert!(d.contains("+  r: (redacted, changed)\n"), "{d}");
        assert!(d.contains("-  q: (redacted)\n"), "{d}");
    }
}
