//! Loading charts from directories, `.tgz` archives and in-memory files, in
//! Helm's layout (`pkg/chart/loader`).
//!
//! Archives are untrusted: every entry name is sanitised the way Helm does
//! it, link and special entries are refused (they could point outside the
//! chart), and sizes are capped (Helm v3.17.3+: 100 MiB decompressed per
//! chart, 5 MiB per file). rudder also caps the decompressed stream, shares
//! one budget across nested subchart archives and limits their nesting, so a
//! gzip bomb or an archive quine fails fast in bounded memory.
use super::ignore::{IgnoreError, Rules};
use super::metadata::{
    apply_metadata, decode_lock, decode_metadata, first_document, DecodeError, DecodeNotes,
    ValidationError,
};
use super::model::{Chart, ChartFile, FileData, Lock, Metadata};
use crate::yaml::Node;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

/// Largest total of decompressed file sizes in one chart (Helm v3.17.3+).
pub const MAX_DECOMPRESSED_CHART_SIZE: u64 = 100 * 1024 * 1024;
/// Largest single file in a chart (Helm v3.17.3+).
pub const MAX_DECOMPRESSED_FILE_SIZE: u64 = 5 * 1024 * 1024;
/// Tar headers and padding allowed on top of the file data.
const STREAM_OVERHEAD: u64 = 16 * 1024 * 1024;
/// How deeply subchart archives may nest.
pub const MAX_SUBCHART_DEPTH: usize = 32;

/// Why a chart could not be loaded. Messages follow Helm's where Helm has one.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file system operation failed.
    #[error("{op} {path}: {message}")]
    Io {
        /// `stat`, `open`, `read`, ...
        op: &'static str,
        /// The path involved.
        path: String,
        /// The OS error, Go style (`no such file or directory`).
        message: String,
    },
    /// `load_file` was given a directory.
    #[error("cannot load a directory")]
    IsADirectory,
    /// A `.yaml` file was given where an archive was expected.
    #[error("file '{0}' seems to be a YAML file, but expected a gzipped archive")]
    YamlNotArchive(String),
    /// The data is not gzip.
    #[error("file '{path}' does not appear to be a gzipped archive; got '{content_type}'")]
    NotGzip {
        /// The file name.
        path: String,
        /// What the data looks like (Go's `http.DetectContentType`).
        content_type: String,
    },
    /// The gzip stream is malformed or truncated.
    #[error("file '{path}' does not appear to be a valid chart file (details: {details})")]
    BadGzip {
        /// The file name.
        path: String,
        /// The decoder's message.
        details: String,
    },
    /// The tar stream is malformed or truncated.
    #[error("chart archive '{path}' is truncated or corrupt: {details}")]
    BadTar {
        /// The file name.
        path: String,
        /// The reader's message.
        details: String,
    },
    /// An entry name is absolute.
    #[error("chart illegally contains absolute paths")]
    AbsolutePath,
    /// An entry has a single path component.
    #[error("chart illegally contains content outside the base directory: {0:?}")]
    OutsideBase(String),
    /// An entry name climbs out of the chart.
    #[error("chart illegally references parent directory")]
    ParentDirectory,
    /// An entry name is a Windows drive path.
    #[error("chart contains illegally named files")]
    IllegalName,
    /// An entry is a link, device or other non-regular file.
    #[error("chart archive entry {name:?} is a {kind}; links and special files are not allowed in chart archives")]
    SpecialEntry {
        /// The entry name.
        name: String,
        /// `symbolic link`, `hard link`, ...
        kind: &'static str,
    },
    /// The decompressed chart exceeds [`MAX_DECOMPRESSED_CHART_SIZE`].
    #[error(
        "decompressed chart is larger than the maximum file size {MAX_DECOMPRESSED_CHART_SIZE}"
    )]
    ChartTooLarge,
    /// An archive entry exceeds [`MAX_DECOMPRESSED_FILE_SIZE`].
    #[error("decompressed chart file {0:?} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}")]
    ArchiveFileTooLarge(String),
    /// A file in a directory exceeds [`MAX_DECOMPRESSED_FILE_SIZE`].
    #[error("chart file {0:?} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}")]
    FileTooLarge(String),
    /// The archive holds no files.
    #[error("no files in chart archive")]
    EmptyArchive,
    /// A directory holds a device, socket or fifo.
    #[error("cannot load irregular file {0} as it has file mode type bits set")]
    IrregularFile(String),
    /// A symbolic link cannot be resolved.
    #[error("error evaluating symlink {path}: {message}")]
    BrokenSymlink {
        /// The link.
        path: String,
        /// Why it does not resolve.
        message: String,
    },
    /// Symbolic links form a cycle.
    #[error("symbolic link cycle: {0} leads back to one of its parent directories")]
    SymlinkCycle(String),
    /// `.helmignore` is malformed.
    #[error(transparent)]
    Ignore(#[from] IgnoreError),
    /// Chart.yaml does not decode.
    #[error("cannot load Chart.yaml: {0}")]
    ChartYaml(DecodeError),
    /// Chart.lock does not decode.
    #[error("cannot load Chart.lock: {0}")]
    ChartLock(DecodeError),
    /// requirements.yaml does not decode.
    #[error("cannot load requirements.yaml: {0}")]
    RequirementsYaml(DecodeError),
    /// requirements.lock does not decode.
    #[error("cannot load requirements.lock: {0}")]
    RequirementsLock(DecodeError),
    /// values.yaml does not decode.
    #[error("cannot load values.yaml: {0}")]
    Values(String),
    /// No Chart.yaml among the files.
    #[error("Chart.yaml file is missing")]
    MissingChartYaml,
    /// `Metadata.Validate` failed.
    #[error(transparent)]
    Validation(#[from] ValidationError),
    /// A `charts/x.tgz` group holds more than the archive.
    #[error("error unpacking subchart tar in {parent}: expected {expected}, got {got}")]
    SubchartTar {
        /// The parent chart's name.
        parent: String,
        /// The expected file.
        expected: String,
        /// The file found.
        got: String,
    },
    /// A subchart failed to load.
    #[error("error unpacking subchart {name} in {parent}: {error}")]
    Subchart {
        /// The entry under `charts/`.
        name: String,
        /// The parent chart's name.
        parent: String,
        /// Why (its text ends the message, Helm's).
        error: Box<LoadError>,
    },
    /// Subchart archives nest deeper than [`MAX_SUBCHART_DEPTH`].
    #[error("subcharts are nested more than {MAX_SUBCHART_DEPTH} levels deep")]
    TooDeep,
}

/// Go-style text for an I/O error (`no such file or directory`).
pub(crate) fn io_message(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file or directory".into(),
        PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => {
                    let mut t = s[..i].to_string();
                    if let Some(f) = t.get(..1) {
                        let lower = f.to_lowercase();
                        t.replace_range(..1, &lower);
                    }
                    t
                }
                None => s,
            }
        }
    }
}

