//! What the planner is asked for: desired releases and their options.
use crate::chart::Chart;
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How the executor decides that an object is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WaitStrategy {
    /// Helm 3's readiness rules per kind (`pkg/kube/ready.go`).
    #[default]
    Legacy,
    /// kstatus, Helm 4's default (`Current` status, generation observed).
    Kstatus,
    /// Do not wait.
    None,
}

impl WaitStrategy {
    /// The name used in plans and flags (`legacy`, `kstatus`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitStrategy::Legacy => "legacy",
            WaitStrategy::Kstatus => "kstatus",
            WaitStrategy::None => "none",
        }
    }
}

/// Per-release options (the flags Helm's install and upgrade take).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseOptions {
    /// Roll back (or uninstall, for an install) when the release fails.
    /// Implies waiting, as Helm's `--atomic` does.
    pub atomic: bool,
    /// Wait for the release's objects to become ready.
    pub wait: bool,
    /// Which readiness rules the wait uses.
    pub wait_strategy: WaitStrategy,
    /// Also wait for Jobs to complete (`--wait-for-jobs`).
    pub wait_for_jobs: bool,
    /// One deadline for the whole release (Helm's `--timeout`, default 5m).
    #[serde(with = "duration_secs")]
    pub timeout: Duration,
    /// How many revisions to keep (`--history-max`; 0 is unlimited).
    pub history_max: usize,
    /// Create the release namespace when it is missing (on by default, as
    /// in a releases file; Helm's CLI needs `--create-namespace`).
    pub create_namespace: bool,
    /// Adopt existing objects whatever their ownership (`--take-ownership`).
    pub take_ownership: bool,
    /// The description recorded on success (`--description`); empty for
    /// Helm's ("Install complete", "Upgrade complete").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

impl Default for ReleaseOptions {
    /// Atomic and waiting (Helm 3's readiness rules, no waiting for Jobs),
    /// Helm's 5 minute timeout and history of 10, the namespace created
    /// when missing, no adoption, Helm's descriptions.
    fn default() -> Self {
        ReleaseOptions {
            atomic: true,
            wait: true,
            wait_strategy: WaitStrategy::Legacy,
            wait_for_jobs: false,
            timeout: Duration::from_secs(300),
            history_max: 10,
            create_namespace: true,
            take_ownership: false,
            description: String::new(),
        }
    }
}

impl ReleaseOptions {
    /// Whether the executor waits: `wait`, or implied by `atomic`.
    pub fn waits(&self) -> bool {
        (self.wait || self.atomic) && self.wait_strategy != WaitStrategy::None
    }
}

pub(crate) mod duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}

pub use crate::duration::{format as format_duration, parse as parse_duration};

/// A `namespace/name` reference to another release.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReleaseRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for ReleaseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A dependency on another release, with why it exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Need {
    /// The release that must be ready first.
    pub release: ReleaseRef,
    /// Why (shown in plans; empty when not given).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// One release as it should be.
#[derive(Debug, Clone)]
pub struct DesiredRelease {
    /// Release name.
    pub name: String,
    /// Release namespace.
    pub namespace: String,
    /// The chart (loaded, or built by `chart_from_component`).
    pub chart: Arc<Chart>,
    /// User-supplied values (what Helm records as `config`).
    pub values: BTreeMap<String, Node>,
    /// Releases that must be ready first.
    pub needs: Vec<Need>,
    /// Options.
    pub options: ReleaseOptions,
    /// Plan this release's removal instead (a releases file's
    /// `installed: false`).
    pub absent: bool,
}

impl DesiredRelease {
    /// A release of `chart` with no values, no needs and default options.
    pub fn new(name: &str, namespace: &str, chart: Chart) -> DesiredRelease {
        DesiredRelease {
            name: name.to_string(),
            namespace: namespace.to_string(),
            chart: Arc::new(chart),
            values: BTreeMap::new(),
            needs: Vec::new(),
            options: ReleaseOptions::default(),
            absent: false,
        }
    }

    /// The `namespace/name` of this release.
    pub fn reference(&self) -> ReleaseRef {
        ReleaseRef {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print_as_go() {
        for (s, secs) in [
            ("20s", 20.0),
            ("1m30s", 90.0),
            ("500ms", 0.5),
            ("2h", 7200.0),
            ("1.5s", 1.5),
            ("0", 0.0),
        ] {
            assert_eq!(
                parse_duration(s).unwrap(),
                Duration::from_secs_f64(secs),
                "{s}"
            );
        }
        for bad in ["", "20", "s", "1x", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(format_duration(Duration::from_secs(20)), "20s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
    }
}
