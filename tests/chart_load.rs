//! Loading: every public chart of the conformance corpus loads, and archives
//! round-trip through `package`.
mod common;

use rudder::chart;
use std::path::PathBuf;

fn corpus_charts() -> Option<Vec<PathBuf>> {
    let shared = common::shared_dir()?;
    let mut out = Vec::new();
    for e in std::fs::read_dir(shared.join("conformance/charts")).ok()? {
        let p = e.ok()?.path().join("chart");
        if p.join("Chart.yaml").is_file() {
            out.push(p);
        }
    }
    out.sort();
    Some(out)
}

#[test]
fn every_corpus_chart_loads() {
    let Some(charts) = corpus_charts() else {
        return;
    };
    assert!(charts.len() >= 30, "only {} charts found", charts.len());
    let mut failures = Vec::new();
    for dir in &charts {
        if let Err(e) = chart::load(dir) {
            failures.push(format!("{}: {e}", dir.display()));
        }
    }
    eprintln!(
        "loaded {}/{} corpus charts",
        charts.len() - failures.len(),
        charts.len()
    );
    assert!(
        failures.is_empty(),
        "charts that failed to load:\n{}",
        failures.join("\n")
    );
}
