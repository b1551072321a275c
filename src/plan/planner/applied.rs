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
//!
//! A record's entry ([`applied_entry`]) carries, after the digest, part of
//! the text digest and the version of the object the digest was computed
//! from (its `uid` and `resourceVersion`). The server gives an object a
//! new `resourceVersion` on every write that changes it, so a live object
//! at that version is the very object the digest was computed from:
//! [`recheck`] then need not project it again, and the text alone decides.
//! A live object at another version (a controller wrote its status,
//! someone edited it) is projected and compared as above.
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

/// The entry a record keeps for a document applied with text digest
/// `text_digest` that left `live`: [`applied_state`], then (when `live`
/// has a `uid` and a `resourceVersion`) `@`, 128 bits of the text digest,
/// `@uid@resourceVersion`: what [`recheck`] needs to know `live` again
/// without projecting it.
pub fn applied_entry(text_digest: &str, live: &Value) -> Option<String> {
    let mut entry = applied_state(text_digest, live)?;
    if let Some((uid, rv)) = version(live) {
        for part in [text_tag(text_digest), uid, rv] {
            entry.push('@');
            entry.push_str(part);
        }
    }
    Some(entry)
}

/// Whether `live` still holds what the apply recorded in `entry` (from
/// [`applied_entry`], or a bare [`applied_state`] of an older record) left,
/// for a document of text digest `text_digest`: the entry for the next
/// record when it does (`entry` itself when `live` is the very version it
/// was computed from, else one for `live`'s version), `None` when not.
pub fn recheck(entry: &str, text_digest: &str, live: &Value) -> Option<String> {
    let mut parts = entry.splitn(4, '@');
    let state = parts.next()?;
    if let (Some(text), Some(uid), Some(rv), Some(now)) =
        (parts.next(), parts.next(), parts.next(), version(live))
    {
        if (uid, rv) == now {
            // The very object the state was computed from: it holds for
            // the same text, and another text changed the document.
            return (text == text_tag(text_digest)).then(|| entry.to_string());
        }
    }
    let now = applied_entry(text_digest, live)?;
    let same = now.split_once('@').map_or(now.as_str(), |(s, _)| s) == state;
    same.then_some(now)
}

/// `live`'s `uid` and `resourceVersion`, when it has both.
fn version(live: &Value) -> Option<(&str, &str)> {
    let meta = live.get("metadata")?;
    let uid = meta.get("uid")?.as_str()?;
    let rv = meta.get("resourceVersion")?.as_str()?;
    Some((uid, rv))
}

/// 128 bits (32 hex digits) of a `sha256:<hex>` text digest.
fn text_tag(text_digest: &str) -> &str {
    let hex = text_digest.strip_prefix("sha256:").unwrap_or(text_digest);
    hex.get(..32).unwrap_or(hex)
}

/// Completes a record's [`Release::applied`](crate::release::Release)
/// with what an apply of object `key` left (`response`, the apply's
/// answer): its entry, a text digest ([`PENDING`]), becomes the
/// [`applied_entry`]. What the executor does for each object it writes.
pub fn complete(applied: &mut BTreeMap<String, String>, key: &str, response: &Value) {
    let Some(v) = applied.get_mut(key) else {
        return;
    };
    let Some(text) = v.strip_prefix(PENDING) else {
        return;
    };
    match applied_entry(text, response) {
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

    fn with_uid(mut o: Value) -> Value {
        o["metadata"]["uid"] = json!("u-1");
        o
    }

    #[test]
    fn an_entry_holds_while_its_version_or_its_fields_do() {
        let t = text_digest("kind: Deployment");
        let live = with_uid(obj("i:1", json!([rudder_entry()])));
        let entry = applied_entry(&t, &live).unwrap();
        let (state, tag) = entry.split_once('@').unwrap();
        assert_eq!(Some(state.to_string()), applied_state(&t, &live));
        assert_eq!(tag, format!("{}@u-1@7", &t[7..39]));
        // The same version: the entry itself, without projecting the
        // object (the version alone vouches for it).
        assert_eq!(recheck(&entry, &t, &live).as_deref(), Some(entry.as_str()));
        let vouched = format!("sha256:0@{tag}");
        assert_eq!(recheck(&vouched, &t, &live), Some(vouched.clone()));
        // Another version with rudder's fields as they were (a controller
        // wrote the status): projected, held, and entered with the new
        // version.
        let mut status = live.clone();
        status["metadata"]["resourceVersion"] = json!("8");
        status["status"]["readyReplicas"] = json!(1);
        let again = recheck(&entry, &t, &status).unwrap();
        assert_eq!(again, format!("{state}@{}@u-1@8", &t[7..39]));
        assert_eq!(recheck(&again, &t, &status), Some(again.clone()));
        // Another version with a value rudder set changed: not held, and
        // the version of another object vouches for nothing.
        let mut edited = with_uid(obj("i:2", json!([rudder_entry()])));
        edited["metadata"]["resourceVersion"] = json!("9");
        assert_eq!(recheck(&entry, &t, &edited), None);
        assert_eq!(recheck(&vouched, &t, &status), None);
        // The same version, another text: not held.
        let other = text_digest("kind: Deployment\n# x");
        assert_eq!(recheck(&entry, &other, &live), None);
        // The same object recreated (another uid) at the same version.
        let mut recreated = live.clone();
        recreated["metadata"]["uid"] = json!("u-2");
        assert_eq!(recheck(&vouched, &t, &recreated), None);
        // An entry of an older record (the digest alone) still holds.
        let bare = applied_state(&t, &live).unwrap();
        assert_eq!(recheck(&bare, &t, &live), Some(entry.clone()));
        assert_eq!(recheck(&bare, &t, &edited), None);
        // Without a uid or version the entry is the digest alone.
        assert_eq!(
            applied_entry(&t, &obj("i:1", json!([rudder_entry()]))),
            Some(bare)
        );
    }
}
