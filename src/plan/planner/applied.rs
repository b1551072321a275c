//! What an apply of a document left on its live object, as a digest the
//! release record keeps ([`Release::applied`](crate::release::Release)),
//! so that a plan need not read a document that provably did not change.
//!
//! The digest ([`applied_state`]) covers the document's text and the live
//! object's fields under rudder's server-side apply (the `fieldsV1` tree of
//! the `managedFields` entry of manager `rudder`, operation `Apply`) with
//! their values. Right after rudder applied a document, rudder owns exactly
//! the fields the document sets, with the values that apply gave them. When
//! a live object still has that digest, rudder still owns exactly those
//! fields with those values, so applying the same text again changes
//! nothing the plan compares: nothing to set (every field has the value an
//! apply gives it) and nothing to remove (rudder owns no other field).
//!
//! Every out-of-band change moves the digest: `kubectl edit`, `patch`,
//! `scale` and a client-side `kubectl apply` (updates) take each field they
//! change or remove from rudder's entry; another manager's forced
//! server-side apply takes the fields it sets; a change that left the
//! entry alone (a client that writes `managedFields` itself) still changes
//! a value. Whatever moved it, the object is read and compared as before.
//! The digest is a property of the text and the live object, not of a
//! revision: a record written by any rudder apply of the same text holds
//! the same one.
//!
//! Where a field's live value is a list or a scalar, the whole value is
//! hashed, whoever owns its items: more changes than needed move it (the
//! object is then compared in full), none that matter is missed.
use super::FIELD_MANAGER;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The prefix of a record entry that holds a document's text digest only:
/// the planner writes it for the objects the executor writes, and the
/// executor replaces it with [`applied_state`] of what its apply returned.
pub const PENDING: &str = "text:";

/// `sha256:<hex>` of a document's text, trimmed.
pub fn text_digest(text: &str) -> String {
    super::digest(text.trim().as_bytes())
}

/// `sha256:<hex>` of a document's text digest (from [`text_digest`]) and of
/// `live`'s fields under rudder's server-side apply with their values;
/// `None` when no `rudder` `Apply` entry owns anything of `live`.
pub fn applied_state(text_digest: &str, live: &Value) -> Option<String> {
    let entries = live
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)?;
    let mut rudder = entries
        .iter()
        .filter(|e| e["manager"] == FIELD_MANAGER && e["operation"] == "Apply");
    let fields = rudder.next()?.get("fieldsV1").and_then(Value::as_object)?;
    // Two entries of rudder's (one per subresource) are not what an apply
    // of the main resource leaves.
    if rudder.next().is_some() {
        return None;
    }
    let mut buf = Vec::with_capacity(2048);
    buf.extend_from_slice(b"rudder-applied/1\n");
    buf.extend_from_slice(text_digest.as_bytes());
    buf.push(b'\n');
    project(fields, Some(live), &mut buf);
    Some(super::digest(&buf))
}

/// Completes a record's [`Release::applied`](crate::release::Release)
/// with what an apply of object `key` left (`response`, the apply's
/// answer): its entry, a text digest ([`PENDING`]), becomes the
/// [`applied_state`]. What the executor does for each object it writes.
pub fn complete(applied: &mut BTreeMap<String, String>, key: &str, response: &Value) {
    let Some(v) = applied.get_mut(key) else {
        return;
    };
    let Some(text) = v.strip_prefix(PENDING) else {
        return;
    };
    match applied_state(text, response) {
        Some(state) => *v = state,
        None => {
            applied.remove(key);
        }
    }
}

/// Leaves out the entries no apply completed (objects not written, or a
/// run that did not finish).
pub fn drop_pending(applied: &mut BTreeMap<String, String>) {
    applied.retain(|_, v| !v.starts_with(PENDING));
}