fn io_err(op: &'static str, path: &Path, e: &std::io::Error) -> LoadError {
    LoadError::Io {
        op,
        path: path.display().to_string(),
        message: io_message(e),
    }
}

/// A shared allowance of decompressed bytes for one load, nested archives
/// included.
#[derive(Debug)]
struct Budget {
    remaining: u64,
    depth: usize,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            remaining: MAX_DECOMPRESSED_CHART_SIZE,
            depth: 0,
        }
    }
}

/// One load's state: the decompression allowance and, when the caller
/// inspects the chart before its values (see [`load_inspecting`]), the
/// values files met so far, decoded once the chart's structure is loaded.
struct Loading {
    budget: Budget,
    /// Each deferred values file with the chart it belongs to.
    deferred: Option<Vec<(Vec<Step>, FileData)>>,
    /// Where the chart being loaded sits below the root.
    at: Vec<Step>,
}

/// One step from a chart down to a subchart: its index among the parent's
/// dependencies, its entry under `charts/` and the parent's name (what a
/// [`LoadError::Subchart`] names).
#[derive(Clone)]
struct Step {
    index: usize,
    entry: String,
    parent: String,
}

impl Loading {
    fn new(defer_values: bool) -> Loading {
        Loading {
            budget: Budget::new(),
            deferred: defer_values.then(Vec::new),
            at: Vec::new(),
        }
    }

    /// The load's outcome once its structure is loaded (or failed):
    /// `inspect` sees the chart, then the deferred values files decode in
    /// the order they were met. The first error is the one a load that
    /// decoded each values file where it met it would report: a values file
    /// met before a failure in the structure fails first.
    fn finish(
        mut self,
        structure: Result<Chart, LoadError>,
        inspect: Option<&mut dyn FnMut(&Chart)>,
    ) -> Result<Chart, LoadError> {
        let deferred = self.deferred.take().unwrap_or_default();
        let decode = |at: &[Step], data: &FileData| {
            decode_values(data).map_err(|mut e| {
                for step in at.iter().rev() {
                    e = LoadError::Subchart {
                        name: step.entry.clone(),
                        parent: step.parent.clone(),
                        error: Box::new(e),
                    };
                }
                e
            })
        };
        let mut chart = match structure {
            Ok(chart) => chart,
            Err(e) => {
                for (at, data) in &deferred {
                    decode(at, data)?;
                }
                return Err(e);
            }
        };
        if let Some(inspect) = inspect {
            inspect(&chart);
        }
        for (at, data) in &deferred {
            let values = decode(at, data)?;
            let mut c = &mut chart;
            for step in at {
                match c.dependencies.get_mut(step.index) {
                    Some(sub) => c = sub,
                    // Each step was the index its subchart was then given.
                    None => return Err(LoadError::Values("internal error: lost subchart".into())),
                }
            }
            c.values = values;
        }
        Ok(chart)
    }
}

/// Loads a chart from a directory or a chart archive (Helm's `loader.Load`).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let root = dir.path().join("web");
/// std::fs::create_dir_all(root.join("templates"))?;
/// std::fs::write(root.join("Chart.yaml"), "apiVersion: v2\nname: web\nversion: 1.0.0\n")?;
/// std::fs::write(root.join("values.yaml"), "replicas: 2\n")?;
/// std::fs::write(root.join("templates/cm.yaml"), "kind: ConfigMap\n")?;
/// let chart = rudder::chart::load(&root)?;
/// assert_eq!(chart.metadata.name, "web");
/// assert_eq!(chart.templates[0].name, "templates/cm.yaml");
/// assert!(chart.values.is_some());
///
/// // A chart that Helm refuses is an error naming the file.
/// std::fs::write(root.join("Chart.yaml"), "name: [\n")?;
/// let err = rudder::chart::load(&root).unwrap_err();
/// assert!(err.to_string().contains("Chart.yaml"), "{err}");
/// # Ok(()) }
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Chart, LoadError> {
    load_as(path.as_ref(), ReadMode::Read, None)
}

/// [`load`], showing the chart to `inspect` as soon as its files are read
/// and sorted into templates, files and subcharts, before its values files
/// (the slowest part to decode) are: its `values` and those of its
/// subcharts are still `None` then. A caller can start work that needs
/// only the templates meanwhile (`render::load_for` starts parsing them).
/// The result, errors included, is [`load`]'s.
pub fn load_inspecting(
    path: impl AsRef<Path>,
    inspect: &mut dyn FnMut(&Chart),
) -> Result<Chart, LoadError> {
    load_as(path.as_ref(), ReadMode::Read, Some(inspect))
}

/// [`load`], taking a directory's files in as `mode` says, with
/// [`load_inspecting`]'s `inspect`.
fn load_as(
    path: &Path,
    mode: ReadMode,
    inspect: Option<&mut dyn FnMut(&Chart)>,
) -> Result<Chart, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| io_err("stat", path, &e))?;
    let mut ld = Loading::new(inspect.is_some());
    let structure = if meta.is_dir() {
        dir_files(path, mode).and_then(|files| load_files_in(files, &mut ld))
    } else {
        load_file_in(path, &mut ld)
    };
    ld.finish(structure, inspect)
}

/// Loads a chart like [`load`], mapping the larger files of a chart
/// directory into memory instead of copying them.
///
/// A render reads a chart's templates and values but often few of its other
/// files (kube-prometheus-stack carries 4.6 MB of CRDs that `helm template`
/// without `--include-crds` never looks at). Mapped, such a file costs no
/// read and no memory until something touches it, and templates are read
/// from the page cache without a copy. Files under 16 KiB, archives and
/// files that cannot be mapped are read as [`load`] reads them; the chart is
/// the same either way.
///
/// # Safety
///
/// The chart's mapped bytes are the files themselves: while the chart or a
/// clone of any of its [`super::FileData`] is alive, the chart's
/// files must not be modified or truncated (by this or any other process).
/// A modified file changes bytes the chart already checked; reading a
/// truncated file's lost end kills the process with `SIGBUS`. A short-lived
/// process that renders a chart nobody edits meanwhile (the `rudder`
/// command) can promise this; a long-lived one that reloads charts as they
/// are edited should use [`load`].
#[allow(unsafe_code)]
pub unsafe fn load_mapped(path: impl AsRef<Path>) -> Result<Chart, LoadError> {
    // The caller vouched for the files (see Safety).
    load_as(path.as_ref(), ReadMode::Map, None)
}

/// [`load_mapped`] with [`load_inspecting`]'s `inspect`.
///
/// # Safety
///
/// As for [`load_mapped`].
#[allow(unsafe_code)]
pub unsafe fn load_mapped_inspecting(
    path: impl AsRef<Path>,
    inspect: &mut dyn FnMut(&Chart),
) -> Result<Chart, LoadError> {
    // The caller vouched for the files (see Safety).
    load_as(path.as_ref(), ReadMode::Map, Some(inspect))
}

