//! A deterministic text form of a chart, for snapshot tests.
//!
//! Every file appears once, in package order (the order a directory walk
//! visits them), as a `--- path` header line followed by its content. Chart.yaml
//! and Chart.lock appear as `helm package` writes them, values.yaml raw,
//! subcharts under `charts/<name>/`. Binary content is shown as base64.
//!
//! ```ignore
//! let chart = rudder::chart::chart_from_component(&my_component)?;
//! rudder::assert_chart_snapshot!(chart);
//! ```
use super::metadata::{lock_to_yaml, metadata_to_yaml};
use super::model::Chart;
use base64::Engine;

fn entries(chart: &Chart, base: &str, out: &mut Vec<(String, Vec<u8>)>) {
    let p = |n: &str| {
        if base.is_empty() {
            n.to_string()
        } else {
            format!("{base}/{n}")
        }
    };
    out.push((
        p("Chart.yaml"),
        metadata_to_yaml(&chart.metadata).into_bytes(),
    ));
    if let Some(lock) = &chart.lock {
        out.push((p("Chart.lock"), lock_to_yaml(lock).into_bytes()));
    }
    if let Some(v) = chart.raw.iter().find(|f| f.name == "values.yaml") {
        out.push((p("values.yaml"), v.data.to_vec()));
    }
    if let Some(s) = &chart.schema {
        out.push((p("values.schema.json"), s.clone()));
    }
    for f in chart.templates.iter().chain(chart.files.iter()) {
        out.push((p(&f.name), f.data.to_vec()));
    }
    for d in &chart.dependencies {
        entries(d, &p(&format!("charts/{}", d.metadata.name)), out);
    }
}

/// The chart as text: `--- <path>` then the file's content, for every file.
pub fn snapshot_text(chart: &Chart) -> String {
    let mut files = Vec::new();
    entries(chart, "", &mut files);
    files.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    let mut out = String::new();
    for (name, data) in files {
        out.push_str("--- ");
        out.push_str(&name);
        match std::str::from_utf8(&data) {
            Ok(text) => {
                out.push('\n');
                out.push_str(text);
                if !text.is_empty() && !text.ends_with('\n') {
                    out.push_str("\n(no newline at end of file)\n");
                }
            }
            Err(_) => {
                out.push_str(" (binary, base64)\n");
                out.push_str(&base64::engine::general_purpose::STANDARD.encode(&data));
                out.push('\n');
            }
        }
    }
    out
}

/// Asserts an insta snapshot of a chart's [`snapshot_text`]; the calling
/// crate needs `insta` as a (dev-)dependency. An optional first argument
/// names the snapshot.
#[macro_export]
macro_rules! assert_chart_snapshot {
    ($chart:expr) => {{
        let chart_text = $crate::chart::snapshot::snapshot_text(&$chart);
        insta::assert_snapshot!(chart_text)
    }};
    ($name:expr, $chart:expr) => {{
        let chart_text = $crate::chart::snapshot::snapshot_text(&$chart);
        insta::assert_snapshot!($name, chart_text)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::ChartFile;

    #[test]
    fn text_form() {
        let mut c = Chart::default();
        c.metadata.name = "x".into();
        c.metadata.version = "1.0.0".into();
        c.metadata.api_version = "v2".into();
        c.templates.push(ChartFile {
            name: "templates/b.yaml".into(),
            data: b"b: 1".to_vec().into(),
        });
        c.files.push(ChartFile {
            name: "a.bin".into(),
            data: vec![0xff, 0].into(),
        });
        let t = snapshot_text(&c);
        let headers: Vec<_> = t.lines().filter(|l| l.starts_with("--- ")).collect();
        assert_eq!(
            headers,
            [
                "--- Chart.yaml",
                "--- a.bin (binary, base64)",
                "--- templates/b.yaml"
            ]
        );
        assert!(t.contains("(no newline at end of file)"));
    }
}
