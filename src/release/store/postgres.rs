//! PostgreSQL in Helm's SQL driver schema (`HELM_DRIVER=sql`).
//!
//! Tables, columns, keys and bodies are exactly Helm's, and the
//! `gorp_migrations` rows (`custom_labels`, `init`) are those Helm's
//! migrator writes, so real Helm finds its migrations applied and reads and
//! writes the same rows. What Helm's schema has no room for is done with
//! PostgreSQL itself: a create is one transaction (row plus custom labels)
//! that fails on the existing key; an update locks the row (`SELECT ... FOR
//! UPDATE`) and compares it with the caller's copy before writing; schema
//! setup runs under an advisory lock so concurrent first users do not race.
use super::{check_record, same_record, with_system_labels, Skipped, Store, StoreError};
use crate::release::codec;
use crate::release::model::Release;
use crate::release::time::HelmTime;
use postgres::{Client, NoTls};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Helm's migrations, in the order its migrator applies them (sorted by id).
const MIGRATIONS: [(&str, &str); 2] = [
    (
        "custom_labels",
        "CREATE TABLE custom_labels_v1 (
            releaseKey VARCHAR(64),
            releaseNamespace VARCHAR(67),
            key VARCHAR(317),
            value VARCHAR(63)
        );
        CREATE INDEX ON custom_labels_v1 (releaseKey, releaseNamespace);
        GRANT ALL ON custom_labels_v1 TO PUBLIC;
        ALTER TABLE custom_labels_v1 ENABLE ROW LEVEL SECURITY;",
    ),
    (
        "init",
        "CREATE TABLE releases_v1 (
            key VARCHAR(90),
            type VARCHAR(64) NOT NULL,
            body TEXT NOT NULL,
            name VARCHAR(64) NOT NULL,
            namespace VARCHAR(64) NOT NULL,
            version INTEGER NOT NULL,
            status TEXT NOT NULL,
            owner TEXT NOT NULL,
            createdAt INTEGER NOT NULL,
            modifiedAt INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY(key, namespace)
        );
        CREATE INDEX ON releases_v1 (key, namespace);
        CREATE INDEX ON releases_v1 (version);
        CREATE INDEX ON releases_v1 (status);
        CREATE INDEX ON releases_v1 (owner);
        CREATE INDEX ON releases_v1 (createdAt);
        CREATE INDEX ON releases_v1 (modifiedAt);
        GRANT ALL ON releases_v1 TO PUBLIC;
        ALTER TABLE releases_v1 ENABLE ROW LEVEL SECURITY;",
    ),
];

/// An arbitrary, fixed advisory lock id for schema setup ("rudder" in ASCII).
const SETUP_LOCK: i64 = 0x7275_6464_6572;

/// A release store in a PostgreSQL database.
pub struct PgStore {
    client: Mutex<Client>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgStore")
    }
}

fn sql(e: postgres::Error) -> StoreError {
    StoreError::Sql(match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    })
}

/// Turns a `postgresql://` URL into connection parameters; the `PG*`
/// variables fill what the URL leaves out, and `sslmode=disable` (all Helm's
/// examples use it) is accepted since rudder connects without TLS.
fn config(url: &str) -> Result<postgres::Config, StoreError> {
    let mut cfg: postgres::Config = if url == "postgresql:" || url == "postgres:" {
        postgres::Config::new()
    } else {
        url.parse()
            .map_err(|e: postgres::Error| StoreError::InvalidUrl(format!("{url}: {e}")))?
    };
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if cfg.get_hosts().is_empty() {
        cfg.host(&env("PGHOST").unwrap_or_else(|| "localhost".into()));
    }
    if cfg.get_ports().is_empty() {
        if let Some(p) = env("PGPORT").and_then(|p| p.parse().ok()) {
            cfg.port(p);
        }
    }
    if cfg.get_user().is_none() {
        cfg.user(
            &env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".into()),
        );
    }
    if cfg.get_dbname().is_none() {
        if let Some(d) = env("PGDATABASE") {
            cfg.dbname(&d);
        }
    }
    if cfg.get_password().is_none() {
        if let Some(p) = env("PGPASSWORD") {
            cfg.password(&p);
        }
    }
    Ok(cfg)
}