/// Loads a chart archive file (Helm's `loader.LoadFile`).
pub fn load_file(path: impl AsRef<Path>) -> Result<Chart, LoadError> {
    let mut ld = Loading::new(false);
    let structure = load_file_in(path.as_ref(), &mut ld);
    ld.finish(structure, None)
}

fn load_file_in(path: &Path, ld: &mut Loading) -> Result<Chart, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| io_err("stat", path, &e))?;
    if meta.is_dir() {
        return Err(LoadError::IsADirectory);
    }
    // Read at most what any valid archive could be, plus one byte to notice.
    let file = std::fs::File::open(path).map_err(|e| io_err("open", path, &e))?;
    let mut data = Vec::new();
    file.take(MAX_DECOMPRESSED_CHART_SIZE + STREAM_OVERHEAD + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_err("read", path, &e))?;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let name = abs.display().to_string();
    if !is_gzip(&data) {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".yaml") || lower.ends_with(".yml") {
            return Err(LoadError::YamlNotArchive(name));
        }
        return Err(LoadError::NotGzip {
            path: name,
            content_type: detect_content_type(&data).into(),
        });
    }
    load_archive_named(&data, &path.display().to_string(), ld)
}

/// Loads a chart from archive bytes (Helm's `loader.LoadArchive`).
pub fn load_archive(data: &[u8]) -> Result<Chart, LoadError> {
    load_archive_named(data, "<archive>", &mut Loading::new(false))
}

fn load_archive_named(data: &[u8], name: &str, ld: &mut Loading) -> Result<Chart, LoadError> {
    let files = archive_files(data, name, &mut ld.budget)?;
    load_files_in(files, ld)
}

fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&[0x1f, 0x8b, 0x08])
}

/// Go's `http.DetectContentType` on the 512-byte buffer Helm sniffs: a
/// shorter file leaves NUL padding in the buffer, so it reads as binary. Only
/// the signatures that can show up here are covered.
fn detect_content_type(data: &[u8]) -> &'static str {
    let mut head = [0u8; 512];
    let n = data.len().min(512);
    head[..n].copy_from_slice(&data[..n]);
    let sigs: &[(&[u8], &str)] = &[
        (b"%PDF-", "application/pdf"),
        (b"%!PS-Adobe-", "application/postscript"),
        (b"\xFE\xFF", "text/plain; charset=utf-16be"),
        (b"\xFF\xFE", "text/plain; charset=utf-16le"),
        (b"\xEF\xBB\xBF", "text/plain; charset=utf-8"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"\xFF\xD8\xFF", "image/jpeg"),
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"BM", "image/bmp"),
        (b"PK\x03\x04", "application/zip"),
        (b"Rar!\x1A\x07\x00", "application/x-rar-compressed"),
        (b"Rar!\x1A\x07\x01\x00", "application/x-rar-compressed"),
        (b"\x00asm", "application/wasm"),
    ];
    let trimmed: &[u8] = {
        let start = head
            .iter()
            .position(|b| !b" \t\n\x0c\r".contains(b))
            .unwrap_or(head.len());
        &head[start..]
    };
    let upper: Vec<u8> = trimmed
        .iter()
        .take(16)
        .map(u8::to_ascii_uppercase)
        .collect();
    for tag in [
        &b"<!DOCTYPE HTML"[..],
        b"<HTML",
        b"<HEAD",
        b"<SCRIPT",
        b"<IFRAME",
        b"<H1",
        b"<DIV",
        b"<FONT",
        b"<TABLE",
        b"<A",
        b"<STYLE",
        b"<TITLE",
        b"<B",
        b"<BODY",
        b"<BR",
        b"<P",
        b"<!--",
    ] {
        if upper.starts_with(tag)
            && upper
                .get(tag.len())
                .is_some_and(|c| *c == b' ' || *c == b'>')
        {
            return "text/html; charset=utf-8";
        }
    }
    if trimmed.starts_with(b"<?xml") {
        return "text/xml; charset=utf-8";
    }
    for (sig, ct) in sigs {
        if head.starts_with(sig) {
            return ct;
        }
    }
    let binary = head.iter().any(|&b| {
        b <= 0x08 || b == 0x0b || (0x0e..=0x1a).contains(&b) || (0x1c..=0x1f).contains(&b)
    });
    if binary {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// Counts decompressed bytes and fails once a cap is passed.
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One probe byte past the cap means the stream is too large.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(CAP_MARKER)),
            };
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

const CAP_MARKER: &str = "rudder: decompressed stream cap reached";

/// Go's `path.Clean` for a relative, `/`-separated path.
pub(crate) fn clean_path(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            x => out.push(x),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The name an archive entry gets inside the chart (its first component
/// dropped), or Helm's error for an illegal one.
pub fn sanitize_entry_name(raw: &str) -> Result<String, LoadError> {
    let delim = if raw.contains('\\') { '\\' } else { '/' };
    let parts: Vec<&str> = raw.split(delim).collect();
    let n = parts[1..].join("/");
    if n.starts_with('/') {
        return Err(LoadError::AbsolutePath);
    }
    let n = clean_path(&n);
    if n == "." {
        return Err(LoadError::OutsideBase(raw.to_string()));
    }
    if n.starts_with("..") {
        return Err(LoadError::ParentDirectory);
    }
    let b = n.as_bytes();
    if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
        return Err(LoadError::IllegalName);
    }
    Ok(n)
}

/// UTF-8's byte-order mark, which Helm's loader strips from every file.
const BOM: &[u8] = &[0xef, 0xbb, 0xbf];

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(BOM) {
        data.drain(..BOM.len());
    }
    data
}

/// Reads the files of a chart archive (Helm's `LoadArchiveFiles`), with
/// names relative to the chart root.
pub fn load_archive_files(data: &[u8]) -> Result<Vec<ChartFile>, LoadError> {
    archive_files(data, "<archive>", &mut Budget::new())
}

/// Checks a chart archive against every limit and rule that
/// [`load_archive_files`] applies (gzip and tar framing, entry kinds, path
/// sanitising, per-file and total sizes), without keeping its files: the
/// check for a downloaded chart before it enters a cache. It streams the
/// archive through one small buffer, so checking a chart costs its
/// decompression, not a copy of its files in memory.
pub fn check_archive(data: &[u8]) -> Result<(), LoadError> {
    archive_entries(data, "<archive>", &mut Budget::new(), Keep::Nothing).map(|_| ())
}

fn archive_files(
    data: &[u8],
    name: &str,
    budget: &mut Budget,
) -> Result<Vec<ChartFile>, LoadError> {
    archive_entries(data, name, budget, Keep::Files)
}

/// What [`archive_entries`] keeps of each file it reads.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// Every file, in memory.
    Files,
    /// Nothing: the bytes are counted and dropped.
    Nothing,
}

