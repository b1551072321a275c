//! rudder creates exactly the PostgreSQL schema real Helm's SQL driver
//! creates (tables, columns, indexes, row security, migration rows), and
//! takes its connection from `PG*` variables when the URL has none.
mod release_common;

use release_common::*;

fn describe(db: &TestDb) -> Vec<String> {
    let mut c = db.client();
    let mut out = Vec::new();
    for r in c
        .query(
            "SELECT table_name, column_name, data_type, coalesce(character_maximum_length, 0), is_nullable, coalesce(column_default, '')
             FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
            &[],
        )
        .unwrap()
    {
        let (t, c, ty, len, null, def): (String, String, String, i32, String, String) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
        out.push(format!("column {t}.{c} {ty}({len}) nullable={null} default={def}"));
    }
    for r in c
        .query(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexdef",
            &[],
        )
        .unwrap()
    {
        out.push(format!("index {}", r.get::<_, String>(0)));
    }
    for r in c
        .query(
            "SELECT relname, relrowsecurity FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY relname",
            &[],
        )
        .unwrap()
    {
        out.push(format!("table {} rls={}", r.get::<_, String>(0), r.get::<_, bool>(1)));
    }
    for r in c
        .query("SELECT grantee, table_name, privilege_type FROM information_schema.role_table_grants WHERE grantee = 'PUBLIC' ORDER BY 2, 3", &[])
        .unwrap()
    {
        out.push(format!("grant {} {} {}", r.get::<_, String>(0), r.get::<_, String>(1), r.get::<_, String>(2)));
    }
    for r in c
        .query("SELECT id FROM gorp_migrations ORDER BY id", &[])
        .unwrap()
    {
        out.push(format!("migration {}", r.get::<_, String>(0)));
    }
    out
}

#[test]
fn schema_matches_helms() {
    let Some(ours) = TestDb::new("schema_r") else {
        return;
    };
    let Some(theirs) = TestDb::new("schema_h") else {
        return;
    };
    let port = start_fake_apiserver();
    let Some(helm) = HelmEnv::new(3, port, &theirs.url()) else {
        return;
    };
    helm.ok(&["list"]);
    rudder::release::store::postgres::PgStore::connect(&ours.url()).unwrap();
    // Opening again finds the schema in place and changes nothing.
    rudder::release::store::postgres::PgStore::connect(&ours.url()).unwrap();
    let (a, b) = (describe(&ours), describe(&theirs));
    assert!(a.len() > 20, "{a:?}");
    assert_eq!(a, b);
    // And Helm accepts rudder's schema as migrated.
    let Some(helm) = HelmEnv::new(4, port, &ours.url()) else {
        return;
    };
    helm.ok(&["list"]);
    assert_eq!(describe(&ours), b);
}

#[test]
fn connection_from_pg_variables() {
    let Some(db) = TestDb::new("pgenv") else {
        return;
    };
    let store = rudder::release::store::postgres::PgStore::connect(&db.url()).unwrap();
    let r = rudder::release::Releases::new(&store);
    let p = r
        .begin_install(
            "default",
            "envrel",
            rudder::release::RevisionContent::default(),
            false,
        )
        .unwrap();
    r.finish_install(&p, Ok(()), None).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["list", "-q", "--store", "postgresql:"])
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", "5432")
        .env("PGUSER", "postgres")
        .env("PGDATABASE", &db.name)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "envrel\n");
    // libpq's key=value form, as Helm's driver also accepts it.
    let dsn = format!(
        "host=127.0.0.1 port=5432 user=postgres dbname={} sslmode=disable",
        db.name
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["list", "-q", "--store", &dsn])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "envrel\n");
}

#[test]
fn bad_store_is_a_helm_style_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["list", "--store", "bogus://x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("Error: invalid store \"bogus://x\""),
        "{err}"
    );
}
