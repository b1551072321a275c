//! Helm's Secrets and ConfigMaps drivers (`HELM_DRIVER=secret|configmap`)
//! over any [`Cluster`]: a real API server or the simulated one.
//!
//! One object per revision, in the release namespace, named
//! `sh.helm.release.v1.<name>.v<version>`, with Helm's labels (`owner=helm`,
//! `name`, `status`, `version`, `createdAt` on create, `modifiedAt` on
//! update, plus the release's custom labels) and the record under data key
//! `release`, encoded exactly as Helm encodes it ([`codec::to_secret`],
//! [`codec::to_configmap`]): real Helm reads what rudder writes and the
//! other way round. Listing uses label selectors (`owner=helm`,
//! `name=<release>`), as Helm's `Query` does.
//!
//! What Helm's drivers lack is done with the API server's own guarantees:
//! a create is a POST, which fails with 409 when the revision exists
//! ([`StoreError::AlreadyExists`]); an update reads the object, compares it
//! with the caller's copy ([`same_record`]) and replaces it carrying the
//! resourceVersion it read, so a writer that lost a race gets 409
//! ([`StoreError::Conflict`]) instead of overwriting the winner. Records
//! over the 1 MiB object limit are refused before anything is written.
use super::{check_name, check_record, same_record, sort_by_version, Skipped, Store, StoreError};
use crate::cluster::{Cluster, ClusterError, ObjectKey};
use crate::release::codec::{self, Write};
use crate::release::model::Release;
use crate::release::time::HelmTime;
use base64::Engine;
use serde_json::Value;
use std::sync::Arc;

/// Which of Helm's Kubernetes drivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Secrets of type `helm.sh/release.v1` (Helm's default driver).
    Secret,
    /// ConfigMaps.
    ConfigMap,
}

impl Driver {
    /// The driver a store URL (`--store`, `HELM_DRIVER`) names:
    /// `secret`/`secrets`/`configmap`/`configmaps` (Helm's spellings).
    pub fn from_url(url: &str) -> Option<Driver> {
        match url {
            "secret" | "secrets" | "secret:" | "secrets:" => Some(Driver::Secret),
            "configmap" | "configmaps" | "configmap:" | "configmaps:" => Some(Driver::ConfigMap),
            _ => None,
        }
    }

    /// The object kind (`Secret`, `ConfigMap`).
    pub fn kind(self) -> &'static str {
        match self {
            Driver::Secret => "Secret",
            Driver::ConfigMap => "ConfigMap",
        }
    }
}

/// Release records as Secrets or ConfigMaps in a cluster.
pub struct ObjectStore {
    cluster: Arc<dyn Cluster>,
    driver: Driver,
}

impl std::fmt::Debug for ObjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStore")
            .field("driver", &self.driver)
            .finish_non_exhaustive()
    }
}

/// A cluster error as a store error: the operation, the object, the cause.
fn cluster_err(op: &'static str, what: &str, e: ClusterError) -> StoreError {
    StoreError::Io {
        op,
        path: what.to_string(),
        error: std::io::Error::other(e.to_string()),
    }
}

impl ObjectStore {
    /// A store of the given driver's objects in `cluster`.
    pub fn new(cluster: Arc<dyn Cluster>, driver: Driver) -> ObjectStore {
        ObjectStore { cluster, driver }
    }

    /// Helm's Secrets driver.
    pub fn secrets(cluster: Arc<dyn Cluster>) -> ObjectStore {
        ObjectStore::new(cluster, Driver::Secret)
    }

    /// Helm's ConfigMaps driver.
    pub fn configmaps(cluster: Arc<dyn Cluster>) -> ObjectStore {
        ObjectStore::new(cluster, Driver::ConfigMap)
    }

    /// Which driver this is.
    pub fn driver(&self) -> Driver {
        self.driver
    }

    fn key(&self, namespace: &str, name: &str, version: u64) -> ObjectKey {
        ObjectKey::new(
            "",
            self.driver.kind(),
            namespace,
            &codec::key(name, version),
        )
    }

