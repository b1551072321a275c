//! What `helm list`, `history`, `status` and `get` print, as data and text.
//!
//! The layouts are Helm v3.17.2's: tables are `gosuri/uitable` (every cell
//! padded to its column's width, cells joined by a tab), JSON is Go's
//! `encoding/json` encoder (HTML characters escaped, newline at the end) and
//! YAML is `sigs.k8s.io/yaml` (the JSON re-read and emitted by yaml.v2).
use super::model::{Release, Status};
use super::time::HelmTime;
use crate::yaml::Node;
use serde::Serialize;
use std::collections::BTreeMap;

/// Output format of `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Human-readable (Helm's `table`).
    #[default]
    Table,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

impl Format {
    /// Parses `table`, `json` or `yaml`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "json" => Some(Format::Json),
            "yaml" => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// A `gosuri/uitable` table: cells padded to the column width, joined by
/// tabs, rows by newlines, plus the final newline Helm's `EncodeTable` adds.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (ri, r) in rows.iter().enumerate() {
        if ri > 0 {
            out.push('\n');
        }
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            out.push_str(c);
            for _ in c.chars().count()..widths[i] {
                out.push(' ');
            }
        }
    }
    out.push('\n');
    out
}

/// Go's `json.Encoder.Encode`: compact JSON with `<`, `>`, `&`, U+2028 and
/// U+2029 escaped, and a trailing newline.
pub fn go_json<T: Serialize + ?Sized>(v: &T) -> String {
    let mut s = crate::gostd::json::marshal(v).unwrap_or_else(|_| "null".into());
    s.push('\n');
    s
}

/// `sigs.k8s.io/yaml.Marshal`: the value's JSON (Go's spelling), read into
/// a [`Node`] and emitted by [`crate::yaml::to_yaml`] as yaml.v2 does.
pub fn go_yaml<T: Serialize + ?Sized>(v: &T) -> String {
    let node: Node = crate::gostd::json::marshal(v)
        .ok()
        .and_then(|s| crate::yaml::json_from_str(&s).ok())
        .unwrap_or(Node::Null);
    crate::yaml::to_yaml(&node)
}

/// One row of `helm list -o json|yaml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListRow {
    /// Release name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Revision, as a string (as Helm writes it).
    pub revision: String,
    /// Last deployed, Go's `Time.String()` or `-`.
    pub updated: String,
    /// Status.
    pub status: String,
    /// `<chart>-<version>`.
    pub chart: String,
    /// The chart's appVersion.
    pub app_version: String,
}

/// `helm list` rows for these releases.
pub fn list_rows(rels: &[Release]) -> Vec<ListRow> {
    list_rows_with(rels, None)
}

/// [`list_rows`] with `--time-format` (a Go layout) for UPDATED.
pub fn list_rows_with(rels: &[Release], time_format: Option<&str>) -> Vec<ListRow> {
    rels.iter()
        .map(|r| ListRow {
            name: r.name.clone(),
            namespace: r.namespace.clone(),
            revision: r.version.to_string(),
            updated: match (r.info.last_deployed.is_zero(), time_format) {
                (true, _) => "-".into(),
                (false, Some(f)) if !f.is_empty() => r.info.last_deployed.format_go(f),
                (false, _) => r.info.last_deployed.to_go_string(),
            },
            status: r.info.status.to_string(),
            chart: r.chart_label(),
            app_version: r.app_version(),
        })
        .collect()
}

/// `helm list` output (`no_headers`: `--no-headers`, tables only).
pub fn list(rels: &[Release], format: Format, no_headers: bool) -> String {
    list_with(rels, format, no_headers, None)
}

/// [`list`] with `--time-format` (a Go layout such as `2006-01-02`) for
/// the UPDATED column (and field).
pub fn list_with(
    rels: &[Release],
    format: Format,
    no_headers: bool,
    time_format: Option<&str>,
) -> String {
    let rows = list_rows_with(rels, time_format);
    match format {
        Format::Json => go_json(&rows),
        Format::Yaml => go_yaml(&rows),
        Format::Table => {
            let mut t: Vec<Vec<String>> = Vec::new();
            if !no_headers {
                t.push(
                    [
                        "NAME",
                        "NAMESPACE",
                        "REVISION",
                        "UPDATED",
                        "STATUS",
                        "CHART",
                        "APP VERSION",
                    ]
                    .map(String::from)
                    .to_vec(),
                );
            }
            for r in rows {
                t.push(vec![
                    r.name,
                    r.namespace,
                    r.revision,
                    r.updated,
                    r.status,
                    r.chart,
                    r.app_version,
                ]);
            }
            table(&t)
        }
    }
}

