//! Field paths, server-side apply merging and `managedFields`.
//!
//! A field path is a list of segments as in Kubernetes' `fieldsV1`:
//! `f:<name>` selects a map key, `k:<json>` an item of an associative list
//! by its key fields (`k:{"name":"web"}`). A manager owns *leaf* paths:
//! scalars, lists that are replaced as a whole, empty maps, and each field
//! of an item of a list merged by key.
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One field path.
pub(crate) type Path = Vec<String>;
/// The leaf paths a manager owns.
pub(crate) type FieldSet = BTreeSet<Path>;

/// The merge key of a list field, when its items are merged by key rather
/// than the list being replaced as a whole. `ports` items are keyed by
/// `containerPort` (containers) or `port` (services).
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let key = match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => "name",
        "volumeMounts" | "volumeDevices" => "mountPath",
        "ports" => {
            if items.iter().all(|i| i.get("containerPort").is_some()) {
                "containerPort"
            } else {
                "port"
            }
        }
        _ => return None,
    };
    let mut seen = BTreeSet::new();
    for i in items {
        let k = i.as_object()?.get(key)?;
        if !seen.insert(k.to_string()) {
            return None;
        }
    }
    Some(key)
}

fn item_seg(key: &str, item: &Value) -> Option<String> {
    let v = item.get(key)?;
    let mut m = Map::new();
    m.insert(key.into(), v.clone());
    Some(format!("k:{}", Value::Object(m)))
}

/// Top-level and metadata fields that are the server's, never a manager's.
fn skipped(path: &[String]) -> bool {
    match path {
        [a] => matches!(a.as_str(), "f:apiVersion" | "f:kind" | "f:status"),
        [m, f] if m == "f:metadata" => matches!(
            f.as_str(),
            "f:name"
                | "f:namespace"
                | "f:uid"
                | "f:resourceVersion"
                | "f:generation"
                | "f:creationTimestamp"
                | "f:managedFields"
                | "f:selfLink"
                | "f:deletionTimestamp"
                | "f:deletionGracePeriodSeconds"
        ),
        _ => false,
    }
}

/// The leaf paths set in `obj` (server fields left out).
pub(crate) fn leaves(obj: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    let mut prefix = Vec::new();
    if let Some(m) = obj.as_object() {
        walk_map(m, &mut prefix, &mut out);
    }
    out
}

fn walk_map(m: &Map<String, Value>, prefix: &mut Path, out: &mut FieldSet) {
    for (k, v) in m {
        prefix.push(format!("f:{k}"));
        if !skipped(prefix) {
            match v {
                Value::Object(c) if !c.is_empty() => walk_map(c, prefix, out),
                Value::Array(items) => match merge_key(k, items) {
                    Some(key) if !items.is_empty() => {
                        for item in items {
                            if let (Some(seg), Some(im)) = (item_seg(key, item), item.as_object()) {
                                prefix.push(seg);
                                walk_map(im, prefix, out);
                                prefix.pop();
                            }
                        }
                    }
                    _ => {
                        out.insert(prefix.clone());
                    }
                },
                _ => {
                    out.insert(prefix.clone());
                }
            }
        }
        prefix.pop();
    }
}

fn find_item(items: &[Value], seg: &str) -> Option<usize> {
    let want: Value = serde_json::from_str(seg.strip_prefix("k:")?).ok()?;
    let want = want.as_object()?;
    items
        .iter()
        .position(|i| want.iter().all(|(k, v)| i.get(k).is_some_and(|iv| iv == v)))
}

/// The value at a path.
pub(crate) fn get<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path {
        cur = if let Some(f) = seg.strip_prefix("f:") {
            cur.as_object()?.get(f)?
        } else {
            let items = cur.as_array()?;
            &items[find_item(items, seg)?]
        };
    }
    Some(cur)
}

