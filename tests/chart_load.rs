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

/// Mapping files instead of reading them changes nothing in the chart, and
/// the corpus's larger files really are mapped.
#[test]
fn mapped_load_equals_read_load() {
    let Some(charts) = corpus_charts() else {
        return;
    };
    fn count_mapped(c: &chart::Chart) -> (usize, usize) {
        let own = c.templates.iter().chain(&c.files).chain(&c.raw);
        let (mut mapped, mut all) = (0, 0);
        for f in own {
            all += 1;
            mapped += usize::from(f.data.is_mapped());
        }
        for d in &c.dependencies {
            let (m, a) = count_mapped(d);
            mapped += m;
            all += a;
        }
        (mapped, all)
    }
    let (mut mapped, mut all) = (0, 0);
    for dir in &charts {
        let read = chart::load(dir).expect("loads");
        // SAFETY: the corpus is read-only input; nothing writes to it.
        let map = unsafe { chart::load_mapped(dir) }.expect("loads mapped");
        assert_eq!(read, map, "{}", dir.display());
        assert_eq!(count_mapped(&read).0, 0, "load never maps");
        let (m, a) = count_mapped(&map);
        mapped += m;
        all += a;
    }
    eprintln!("mapped {mapped} of {all} corpus chart files");
    assert!(mapped > 50, "only {mapped} files were mapped");
}

/// Every file of a chart tree that packaging must keep: templates, other
/// files, raw values.yaml, schema; subcharts by name. Chart.yaml and
/// Chart.lock are compared as parsed data.
fn assert_same_chart(a: &chart::Chart, b: &chart::Chart, at: &str) {
    assert_eq!(a.metadata, b.metadata, "{at}: metadata");
    assert_eq!(a.lock, b.lock, "{at}: lock");
    assert_eq!(a.values, b.values, "{at}: values");
    assert_eq!(a.schema, b.schema, "{at}: schema");
    let files = |c: &chart::Chart| {
        let mut m: std::collections::BTreeMap<String, Vec<u8>> = c
            .templates
            .iter()
            .chain(c.files.iter())
            .map(|f| (f.name.clone(), f.data.to_vec()))
            .collect();
        if let Some(v) = c.raw.iter().find(|f| f.name == "values.yaml") {
            m.insert(v.name.clone(), v.data.to_vec());
        }
        m
    };
    let (fa, fb) = (files(a), files(b));
    assert_eq!(
        fa.keys().collect::<Vec<_>>(),
        fb.keys().collect::<Vec<_>>(),
        "{at}: file list"
    );
    for (k, v) in &fa {
        assert!(fb[k] == *v, "{at}: {k} differs");
    }
    let deps = |c: &chart::Chart| {
        let mut d: Vec<_> = c
            .dependencies
            .iter()
            .map(|d| d.metadata.name.clone())
            .collect();
        d.sort();
        d
    };
    assert_eq!(deps(a), deps(b), "{at}: subcharts");
    for da in &a.dependencies {
        let db = b
            .dependencies
            .iter()
            .find(|d| d.metadata.name == da.metadata.name)
            .expect("same subcharts");
        assert_same_chart(da, db, &format!("{at}/charts/{}", da.metadata.name));
    }
}

#[test]
fn package_round_trip_preserves_every_file() {
    let Some(charts) = corpus_charts() else {
        return;
    };
    let mut n = 0;
    for dir in &charts {
        let original = chart::load(dir).expect("corpus chart loads");
        let bytes = chart::package_bytes(&original).expect("packages");
        let again = chart::load_archive(&bytes).expect("package loads");
        assert_same_chart(&original, &again, &dir.display().to_string());
        let bytes2 = chart::package_bytes(&again).expect("packages again");
        assert!(
            bytes == bytes2,
            "{}: repackaging changed the bytes",
            dir.display()
        );
        let bytes3 = chart::package_bytes(&original).expect("packages");
        assert!(
            bytes == bytes3,
            "{}: packaging is not deterministic",
            dir.display()
        );
        n += 1;
    }
    eprintln!("round-tripped {n} corpus charts");
}
