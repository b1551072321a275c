//! The release record, field for field as Helm v3 writes it.
//!
//! The serde form is Helm's stored JSON: Go struct field order, `omitempty`
//! where Helm has it, times via [`HelmTime`]. Helm 4 records (no `deleted`,
//! an extra `apply_method`) read into the same types; `apply_method` is kept so
//! a record Helm 4 wrote keeps it when rudder rewrites it.
use super::time::HelmTime;
use crate::chart::Chart;
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A release's state, with Helm's strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Status {
    /// `unknown`: the state is not known (also any unrecognised string).
    #[default]
    Unknown,
    /// `deployed`: the current release.
    Deployed,
    /// `uninstalled`: uninstalled with `--keep-history`.
    Uninstalled,
    /// `superseded`: replaced by a newer release.
    Superseded,
    /// `failed`: the operation failed.
    Failed,
    /// `uninstalling`: an uninstall is running.
    Uninstalling,
    /// `pending-install`: an install is running.
    PendingInstall,
    /// `pending-upgrade`: an upgrade is running.
    PendingUpgrade,
    /// `pending-rollback`: a rollback is running.
    PendingRollback,
}

impl Status {
    /// Every status, in Helm's declaration order.
    pub const ALL: [Status; 9] = [
        Status::Unknown,
        Status::Deployed,
        Status::Uninstalled,
        Status::Superseded,
        Status::Failed,
        Status::Uninstalling,
        Status::PendingInstall,
        Status::PendingUpgrade,
        Status::PendingRollback,
    ];

    /// Helm's string for this status.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }

    /// Parses Helm's string; anything else is `None`.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether an operation is in progress (`pending-*`), as Helm's `IsPending`.
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let s = Option::<String>::deserialize(d)?.unwrap_or_default();
        Ok(Status::parse(&s).unwrap_or(Status::Unknown))
    }
}

fn status_is_empty(_: &Status) -> bool {
    // Helm's Status is a string type with omitempty; every value we hold has
    // a non-empty name, so it is always written.
    false
}

/// `info`: when and how the release was deployed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Info {
    /// When revision 1 was deployed (copied forward by upgrades).
    #[serde(default)]
    pub first_deployed: HelmTime,
    /// When this revision was deployed.
    #[serde(default)]
    pub last_deployed: HelmTime,
    /// When the release was uninstalled (zero otherwise; written as `""`).
    #[serde(default)]
    pub deleted: HelmTime,
    /// A human-readable description (`Install complete`, `Rollback to 2`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The release's status.
    #[serde(default, skip_serializing_if = "status_is_empty")]
    pub status: Status,
    /// The rendered NOTES.txt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

/// When and how a hook last ran.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HookExecution {
    /// When the hook started (zero when it never ran).
    #[serde(default)]
    pub started_at: HelmTime,
    /// When the hook finished.
    #[serde(default)]
    pub completed_at: HelmTime,
    /// `Unknown`, `Running`, `Succeeded`, `Failed`, or `""` when it never ran.
    #[serde(default)]
    pub phase: String,
}

/// A hook of the release (`helm.sh/hook` annotated manifest).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Hook {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The template path (`chart/templates/job.yaml`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The rendered manifest.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// Events that trigger the hook (`pre-install`, `test`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// The last execution (always written).
    #[serde(default)]
    pub last_run: HookExecution,
    /// `helm.sh/hook-weight` (omitted when 0).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<String>,
    /// Helm 3.18+/4: `helm.sh/hook-output-log-policy` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_log_policies: Vec<String>,
}

impl From<&crate::render::RenderedHook> for Hook {
    /// The record of a rendered hook, before it runs (an empty last run).
    fn from(h: &crate::render::RenderedHook) -> Hook {
        Hook {
            name: h.head.name.clone(),
            kind: h.head.kind.clone(),
            path: h.source.clone(),
            manifest: h.content.clone(),
            events: h.events.iter().map(|e| e.as_str().to_string()).collect(),
            weight: h.weight,
            delete_policies: h.delete_policies.clone(),
            ..Hook::default()
        }
    }
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn config_is_empty(v: &BTreeMap<String, Node>) -> bool {
    v.is_empty()
}

/// One revision of a release, as Helm stores it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Release {
    /// The release name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Deployment information.
    #[serde(default)]
    pub info: Info,
    /// The chart this revision was made from (without subcharts, as Helm stores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<Chart>,
    /// The user-supplied values only (`--set`, `-f`).
    #[serde(
        default,
        skip_serializing_if = "config_is_empty",
        deserialize_with = "de_config"
    )]
    pub config: BTreeMap<String, Node>,
    /// The rendered manifest (no hooks, no CRDs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// The release's hooks.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "de_hooks"
    )]
    pub hooks: Vec<Hook>,
    /// The revision, starting at 1.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub version: u64,
    /// The namespace the release lives in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Helm 4 only: `csa` or `ssa`, how resources were applied.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub apply_method: String,
    /// rudder only: what its applies left on each object of the manifest
    /// (`namespace/Kind.group/name` -> `sha256:` digest of the document's
    /// text and of the object's fields under rudder's server-side apply,
    /// with their values), so that a plan need not read a document that
    /// provably did not change (`rudder::plan::planner`). Helm ignores the
    /// field, and drops it when it rewrites a record; a record without it
    /// only makes planning read every document.
    #[serde(
        default,
        rename = "rudder_applied",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub applied: BTreeMap<String, String>,
    /// Storage labels (`--labels`, plus the system labels on records read back).
    /// Not part of the JSON, as in Helm: they live on the storage object.
    #[serde(skip)]
    pub labels: BTreeMap<String, String>,
}

fn de_config<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Node>, D::Error> {
    Ok(Option::<BTreeMap<String, Node>>::deserialize(d)?.unwrap_or_default())
}

fn de_hooks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Hook>, D::Error> {
    Ok(Option::<Vec<Option<Hook>>>::deserialize(d)?
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect())
}

impl Release {
    /// `<chart name>-<chart version>`, or `MISSING` without a chart (Helm's `formatChartName`).
    pub fn chart_label(&self) -> String {
        match &self.chart {
            Some(c) => format!("{}-{}", c.metadata.name, c.metadata.version),
            None => "MISSING".into(),
        }
    }

    /// The chart's appVersion, or `MISSING` without a chart.
    pub fn app_version(&self) -> String {
        match &self.chart {
            Some(c) => c.metadata.app_version.clone(),
            None => "MISSING".into(),
        }
    }
}

#[cfg(test)]
mod display_tests {
    use super::Status;

    /// Tables line up: `{:<12}` pads a status like a string.
    #[test]
    fn status_honours_width_and_alignment() {
        assert_eq!(format!("{:<12}|", Status::Deployed), "deployed    |");
        assert_eq!(format!("{:>10}", Status::Failed), "    failed");
    }
}