fn archive_entries(
    data: &[u8],
    name: &str,
    budget: &mut Budget,
    keep: Keep,
) -> Result<Vec<ChartFile>, LoadError> {
    if !is_gzip(data) {
        return Err(LoadError::BadGzip {
            path: name.into(),
            details: "gzip: invalid header".into(),
        });
    }
    let gz = flate2::read::MultiGzDecoder::new(data);
    let capped = Capped {
        inner: gz,
        left: budget.remaining + STREAM_OVERHEAD,
    };
    // Inflating into a large buffer, not into each of tar's 512-byte header
    // reads and small entry reads, costs a fifth less per archive.
    let mut archive = tar::Archive::new(std::io::BufReader::with_capacity(1 << 16, capped));
    let mut files = Vec::new();
    let mut scratch = match keep {
        Keep::Files => Vec::new(),
        Keep::Nothing => vec![0u8; 1 << 16],
    };
    let stream_err = |e: std::io::Error| -> LoadError {
        let msg = e.to_string();
        if msg.contains(CAP_MARKER) {
            LoadError::ChartTooLarge
        } else if msg.contains("invalid gzip header")
            || msg.contains("corrupt deflate stream")
            || msg.contains("deflate")
            || msg.contains("gzip")
        {
            LoadError::BadGzip {
                path: name.into(),
                details: msg,
            }
        } else {
            LoadError::BadTar {
                path: name.into(),
                details: if msg.contains("failed to fill whole buffer")
                    || e.kind() == std::io::ErrorKind::UnexpectedEof
                {
                    "unexpected EOF".into()
                } else {
                    msg
                },
            }
        }
    };
    let entries = archive.entries().map_err(stream_err)?;
    let mut seen = 0usize;
    for entry in entries {
        let mut entry = entry.map_err(stream_err)?;
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        use tar::EntryType as T;
        let kind = entry.header().entry_type();
        match kind {
            T::Directory | T::XHeader | T::XGlobalHeader | T::GNULongName | T::GNULongLink => {
                continue
            }
            T::Regular | T::Continuous => {}
            other => {
                let kind = match other {
                    T::Symlink => "symbolic link",
                    T::Link => "hard link",
                    T::Char => "character device",
                    T::Block => "block device",
                    T::Fifo => "fifo",
                    T::GNUSparse => "sparse file",
                    _ => "special entry",
                };
                return Err(LoadError::SpecialEntry {
                    name: raw_name,
                    kind,
                });
            }
        }
        let n = sanitize_entry_name(&raw_name)?;
        let size = entry.header().size().map_err(stream_err)?;
        if size > budget.remaining {
            return Err(LoadError::ChartTooLarge);
        }
        if size > MAX_DECOMPRESSED_FILE_SIZE {
            return Err(LoadError::ArchiveFileTooLarge(raw_name));
        }
        let mut capped_entry = (&mut entry).take(MAX_DECOMPRESSED_FILE_SIZE + 1);
        let (read, buf) = match keep {
            Keep::Files => {
                let mut buf = Vec::with_capacity(size as usize);
                capped_entry.read_to_end(&mut buf).map_err(stream_err)?;
                (buf.len() as u64, Some(buf))
            }
            Keep::Nothing => {
                let mut n = 0u64;
                loop {
                    match capped_entry.read(&mut scratch) {
                        Ok(0) => break,
                        Ok(k) => n += k as u64,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(stream_err(e)),
                    }
                }
                (n, None)
            }
        };
        if read < size {
            return Err(LoadError::BadTar {
                path: name.into(),
                details: "unexpected EOF".into(),
            });
        }
        budget.remaining -= read;
        seen += 1;
        if let Some(buf) = buf {
            files.push(ChartFile {
                name: n,
                data: strip_bom(buf).into(),
            });
        }
    }
    // Read the rest of the stream (still capped): a truncated or corrupt
    // gzip stream after the end-of-archive marker is an error too.
    let mut rest = archive.into_inner();
    std::io::copy(&mut rest, &mut std::io::sink()).map_err(stream_err)?;
    if seen == 0 {
        return Err(LoadError::EmptyArchive);
    }
    Ok(files)
}

/// Loads a chart directory (Helm's `loader.LoadDir`): `.helmignore` plus the
/// default `templates/.?*` rule, byte-order walk, symlinks followed, each
/// with Helm's warning on stderr (`walk.go:75: found symbolic link in path:
/// P resolves to R. Contents of linked file included and used`).
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Chart, LoadError> {
    let files = load_dir_files(dir)?;
    load_files(files)
}

/// The files [`load_dir`] would load, in Helm's walk order.
pub fn load_dir_files(dir: impl AsRef<Path>) -> Result<Vec<ChartFile>, LoadError> {
    dir_files(dir.as_ref(), ReadMode::Read)
}

/// How a directory walk takes in a file's bytes.
#[derive(Clone, Copy, PartialEq)]
enum ReadMode {
    /// Read into the heap.
    Read,
    /// Map files of [`MAP_MIN_BYTES`] or more (only on behalf of
    /// [`load_mapped`], whose caller promised not to change the files).
    Map,
}

/// Files at least this big are mapped by [`load_mapped`]; smaller ones are
/// cheaper to read than to map and unmap.
const MAP_MIN_BYTES: u64 = 16 * 1024;

fn dir_files(dir: &Path, mode: ReadMode) -> Result<Vec<ChartFile>, LoadError> {
    let top = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let ignore_file = top.join(".helmignore");
    let mut rules = if ignore_file.exists() {
        let text = std::fs::read(&ignore_file).map_err(|e| io_err("open", &ignore_file, &e))?;
        Rules::parse(&String::from_utf8_lossy(&text))?
    } else {
        Rules::empty()
    };
    rules.add_defaults();
    let mut files = Vec::new();
    let mut stack: Vec<DirId> = Vec::new();
    if let Some(id) = std::fs::metadata(&top)
        .ok()
        .and_then(|m| dir_id(&top, &m).ok())
    {
        stack.push(id);
    }
    if mode == ReadMode::Read {
        walk_dir(&top, "", &rules, mode, &mut files, &stack)?;
        return Ok(files);
    }
    walk_shared(&top, &rules, mode, &stack, SHARED_WALK_MIN_FILES)
}

/// A file of a directory walk, read apart from the rest: its name in the
/// directory at `dir` (chart-relative path `rel`) and the directories above
/// it (for symlink cycles).
struct WalkUnit {
    dir: std::path::PathBuf,
    rel: String,
    name: std::ffi::OsString,
    stack: Vec<DirId>,
}

/// Below this many files a walk stays on one thread: a small chart reads
/// faster than a thread starts.
const SHARED_WALK_MIN_FILES: usize = 12;