/// Removes the value at a path; then drops maps and list items that the
/// removal left empty (never a top-level field or `metadata` itself).
pub(crate) fn remove(obj: &mut Value, path: &[String]) {
    fn rec(cur: &mut Value, path: &[String], depth: usize) -> bool {
        let Some((seg, rest)) = path.split_first() else {
            return false;
        };
        if let Some(f) = seg.strip_prefix("f:") {
            let Some(m) = cur.as_object_mut() else {
                return false;
            };
            if rest.is_empty() {
                m.remove(f);
            } else if let Some(child) = m.get_mut(f) {
                if rec(child, rest, depth + 1) && depth > 0 {
                    m.remove(f);
                }
            }
            m.is_empty()
        } else {
            let Some(items) = cur.as_array_mut() else {
                return false;
            };
            if let Some(i) = find_item(items, seg) {
                if rest.is_empty() || rec(&mut items[i], rest, depth + 1) {
                    items.remove(i);
                }
            }
            false
        }
    }
    rec(obj, path, 0);
}

/// Merges an applied configuration into the live object: maps recursively,
/// lists with a merge key item by item (live items the configuration does
/// not name are kept, after the named ones), other values replaced.
pub(crate) fn merge(live: &mut Value, cfg: &Value) {
    let (Some(lm), Some(cm)) = (live.as_object_mut(), cfg.as_object()) else {
        *live = cfg.clone();
        return;
    };
    for (k, cv) in cm {
        match lm.get_mut(k) {
            Some(lv) if lv.is_object() && cv.is_object() => merge(lv, cv),
            Some(Value::Array(litems)) if cv.is_array() => {
                let citems = cv.as_array().map(Vec::as_slice).unwrap_or_default();
                match (merge_key(k, citems), merge_key(k, litems)) {
                    (Some(key), Some(lkey)) if key == lkey => {
                        let mut out = Vec::with_capacity(citems.len());
                        let mut used = vec![false; litems.len()];
                        for ci in citems {
                            let pos = item_seg(key, ci).and_then(|s| find_item(litems, &s));
                            match pos {
                                Some(i) => {
                                    used[i] = true;
                                    let mut li = litems[i].clone();
                                    merge(&mut li, ci);
                                    out.push(li);
                                }
                                None => out.push(ci.clone()),
                            }
                        }
                        for (i, li) in litems.iter().enumerate() {
                            if !used[i] {
                                out.push(li.clone());
                            }
                        }
                        *litems = out;
                    }
                    _ => *litems = citems.to_vec(),
                }
            }
            Some(lv) => *lv = cv.clone(),
            None => {
                lm.insert(k.clone(), cv.clone());
            }
        }
    }
}

/// kubectl's spelling of a path in conflict messages:
/// `.spec.template.spec.containers[name="web"].image`.
pub(crate) fn display(path: &[String]) -> String {
    let mut s = String::new();
    for seg in path {
        if let Some(f) = seg.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = seg.strip_prefix("k:") {
            let v: Option<Value> = serde_json::from_str(k).ok();
            let inner = v
                .as_ref()
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            s.push_str(&format!("[{inner}]"));
        }
    }
    s
}

/// A set of leaf paths as a `fieldsV1` tree: `{"f:spec":{"f:replicas":{}}}`.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for seg in path {
            let next = cur
                .entry(seg.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !next.is_object() {
                *next = Value::Object(Map::new());
            }
            match next.as_object_mut() {
                Some(m) => cur = m,
                None => break,
            }
        }
    }
    Value::Object(root)
}

/// The leaf paths of a `fieldsV1` tree (a key whose value is `{}`, or a
/// `"."` marker, is a leaf).
pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
    fn rec(v: &Value, prefix: &mut Path, out: &mut FieldSet) {
        match v.as_object() {
            Some(m) if !m.is_empty() => {
                for (k, c) in m {
                    if k == "." {
                        if !prefix.is_empty() {
                            out.insert(prefix.clone());
                        }
                        continue;
                    }
                    prefix.push(k.clone());
                    rec(c, prefix, out);
                    prefix.pop();
                }
            }
            _ => {
                if !prefix.is_empty() {
                    out.insert(prefix.clone());
                }
            }
        }
    }
    let mut out = FieldSet::new();
    rec(v, &mut Vec::new(), &mut out);
    out
}