/// [`check_record`] for a row: a record with no namespace was written
/// under `default` (as [`PgStore`]'s create does).
fn check_row(
    rel: &Release,
    namespace: &str,
    name: &str,
    version: u64,
) -> Result<(), super::RecordMismatch> {
    if rel.namespace.is_empty() && namespace == "default" {
        let mut r = rel.clone();
        r.namespace = namespace.to_string();
        return check_record(&r, namespace, name, version);
    }
    check_record(rel, namespace, name, version)
}

impl PgStore {
    /// Connects and makes sure Helm's schema is present (creating it, with
    /// Helm's migration bookkeeping, when it is not).
    pub fn connect(url: &str) -> Result<PgStore, StoreError> {
        let mut client = config(url)?.connect(NoTls).map_err(sql)?;
        ensure_schema(&mut client)?;
        Ok(PgStore {
            client: Mutex::new(client),
        })
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        self.client.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn ensure_schema(c: &mut Client) -> Result<(), StoreError> {
    let mut tx = c.transaction().map_err(sql)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SETUP_LOCK])
        .map_err(sql)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS gorp_migrations (id text NOT NULL PRIMARY KEY, applied_at timestamp with time zone)",
    )
    .map_err(sql)?;
    let applied: Vec<String> = tx
        .query("SELECT id FROM gorp_migrations", &[])
        .map_err(sql)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for (id, ddl) in MIGRATIONS {
        if applied.iter().any(|a| a == id) {
            continue;
        }
        tx.batch_execute(ddl).map_err(sql)?;
        tx.execute(
            "INSERT INTO gorp_migrations (id, applied_at) VALUES ($1, now())",
            &[&id],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

fn now_i32() -> i32 {
    i32::try_from(HelmTime::now().unix()).unwrap_or(i32::MAX)
}

fn custom_labels(
    c: &mut impl postgres::GenericClient,
    key: &str,
    namespace: &str,
) -> Result<BTreeMap<String, String>, StoreError> {
    let rows = c
        .query(
            "SELECT key, value FROM custom_labels_v1 WHERE releaseKey = $1 AND releaseNamespace = $2",
            &[&key, &namespace],
        )
        .map_err(sql)?;
    let mut out = BTreeMap::new();
    for r in rows {
        let k: Option<String> = r.get(0);
        let v: Option<String> = r.get(1);
        out.insert(k.unwrap_or_default(), v.unwrap_or_default());
    }
    Ok(codec::user_labels(&out))
}

fn version_i32(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl PgStore {
    /// The rows selected, decoded and checked against their key and
    /// namespace ([`super::check_record`]); those that fail are skipped,
    /// as Helm skips rows that do not decode, and returned for the caller
    /// to report.
    fn select_reporting(
        &self,
        where_: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        let mut c = self.client();
        let rows = c
            .query(
                &format!("SELECT key, namespace, body FROM releases_v1 WHERE {where_}"),
                params,
            )
            .map_err(sql)?;
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        for r in rows {
            let key: String = r.get(0);
            let ns: String = r.get(1);
            let body: String = r.get(2);
            let (name, version) = codec::parse_key(&key)
                .or_else(|| super::file::overflowing_key(&key))
                .map_or((String::new(), u64::MAX), |(n, v)| (n.to_string(), v));
            let checked = codec::decode(&body)
                .map_err(|e| e.to_string())
                .and_then(|rel| {
                    check_row(&rel, &ns, &name, version).map_err(|e| e.to_string())?;
                    Ok(rel)
                });
            match checked {
                Ok(mut rel) => {
                    rel.labels = custom_labels(&mut *c, &key, &ns)?;
                    out.push(rel);
                }
                Err(reason) => skipped.push(Skipped {
                    location: format!("postgresql releases_v1 row (key {key:?}, namespace {ns:?})"),
                    key,
                    namespace: ns,
                    name,
                    version,
                    reason,
                }),
            }
        }
        Ok((out, skipped))
    }
}

impl Store for PgStore {
    fn create(&self, rel: &Release) -> Result<(), StoreError> {
        let key = codec::key(&rel.name, rel.version);
        let ns = if rel.namespace.is_empty() {
            "default"
        } else {
            rel.namespace.as_str()
        };
        let body = codec::encode(rel)?;
        let mut c = self.client();
        let mut tx = c.transaction().map_err(sql)?;
        let n = tx
            .execute(
                "INSERT INTO releases_v1 (key, type, body, name, namespace, version, status, owner, createdAt)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (key, namespace) DO NOTHING",
                &[
                    &key,
                    &codec::RELEASE_TYPE,
                    &body,
                    &rel.name,
                    &ns,
                    &version_i32(rel.version),
                    &rel.info.status.as_str(),
                    &codec::OWNER,
                    &now_i32(),
                ],
            )
            .map_err(sql)?;
        if n == 0 {
            return Err(StoreError::AlreadyExists);
        }
        for (k, v) in codec::user_labels(&rel.labels) {
            tx.execute(
                "INSERT INTO custom_labels_v1 (releaseKey, releaseNamespace, key, value) VALUES ($1, $2, $3, $4)",
                &[&key, &ns, &k, &v],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    fn update(&self, expected: &Release, new: &Release) -> Result<(), StoreError> {
        let key = codec::key(&new.name, new.version);
        let ns = if new.namespace.is_empty() {
            "default"
        } else {
            new.namespace.as_str()
        };
        let body = codec::encode(new)?;
        let mut c = self.client();
        let mut tx = c.transaction().map_err(sql)?;
        let row = tx
            .query_opt(
                "SELECT body FROM releases_v1 WHERE key = $1 AND namespace = $2 FOR UPDATE",
                &[&key, &ns],
            )
            .map_err(sql)?
            .ok_or(StoreError::NotFound)?;
        let mut cur = codec::decode(row.get::<_, &str>(0))?;
        cur.labels = custom_labels(&mut tx, &key, ns)?;
        if !same_record(&cur, expected) {
            return Err(StoreError::Conflict {
                key,
                namespace: ns.to_string(),
            });
        }
        // As Helm's driver: the row is rewritten, custom labels are kept.
        tx.execute(
            "UPDATE releases_v1 SET body = $1, name = $2, version = $3, status = $4, owner = $5, modifiedAt = $6
             WHERE key = $7 AND namespace = $8",
            &[
                &body,
                &new.name,
                &version_i32(new.version),
                &new.info.status.as_str(),
                &codec::OWNER,
                &now_i32(),
                &key,
                &ns,
            ],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        let key = codec::key(name, version);
        let mut c = self.client();
        let row = c
            .query_opt(
                "SELECT body FROM releases_v1 WHERE key = $1 AND namespace = $2",
                &[&key, &namespace],
            )
            .map_err(sql)?
            .ok_or(StoreError::NotFound)?;
        let mut rel = codec::decode(row.get::<_, &str>(0))?;
        check_row(&rel, namespace, name, version).map_err(|reason| StoreError::Invalid {
            location: format!("postgresql releases_v1 row (key {key:?}, namespace {namespace:?})"),
            reason,
        })?;
        rel.labels = custom_labels(&mut *c, &key, namespace)?;
        Ok(rel)
    }

    fn history_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        let (mut v, skipped) = self.select_reporting(
            "name = $1 AND owner = $2 AND namespace = $3",
            &[&name, &codec::OWNER, &namespace],
        )?;
        super::sort_by_version(&mut v);
        Ok((v, skipped))
    }

    fn list_all_reporting(
        &self,
        namespace: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        let (v, skipped) = match namespace {
            Some(ns) => {
                self.select_reporting("owner = $1 AND namespace = $2", &[&codec::OWNER, &ns])?
            }
            None => self.select_reporting("owner = $1", &[&codec::OWNER])?,
        };
        Ok((v.into_iter().map(with_system_labels).collect(), skipped))
    }

    fn delete(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        let key = codec::key(name, version);
        let mut c = self.client();
        let mut tx = c.transaction().map_err(sql)?;
        let row = tx
            .query_opt(
                "DELETE FROM releases_v1 WHERE key = $1 AND namespace = $2 RETURNING body",
                &[&key, &namespace],
            )
            .map_err(sql)?
            .ok_or(StoreError::NotFound)?;
        let mut rel = codec::decode(row.get::<_, &str>(0))?;
        rel.labels = custom_labels(&mut tx, &key, namespace)?;
        tx.execute(
            "DELETE FROM custom_labels_v1 WHERE releaseKey = $1 AND releaseNamespace = $2",
            &[&key, &namespace],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(rel)
    }
}