    /// The object Helm's driver writes for this revision (size-checked).
    pub fn to_object(&self, rel: &Release, write: Write) -> Result<Value, StoreError> {
        let now = HelmTime::now().unix();
        let v = match self.driver {
            Driver::Secret => serde_json::to_value(codec::to_secret(rel, write, now)?),
            Driver::ConfigMap => serde_json::to_value(codec::to_configmap(rel, write, now)?),
        };
        Ok(v.map_err(codec::CodecError::from)?)
    }

    /// Reads a release back from one of the driver's objects, with every
    /// label stored on it.
    pub fn from_object(&self, obj: &Value) -> Result<Release, StoreError> {
        let data = obj
            .get("data")
            .and_then(|d| d.get("release"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut rel = match self.driver {
            Driver::Secret => {
                // Secret data is base64 over the JSON API, around Helm's body.
                let body = base64::engine::general_purpose::STANDARD
                    .decode(data.as_bytes())
                    .map_err(codec::CodecError::from)?;
                codec::decode(&String::from_utf8_lossy(&body))?
            }
            Driver::ConfigMap => codec::decode(data)?,
        };
        rel.labels = obj
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|l| {
                l.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(rel)
    }

    /// Decodes a listed object and checks it against its name and
    /// namespace ([`super::check_record`]).
    fn checked(&self, obj: &Value) -> Result<Release, Box<Skipped>> {
        let meta = |f: &str| {
            obj.get("metadata")
                .and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (key, namespace) = (meta("name"), meta("namespace"));
        let (name, version) = codec::parse_key(&key)
            .or_else(|| super::file::overflowing_key(&key))
            .map_or((String::new(), u64::MAX), |(n, v)| (n.to_string(), v));
        let skipped = |reason: String| {
            Box::new(Skipped {
                key: key.clone(),
                namespace: namespace.clone(),
                name: name.clone(),
                version,
                location: format!("{} {namespace}/{key}", self.driver.kind()),
                reason,
            })
        };
        let rel = self.from_object(obj).map_err(|e| skipped(e.to_string()))?;
        check_record(&rel, &namespace, &name, version).map_err(|e| skipped(e.to_string()))?;
        Ok(rel)
    }

    /// The records listed, and those that do not decode or do not match
    /// their object's name and namespace (skipped, as Helm's drivers skip
    /// what does not decode, and reported to the caller).
    fn query(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        let mut labels = vec![("owner".to_string(), codec::OWNER.to_string())];
        if let Some(n) = name {
            labels.push(("name".to_string(), n.to_string()));
        }
        let objs = self
            .cluster
            .list("", self.driver.kind(), namespace, &labels)
            .map_err(|e| {
                cluster_err(
                    "list",
                    &format!(
                        "{}s in {}",
                        self.driver.kind(),
                        namespace.unwrap_or("all namespaces")
                    ),
                    e,
                )
            })?;
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        for o in &objs {
            match self.checked(o) {
                Ok(r) => out.push(r),
                Err(s) => skipped.push(*s),
            }
        }
        skipped.sort_by(|a, b| {
            (&a.namespace, &a.name, a.version).cmp(&(&b.namespace, &b.name, b.version))
        });
        Ok((out, skipped))
    }

    fn live(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        self.cluster
            .get(key)
            .map_err(|e| cluster_err("get", &key.to_string(), e))
    }
}

impl Store for ObjectStore {
    fn create(&self, rel: &Release) -> Result<(), StoreError> {
        check_name(&rel.namespace)?;
        check_name(&rel.name)?;
        let obj = self.to_object(rel, Write::Create)?;
        let key = self.key(&rel.namespace, &rel.name, rel.version);
        match self.cluster.create(&obj) {
            Ok(_) => Ok(()),
            Err(ClusterError::AlreadyExists { .. }) => Err(StoreError::AlreadyExists),
            Err(e) => Err(cluster_err("create", &key.to_string(), e)),
        }
    }

    fn update(&self, expected: &Release, new: &Release) -> Result<(), StoreError> {
        check_name(&new.namespace)?;
        check_name(&new.name)?;
        let mut obj = self.to_object(new, Write::Update)?;
        let key = self.key(&new.namespace, &new.name, new.version);
        let conflict = || StoreError::Conflict {
            key: codec::key(&new.name, new.version),
            namespace: new.namespace.clone(),
        };
        let live = self.live(&key)?.ok_or(StoreError::NotFound)?;
        let cur = self.from_object(&live)?;
        if !same_record(&cur, expected) {
            return Err(conflict());
        }
        let rv = live
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), rv);
        }
        match self.cluster.replace(&obj) {
            Ok(_) => Ok(()),
            Err(ClusterError::Conflict { .. }) => Err(conflict()),
            Err(ClusterError::NotFound { .. }) => Err(StoreError::NotFound),
            Err(e) => Err(cluster_err("update", &key.to_string(), e)),
        }
    }

    fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        check_name(namespace)?;
        check_name(name)?;
        let key = self.key(namespace, name, version);
        let obj = self.live(&key)?.ok_or(StoreError::NotFound)?;
        let mut rel = self.from_object(&obj)?;
        check_record(&rel, namespace, name, version).map_err(|reason| StoreError::Invalid {
            location: format!("{} {namespace}/{}", self.driver.kind(), key.name),
            reason,
        })?;
        // Helm's drivers' Get leaves only the custom labels on the record.
        rel.labels = codec::user_labels(&rel.labels);
        Ok(rel)
    }