/// One `managedFields` entry, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Managed {
    /// Field manager.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// The apiVersion of the manager's last write.
    pub api_version: String,
    /// When the manager last changed its set.
    pub time: String,
    /// The leaf paths it owns.
    pub fields: FieldSet,
}

/// The `metadata.managedFields` of an object.
pub(crate) fn read_managed(obj: &Value) -> Vec<Managed> {
    let Some(entries) = obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    entries
        .iter()
        .map(|e| Managed {
            manager: s(e, "manager"),
            operation: s(e, "operation"),
            api_version: s(e, "apiVersion"),
            time: s(e, "time"),
            fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
        })
        .collect()
}

/// Writes `managedFields` (empty sets dropped; removed when none is left).
pub(crate) fn write_managed(obj: &mut Value, managed: &[Managed]) {
    let entries: Vec<Value> = managed
        .iter()
        .filter(|m| !m.fields.is_empty())
        .map(|m| {
            let mut e = Map::new();
            e.insert("manager".into(), Value::String(m.manager.clone()));
            e.insert("operation".into(), Value::String(m.operation.clone()));
            e.insert("apiVersion".into(), Value::String(m.api_version.clone()));
            e.insert("time".into(), Value::String(m.time.clone()));
            e.insert("fieldsType".into(), Value::String("FieldsV1".into()));
            e.insert("fieldsV1".into(), to_fields_v1(&m.fields));
            Value::Object(e)
        })
        .collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

/// Whether two paths overlap (one is a prefix of the other).
pub(crate) fn overlaps(a: &[String], b: &[String]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// Whether a path is a key field of an associative list item
/// (`…/k:{"name":"web"}/f:name`).
pub(crate) fn is_key_field(path: &[String]) -> bool {
    let [.., item, last] = path else {
        return false;
    };
    let (Some(k), Some(f)) = (item.strip_prefix("k:"), last.strip_prefix("f:")) else {
        return false;
    };
    serde_json::from_str::<Value>(k)
        .ok()
        .and_then(|v| v.as_object().map(|m| m.contains_key(f)))
        .unwrap_or(false)
}

/// The associative-list items (`…/k:{…}` prefixes) along the given paths.
pub(crate) fn item_prefixes<'a>(paths: impl Iterator<Item = &'a Path>) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    for p in paths {
        for (i, seg) in p.iter().enumerate() {
            if seg.starts_with("k:") {
                out.insert(p[..=i].to_vec());
            }
        }
    }
    out
}

/// Keeps in each set only the paths the object still has.
pub(crate) fn retain_present(obj: &Value, managed: &mut [Managed]) {
    for m in managed {
        m.fields.retain(|p| get(obj, p).is_some());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_and_fields_v1_round_trip() {
        let obj = json!({"apiVersion":"v1","kind":"X","metadata":{"name":"a","labels":{"x":"1"}},
            "spec":{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}]}],"args":["a"],"empty":{}}});
        let l = leaves(&obj);
        let shown: Vec<_> = l.iter().map(|p| display(p)).collect();
        assert_eq!(
            shown,
            [
                ".metadata.labels.x",
                ".spec.args",
                ".spec.containers[name=\"web\"].image",
                ".spec.containers[name=\"web\"].name",
                ".spec.containers[name=\"web\"].ports[containerPort=80].containerPort",
                ".spec.empty",
            ]
        );
        assert_eq!(from_fields_v1(&to_fields_v1(&l)), l);
        for p in &l {
            assert!(get(&obj, p).is_some(), "{p:?}");
        }
    }

    #[test]
    fn merge_by_name_and_remove() {
        let mut live =
            json!({"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}});
        merge(
            &mut live,
            &json!({"spec":{"containers":[{"name":"b","image":"3"}]}}),
        );
        assert_eq!(
            live,
            json!({"spec":{"containers":[{"name":"b","image":"3"},{"name":"a","image":"1"}]}})
        );
        let p: Path = vec![
            "f:spec".into(),
            "f:containers".into(),
            "k:{\"name\":\"a\"}".into(),
        ];
        remove(&mut live, &p);
        assert_eq!(
            live,
            json!({"spec":{"containers":[{"name":"b","image":"3"}]}})
        );
    }
}