/// [`walk_dir`] from `top` with the reading shared among threads: one pass
/// lists the directories (in walk order, taking file types from the
/// directory entries), then the files are read, claimed one at a time by
/// whichever thread is free (a mapped chart's walk is mostly system calls
/// and page-cache copies, which two cores do side by side). The files and
/// the first error in walk order are the ones [`walk_dir`] gives. Fewer
/// than `min_files` files are read on this thread.
fn walk_shared(
    top: &Path,
    rules: &Rules,
    mode: ReadMode,
    stack: &[DirId],
    min_files: usize,
) -> Result<Vec<ChartFile>, LoadError> {
    // The listing stops at its first error, which comes after every file
    // listed: a file's error is met first.
    let mut units = Vec::new();
    let listed = list_files(top, "", rules, stack, &mut units);
    let read = crate::par::map_claimed(&units, min_files, |u| {
        let mut files = Vec::new();
        walk_entry(&u.dir, &u.rel, &u.name, rules, mode, &mut files, &u.stack).map(|()| files)
    });
    let mut files = Vec::with_capacity(units.len());
    for r in read {
        files.extend(r?);
    }
    listed.map(|()| files)
}

/// Appends the files under `dir` to `units` in walk order, descending into
/// directories as [`walk_entry`] does; stops at the first error, which
/// comes after the files before it.
fn list_files(
    dir: &Path,
    rel: &str,
    rules: &Rules,
    stack: &[DirId],
    units: &mut Vec<WalkUnit>,
) -> Result<(), LoadError> {
    for (name, kind) in sorted_entries(dir)? {
        // A regular file costs no system call here (the directory entry
        // tells its type); anything else is asked whether it is a directory.
        let subdir = match kind {
            Some(t) if t.is_file() => None,
            _ => {
                let path = dir.join(&name);
                let meta = match kind {
                    Some(t) if t.is_dir() => {
                        std::fs::metadata(&path).map_err(|e| io_err("lstat", &path, &e))?
                    }
                    // Reported here, in walk order ([`walk_entry`] does
                    // not report in this mode).
                    _ => entry_meta(&path)?,
                };
                meta.is_dir().then_some((path, meta))
            }
        };
        let Some((path, meta)) = subdir else {
            units.push(WalkUnit {
                dir: dir.to_path_buf(),
                rel: rel.to_string(),
                name,
                stack: stack.to_vec(),
            });
            continue;
        };
        let n = rel_name(rel, &name);
        if rules.ignore(&n, true) {
            continue;
        }
        let below = enter_dir(&path, &meta, stack)?;
        list_files(&path, &n, rules, &below, units)?;
    }
    Ok(())
}

/// The chart-relative path of entry `name` of the directory at `rel`.
fn rel_name(rel: &str, name: &std::ffi::OsStr) -> String {
    if rel.is_empty() {
        name.to_string_lossy().into_owned()
    } else {
        format!("{rel}/{}", name.to_string_lossy())
    }
}

/// The entries of `dir` in byte order (Go's `filepath.Walk` order), each
/// with its file type when the directory entry tells it.
fn sorted_entries(
    dir: &Path,
) -> Result<Vec<(std::ffi::OsString, Option<std::fs::FileType>)>, LoadError> {
    let rd = std::fs::read_dir(dir).map_err(|e| io_err("open", dir, &e))?;
    let mut entries = Vec::new();
    for e in rd {
        let e = e.map_err(|e| io_err("readdirent", dir, &e))?;
        entries.push((e.file_name(), e.file_type().ok()));
    }
    entries.sort_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
    Ok(entries)
}

/// The metadata of a walked path, symlinks followed (and reported with
/// [`symlink_warning`]).
fn entry_meta(path: &Path) -> Result<std::fs::Metadata, LoadError> {
    entry_meta_quiet(path, true)
}

/// [`entry_meta`]; `warn`: whether a symlink is reported.
fn entry_meta_quiet(path: &Path, warn: bool) -> Result<std::fs::Metadata, LoadError> {
    let lmeta = std::fs::symlink_metadata(path).map_err(|e| io_err("lstat", path, &e))?;
    if !lmeta.file_type().is_symlink() {
        return Ok(lmeta);
    }
    let meta = std::fs::metadata(path).map_err(|e| LoadError::BrokenSymlink {
        path: path.display().to_string(),
        message: io_message(&e),
    })?;
    if warn {
        symlink_warning(path);
    }
    Ok(meta)
}

/// Says on stderr that a chart directory's symlink was followed, in Helm's
/// words (its `sympath.Walk` logs the same line, whether the link points
/// inside the chart or outside it): the linked file becomes part of the
/// chart, and may come from anywhere.
fn symlink_warning(path: &Path) {
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // Helm's path is `filepath.Abs`'s: cleaned of `.` and `..`.
    let shown = path
        .to_str()
        .map_or_else(|| path.display().to_string(), clean_path);
    eprintln!(
        "walk.go:75: found symbolic link in path: {shown} resolves to {}. Contents of linked file included and used",
        resolved.display()
    );
}

/// The directories above `path`'s entries: `stack` and `path` itself,
/// unless `path` is one of them (a symlink cycle).
fn enter_dir(
    path: &Path,
    meta: &std::fs::Metadata,
    stack: &[DirId],
) -> Result<Vec<DirId>, LoadError> {
    let canon = dir_id(path, meta).map_err(|e| io_err("stat", path, &e))?;
    if stack.contains(&canon) {
        return Err(LoadError::SymlinkCycle(path.display().to_string()));
    }
    let mut below = stack.to_vec();
    below.push(canon);
    Ok(below)
}

/// What identifies a directory on the walk's current path, to find symlink
/// cycles: device and inode on Unix (from the metadata the walk already
/// has), the canonical path elsewhere (resolving it costs a system call per
/// path component).
#[cfg(unix)]
type DirId = (u64, u64);
#[cfg(not(unix))]
type DirId = std::path::PathBuf;

