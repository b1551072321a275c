//! Helpers the simulated cluster's unit tests share: objects, keys,
//! apply options and a driven clock.
use super::state::str_at;
use super::{SimCluster, LOG_FILE};
use crate::cluster::{ApplyOptions, ObjectKey};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
pub(super) fn cm(ns: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":ns},"data":data})
}

pub(super) fn key(group: &str, kind: &str, ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(group, kind, ns, name)
}

pub(super) fn opts(manager: &str) -> ApplyOptions {
    ApplyOptions {
        field_manager: manager.into(),
        ..Default::default()
    }
}

pub(super) fn rv(o: &Value) -> u64 {
    str_at(o, &["metadata", "resourceVersion"])
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub(super) fn dep(name: &str, image: &str, annotations: Value) -> Value {
    json!({"apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"name":name,"namespace":"default","annotations":annotations},
        "spec":{"replicas":2,"selector":{"matchLabels":{"app":name}},"template":{"metadata":{"labels":{"app":name}},
        "spec":{"containers":[{"name":"c","image":image}]}}}})
}

pub(super) fn dkey(name: &str) -> ObjectKey {
    ObjectKey::new("apps", "Deployment", "default", name)
}

pub(super) fn ckey(name: &str) -> ObjectKey {
    ObjectKey::new("", "ConfigMap", "default", name)
}

pub(super) fn ready(o: &Value) -> i64 {
    o["status"]["readyReplicas"].as_i64().unwrap_or(-1)
}

/// A driven clock (ms) and a cluster on it.
pub(super) fn driven() -> (Arc<AtomicU64>, SimCluster) {
    let ms = Arc::new(AtomicU64::new(1_000));
    let m = ms.clone();
    let c = SimCluster::in_memory().with_clock(Arc::new(move || {
        Duration::from_millis(m.load(Ordering::SeqCst))
    }));
    (ms, c)
}

pub(super) fn log_lines(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join(LOG_FILE))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

pub(super) fn config_map(name: &str, v: &str) -> Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"default"},"data":{"k":v}})
}

pub(super) fn rv_str(o: &Value) -> String {
    o["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string()
}