/// One row of `helm history -o json|yaml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryRow {
    /// Revision.
    pub revision: u64,
    /// Last deployed (`""` when unset).
    pub updated: HelmTime,
    /// Status.
    pub status: String,
    /// `<chart>-<version>`.
    pub chart: String,
    /// The chart's appVersion.
    pub app_version: String,
    /// Description.
    pub description: String,
}

/// `helm history` rows: the newest `max` revisions, oldest first.
pub fn history_rows(hist: &[Release], max: usize) -> Vec<HistoryRow> {
    let mut v: Vec<&Release> = hist.iter().collect();
    v.sort_by_key(|r| std::cmp::Reverse(r.version));
    v.truncate(max);
    v.reverse();
    v.into_iter()
        .map(|r| HistoryRow {
            revision: r.version,
            updated: r.info.last_deployed,
            status: r.info.status.to_string(),
            chart: r.chart_label(),
            app_version: r.app_version(),
            description: r.info.description.clone(),
        })
        .collect()
}

/// `helm history` output.
pub fn history(hist: &[Release], max: usize, format: Format) -> String {
    let rows = history_rows(hist, max);
    match format {
        Format::Json => go_json(&rows),
        Format::Yaml => go_yaml(&rows),
        Format::Table => {
            let mut t = vec![[
                "REVISION",
                "UPDATED",
                "STATUS",
                "CHART",
                "APP VERSION",
                "DESCRIPTION",
            ]
            .map(String::from)
            .to_vec()];
            for r in rows {
                t.push(vec![
                    r.revision.to_string(),
                    r.updated.to_ansic(),
                    r.status,
                    r.chart,
                    r.app_version,
                    r.description,
                ]);
            }
            table(&t)
        }
    }
}

/// Options of the status printer (`helm status`, `helm get all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusOptions {
    /// `--show-desc`.
    pub show_description: bool,
    /// `get all`: chart name, version and app version.
    pub show_metadata: bool,
    /// `get all`: values, hooks and manifest.
    pub debug: bool,
}

fn config_value(c: &BTreeMap<String, Node>) -> Option<&BTreeMap<String, Node>> {
    // Go marshals a nil map as null; Helm's record decoding leaves an
    // absent `config` nil.
    if c.is_empty() {
        None
    } else {
        Some(c)
    }
}

/// `helm status` output (`-o json|yaml` print the record without its chart).
pub fn status(rel: &Release, format: Format, opts: StatusOptions) -> String {
    match format {
        Format::Json => go_json(&v3_status_record(rel)),
        Format::Yaml => go_yaml(&v3_status_record(rel)),
        Format::Table => status_table(rel, opts),
    }
}

/// The record as `helm status -o json` (v3) prints it: no chart, and no
/// Helm 4 `apply_method` (v3 does not know the field), and not rudder's
/// own `rudder_applied`.
fn v3_status_record(rel: &Release) -> Release {
    let mut r = rel.clone();
    r.chart = None;
    r.apply_method.clear();
    r.applied.clear();
    r
}