#[cfg(unix)]
fn dir_id(_path: &Path, meta: &std::fs::Metadata) -> std::io::Result<DirId> {
    use std::os::unix::fs::MetadataExt;
    Ok((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn dir_id(path: &Path, _meta: &std::fs::Metadata) -> std::io::Result<DirId> {
    std::fs::canonicalize(path)
}

/// Whether a mapped file starts with a byte-order mark. On Unix the three
/// bytes are read through the descriptor rather than the map: touching the
/// map would fault in a whole window of pages around the first one (64 KiB
/// by default), resident for the rest of the process even when the render
/// never reads the file (a chart's large CRDs, say).
#[cfg(unix)]
fn starts_with_bom(f: &std::fs::File, _map: &[u8]) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 3];
    matches!(f.read_exact_at(&mut head, 0), Ok(()) if head == BOM)
}

#[cfg(not(unix))]
fn starts_with_bom(_f: &std::fs::File, map: &[u8]) -> bool {
    map.starts_with(BOM)
}

fn walk_dir(
    dir: &Path,
    rel: &str,
    rules: &Rules,
    mode: ReadMode,
    files: &mut Vec<ChartFile>,
    stack: &[DirId],
) -> Result<(), LoadError> {
    for (name, _) in sorted_entries(dir)? {
        walk_entry(dir, rel, &name, rules, mode, files, stack)?;
    }
    Ok(())
}

/// Walks entry `name` of `dir` (whose chart-relative path is `rel`): reads
/// the file, or walks the directory.
fn walk_entry(
    dir: &Path,
    rel: &str,
    name: &std::ffi::OsStr,
    rules: &Rules,
    mode: ReadMode,
    files: &mut Vec<ChartFile>,
    stack: &[DirId],
) -> Result<(), LoadError> {
    let path = dir.join(name);
    let n = rel_name(rel, name);
    // A mapped walk reported its symlinks as it listed them.
    let meta = entry_meta_quiet(&path, mode == ReadMode::Read)?;
    if meta.is_dir() {
        if rules.ignore(&n, true) {
            return Ok(());
        }
        let below = enter_dir(&path, &meta, stack)?;
        return walk_dir(&path, &n, rules, mode, files, &below);
    }
    if rules.ignore(&n, false) {
        return Ok(());
    }
    if !meta.is_file() {
        return Err(LoadError::IrregularFile(path.display().to_string()));
    }
    if meta.len() > MAX_DECOMPRESSED_FILE_SIZE {
        return Err(LoadError::FileTooLarge(name.to_string_lossy().into_owned()));
    }
    let f = std::fs::File::open(&path).map_err(|e| io_err("open", &path, &e))?;
    #[allow(unsafe_code)]
    if mode == ReadMode::Map && meta.len() >= MAP_MIN_BYTES {
        // SAFETY: ReadMode::Map comes only from `load_mapped`, whose
        // caller promised that the chart's files stay unchanged while
        // their bytes are in use. A file that cannot be mapped is read.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&f) } {
            if map.len() as u64 > MAX_DECOMPRESSED_FILE_SIZE {
                return Err(LoadError::FileTooLarge(name.to_string_lossy().into_owned()));
            }
            let start = if starts_with_bom(&f, &map) {
                BOM.len()
            } else {
                0
            };
            files.push(ChartFile {
                name: n,
                data: super::model::FileData::from_map(map, start),
            });
            return Ok(());
        }
    }
    let mut data = Vec::with_capacity(meta.len() as usize + 1);
    f.take(MAX_DECOMPRESSED_FILE_SIZE + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_err("read", &path, &e))?;
    if data.len() as u64 > MAX_DECOMPRESSED_FILE_SIZE {
        return Err(LoadError::FileTooLarge(name.to_string_lossy().into_owned()));
    }
    files.push(ChartFile {
        name: n,
        data: strip_bom(data).into(),
    });
    Ok(())
}

/// Builds a chart from its files (Helm's `loader.LoadFiles`): classifies
/// them, decodes Chart.yaml, Chart.lock, values.yaml and requirements, loads
/// subcharts from `charts/` and validates the metadata.
pub fn load_files(files: Vec<ChartFile>) -> Result<Chart, LoadError> {
    load_files_in(files, &mut Loading::new(false))
}

/// A values.yaml file's values: sigs.k8s.io/yaml into a map, so an empty
/// document leaves the map nil (no values) and anything but a mapping is
/// an error.
fn decode_values(data: &FileData) -> Result<Option<Node>, LoadError> {
    if let Some(e) = crate::gostd::gostr::utf8_error(data.as_slice()) {
        return Err(LoadError::Values(format!(
            "error converting YAML to JSON: yaml: {e}"
        )));
    }
    let text = data.text();
    let v = crate::yaml::parse_yaml_to_json(&text).map_err(|e| LoadError::Values(e.to_string()))?;
    match v {
        Node::Null => Ok(None),
        m @ Node::Map(_) => Ok(Some(m)),
        _ => {
            let msg = match crate::yaml::parse_values(&text) {
                Err(e) => e.to_string(),
                Ok(_) => "values.yaml is not a mapping".to_string(),
            };
            Err(LoadError::Values(msg))
        }
    }
}

fn decode_lock_opt(data: &[u8]) -> Result<Option<Lock>, DecodeError> {
    let text = String::from_utf8_lossy(data);
    if matches!(first_document(&text)?, Node::Null) {
        return Ok(None);
    }
    decode_lock(&text).map(Some)
}

fn load_files_in(files: Vec<ChartFile>, ld: &mut Loading) -> Result<Chart, LoadError> {
    let mut c = Chart::default();
    let mut metadata: Option<Metadata> = None;
    let mut notes = DecodeNotes::default();
    for f in &files {
        if f.name == "Chart.yaml" {
            if let Some(e) = crate::gostd::gostr::utf8_error(f.data.as_slice()) {
                return Err(LoadError::ChartYaml(DecodeError::Yaml(format!(
                    "error converting YAML to JSON: yaml: {e}"
                ))));
            }
            let (mut md, n) = decode_metadata(&f.data.text()).map_err(LoadError::ChartYaml)?;
            if md.api_version.is_empty() {
                md.api_version = "v1".into();
            }
            notes = n;
            metadata = Some(md);
        }
    }
    let mut subcharts: BTreeMap<String, Vec<ChartFile>> = BTreeMap::new();
    for f in &files {
        match f.name.as_str() {
            "Chart.yaml" => {}
            "Chart.lock" => {
                c.lock = decode_lock_opt(&f.data).map_err(LoadError::ChartLock)?;
            }
            "values.yaml" => match &mut ld.deferred {
                Some(deferred) => deferred.push((ld.at.clone(), f.data.clone())),
                None => c.values = decode_values(&f.data)?,
            },
            "values.schema.json" => c.schema = Some(f.data.to_vec()),
            "requirements.yaml" => {
                let md = metadata.get_or_insert_with(Metadata::default);
                let doc = first_document(&f.data.text()).map_err(LoadError::RequirementsYaml)?;
                apply_metadata(md, &doc, &mut notes).map_err(LoadError::RequirementsYaml)?;
                if md.api_version == "v1" {
                    c.files.push(f.clone());
                }
            }
            "requirements.lock" => {
                c.lock = decode_lock_opt(&f.data).map_err(LoadError::RequirementsLock)?;
                let md = metadata.get_or_insert_with(Metadata::default);
                if md.api_version == "v1" {
                    c.files.push(f.clone());
                }
            }
            n if n.starts_with("templates/") => c.templates.push(f.clone()),
            n if n.starts_with("charts/") => {
                if n.ends_with(".prov") {
                    c.files.push(f.clone());
                    continue;
                }
                let fname = &n["charts/".len()..];
                let cname = fname.split('/').next().unwrap_or("");
                subcharts
                    .entry(cname.to_string())
                    .or_default()
                    .push(ChartFile {
                        name: fname.to_string(),
                        data: f.data.clone(),
                    });
            }
            _ => c.files.push(f.clone()),
        }
    }
    let Some(mut md) = metadata else {
        return Err(LoadError::MissingChartYaml);
    };
    md.validate(notes)?;
    c.metadata = md;
    c.raw = files;
    for (n, group) in subcharts {
        if n.starts_with('_') || n.starts_with('.') {
            continue;
        }
        let wrap = |e: LoadError, parent: &str| LoadError::Subchart {
            name: n.clone(),
            parent: parent.to_string(),
            error: Box::new(e),
        };
        ld.at.push(Step {
            index: c.dependencies.len(),
            entry: n.clone(),
            parent: c.metadata.name.clone(),
        });
        let sc = if n.ends_with(".tgz") {
            let file = &group[0];
            if file.name != n {
                return Err(LoadError::SubchartTar {
                    parent: c.metadata.name.clone(),
                    expected: n.clone(),
                    got: file.name.clone(),
                });
            }
            if ld.budget.depth >= MAX_SUBCHART_DEPTH {
                return Err(wrap(LoadError::TooDeep, &c.metadata.name));
            }
            ld.budget.depth += 1;
            let r = if is_gzip(&file.data) {
                load_archive_named(&file.data, &file.name, ld)
            } else {
                Err(LoadError::BadGzip {
                    path: file.name.clone(),
                    details: "gzip: invalid header".into(),
                })
            };
            ld.budget.depth -= 1;
            r
        } else {
            let buff: Vec<ChartFile> = group
                .into_iter()
                .filter_map(|f| {
                    f.name.split_once('/').map(|(_, rest)| ChartFile {
                        name: rest.to_string(),
                        data: f.data,
                    })
                })
                .collect();
            load_files_in(buff, ld)
        };
        ld.at.pop();
        c.dependencies
            .push(sc.map_err(|e| wrap(e, &c.metadata.name))?);
    }
    Ok(c)
}

