//! `rudder-upgrader demo`: the whole story on the simulated cluster and
//! the file store, in a scratch directory, with no cluster and no server.
//!
//! 1. install the control plane (Kubernetes v1.21.4, one controller,
//!    kubelets, node-local-dns and metrics-server);
//! 2. upgrade it to v1.22.2;
//! 3. try an upgrade whose kube-apiserver carries a bad flag, so its pods
//!    never become ready (the simulated cluster's `sim.rudder.io/ready:
//!    never` annotation plays the bad flag);
//! 4. watch it roll back, and show `history kube-apiserver`.
//!
//! [`run`] checks every step and returns whether all behaved as expected.
//!
//! Part of the binary, not of the library; the upgrader's tests include
//! this file (`#[path]`) for its config writer and targets.
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{Cluster, ObjectKey};
use rudder::exec::Outcome;
use rudder::targets::Targets;
use rudder::upgrader::{self, config::Loaded, Options, UpgraderError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The Kubernetes version the demo installs.
pub const FROM: &str = "v1.21.4";
/// The version it upgrades to.
pub const TO: &str = "v1.22.2";
/// The bad flag of step 3.
pub const BAD_FLAG: &str = "--enable-admission-plugins=NoSuchPlugin";

/// Writes placeholder certificates (under `dir/certs`) and a config for
/// `version` to `dir/config-<name>.yaml`; `broken` adds the bad flag and
/// the annotation that keeps kube-apiserver's pods from becoming ready.
/// Returns the config's path.
pub fn write_config(
    dir: &Path,
    name: &str,
    version: &str,
    broken: bool,
) -> std::io::Result<PathBuf> {
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs)?;
    for (file, what) in [
        ("ca.crt", "CERTIFICATE"),
        ("ca.key", "RSA PRIVATE KEY"),
        ("apiserver.crt", "CERTIFICATE"),
        ("apiserver.key", "RSA PRIVATE KEY"),
        ("service-account.key", "RSA PRIVATE KEY"),
        ("service-account.pub", "PUBLIC KEY"),
    ] {
        let body = format!(
            "-----BEGIN {what}-----\n(demo placeholder for {file}; the simulated cluster does not check it)\n-----END {what}-----\n"
        );
        std::fs::write(certs.join(file), body)?;
    }
    let mut text = format!(
        "# rudder-upgrader demo config ({name})\n\
         kubernetesVersion: {version}\n\
         controllers: 1\n\
         networkPlugin: calico\n\
         selfHostedKubelet: true\n\
         podCIDR: 10.2.0.0/16\n\
         serviceCIDR: 10.3.0.0/16\n\
         clusterDomain: cluster.local\n\
         etcdServers: [https://10.0.0.10:2379]\n\
         components: [node-local-dns, metrics-server]\n\
         bootstrapTokens:\n\
         - tokenId: 07401b\n  tokenSecret: f395accd246ae52d\n\
         certificates:\n\
         \x20 caCert: certs/ca.crt\n\
         \x20 caKey: certs/ca.key\n\
         \x20 apiserverCert: certs/apiserver.crt\n\
         \x20 apiserverKey: certs/apiserver.key\n\
         \x20 serviceAccountKey: certs/service-account.key\n\
         \x20 serviceAccountPub: certs/service-account.pub\n"
    );
    if broken {
        text.push_str(&format!(
            "apiserverExtraFlags: [\"{BAD_FLAG}\"]\n\
             # On the simulated cluster: the pods with the bad flag never become ready.\n\
             workloadAnnotations:\n\
             \x20 kube-apiserver:\n\
             \x20   sim.rudder.io/ready: never\n"
        ));
    }
    let path = dir.join(format!("config-{name}.yaml"));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// How fast the demo's simulated cluster converges and how long a
/// release may take.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The simulated cluster's ready delay.
    pub ready_delay: Duration,
    /// Each release's deadline.
    pub timeout: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            ready_delay: Duration::from_millis(200),
            timeout: Duration::from_secs(3),
        }
    }
}

/// Opens the demo's targets in `dir`: `sim:DIR/cluster`, `file:DIR/store`.
pub fn targets(dir: &Path, timing: Timing) -> Result<Targets, UpgraderError> {
    let cdir = dir.join("cluster");
    let sim = SimCluster::open(&cdir)
        .map_err(rudder::targets::TargetsError::from)?
        .with_default_delay(timing.ready_delay);
    let cluster: Arc<dyn Cluster> = Arc::new(sim);
    Ok(Targets::with_cluster(
        &format!("file:{}", dir.join("store").display()),
        &format!("sim:{}", cdir.display()),
        cluster,
    )?)
}

struct Step<'o> {
    out: &'o mut (dyn Write + Send),
    ok: bool,
}

impl Step<'_> {
    fn check(&mut self, what: &str, ok: bool) -> std::io::Result<()> {
        writeln!(
            self.out,
            "[{}] {what}",
            if ok { "ok" } else { "UNEXPECTED" }
        )?;
        self.ok &= ok;
        Ok(())
    }
}

