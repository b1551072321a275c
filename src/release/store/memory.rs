//! An in-process store (Helm's memory driver), for tests and dry runs.
use super::{same_record, sort_by_version, Skipped, Store, StoreError};
use crate::release::codec::{self, Write};
use crate::release::model::Release;
use crate::release::time::HelmTime;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Records kept in memory, keyed by (namespace, storage key).
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<BTreeMap<(String, String), Release>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Release>> {
        // A poisoned lock only means another thread panicked mid-test; the
        // map itself is always consistent (single insert/remove per write).
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn stored(rel: &Release, w: Write) -> Release {
    let mut r = rel.clone();
    r.labels = codec::storage_labels(rel, w, HelmTime::now().unix());
    r
}

impl Store for MemoryStore {
    fn create(&self, rel: &Release) -> Result<(), StoreError> {
        let k = (rel.namespace.clone(), codec::key(&rel.name, rel.version));
        let mut m = self.lock();
        if m.contains_key(&k) {
            return Err(StoreError::AlreadyExists);
        }
        m.insert(k, stored(rel, Write::Create));
        Ok(())
    }

    fn update(&self, expected: &Release, new: &Release) -> Result<(), StoreError> {
        let key = codec::key(&new.name, new.version);
        let k = (new.namespace.clone(), key.clone());
        let mut m = self.lock();
        let cur = m.get(&k).ok_or(StoreError::NotFound)?;
        if !same_record(cur, expected) {
            return Err(StoreError::Conflict {
                key,
                namespace: new.namespace.clone(),
            });
        }
        m.insert(k, stored(new, Write::Update));
        Ok(())
    }

    fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        self.lock()
            .get(&(namespace.to_string(), codec::key(name, version)))
            .cloned()
            .ok_or(StoreError::NotFound)
    }

    fn history_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        // The release's keys share a prefix: a range, not a scan of every
        // record of the store (which made a plan's run quadratic).
        let prefix = codec::key_prefix(name);
        let start = (namespace.to_string(), prefix.clone());
        let mut v: Vec<Release> = self
            .lock()
            .range(start..)
            .take_while(|((ns, key), _)| ns == namespace && key.starts_with(&prefix))
            .filter(|(_, r)| r.name == name)
            .map(|(_, r)| r.clone())
            .collect();
        sort_by_version(&mut v);
        Ok((v, Vec::new()))
    }

    fn list_all_reporting(
        &self,
        namespace: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        let v = self
            .lock()
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, r)| r.clone())
            .collect();
        Ok((v, Vec::new()))
    }

    fn delete(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        self.lock()
            .remove(&(namespace.to_string(), codec::key(name, version)))
            .ok_or(StoreError::NotFound)
    }
}
