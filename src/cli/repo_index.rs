//! `rudder repo index DIR [--url URL] [--merge FILE] [--json]`, as
//! `helm repo index`: indexes the chart archives in DIR (and one level of
//! subdirectories) into `DIR/index.yaml`.
use clap::Args;
use rudder::source::index::{index_directory, load_file, IndexFile};
use std::error::Error;
use std::path::PathBuf;

/// `rudder repo index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The directory of packaged charts (`*.tgz`).
    dir: PathBuf,
    /// URL of chart repository.
    #[arg(long, default_value = "")]
    url: String,
    /// Merge the generated index into the given index.
    #[arg(long, default_value = "")]
    merge: String,
    /// Output in JSON format.
    #[arg(long)]
    json: bool,
}

/// Runs `rudder repo index`; the error is the text Helm prints after
/// `Error: `.
pub fn run(a: &IndexArgs) -> Result<(), String> {
    index(a).map_err(|e| rudder::error_chain(e.as_ref()))
}

/// Helm's `index(dir, url, mergeTo, json)`.
fn index(a: &IndexArgs) -> Result<(), Box<dyn Error>> {
    let dir = std::path::absolute(&a.dir)?;
    let out = dir.join("index.yaml");
    let mut i = index_directory(&dir, &a.url)?;
    if !a.merge.is_empty() {
        let merge = PathBuf::from(&a.merge);
        let other = match std::fs::metadata(&merge) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Helm creates the missing index it merges into (and
                // ignores a failure to).
                let fresh = IndexFile::new();
                let _ = fresh.write_file(&merge, a.json);
                fresh
            }
            _ => load_file(&merge).map_err(|e| format!("merge failed: {e}"))?,
        };
        i.merge(&other);
    }
    i.sort_entries();
    i.write_file(&out, a.json)?;
    Ok(())
}
