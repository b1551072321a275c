//! `helm package`: a chart as a deterministic `<name>-<version>.tgz`.
//!
//! Helm's archive layout (`chartutil.Save`): everything under `<name>/`,
//! Chart.yaml and Chart.lock re-serialised, values.yaml as its raw bytes
//! (when the chart has no raw values.yaml, `chart.values` serialised: so
//! editing `chart.values` of a loaded chart changes nothing, the raw file
//! wins, as in Helm),
//! subcharts expanded under `charts/<name>/`, regular-file entries only.
//! Unlike Helm, rudder's archives are reproducible: entries are sorted the
//! way a directory walk visits them (component by component), every entry
//! has mode 0644, uid/gid 0 and a fixed timestamp, and the gzip header has
//! no time (it carries Helm's extra field and `Helm` comment). The same chart
//! always gives the same bytes. The gzip layer is Go's own (default level,
//! through [`crate::gostd::gzip`]), as Helm's; only the tar stream differs
//! from `helm package`'s, by the order and times above.
use super::metadata::{lock_to_yaml, metadata_to_yaml, DecodeNotes, ValidationError};
use super::model::Chart;
use std::path::{Path, PathBuf};

/// The timestamp of every entry (2000-01-01T00:00:00Z): fixed so archives
/// are reproducible, and recent enough that tools do not warn about it.
pub const ENTRY_MTIME: u64 = 946_684_800;

/// The gzip extra field Helm writes into every chart archive.
const HELM_GZIP_EXTRA: &[u8] = b"+aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=";

/// Why packaging failed.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The chart metadata is invalid.
    #[error("chart validation: {0}")]
    Validation(ValidationError),
    /// `values.schema.json` is not JSON.
    #[error("Invalid JSON in values.schema.json")]
    InvalidSchema,
    /// The destination exists and is not a directory.
    #[error("is not a directory: {0}")]
    NotADirectory(String),
    /// Writing failed.
    #[error("{op} {path}: {message}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
}

/// The file name Helm gives a chart's package: `<name>-<version>.tgz`.
pub fn archive_name(chart: &Chart) -> String {
    format!("{}-{}.tgz", chart.metadata.name, chart.metadata.version)
}

/// The files of a package, `(path inside the archive, bytes)`, in archive
/// order.
pub fn package_entries(chart: &Chart) -> Result<Vec<(String, Vec<u8>)>, PackageError> {
    let mut out = Vec::new();
    collect(chart, &chart.metadata.name, &mut out)?;
    out.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    Ok(out)
}

