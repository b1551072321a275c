//! Plan and apply on the simulated cluster, then read the history: the
//! whole flow of a release, with the async client.
//!
//! ```sh
//! cargo run --example plan_apply [DIR]
//! ```
//!
//! DIR (default: a fresh temporary directory) holds the file store and the
//! simulated cluster. It plans three times: two replicas (an install), the
//! same again (a `noop`: nothing is written), then three (an upgrade).
use rudder::plan::{DesiredRelease, ReleaseAction};
use std::collections::BTreeMap;

fn chart(replicas: u32) -> Result<rudder::Chart, Box<dyn std::error::Error>> {
    let mut files = BTreeMap::new();
    files.insert(
        "deployment.yaml".to_string(),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n"
        ),
    );
    Ok(rudder::chart::chart_from_manifests("web", "apps", &files)?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp;
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            tmp = std::env::temp_dir().join(format!("rudder-plan-apply-{}", std::process::id()));
            tmp.clone()
        }
    };
    let client = rudder::Client::builder()
        .store(format!("file:{}", dir.join("store").display()))
        .cluster(format!("sim:{}", dir.join("cluster").display()))
        .on_progress(|e| eprintln!("progress: {}", serde_json::to_string(e).unwrap_or_default()))
        .build()
        .await?;

    for replicas in [2, 2, 3] {
        let release = DesiredRelease::new("web", "apps", chart(replicas)?);
        let plan = client.plan(&[release]).await?;
        for r in &plan.releases {
            println!(
                "plan: {}/{} {} -> revision {}",
                r.namespace,
                r.name,
                r.action.as_str(),
                r.to.revision
            );
        }
        if plan
            .releases
            .iter()
            .all(|r| r.action == ReleaseAction::Noop)
        {
            println!("nothing to do");
            continue;
        }
        let report = client.apply(&plan).await?;
        for r in &report.releases {
            println!(
                "applied: {} {} (revision {})",
                r.release, r.outcome, r.revision
            );
        }
    }

    for rec in client.history("apps", "web").await? {
        println!(
            "history: revision {} {} {:?}",
            rec.version, rec.info.status, rec.info.description
        );
    }
    Ok(())
}