    fn history_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        check_name(namespace)?;
        check_name(name)?;
        // The `name` label selects; a record that is not its object's
        // (another release's copied under this one's key) was skipped
        // above, naming the object.
        let (mut v, skipped) = self.query(Some(namespace), Some(name))?;
        v.retain(|r| r.name == name);
        sort_by_version(&mut v);
        Ok((v, skipped))
    }

    fn list_all_reporting(
        &self,
        namespace: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        if let Some(ns) = namespace {
            check_name(ns)?;
        }
        let (mut v, skipped) = self.query(namespace, None)?;
        v.sort_by(|a, b| {
            (a.namespace.as_str(), a.name.as_str(), a.version).cmp(&(
                b.namespace.as_str(),
                b.name.as_str(),
                b.version,
            ))
        });
        Ok((v, skipped))
    }

    fn delete(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        check_name(namespace)?;
        check_name(name)?;
        let key = self.key(namespace, name, version);
        let obj = self.live(&key)?.ok_or(StoreError::NotFound)?;
        let rel = self.from_object(&obj)?;
        let rv = obj
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string);
        match self.cluster.delete(&key, rv.as_deref()) {
            Ok(Some(_)) => Ok(rel),
            Ok(None) => Err(StoreError::NotFound),
            Err(ClusterError::Conflict { .. }) => Err(StoreError::Conflict {
                key: codec::key(name, version),
                namespace: namespace.to_string(),
            }),
            Err(e) => Err(cluster_err("delete", &key.to_string(), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::SimCluster;
    use crate::release::model::Status;

    fn rel(name: &str, version: u64, status: Status) -> Release {
        let mut r = Release {
            name: name.into(),
            namespace: "default".into(),
            version,
            ..Release::default()
        };
        r.info.status = status;
        r
    }

    #[test]
    fn an_object_copied_under_another_key_or_past_int32_is_refused_naming_it() {
        use crate::release::Releases;
        for driver in [Driver::Secret, Driver::ConfigMap] {
            let c: Arc<dyn Cluster> = Arc::new(SimCluster::in_memory());
            let s = ObjectStore::new(c.clone(), driver);
            s.create(&rel("web", 1, Status::Deployed)).unwrap();
            // web's record as api's revision 1 (name and labels say api).
            let mut copy = s
                .to_object(&rel("web", 1, Status::Deployed), Write::Create)
                .unwrap();
            copy["metadata"]["name"] = "sh.helm.release.v1.api.v1".into();
            copy["metadata"]["labels"]["name"] = "api".into();
            c.create(&copy).unwrap();
            let kind = driver.kind();
            let e = Releases::new(&s)
                .history_checked("default", "api")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("{kind} default/sh.helm.release.v1.api.v1")),
                "{e}"
            );
            assert!(e.contains("it holds release \"web\""), "{e}");
            let e = s.get("default", "api", 1).unwrap_err().to_string();
            assert!(e.contains("it holds release \"web\""), "{e}");
            // A revision past int32, consistently in name and body.
            let big = rel("web", 9_223_372_036_854_775_808, Status::Deployed);
            c.create(&s.to_object(&big, Write::Create).unwrap())
                .unwrap();
            let e = Releases::new(&s)
                .history_checked("default", "web")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!(
                    "{kind} default/sh.helm.release.v1.web.v9223372036854775808"
                )),
                "{e}"
            );
            assert!(e.contains("is out of range"), "{e}");
        }
    }

    #[test]
    fn secrets_and_configmaps_on_the_simulated_cluster() {
        for driver in [Driver::Secret, Driver::ConfigMap] {
            let c: Arc<dyn Cluster> = Arc::new(SimCluster::in_memory());
            let s = ObjectStore::new(c.clone(), driver);
            let mut r1 = rel("web", 1, Status::Deployed);
            r1.labels.insert("team".into(), "a".into());
            s.create(&r1).unwrap();
            assert!(matches!(s.create(&r1), Err(StoreError::AlreadyExists)));
            s.create(&rel("web", 2, Status::PendingUpgrade)).unwrap();
            s.create(&rel("db", 1, Status::Deployed)).unwrap();
            let h = s.history("default", "web").unwrap();
            assert_eq!(h.iter().map(|r| r.version).collect::<Vec<_>>(), [1, 2]);
            assert_eq!(h[0].labels["owner"], "helm");
            assert!(h[0].labels.contains_key("createdAt"));
            let got = s.get("default", "web", 1).unwrap();
            assert_eq!(got.labels.get("team").map(String::as_str), Some("a"));
            assert!(!got.labels.contains_key("owner"));
            // Compare-and-swap: a stale copy loses.
            let mut new = h[1].clone();
            new.info.status = Status::Deployed;
            s.update(&h[1], &new).unwrap();
            assert!(matches!(
                s.update(&h[1], &new),
                Err(StoreError::Conflict { .. })
            ));
            let live = c
                .get(&ObjectKey::new(
                    "",
                    driver.kind(),
                    "default",
                    "sh.helm.release.v1.web.v2",
                ))
                .unwrap()
                .unwrap();
            assert_eq!(live["metadata"]["labels"]["status"], "deployed");
            assert!(live["metadata"]["labels"].get("modifiedAt").is_some());
            if driver == Driver::Secret {
                assert_eq!(live["type"], "helm.sh/release.v1");
            }
            assert_eq!(s.list_all(None).unwrap().len(), 3);
            assert_eq!(s.delete("default", "db", 1).unwrap().name, "db");
            assert!(matches!(
                s.get("default", "db", 1),
                Err(StoreError::NotFound)
            ));
            // An undecodable object is skipped in listings, an error on get.
            let mut bad = live.clone();
            bad["metadata"] = serde_json::json!({"name": "sh.helm.release.v1.bad.v1",
                "namespace": "default", "labels": {"owner": "helm", "name": "bad"}});
            bad["data"] = serde_json::json!({"release": "bm90IGEgcmVsZWFzZQ=="});
            c.create(&bad).unwrap();
            assert_eq!(s.list_all(Some("default")).unwrap().len(), 2);
            assert!(s.get("default", "bad", 1).is_err());
        }
    }

    #[test]
    fn oversized_records_are_refused_before_writing() {
        let c: Arc<dyn Cluster> = Arc::new(SimCluster::in_memory());
        let s = ObjectStore::secrets(c.clone());
        let mut r = rel("big", 3, Status::PendingInstall);
        let mut x: u64 = 7;
        r.manifest = (0..1_100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'!' + (x % 90) as u8)
            })
            .collect();
        let e = s.create(&r).unwrap_err().to_string();
        assert!(e.contains("release big revision 3"), "{e}");
        assert!(e.contains("bytes"), "{e}");
        assert!(c.list("", "Secret", None, &[]).unwrap().is_empty());
    }
}