fn collect(
    chart: &Chart,
    base: &str,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<(), PackageError> {
    let mut md = chart.metadata.clone();
    md.validate(DecodeNotes::default())
        .map_err(PackageError::Validation)?;
    out.push((
        format!("{base}/Chart.yaml"),
        metadata_to_yaml(&chart.metadata).into_bytes(),
    ));
    if chart.metadata.api_version == "v2" {
        if let Some(lock) = &chart.lock {
            out.push((
                format!("{base}/Chart.lock"),
                lock_to_yaml(lock).into_bytes(),
            ));
        }
    }
    // values.yaml: its raw bytes when the chart was loaded with one (Helm's
    // chartutil.Save writes only those, comments and all); otherwise, for a
    // chart built in memory, `chart.values` as YAML, which Helm would drop.
    if let Some(v) = chart.raw.iter().find(|f| f.name == "values.yaml") {
        out.push((format!("{base}/values.yaml"), v.data.to_vec()));
    } else if let Some(values) = &chart.values {
        out.push((
            format!("{base}/values.yaml"),
            crate::yaml::to_yaml(values).into_bytes(),
        ));
    }
    if let Some(schema) = &chart.schema {
        if serde_json::from_slice::<serde_json::Value>(schema).is_err() {
            return Err(PackageError::InvalidSchema);
        }
        out.push((format!("{base}/values.schema.json"), schema.clone()));
    }
    for f in chart.templates.iter().chain(chart.files.iter()) {
        out.push((format!("{base}/{}", f.name), f.data.to_vec()));
    }
    for dep in &chart.dependencies {
        collect(dep, &format!("{base}/charts/{}", dep.metadata.name), out)?;
    }
    Ok(())
}

/// The package as bytes: a gzipped tar, identical for identical charts.
pub fn package_bytes(chart: &Chart) -> Result<Vec<u8>, PackageError> {
    let entries = package_entries(chart)?;
    let io = |e: std::io::Error| PackageError::Io {
        op: "write",
        path: "<archive>".into(),
        message: super::loader::io_message(&e),
    };
    let mut tar = tar::Builder::new(Vec::new());
    for (path, data) in &entries {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(ENTRY_MTIME);
        h.set_size(data.len() as u64);
        tar.append_data(&mut h, path, data.as_slice()).map_err(io)?;
    }
    let tar = tar.into_inner().map_err(io)?;
    // Helm's gzip layer: Go's gzip.NewWriter (default level) with Helm's
    // extra field and comment, through rudder's port of Go's compressor.
    // The tar is handed over in one call, so the bytes depend on nothing
    // but the tar.
    let header = crate::gostd::gzip::Header {
        extra: Some(HELM_GZIP_EXTRA.to_vec()),
        comment: "Helm".into(),
        ..crate::gostd::gzip::Header::default()
    };
    crate::gostd::gzip::compress(&tar, crate::gostd::flate::DEFAULT_COMPRESSION, header).map_err(
        |e| PackageError::Io {
            op: "compress",
            path: "<archive>".into(),
            message: e.to_string(),
        },
    )
}

/// Writes the chart's package, `<dest>/<name>-<version>.tgz` (creating
/// `dest` if needed), as `helm package` does, and returns its path,
/// lexically cleaned as Helm's (`./out/../pkg` gives `pkg/web-1.2.3.tgz`).
/// The archive is written to a temp file and renamed into place, so an
/// interrupted package never leaves a torn archive under the final name. [`save_dir`] writes the chart as a
/// directory instead.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rudder::chart::{self, Chart, ChartFile, Metadata};
/// let chart = Chart {
///     metadata: Metadata {
///         api_version: "v2".into(),
///         name: "web".into(),
///         version: "1.2.3".into(),
///         ..Metadata::default()
///     },
///     templates: vec![ChartFile {
///         name: "templates/cm.yaml".into(),
///         data: "kind: ConfigMap\n".into(),
///     }],
///     values: Some(serde_json::from_str(r#"{"replicas": 2}"#)?),
///     ..Chart::default()
/// };
/// let out = tempfile::tempdir()?;
/// let path = chart::save_archive(&chart, out.path())?;
/// assert!(path.ends_with("web-1.2.3.tgz"));
/// // The same chart always gives the same bytes.
/// assert_eq!(std::fs::read(&path)?, chart::package_bytes(&chart)?);
/// // Loading it back gives the chart; an in-memory chart's values are
/// // written as values.yaml.
/// let loaded = chart::load(&path)?;
/// assert_eq!(loaded.metadata.version, "1.2.3");
/// let values = loaded.raw.iter().find(|f| f.name == "values.yaml").ok_or("no values.yaml")?;
/// assert_eq!(values.data.to_vec(), b"replicas: 2\n");
/// # Ok(()) }
/// ```
pub fn save_archive(chart: &Chart, dest: impl AsRef<Path>) -> Result<PathBuf, PackageError> {
    let dest = dest.as_ref();
    let bytes = package_bytes(chart)?;
    if dest.exists() && !dest.is_dir() {
        return Err(PackageError::NotADirectory(dest.display().to_string()));
    }
    std::fs::create_dir_all(dest).map_err(|e| PackageError::Io {
        op: "mkdir",
        path: dest.display().to_string(),
        message: super::loader::io_message(&e),
    })?;
    let path = dest.join(archive_name(chart));
    write_file(&path, &bytes)?;
    // Helm returns `filepath.Join(dest, name)`, which is lexically cleaned.
    Ok(match path.to_str() {
        Some(p) => PathBuf::from(super::loader::clean_path(p)),
        None => path,
    })
}

/// Writes the package to exactly `path`.
pub fn save_to_file(chart: &Chart, path: impl AsRef<Path>) -> Result<(), PackageError> {
    let bytes = package_bytes(chart)?;
    write_file(path.as_ref(), &bytes)
}

/// Writes a file with [`crate::fsutil::atomic_write`]: an interrupted
/// write leaves the old file (or none), never a torn archive under the
/// final name. The mode is 0666 less the umask, as Helm's `os.Create`.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PackageError> {
    crate::fsutil::atomic_write(path, bytes, crate::fsutil::Mode::SHARED).map_err(|e| {
        PackageError::Io {
            // Helm's words for the file it cannot create; the temp file is
            // an implementation detail.
            op: if e.op == "create temp file" {
                "open"
            } else {
                e.op
            },
            path: if e.op == "create temp file" {
                path.display().to_string()
            } else {
                e.path.display().to_string()
            },
            message: super::loader::io_message(&e.error),
        }
    })
}

/// Writes a chart as a directory (Helm's `SaveDir`, but with subcharts
/// expanded rather than archived): Chart.yaml re-serialised, every other
/// file verbatim.
pub fn save_dir(chart: &Chart, dir: impl AsRef<Path>) -> Result<(), PackageError> {
    let dir = dir.as_ref();
    let entries = package_entries(chart)?;
    let prefix = format!("{}/", chart.metadata.name);
    for (path, data) in entries {
        let rel = path.strip_prefix(&prefix).unwrap_or(&path);
        let target = dir.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| PackageError::Io {
                op: "mkdir",
                path: parent.display().to_string(),
                message: super::loader::io_message(&e),
            })?;
        }
        write_file(&target, &data)?;
    }
    Ok(())
}
