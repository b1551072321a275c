//! `rudder list --selector/-l` and `--time-format` against real Helm 3
//! (`HELM_DRIVER=sql`) on the same PostgreSQL records, written by Helm
//! with `--labels`.
mod release_common;

use release_common::*;

#[test]
fn list_selector_and_time_format_match_helm3() {
    let Some(db) = TestDb::new("lsel") else {
        return;
    };
    let port = start_fake_apiserver();
    let Some(helm) = HelmEnv::new(3, port, &db.url()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chart = notes_chart(dir.path(), "0.1.0");
    let c = chart.to_str().unwrap();
    helm.ok(&["install", "r1", c, "--labels", "team=a,tier=web,n=5"]);
    helm.ok(&["upgrade", "r1", c, "--labels", "tier=db"]);
    helm.ok(&["install", "r2", c, "--labels", "team=b,n=12"]);
    helm.ok(&["install", "r3", c]);
    helm.ok(&["install", "r4", c, "-n", "other", "--labels", "team=a"]);
    helm.ok(&["install", "r5", c, "--labels", "team=a"]);
    helm.ok(&["uninstall", "r5", "--keep-history"]);

    let selectors = [
        "team=a",
        "team==a",
        "team!=a",
        "team in (a,b)",
        "team notin (a)",
        "team",
        "!team",
        "team=a,tier=db",
        "tier=web",
        "n>6",
        "n<6",
        "owner=helm",
        "status=deployed",
        "name=r2",
        "version=2",
        "",
        "team=",
        "=a",
        "team in a",
        "team in (a",
        "team=a,",
        "team=a b",
        ",team",
        "!",
        "team ~ a",
        "n>x",
        "team in ()",
        "!team=a",
    ];
    let mut commands: Vec<Vec<String>> = Vec::new();
    for s in selectors {
        // Not with -A: Helm's SQL driver reads no labels when listing all
        // namespaces, so its selector sees none there.
        for extra in [&[][..], &["-a"][..], &["-o", "json"][..]] {
            let mut a = vec!["list".to_string(), "-l".into(), s.into()];
            a.extend(extra.iter().map(|x| x.to_string()));
            commands.push(a);
        }
    }
    commands.push(vec![
        "list".into(),
        "--selector".into(),
        "team=a".into(),
        "-q".into(),
    ]);
    for layout in [
        "2006-01-02",
        "2006-01-02 15:04:05Z0700",
        "Jan _2 15:04:05 MST 2006",
        "Monday, 02-Jan-06 03:04:05.000 PM -07:00",
        "15:04:05.999999999",
        "002 __2 Z07:00",
        "no layout here",
        "",
    ] {
        for extra in [&[][..], &["-o", "yaml"][..], &["-a", "-l", "team=a"][..]] {
            let mut a = vec!["list".to_string(), "--time-format".into(), layout.into()];
            a.extend(extra.iter().map(|x| x.to_string()));
            commands.push(a);
        }
    }
    let (mut same, mut failures) = (0, Vec::new());
    for args in &commands {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let h = helm.run(&a);
        let r = rudder(&db.url(), &a);
        let herr = h.stderr.lines().last().unwrap_or("").to_string();
        let rerr = r.stderr.lines().last().unwrap_or("").to_string();
        if h.ok == r.ok && h.stdout == r.stdout && (h.ok || herr == rerr) {
            same += 1;
        } else {
            failures.push(format!(
                "{a:?}:\nhelm (ok={}):\n{}{herr}\n--- rudder (ok={}):\n{}{rerr}",
                h.ok, h.stdout, r.ok, r.stdout
            ));
        }
    }
    eprintln!(
        "list --selector/--time-format: {same}/{} commands print as helm v3",
        commands.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
