//! `rudder::yaml::parse_yaml_to_json_keys` (the manifest-head reader, which
//! skips building the entries it does not keep) against the full
//! `parse_yaml_to_json` on real text: every document Helm rendered in the
//! conformance corpus, and every YAML file of the corpus charts (values,
//! CRDs, Chart.yaml, raw templates, which also exercise its error path).
mod common;

use rudder::manifest::split::split_manifests;
use rudder::yaml::{parse_yaml_to_json, parse_yaml_to_json_keys, Node};
use std::path::Path;

const KEYS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn yaml_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("yaml" | "yml" | "tpl")
        ) {
            out.push(p);
        }
    }
}

fn check(text: &str, what: &str) -> Result<(), String> {
    let full = parse_yaml_to_json(text).map(|n| match n {
        Node::Map(mut m) => {
            m.retain(|k, _| KEYS.contains(&k.as_str()));
            Node::Map(m)
        }
        other => other,
    });
    let keyed = parse_yaml_to_json_keys(text, &KEYS);
    match (&full, &keyed) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Err(a), Err(b)) if a.to_string() == b.to_string() => Ok(()),
        _ => Err(format!("{what}: full {full:?}\nkeyed {keyed:?}")),
    }
}

#[test]
fn keyed_parse_agrees_with_full_parse_on_the_corpus() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let mut files = Vec::new();
    yaml_files(&shared.join("conformance/charts"), &mut files);
    let (mut docs, mut errors, mut failures) = (0usize, 0usize, Vec::new());
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for doc in split_manifests(&text) {
            docs += 1;
            if parse_yaml_to_json(doc).is_err() {
                errors += 1;
            }
            if let Err(e) = check(doc, &f.display().to_string()) {
                failures.push(e);
            }
        }
    }
    eprintln!(
        "keyed vs full parse: {} documents from {} files ({errors} of them errors), {} disagree",
        docs,
        files.len(),
        failures.len()
    );
    assert!(docs > 1000, "too few documents: {docs}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