/// Every path in a chart and its subcharts, as `helm package` would lay them
/// out (subcharts under `charts/<name>/`); used to compare charts.
pub fn chart_paths(c: &Chart) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in c
        .raw
        .iter()
        .filter(|f| !f.name.starts_with("charts/") || f.name.ends_with(".prov"))
    {
        out.insert(f.name.clone());
    }
    for d in &c.dependencies {
        for p in chart_paths(d) {
            out.insert(format!("charts/{}/{p}", d.metadata.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both walks of `dir`: one file at a time, and shared among threads
    /// (whatever the size). Each is the files' names and sizes, or the error.
    fn both_walks(dir: &Path, mode: ReadMode) -> [Result<Vec<(String, usize)>, String>; 2] {
        let rules = {
            let ignore = dir.join(".helmignore");
            let mut r = match std::fs::read(&ignore) {
                Ok(text) => Rules::parse(&String::from_utf8_lossy(&text)).unwrap(),
                Err(_) => Rules::empty(),
            };
            r.add_defaults();
            r
        };
        let id = dir_id(dir, &std::fs::metadata(dir).unwrap()).unwrap();
        let summary = |r: Result<Vec<ChartFile>, LoadError>| {
            r.map(|files| {
                files
                    .iter()
                    .map(|f| (f.name.clone(), f.data.len()))
                    .collect()
            })
            .map_err(|e| e.to_string())
        };
        let mut seq = Vec::new();
        let one = walk_dir(dir, "", &rules, mode, &mut seq, &[id]).map(|()| seq);
        // Threads whatever the size.
        let shared = walk_shared(dir, &rules, mode, &[id], 0);
        [summary(one), summary(shared)]
    }

    /// The shared walk gives the files (in order) and the first error of
    /// the sequential one: ignore rules, symlinks to files and directories,
    /// symlink cycles, broken symlinks and irregular files.
    #[cfg(unix)]
    #[test]
    fn shared_walk_matches_sequential_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |p: &str, text: &str| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("Chart.yaml", "name: x\n");
        write(".helmignore", "ignored/\n*.skip\n");
        write("values.yaml", &"a: b\n".repeat(5000));
        for i in 0..20 {
            write(&format!("templates/t{i:02}.yaml"), &"x".repeat(i * 1000));
            write(&format!("charts/sub{}/templates/u{i}.yaml", i % 3), "u");
        }
        write("templates/deep/a/b/c.yaml", "c");
        write("ignored/secret.yaml", "s");
        write("templates/drop.skip", "d");
        std::os::unix::fs::symlink(root.join("templates/t01.yaml"), root.join("link.yaml"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("charts/sub1"), root.join("linked-dir")).unwrap();
        for mode in [ReadMode::Read, ReadMode::Map] {
            let [a, b] = both_walks(root, mode);
            assert!(a.as_ref().is_ok_and(|f| f.len() == 52), "{a:?}");
            assert_eq!(a, b);
        }
        // Errors, each after some files: a cycle, a broken link, a fifo.
        std::os::unix::fs::symlink(root, root.join("charts/sub0/loop")).unwrap();
        let [a, b] = both_walks(root, ReadMode::Map);
        assert!(a.as_ref().is_err_and(|e| e.contains("cycle")), "{a:?}");
        assert_eq!(a, b);
        std::fs::remove_file(root.join("charts/sub0/loop")).unwrap();
        std::os::unix::fs::symlink(root.join("missing"), root.join("templates/t05b.yaml")).unwrap();
        let [a, b] = both_walks(root, ReadMode::Map);
        assert!(a.is_err(), "{a:?}");
        assert_eq!(a, b);
        std::fs::remove_file(root.join("templates/t05b.yaml")).unwrap();
        let fifo = root.join("templates/t10b.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let [a, b] = both_walks(root, ReadMode::Map);
            assert!(a.as_ref().is_err_and(|e| e.contains("t10b")), "{a:?}");
            assert_eq!(a, b);
        }
    }

    #[test]
    #[allow(unsafe_code)]
    fn mapped_files_lose_their_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let big = "a: b\n".repeat(MAP_MIN_BYTES as usize);
        std::fs::write(
            dir.path().join("Chart.yaml"),
            "apiVersion: v2\nname: x\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("templates")).unwrap();
        let bom_text = [BOM, big.as_bytes()].concat();
        std::fs::write(dir.path().join("templates/big.yaml"), &bom_text).unwrap();
        std::fs::write(
            dir.path().join("templates/small.yaml"),
            [BOM, b"x: 1\n"].concat(),
        )
        .unwrap();
        std::fs::write(dir.path().join("big.txt"), &big).unwrap();
        // SAFETY: the files are this test's own and stay unchanged.
        let mapped = unsafe { load_mapped(dir.path()) }.unwrap();
        let read = load(dir.path()).unwrap();
        assert_eq!(mapped, read);
        let t = |c: &Chart, n: &str| {
            c.templates
                .iter()
                .chain(&c.files)
                .find(|f| f.name == n)
                .map(|f| (f.data.is_mapped(), f.data.to_vec()))
                .unwrap()
        };
        assert_eq!(
            t(&mapped, "templates/big.yaml"),
            (true, big.clone().into_bytes())
        );
        assert_eq!(
            t(&mapped, "templates/small.yaml"),
            (false, b"x: 1\n".to_vec())
        );
        assert_eq!(t(&mapped, "big.txt"), (true, big.into_bytes()));
        assert!(!t(&read, "big.txt").0);
    }

    #[test]
    fn clean_paths() {
        assert_eq!(clean_path("a/./b//c/"), "a/b/c");
        assert_eq!(clean_path("a/../../b"), "../b");
        assert_eq!(clean_path(""), ".");
        assert_eq!(clean_path("a/.."), ".");
    }

    #[test]
    fn entry_names() {
        assert_eq!(
            sanitize_entry_name("m/templates/a.yaml").unwrap(),
            "templates/a.yaml"
        );
        assert_eq!(sanitize_entry_name("m\\Chart.yaml").unwrap(), "Chart.yaml");
        assert!(matches!(
            sanitize_entry_name("m//etc/passwd"),
            Err(LoadError::AbsolutePath)
        ));
        assert!(matches!(
            sanitize_entry_name("Chart.yaml"),
            Err(LoadError::OutsideBase(_))
        ));
        assert!(matches!(
            sanitize_entry_name("m/../x"),
            Err(LoadError::ParentDirectory)
        ));
        assert!(matches!(
            sanitize_entry_name("m/a/../../x"),
            Err(LoadError::ParentDirectory)
        ));
        assert!(matches!(
            sanitize_entry_name("m/c:/x"),
            Err(LoadError::IllegalName)
        ));
        assert!(matches!(
            sanitize_entry_name("m\\c:\\x"),
            Err(LoadError::IllegalName)
        ));
    }

    fn f(name: &str, data: &str) -> ChartFile {
        ChartFile {
            name: name.into(),
            data: data.as_bytes().to_vec().into(),
        }
    }

    #[test]
    fn classify() {
        let c = load_files(vec![
            f("Chart.yaml", "name: x\nversion: 1.0.0\n"),
            f("values.yaml", "a: 1\n"),
            f("templates/a.yaml", "kind: A"),
            f("crds/c.yaml", "x"),
            f("charts/sub/Chart.yaml", "name: sub\nversion: 0.1.0\n"),
            f("charts/sub/values.yaml", ""),
            f("charts/x.prov", "sig"),
            f("charts/_skip/Chart.yaml", "bad: ["),
        ])
        .unwrap();
        assert_eq!(c.metadata.api_version, "v1");
        assert_eq!(c.templates.len(), 1);
        assert_eq!(c.files.len(), 2);
        assert_eq!(c.dependencies.len(), 1);
        assert_eq!(c.dependencies[0].metadata.name, "sub");
        assert!(c.dependencies[0].values.is_none());
        assert!(c.values.is_some());
    }

    #[test]
    fn load_errors() {
        let e = load_files(vec![f("values.yaml", "")]).unwrap_err();
        assert_eq!(e.to_string(), "Chart.yaml file is missing");
        let e = load_files(vec![
            f("Chart.yaml", "name: x\n"),
            f("charts/README.md", "x"),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "validation: chart.metadata.version is required"
        );
        let e = load_files(vec![
            f("Chart.yaml", "name: x\nversion: 1\n"),
            f("charts/README.md", "x"),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "error unpacking subchart README.md in x: Chart.yaml file is missing"
        );
        let e = load_files(vec![
            f("Chart.yaml", "name: x\nversion: 1\n"),
            f("values.yaml", "- a\n"),
        ])
        .unwrap_err();
        assert!(
            e.to_string().starts_with("cannot load values.yaml: "),
            "{e}"
        );
    }

    /// Loads `files` deferring the values files, as `load_inspecting` does,
    /// and checks what the inspector saw.
    fn load_deferred(files: Vec<ChartFile>) -> Result<Chart, LoadError> {
        let mut ld = Loading::new(true);
        let structure = load_files_in(files, &mut ld);
        let mut seen = None;
        let mut inspect = |c: &Chart| seen = Some(c.clone());
        let r = ld.finish(structure, Some(&mut inspect));
        if let Some(c) = &seen {
            fn no_values(c: &Chart) -> bool {
                c.values.is_none() && c.dependencies.iter().all(no_values)
            }
            assert!(no_values(c), "the inspector saw decoded values");
        }
        r
    }

    /// Deferring the values files changes neither the chart nor which
    /// error comes first: a bad values file met before a broken part of
    /// the structure still wins, wrapped in its subcharts' context.
    #[test]
    fn deferred_values_load_the_same() {
        let good = "a: 1\n";
        let bad = "a: [\n";
        let top = |values: &str, extra: Vec<ChartFile>| {
            let mut v = vec![
                f("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
                f("templates/a.yaml", "x"),
            ];
            v.extend(extra);
            v.push(f("values.yaml", values));
            v
        };
        let sub = |dir: &str, name: &str, values: &str| {
            vec![
                f(
                    &format!("charts/{dir}/Chart.yaml"),
                    &format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n"),
                ),
                f(&format!("charts/{dir}/values.yaml"), values),
            ]
        };
        let broken_sub = vec![f("charts/zz/README.md", "no chart here")];
        let cases = vec![
            top(good, Vec::new()),
            top(bad, Vec::new()),
            top("", Vec::new()),
            top("- a\n", Vec::new()),
            top(good, sub("one", "one", good)),
            top(
                good,
                [sub("one", "one", good), sub("two", "two", "b: 2\n")].concat(),
            ),
            top(good, sub("one", "one", bad)),
            top(bad, sub("one", "one", bad)),
            top(good, [sub("one", "one", bad), broken_sub.clone()].concat()),
            top(
                good,
                [vec![f("charts/aa/README.md", "x")], sub("one", "one", bad)].concat(),
            ),
            top(bad, broken_sub.clone()),
            top(
                good,
                [sub("_skip", "skip", bad), sub("one", "one", good)].concat(),
            ),
            vec![f("values.yaml", bad)],
            vec![f("values.yaml", bad), f("Chart.yaml", "name: [\n")],
            vec![f("values.yaml", bad), f("Chart.yaml", "name: x\n")],
            [vec![f("Chart.lock", "x: [\n")], top(bad, Vec::new())].concat(),
            [top(bad, Vec::new()), vec![f("requirements.lock", "x: [\n")]].concat(),
        ];
        for (i, files) in cases.into_iter().enumerate() {
            let now = load_files(files.clone());
            let later = load_deferred(files);
            match (&now, &later) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "case {i}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "case {i}"),
                _ => panic!("case {i}: {now:?} vs {later:?}"),
            }
        }
    }
}
