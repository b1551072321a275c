//! An operator-style program against a real cluster: it brings its own
//! `kube::Client` (from `KUBECONFIG`, as kubectl finds it), hands it to
//! rudder, and keeps one release up to date, planning on every round and
//! applying only when the plan changes something.
//!
//! ```sh
//! KUBECONFIG=~/.kube/config cargo run --example operator -- NAMESPACE [ROUNDS]
//! ```
//!
//! The namespace need not exist: the release creates it. Records are
//! Helm's Secrets, so `helm history -n NAMESPACE hello` reads them.
use rudder::plan::{DesiredRelease, ReleaseAction};
use std::collections::BTreeMap;
use std::time::Duration;

fn chart(round: u32) -> Result<rudder::Chart, Box<dyn std::error::Error>> {
    let mut files = BTreeMap::new();
    files.insert(
        "configmap.yaml".to_string(),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  generation: \"{}\"\n",
            round / 2
        ),
    );
    Ok(rudder::chart::chart_from_manifests(
        "hello", "default", &files,
    )?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let namespace = args.next().ok_or("usage: operator NAMESPACE [ROUNDS]")?;
    let rounds: u32 = args.next().map(|r| r.parse()).transpose()?.unwrap_or(4);

    // The caller's own client, on the caller's runtime.
    let kube = rudder::kube::Client::try_default().await?;
    let client = rudder::Client::builder().kube_client(kube).build().await?;

    for round in 0..rounds {
        let mut release = DesiredRelease::new("hello", &namespace, chart(round)?);
        release.options.timeout = Duration::from_secs(60);
        let plan = client.plan(&[release]).await?;
        let action = plan.releases[0].action;
        if action == ReleaseAction::Noop {
            println!("round {round}: up to date");
        } else {
            let report = client.apply(&plan).await?;
            let r = &report.releases[0];
            println!("round {round}: {} (revision {})", r.outcome, r.revision);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let history = client.history(&namespace, "hello").await?;
    println!("revisions: {}", history.len());
    Ok(())
}