fn status_table(rel: &Release, opts: StatusOptions) -> String {
    let mut out = String::new();
    out.push_str(&format!("NAME: {}\n", rel.name));
    if !rel.info.last_deployed.is_zero() {
        out.push_str(&format!(
            "LAST DEPLOYED: {}\n",
            rel.info.last_deployed.to_ansic()
        ));
    }
    out.push_str(&format!("NAMESPACE: {}\n", rel.namespace));
    out.push_str(&format!("STATUS: {}\n", rel.info.status));
    out.push_str(&format!("REVISION: {}\n", rel.version));
    if opts.show_metadata {
        let m = rel
            .chart
            .as_ref()
            .map(|c| c.metadata.clone())
            .unwrap_or_default();
        out.push_str(&format!("CHART: {}\n", m.name));
        out.push_str(&format!("VERSION: {}\n", m.version));
        out.push_str(&format!("APP_VERSION: {}\n", m.app_version));
    }
    if opts.show_description {
        out.push_str(&format!("DESCRIPTION: {}\n", rel.info.description));
    }
    let tests: Vec<_> = rel
        .hooks
        .iter()
        .filter(|h| h.events.iter().any(|e| e == "test"))
        .collect();
    if tests.is_empty() {
        out.push_str("TEST SUITE: None\n");
    } else {
        for h in tests {
            if h.last_run.started_at.is_zero() {
                continue;
            }
            out.push_str(&format!(
                "TEST SUITE:     {}\nLast Started:   {}\nLast Completed: {}\nPhase:          {}\n",
                h.name,
                h.last_run.started_at.to_ansic(),
                h.last_run.completed_at.to_ansic(),
                h.last_run.phase
            ));
        }
    }
    if opts.debug {
        out.push_str("USER-SUPPLIED VALUES:\n");
        out.push_str(&go_yaml(&config_value(&rel.config)));
        out.push('\n');
        out.push_str("COMPUTED VALUES:\n");
        out.push_str(&go_yaml(&computed_values(rel)));
        out.push('\n');
    }
    if rel
        .info
        .description
        .eq_ignore_ascii_case("Dry run complete")
        || opts.debug
    {
        out.push_str("HOOKS:\n");
        for h in &rel.hooks {
            out.push_str(&format!("---\n# Source: {}\n{}\n", h.path, h.manifest));
        }
        out.push_str(&format!("MANIFEST:\n{}\n", rel.manifest));
    }
    if !rel.info.notes.is_empty() {
        out.push_str(&format!("NOTES:\n{}\n", rel.info.notes.trim()));
    }
    out
}

/// `helm get values` output; `all` prints the computed values (chart
/// defaults coalesced with the user's, as Helm's `CoalesceValues`).
pub fn values(rel: &Release, all: bool, format: Format) -> String {
    let computed;
    let v: Option<&BTreeMap<String, Node>> = if all {
        computed = computed_values(rel);
        Some(&computed)
    } else {
        config_value(&rel.config)
    };
    match format {
        Format::Json => go_json(&v),
        Format::Yaml => go_yaml(&v),
        Format::Table => {
            let head = if all {
                "COMPUTED VALUES:\n"
            } else {
                "USER-SUPPLIED VALUES:\n"
            };
            format!("{head}{}", go_yaml(&v))
        }
    }
}

/// `helm get metadata -o json|yaml`: what the chart and revision are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetadataView {
    /// Release name.
    pub name: String,
    /// Chart name.
    pub chart: String,
    /// Chart version.
    pub version: String,
    /// Chart appVersion.
    #[serde(rename = "appVersion")]
    pub app_version: String,
    /// Chart annotations.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Chart dependencies as declared in Chart.yaml.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::chart::Dependency>,
    /// Namespace.
    pub namespace: String,
    /// Revision.
    pub revision: u64,
    /// Status.
    pub status: String,
    /// Last deployed, RFC 3339 in seconds.
    #[serde(rename = "deployedAt")]
    pub deployed_at: String,
}

/// `helm get metadata` output.
pub fn metadata(rel: &Release, format: Format) -> String {
    let m = rel
        .chart
        .as_ref()
        .map(|c| c.metadata.clone())
        .unwrap_or_default();
    let v = MetadataView {
        name: rel.name.clone(),
        chart: m.name,
        version: m.version,
        app_version: m.app_version,
        annotations: m.annotations,
        dependencies: m.dependencies,
        namespace: rel.namespace.clone(),
        revision: rel.version,
        status: rel.info.status.to_string(),
        deployed_at: rel.info.last_deployed.to_rfc3339(),
    };
    match format {
        Format::Json => go_json(&v),
        Format::Yaml => go_yaml(&v),
        Format::Table => {
            let ann: Vec<String> = v
                .annotations
                .iter()
                .map(|(k, x)| format!("{k}={x}"))
                .collect();
            let mut deps: Vec<&str> = v.dependencies.iter().map(|d| d.name.as_str()).collect();
            deps.sort_unstable();
            format!(
                "NAME: {}\nCHART: {}\nVERSION: {}\nAPP_VERSION: {}\nANNOTATIONS: {}\nDEPENDENCIES: {}\nNAMESPACE: {}\nREVISION: {}\nSTATUS: {}\nDEPLOYED_AT: {}\n",
                v.name,
                v.chart,
                v.version,
                v.app_version,
                ann.join(","),
                deps.join(","),
                v.namespace,
                v.revision,
                v.status,
                v.deployed_at
            )
        }
    }
}