/// Writes `owned` (a `fieldsV1` tree) and `live`'s values under it: a map
/// field whose subtree names map fields only is followed; any other field
/// is written with its subtree and its whole live value.
fn project(owned: &Map<String, Value>, live: Option<&Value>, buf: &mut Vec<u8>) {
    for (k, sub) in owned {
        buf.extend_from_slice(k.as_bytes());
        buf.push(0x1f);
        let lv = k
            .strip_prefix("f:")
            .and_then(|name| live.and_then(|l| l.get(name)));
        let sub_map = sub.as_object().filter(|m| !m.is_empty());
        match (lv, sub_map) {
            (Some(v @ Value::Object(_)), Some(m))
                if m.keys().all(|k| k == "." || k.starts_with("f:")) =>
            {
                buf.push(b'{');
                project(m, Some(v), buf);
                buf.push(b'}');
            }
            _ => {
                match sub_map {
                    None => buf.push(b'0'),
                    Some(m) => write_map(m, buf),
                }
                buf.push(0x1f);
                match lv {
                    Some(v) => write_value(v, buf),
                    None => buf.push(0x18),
                }
            }
        }
        buf.push(0x1e);
    }
}

/// Writes `v` unambiguously: a tag, and lengths before strings, lists and
/// maps (serde_json's maps are sorted, so the bytes are canonical). Faster
/// than JSON: nothing to escape.
fn write_value(v: &Value, buf: &mut Vec<u8>) {
    match v {
        Value::Null => buf.push(b'n'),
        Value::Bool(true) => buf.push(b't'),
        Value::Bool(false) => buf.push(b'f'),
        Value::Number(n) => {
            use std::io::Write as _;
            buf.push(b'#');
            let _ = write!(buf, "{n};");
        }
        Value::String(s) => write_str(s, buf),
        Value::Array(a) => {
            buf.push(b'[');
            buf.extend_from_slice(&(a.len() as u64).to_le_bytes());
            for x in a {
                write_value(x, buf);
            }
        }
        Value::Object(m) => write_map(m, buf),
    }
}

fn write_map(m: &Map<String, Value>, buf: &mut Vec<u8>) {
    buf.push(b'{');
    buf.extend_from_slice(&(m.len() as u64).to_le_bytes());
    for (k, x) in m {
        write_str(k, buf);
        write_value(x, buf);
    }
}

fn write_str(s: &str, buf: &mut Vec<u8>) {
    buf.push(b'"');
    buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(image: &str, entries: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "w", "resourceVersion": "7", "managedFields": entries},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "w", "image": image}]}}},
            "status": {"readyReplicas": 2}})
    }

    fn rudder_entry() -> Value {
        json!({"manager": "rudder", "operation": "Apply", "fieldsV1": {
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"w\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}})
    }

    #[test]
    fn the_digest_follows_rudders_fields_and_their_values_only() {
        let t = text_digest("kind: Deployment");
        let a = applied_state(&t, &obj("i:1", json!([rudder_entry()]))).unwrap();
        // Status, resourceVersion and other managers' entries do not count.
        let mut b = obj(
            "i:1",
            json!([rudder_entry(), {"manager": "kube-controller-manager",
            "operation": "Update", "subresource": "status", "fieldsV1": {"f:status": {}}}]),
        );
        b["status"]["readyReplicas"] = json!(1);
        b["metadata"]["resourceVersion"] = json!("9");
        assert_eq!(applied_state(&t, &b), Some(a.clone()));
        // A value rudder owns, changed with its entry left alone.
        assert_ne!(
            applied_state(&t, &obj("i:2", json!([rudder_entry()]))),
            Some(a.clone())
        );
        // A field taken from rudder, same value.
        let mut taken = rudder_entry();
        taken["fieldsV1"]["f:spec"]
            .as_object_mut()
            .unwrap()
            .remove("f:replicas");
        assert_ne!(
            applied_state(&t, &obj("i:1", json!([taken]))),
            Some(a.clone())
        );
        // Another text.
        assert_ne!(
            applied_state(
                &text_digest("kind: Deployment\n# x"),
                &obj("i:1", json!([rudder_entry()]))
            ),
            Some(a)
        );
        // Not applied by rudder.
        assert_eq!(applied_state(&t, &obj("i:1", json!([]))), None);
    }
}