fn image_of(t: &Targets) -> (String, Vec<String>) {
    let key = ObjectKey::new(
        "apps",
        "Deployment",
        upgrader::control_plane::NAMESPACE,
        "kube-apiserver",
    );
    let live = t.cluster.get(&key).ok().flatten().unwrap_or_default();
    let c = &live["spec"]["template"]["spec"]["containers"][0];
    let image = c["image"].as_str().unwrap_or_default().to_string();
    let cmd = c["command"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    (image, cmd)
}

/// Runs the demo in `dir`, printing to `out` (wait progress to
/// `progress`). Returns whether every step behaved as expected.
pub fn run(
    dir: &Path,
    timing: Timing,
    out: &mut (dyn Write + Send),
    mut progress: Option<&mut (dyn Write + Send)>,
) -> Result<bool, UpgraderError> {
    let t = targets(dir, timing)?;
    let opts = Options {
        upgrade_kubelets: true,
        timeout: timing.timeout,
        poll: Duration::from_millis(50),
        ..Options::default()
    };
    let targets_flags = "--store file:$DIR/store --cluster sim:$DIR/cluster";
    let flags = format!("{targets_flags} --upgrade-kubelets --confirm");
    let mut step = Step { out, ok: true };
    writeln!(step.out, "DIR={}", dir.display())?;
    writeln!(
        step.out,
        "Simulated cluster sim:$DIR/cluster (pods ready {} after each write), store file:$DIR/store, timeout {} per component.",
        rudder::duration::format(timing.ready_delay),
        rudder::duration::format(timing.timeout)
    )?;

    let stages: [(&str, &str, &str, bool); 3] = [
        ("install", FROM, "1. Install the control plane", false),
        ("upgrade", TO, "2. Upgrade the control plane", false),
        (
            "broken",
            TO,
            "3. Upgrade with a bad kube-apiserver flag",
            true,
        ),
    ];
    let mut results = Vec::new();
    for (name, version, title, broken) in stages {
        let path = write_config(dir, name, version, broken)?;
        writeln!(step.out, "\n==> {title} (Kubernetes {version})")?;
        writeln!(
            step.out,
            "$ rudder-upgrader apply --config $DIR/config-{name}.yaml {flags}"
        )?;
        let loaded = Loaded::from_file(&path)?;
        let releases = upgrader::desired_releases(&loaded, &opts)?;
        let plan = upgrader::plan(&t, &releases)?;
        write!(step.out, "{}", upgrader::summary(&plan))?;
        let retry = format!("rudder-upgrader apply --config $DIR/config-{name}.yaml {flags}");
        let r = upgrader::apply(
            &t,
            &plan,
            &opts,
            step.out,
            progress
                .as_mut()
                .map(|p| &mut **p as &mut (dyn Write + Send)),
            false,
            &retry,
        )?;
        writeln!(step.out, "(exit code {})", if r.success() { 0 } else { 1 })?;
        results.push(r);
    }
    writeln!(step.out, "\n==> 4. What happened")?;
    let outcomes = |i: usize| -> Vec<Outcome> {
        results[i]
            .report
            .releases
            .iter()
            .map(|o| o.outcome.clone())
            .collect()
    };
    let n = results[0].report.releases.len();
    step.check(
        &format!("step 1 installed all {n} components"),
        outcomes(0).iter().all(|o| *o == Outcome::Installed),
    )?;
    let upgraded: Vec<String> = results[1]
        .report
        .releases
        .iter()
        .filter(|o| o.outcome == Outcome::Upgraded)
        .map(|o| o.release.trim_start_matches("kube-system/").to_string())
        .collect();
    step.check(
        &format!(
            "step 2 upgraded {}; the rest was up to date",
            upgraded.join(", ")
        ),
        results[1].success()
            && upgraded.iter().any(|u| u == "kube-apiserver")
            && upgraded.iter().any(|u| u == "kubernetes"),
    )?;
    let o3 = outcomes(2);
    let api = o3.get(2).map(ToString::to_string).unwrap_or_default();
    step.check(
        &format!("step 3 failed at kube-apiserver and rolled it back ({api}); the {} components after it were not attempted", o3.iter().skip(3).count()),
        results[2].failed.as_deref() == Some("kube-apiserver")
            && api == "rolled-back"
            && o3.iter().skip(3).all(|o| *o == Outcome::NotAttempted)
            && o3.iter().take(2).all(|o| *o == Outcome::Noop),
    )?;
    let (image, cmd) = image_of(&t);
    step.check(
        &format!("kube-apiserver runs {image} again, without the bad flag"),
        image.ends_with(TO) && !cmd.iter().any(|c| c == BAD_FLAG),
    )?;
    writeln!(
        step.out,
        "\n$ rudder-upgrader history kube-apiserver {targets_flags}"
    )?;
    let h = upgrader::history(&t, "kube-apiserver")?;
    write!(step.out, "{h}")?;
    let hist = t
        .store
        .history(upgrader::control_plane::NAMESPACE, "kube-apiserver")?;
    let mut statuses: Vec<(u64, String, String)> = hist
        .iter()
        .map(|r| {
            (
                r.version,
                r.info.status.to_string(),
                r.info.description.clone(),
            )
        })
        .collect();
    statuses.sort();
    let want = ["superseded", "superseded", "failed", "deployed"];
    step.check(
        "history: 1 and 2 superseded, 3 failed, 4 deployed as \"Rollback to 2\"",
        statuses.len() == 4
            && statuses.iter().zip(want).all(|(s, w)| s.1 == w)
            && statuses[3].2 == "Rollback to 2",
    )?;
    let ok = step.ok;
    writeln!(
        step.out,
        "\n{}",
        if ok {
            "Demo finished: every step behaved as expected."
        } else {
            "Demo FAILED: some step did not behave as expected."
        }
    )?;
    Ok(ok)
}