/// `helm get manifest` output.
pub fn manifest(rel: &Release) -> String {
    format!("{}\n", rel.manifest)
}

/// `helm get notes` output (nothing when there are no notes).
pub fn notes(rel: &Release) -> String {
    if rel.info.notes.is_empty() {
        String::new()
    } else {
        format!("NOTES:\n{}\n", rel.info.notes)
    }
}

/// `helm get hooks` output.
pub fn hooks(rel: &Release) -> String {
    rel.hooks
        .iter()
        .map(|h| format!("---\n# Source: {}\n{}\n", h.path, h.manifest))
        .collect()
}

/// `helm get all` output.
pub fn all(rel: &Release) -> String {
    status_table(
        rel,
        StatusOptions {
            show_description: false,
            show_metadata: true,
            debug: true,
        },
    )
}

/// The chart's default values coalesced with the user's, as Helm's
/// `chartutil.CoalesceValues` does for a stored release (whose chart has no
/// loaded subcharts): user values win, a user `null` deletes the key.
pub fn computed_values(rel: &Release) -> BTreeMap<String, Node> {
    let mut v = rel.config.clone();
    let defaults = match rel.chart.as_ref().and_then(|c| c.values.as_ref()) {
        Some(Node::Map(m)) => m.clone(),
        _ => BTreeMap::new(),
    };
    for (k, dv) in defaults {
        match v.get_mut(&k) {
            Some(Node::Null) => {
                v.remove(&k);
            }
            Some(Node::Map(dst)) => {
                if let Node::Map(src) = dv {
                    coalesce_tables(dst, &src);
                }
            }
            Some(_) => {}
            None => {
                v.insert(k, dv);
            }
        }
    }
    v
}

fn coalesce_tables(dst: &mut BTreeMap<String, Node>, src: &BTreeMap<String, Node>) {
    for (k, sv) in src {
        match dst.get_mut(k) {
            Some(Node::Null) => {
                dst.remove(k);
            }
            None => {
                dst.insert(k.clone(), sv.clone());
            }
            Some(Node::Map(d)) => {
                if let Node::Map(s) = sv {
                    coalesce_tables(d, s);
                }
            }
            Some(_) => {}
        }
    }
}

/// Helm's `ListStates` names accepted by `--status`-like filters.
pub fn parse_status(s: &str) -> Option<Status> {
    Status::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uitable_layout() {
        let t = table(&[
            vec!["NAME".into(), "X".into()],
            vec!["a".into(), "longer".into()],
        ]);
        assert_eq!(t, "NAME\tX     \na   \tlonger\n");
    }

    #[test]
    fn yaml_quoting() {
        let v: serde_json::Value = serde_json::json!({
            "b": "3.5", "a": 1, "c": "two", "d": "", "e": "yes", "f": {"x": [1, "a: b"]},
            "g": [], "h": {}, "i": 1.5, "j": "multi\nline\n"
        });
        assert_eq!(
            go_yaml(&v),
            "a: 1\nb: \"3.5\"\nc: two\nd: \"\"\ne: \"yes\"\nf:\n  x:\n  - 1\n  - 'a: b'\ng: []\nh: {}\ni: 1.5\nj: |\n  multi\n  line\n"
        );
        assert_eq!(go_yaml(&serde_json::Value::Null), "null\n");
    }

    #[test]
    fn json_escapes_html() {
        assert_eq!(go_json("<a&b>"), "\"\\u003ca\\u0026b\\u003e\"\n");
    }
}
