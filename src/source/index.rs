//! A chart repository's `index.yaml`, as Helm 3.17.2's `pkg/repo/index.go`
//! reads, resolves and writes it.
//!
//! - [`parse`]: Helm's `loadIndex`. JSON when the bytes are valid JSON
//!   (`encoding/json`, lenient), otherwise YAML through the crate's guarded
//!   parser (sigs.k8s.io/yaml `UnmarshalStrict`: unknown fields are errors;
//!   alias bombs and over-deep documents are refused). `apiVersion` is
//!   required; invalid entries are skipped with Helm's warning; each chart's
//!   versions are sorted newest first (`SortEntries`).
//! - [`IndexFile::get`]: Helm's `IndexFile.Get`, version resolution with
//!   Masterminds constraints (the template stage's `semverCompare`).
//! - [`IndexFile::to_yaml`] / [`IndexFile::to_json`] /
//!   [`IndexFile::write_file`]: Helm's `WriteFile` / `WriteJSONFile`, byte
//!   for byte.
//! - [`index_directory`], [`IndexFile::must_add`], [`IndexFile::merge`]:
//!   `helm repo index` (`IndexDirectory`, `MustAdd`, `Merge`).
//!
//! Where rudder differs from Helm, on purpose:
//! - a `null` entry is skipped with Helm's warning (Helm keeps it, and its
//!   sort or `Merge` then dies of a nil pointer);
//! - versions that compare equal (`1.0.0+a`, `1.0.0+b`) keep their order
//!   (Go's sort is not stable beyond 12 elements, so Helm's order there is
//!   an accident of its algorithm);
//! - a `*.tgz` that is a directory is not indexed (Helm loads it as a chart
//!   directory, then fails to hash it and stops).
//!
//! Times (`generated`, `created`) are kept as the text Go's `time.Time`
//! marshals to (RFC 3339 with nanoseconds, trailing zeros trimmed, the
//! offset as written): what Helm writes back when it re-marshals an index.
use crate::chart::metadata::{
    apply_metadata, DecodeNotes, DEPENDENCY_FIELDS, MAINTAINER_FIELDS, METADATA_FIELDS,
};
use crate::chart::Metadata;
use crate::gostd::strconv::quote;
use crate::gostd::time::{parse_in_location, GoTime, Location};
use crate::template::funcs::semver::{parse_version, Constraints, SemverError, Version};
use crate::yaml::Node;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;

/// The index API version Helm writes (`repo.APIVersionV1`).
pub const API_VERSION_V1: &str = "v1";

/// Go's zero `time.Time` as `encoding/json` writes it.
pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// A chart repository's index (`repo.IndexFile`).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct IndexFile {
    /// `apiVersion` (`v1`).
    pub api_version: String,
    /// `generated`: Go's RFC 3339 text of the generation time.
    pub generated: String,
    /// `entries`: chart name to its versions, newest first after [`parse`]
    /// or [`IndexFile::sort_entries`].
    pub entries: BTreeMap<String, Vec<ChartVersion>>,
    /// `serverInfo` (ChartMuseum's; Helm keeps and writes it back).
    #[serde(default)]
    pub server_info: BTreeMap<String, Node>,
    /// `publicKeys`.
    #[serde(default)]
    pub public_keys: Vec<String>,
    /// `annotations`: free-form, uninterpreted.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// One version of a chart in an index (`repo.ChartVersion`): the chart's
/// `Chart.yaml` fields plus where to download it.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ChartVersion {
    /// The chart's metadata (embedded in the entry, as in Helm).
    pub metadata: Metadata,
    /// `urls`: where the archive can be downloaded (absolute or relative to
    /// the repository URL).
    pub urls: Vec<String>,
    /// Whether `urls` was missing or null rather than a list: Helm writes
    /// such an entry back as `urls: null`, an empty list as `urls: []`.
    #[serde(default)]
    pub null_urls: bool,
    /// `created`: Go's RFC 3339 text of the time the entry was added.
    pub created: String,
    /// `removed`.
    pub removed: bool,
    /// `digest`: the archive's sha256, hex.
    pub digest: String,
    /// `checksum` (Helm 2's; kept and written back, never used).
    #[serde(default)]
    pub checksum: String,
    /// `engine` (Helm 2's; kept and written back, never used).
    #[serde(default)]
    pub engine: String,
    /// `tillerVersion` (Helm 2's; kept and written back, never used).
    #[serde(default)]
    pub tiller_version: String,
    /// `url` (Helm 2's; kept and written back, never used).
    #[serde(default)]
    pub url: String,
}

impl ChartVersion {
    /// The chart version (`Chart.yaml`'s `version`).
    pub fn version(&self) -> &str {
        &self.metadata.version
    }

    /// The chart name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}

/// Why an index cannot be read, or a chart version not found in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The index is empty (`ErrEmptyIndexYaml`).
    #[error("error loading {source_name}: empty index.yaml file")]
    Empty {
        /// The file or URL the index came from.
        source_name: String,
    },
    /// The index has no `apiVersion` (`ErrNoAPIVersion`).
    #[error("error loading {source_name}: no API version specified")]
    NoApiVersion {
        /// The file or URL the index came from.
        source_name: String,
    },
    /// The YAML or JSON is malformed or refused (an alias bomb, a document
    /// nested too deep), or does not decode into Helm's types.
    #[error("error loading {source_name}: {message}")]
    Decode {
        /// The file or URL the index came from.
        source_name: String,
        /// Helm's message (sigs.k8s.io/yaml's or encoding/json's).
        message: String,
    },
    /// No chart of that name in the index (`ErrNoChartName`).
    #[error("no chart name found")]
    NoChartName {
        /// The chart asked for.
        name: String,
    },
    /// The chart has no versions at all (`ErrNoChartVersion`).
    #[error("no chart version found")]
    NoChartVersion {
        /// The chart asked for.
        name: String,
    },
    /// No version of the chart satisfies the constraint.
    #[error("no chart version found for {name}-{version}")]
    VersionNotFound {
        /// The chart asked for.
        name: String,
        /// The version or constraint asked for.
        version: String,
    },
    /// A file could not be read (Go's `open PATH: no such file or
    /// directory`).
    #[error("{op} {path}: {message}")]
    Io {
        /// What was being done (`open`, `read`, `stat`).
        op: &'static str,
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The index could not be written (Helm's `AtomicWriteFile`).
    #[error("{0}")]
    Write(String),
    /// A chart archive's metadata does not validate (Helm's `MustAdd`,
    /// from `IndexDirectory`: `failed adding to FILE to index: ...`).
    #[error("failed adding to {file} to index: validate failed for {file}: {message}")]
    Add {
        /// The archive's file name.
        file: String,
        /// The validation error (`validation: ...`).
        message: String,
    },
    /// The version asked for is not a Masterminds constraint.
    #[error("{error}")]
    Constraint {
        /// The constraint as given.
        constraint: String,
        /// Masterminds' error (`improper constraint: ...`).
        error: SemverError,
    },
}

/// Helm's `loadIndex` on `bytes` read from `source` (a file path or a URL,
/// used in messages). Warnings for skipped entries go to stderr, as Helm
/// logs them; [`parse_with_warnings`] returns them instead.
pub fn parse(bytes: &[u8], source: &str) -> Result<IndexFile, IndexError> {
    let (index, warnings) = parse_with_warnings(bytes, source)?;
    for w in warnings {
        eprintln!("{w}");
    }
    Ok(index)
}

/// Helm's `LoadIndexFile`: reads and parses the index at `path` (named
/// as given in messages). Skipped entries are warned about on stderr.
pub fn load_file(path: &Path) -> Result<IndexFile, IndexError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| IndexError::Io {
        // Go's os.ReadFile opens, then fails to read a directory.
        op: if path.is_dir() { "read" } else { "open" },
        path: shown.clone(),
        message: go_errno_text(&e),
    })?;
    parse(&bytes, &shown)
}

/// The text Go prints for an OS error (`no such file or directory`), which
/// Rust's decorates with `(os error N)`.
fn go_errno_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}

/// [`parse`], returning Helm's warnings (`skipping loading invalid entry
/// ...`) rather than printing them.
pub fn parse_with_warnings(
    bytes: &[u8],
    source: &str,
) -> Result<(IndexFile, Vec<String>), IndexError> {
    let decode_err = |message: String| IndexError::Decode {
        source_name: source.to_string(),
        message,
    };
    if bytes.is_empty() {
        return Err(IndexError::Empty {
            source_name: source.to_string(),
        });
    }
    let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
    // Bytes that are not UTF-8 stay visible to the YAML reader, which
    // refuses them with go-yaml's words.
    let text = crate::gostd::gostr::go_string_from_bytes(bytes);
    let (doc, mode) = if is_json {
        let doc = crate::yaml::parse_json(&text).map_err(|e| decode_err(e.to_string()))?;
        (doc, Mode::Json)
    } else {
        let doc =
            crate::yaml::parse_document_strict(&text).map_err(|e| decode_err(e.to_string()))?;
        (doc, Mode::Yaml)
    };
    let mut index = decode_index(&doc, mode).map_err(|e| decode_err(mode.wrap(e)))?;
    let mut warnings = Vec::new();
    let mut entries = BTreeMap::new();
    for (name, versions) in std::mem::take(&mut index.entries) {
        let mut kept = Vec::new();
        // Helm walks each list from its end: its warnings come in that order.
        for (cv, notes) in versions.into_iter().rev() {
            let Some(mut cv) = cv else {
                warnings.push(format!(
                    "skipping loading invalid entry for chart {} from {source}: empty entry",
                    quote(&name)
                ));
                continue;
            };
            if cv.metadata.api_version.is_empty() {
                cv.metadata.api_version = API_VERSION_V1.into();
            }
            let raw_version = cv.metadata.version.clone();
            if let Err(e) = cv.metadata.validate(notes) {
                // JFrog strips aliases (helm#12748): Helm keeps such entries.
                if !e
                    .to_string()
                    .starts_with("validation: more than one dependency with name or alias")
                {
                    warnings.push(format!(
                        "skipping loading invalid entry for chart {} {} from {source}: {e}",
                        quote(&name),
                        quote(&raw_version)
                    ));
                    continue;
                }
            }
            kept.push(cv);
        }
        kept.reverse();
        entries.insert(name, kept);
    }
    let mut out = IndexFile {
        api_version: index.api_version,
        generated: index.generated,
        entries,
        server_info: index.server_info,
        public_keys: index.public_keys,
        annotations: index.annotations,
    };
    out.sort_entries();
    if out.api_version.is_empty() {
        return Err(IndexError::NoApiVersion {
            source_name: source.to_string(),
        });
    }
    Ok((out, warnings))
}

/// Masterminds' ordering of two chart versions; a version that does not
/// parse sorts below every one that does (Helm's `ChartVersions.Less`).
fn version_order(a: Option<&Version>, b: Option<&Version>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.compare(y),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

impl IndexFile {
    /// An empty index as Helm's `NewIndexFile` makes it, generated now.
    pub fn new() -> IndexFile {
        IndexFile {
            api_version: API_VERSION_V1.into(),
            generated: GoTime::now().rfc3339_nano(),
            ..IndexFile::default()
        }
    }

    /// Helm's `SortEntries`: each chart's versions newest first (stable for
    /// equal versions).
    pub fn sort_entries(&mut self) {
        for versions in self.entries.values_mut() {
            // Each version parsed once, not once per comparison.
            let mut keyed: Vec<(Option<Version>, ChartVersion)> = std::mem::take(versions)
                .into_iter()
                .map(|cv| (parse_version(cv.version()).ok(), cv))
                .collect();
            keyed.sort_by(|(a, _), (b, _)| version_order(b.as_ref(), a.as_ref()));
            *versions = keyed.into_iter().map(|(_, cv)| cv).collect();
        }
    }

    /// Helm's `IndexFile.Get`: the entry of chart `name` for `version`, a
    /// Masterminds constraint. An empty version means the newest stable
    /// version (`*`: pre-releases are skipped). A version string equal to an
    /// entry's version wins over constraint matching; otherwise the first
    /// entry, in the index's order, whose version satisfies the constraint.
    pub fn get(&self, name: &str, version: &str) -> Result<&ChartVersion, IndexError> {
        let vs = self
            .entries
            .get(name)
            .ok_or_else(|| IndexError::NoChartName { name: name.into() })?;
        if vs.is_empty() {
            return Err(IndexError::NoChartVersion { name: name.into() });
        }
        let constraint = Constraints::parse(if version.is_empty() { "*" } else { version })
            .map_err(|error| IndexError::Constraint {
                constraint: version.into(),
                error,
            })?;
        if !version.is_empty() {
            if let Some(cv) = vs.iter().find(|cv| cv.version() == version) {
                return Ok(cv);
            }
        }
        vs.iter()
            .find(|cv| {
                parse_version(cv.version())
                    .map(|v| constraint.check(&v))
                    .unwrap_or(false)
            })
            .ok_or_else(|| IndexError::VersionNotFound {
                name: name.into(),
                version: version.into(),
            })
    }

    /// Helm's `Has`: whether [`IndexFile::get`] finds `name` at `version`.
    pub fn has(&self, name: &str, version: &str) -> bool {
        self.get(name, version).is_ok()
    }
}

impl IndexFile {
    /// Helm's `MustAdd`: adds chart `md` found as `filename` under
    /// `base_url` (a URL or a relative path; empty for none) with the
    /// archive's `digest`, created now. The index may be left unsorted.
    pub fn must_add(
        &mut self,
        mut md: Metadata,
        filename: &str,
        base_url: &str,
        digest: &str,
    ) -> Result<(), IndexError> {
        if md.api_version.is_empty() {
            md.api_version = "v1".into();
        }
        md.validate(DecodeNotes::default())
            .map_err(|e| IndexError::Add {
                file: filename.to_string(),
                message: e.to_string(),
            })?;
        let mut u = filename.to_string();
        if !base_url.is_empty() {
            let file = filename.rsplit('/').next().unwrap_or(filename);
            u = url_join(base_url, file).unwrap_or_else(|| go_path_join(&[base_url, file]));
        }
        let cv = ChartVersion {
            urls: vec![u],
            created: GoTime::now().rfc3339_nano(),
            digest: digest.to_string(),
            metadata: md,
            ..ChartVersion::default()
        };
        self.entries
            .entry(cv.name().to_string())
            .or_default()
            .push(cv);
        Ok(())
    }

    /// Helm's `Merge`: adds each entry of `other` whose name and version
    /// [`IndexFile::has`] does not find here (so this index's entries win).
    /// The index may be left unsorted.
    pub fn merge(&mut self, other: &IndexFile) {
        // `has` on each incoming entry, with this index's versions parsed
        // once per chart rather than once per look-up.
        let mut parsed: BTreeMap<String, Vec<Option<Version>>> = BTreeMap::new();
        for cvs in other.entries.values() {
            for cv in cvs {
                let (name, version) = (cv.name(), cv.version());
                let mine = self.entries.entry(name.to_string()).or_default();
                let known = parsed.entry(name.to_string()).or_insert_with(|| {
                    mine.iter()
                        .map(|c| parse_version(c.version()).ok())
                        .collect()
                });
                if has_version(mine, known, version) {
                    continue;
                }
                known.push(parse_version(version).ok());
                mine.push(cv.clone());
            }
        }
        // `entry` made a list for names that gained nothing.
        self.entries.retain(|_, v| !v.is_empty());
    }

    /// The index as Helm's `WriteFile` writes it: sigs.k8s.io/yaml's
    /// `Marshal` (JSON field names, keys sorted, Helm's `omitempty` rules).
    pub fn to_yaml(&self) -> String {
        crate::yaml::to_yaml(&self.to_node())
    }

    /// The index as Helm's `WriteJSONFile` writes it:
    /// `json.MarshalIndent(i, "", "  ")`, Go's field order, no final newline.
    pub fn to_json(&self) -> String {
        let mut fields: Vec<(&str, String)> = Vec::new();
        if !self.server_info.is_empty() {
            fields.push((
                "serverInfo",
                crate::yaml::to_json(&Node::Map(self.server_info.clone()), true),
            ));
        }
        fields.push(("apiVersion", json_str(&self.api_version)));
        fields.push(("generated", json_str(&self.generated)));
        let entries: Vec<(&str, String)> = self
            .entries
            .iter()
            .map(|(name, cvs)| {
                let list = cvs.iter().map(version_json).collect::<Vec<_>>();
                (name.as_str(), format!("[{}]", list.join(",")))
            })
            .collect();
        fields.push(("entries", json_object(&entries)));
        if !self.public_keys.is_empty() {
            fields.push(("publicKeys", json_strs(&self.public_keys)));
        }
        if !self.annotations.is_empty() {
            let a: Vec<(&str, String)> = self
                .annotations
                .iter()
                .map(|(k, v)| (k.as_str(), json_str(v)))
                .collect();
            fields.push(("annotations", json_object(&a)));
        }
        go_json_indent(&go_escape_html(&json_object(&fields)), "  ")
    }

    /// Writes the index to `path` as Helm does (`WriteFile`, or
    /// `WriteJSONFile` with `json`): atomically, mode 0644.
    pub fn write_file(&self, path: &Path, json: bool) -> Result<(), IndexError> {
        let text = if json { self.to_json() } else { self.to_yaml() };
        crate::fsutil::atomic_write(path, text.as_bytes(), crate::fsutil::Mode::Exact(0o644))
            .map_err(|e| IndexError::Write(format!("{e}: {}", go_errno_text(&e.error))))
    }

    /// The index as the JSON document `encoding/json` makes of Helm's types
    /// (the form sigs.k8s.io/yaml turns into YAML).
    fn to_node(&self) -> Node {
        let mut m = BTreeMap::new();
        if !self.server_info.is_empty() {
            m.insert("serverInfo".into(), Node::Map(self.server_info.clone()));
        }
        m.insert("apiVersion".into(), Node::Str(self.api_version.clone()));
        m.insert("generated".into(), Node::Str(self.generated.clone()));
        let entries = self
            .entries
            .iter()
            .map(|(k, cvs)| (k.clone(), Node::Seq(cvs.iter().map(version_node).collect())))
            .collect();
        m.insert("entries".into(), Node::Map(entries));
        if !self.public_keys.is_empty() {
            m.insert("publicKeys".into(), strs_node(&self.public_keys));
        }
        if !self.annotations.is_empty() {
            let a = self
                .annotations
                .iter()
                .map(|(k, v)| (k.clone(), Node::Str(v.clone())))
                .collect();
            m.insert("annotations".into(), Node::Map(a));
        }
        Node::Map(m)
    }
}

fn strs_node(v: &[String]) -> Node {
    Node::Seq(v.iter().map(|s| Node::Str(s.clone())).collect())
}

/// One entry's own fields after its metadata's, in Go's struct order, with
/// Helm's `omitempty` rules: `urls` always (`null` when there are none),
/// `created` always (a struct is never empty to encoding/json).
fn version_fields(cv: &ChartVersion) -> Vec<(&'static str, Node)> {
    let mut f = vec![
        (
            "urls",
            if cv.urls.is_empty() && cv.null_urls {
                Node::Null
            } else {
                strs_node(&cv.urls)
            },
        ),
        ("created", Node::Str(cv.created.clone())),
    ];
    if cv.removed {
        f.push(("removed", Node::Bool(true)));
    }
    for (k, v) in [
        ("digest", &cv.digest),
        ("checksum", &cv.checksum),
        ("engine", &cv.engine),
        ("tillerVersion", &cv.tiller_version),
        ("url", &cv.url),
    ] {
        if !v.is_empty() {
            f.push((k, Node::Str(v.clone())));
        }
    }
    f
}

fn metadata_node(md: &Metadata) -> Node {
    serde_json::to_value(md)
        .ok()
        .and_then(|j| serde_json::from_value::<Node>(j).ok())
        .unwrap_or(Node::Null)
}

fn version_node(cv: &ChartVersion) -> Node {
    let mut m = match metadata_node(&cv.metadata) {
        Node::Map(m) => m,
        _ => BTreeMap::new(),
    };
    for (k, v) in version_fields(cv) {
        m.insert(k.into(), v);
    }
    Node::Map(m)
}

fn version_json(cv: &ChartVersion) -> String {
    // Metadata serialises in Go's struct order; the entry's own fields
    // follow it, as the embedded struct's fields come first in Go.
    let md = serde_json::to_string(&cv.metadata).unwrap_or_else(|_| "{}".into());
    let inner = md
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or("");
    let mut parts = Vec::new();
    if !inner.is_empty() {
        parts.push(inner.to_string());
    }
    for (k, v) in version_fields(cv) {
        parts.push(format!(
            "{}:{}",
            json_str(k),
            crate::yaml::to_json(&v, false)
        ));
    }
    format!("{{{}}}", parts.join(","))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn json_strs(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

fn json_object(fields: &[(&str, String)]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", json_str(k)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// encoding/json's HTML-safe escaping on compact JSON text: `<`, `>`, `&`,
/// U+2028 and U+2029 can only occur inside strings there.
fn go_escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `json.Indent(dst, src, "", indent)` on compact JSON: empty arrays
/// and objects stay `[]` and `{}`.
fn go_json_indent(src: &str, indent: &str) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth = 0usize;
    let mut need_indent = false;
    let mut in_str = false;
    let mut escaped = false;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    };
    for c in src.chars() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        if need_indent && c != '}' && c != ']' {
            need_indent = false;
            depth += 1;
            newline(&mut out, depth);
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                need_indent = true;
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            '}' | ']' => {
                if need_indent {
                    need_indent = false;
                } else {
                    depth = depth.saturating_sub(1);
                    newline(&mut out, depth);
                }
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Go's `path.Join`: the non-empty elements joined with `/` and cleaned;
/// empty when all are empty.
fn go_path_join(elems: &[&str]) -> String {
    let parts: Vec<&str> = elems.iter().copied().filter(|e| !e.is_empty()).collect();
    if parts.is_empty() {
        return String::new();
    }
    crate::chart::loader::clean_path(&parts.join("/"))
}

/// Helm's `urlutil.URLJoin(base, path)`: the URL's path joined with `path`
/// (Go's `path.Join`), then `URL.String()`; `None` when `base` does not
/// parse as a URL.
fn url_join(base: &str, path: &str) -> Option<String> {
    use crate::template::funcs::urls;
    let mut u = urls::parse(base).ok()?;
    u.path = go_path_join(&[&u.path, path]);
    Some(urls::format(&u))
}

/// Helm's `IndexDirectory(dir, baseURL)`: an index of the chart archives
/// `DIR/*.tgz` and `DIR/*/*.tgz` (Go's glob order), each with its sha256
/// and its URL (`baseURL` joined with its directory and file name). Files
/// that do not load as charts (with the chart loader's archive limits) are
/// skipped, as Helm assumes they are not charts. The index is unsorted.
pub fn index_directory(dir: &Path, base_url: &str) -> Result<IndexFile, IndexError> {
    let mut archives: Vec<(String, std::path::PathBuf)> = Vec::new();
    for name in sorted_names(dir) {
        let p = dir.join(&name);
        if name.ends_with(".tgz") {
            archives.push((String::new(), p.clone()));
        }
    }
    for sub in sorted_names(dir) {
        let p = dir.join(&sub);
        if !p.is_dir() {
            continue;
        }
        for name in sorted_names(&p) {
            if name.ends_with(".tgz") {
                archives.push((sub.clone(), p.join(&name)));
            }
        }
    }
    let mut index = IndexFile::new();
    for (parent, arch) in archives {
        let fname = arch
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parent_url =
            url_join(base_url, &parent).unwrap_or_else(|| go_path_join(&[base_url, &parent]));
        let Ok(chart) = crate::chart::loader::load_file(&arch) else {
            // Helm: "Assume this is not a chart."
            continue;
        };
        let digest = sha256_file(&arch)?;
        index.must_add(chart.metadata.clone(), &fname, &parent_url, &digest)?;
    }
    Ok(index)
}

/// The entry names of `dir`, sorted bytewise as Go's glob sorts them;
/// nothing when it cannot be read (Go's glob ignores such errors).
fn sorted_names(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// Helm's `provenance.DigestFile`: the file's sha256, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String, IndexError> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let io = |op: &'static str| {
        move |e: std::io::Error| IndexError::Io {
            op,
            path: path.display().to_string(),
            message: e.to_string(),
        }
    };
    let mut f = std::fs::File::open(path).map_err(io("open"))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).map_err(io("read"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// [`IndexFile::get`]'s answer to whether `versions` (with their parsed
/// forms, `parsed`) hold `version`.
fn has_version(versions: &[ChartVersion], parsed: &[Option<Version>], version: &str) -> bool {
    if versions.is_empty() {
        return false;
    }
    let Ok(constraint) = Constraints::parse(if version.is_empty() { "*" } else { version }) else {
        return false;
    };
    if !version.is_empty() && versions.iter().any(|cv| cv.version() == version) {
        return true;
    }
    parsed.iter().flatten().any(|v| constraint.check(v))
}

/// Which decoder Helm used: `encoding/json` for valid JSON, sigs.k8s.io/yaml
/// `UnmarshalStrict` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Json,
    Yaml,
}

impl Mode {
    /// The prefix sigs.k8s.io/yaml puts before encoding/json's errors.
    fn wrap(self, e: String) -> String {
        match self {
            Mode::Json => e,
            Mode::Yaml => format!("error unmarshaling JSON: while decoding JSON: {e}"),
        }
    }
}

/// The decoded document before `loadIndex`'s checks: each entry with the
/// notes `Metadata.Validate` needs, `None` for a null entry.
struct RawIndex {
    api_version: String,
    generated: String,
    entries: BTreeMap<String, Vec<(Option<ChartVersion>, DecodeNotes)>>,
    server_info: BTreeMap<String, Node>,
    public_keys: Vec<String>,
    annotations: BTreeMap<String, String>,
}

const INDEX_FIELDS: &[&str] = &[
    "serverInfo",
    "apiVersion",
    "generated",
    "entries",
    "publicKeys",
    "annotations",
];

const VERSION_FIELDS: &[&str] = &[
    "urls",
    "created",
    "removed",
    "digest",
    "checksum",
    "engine",
    "tillerVersion",
    "url",
];

/// `encoding/json`'s field matching: exact name first, then ASCII
/// case-insensitive.
fn field_of(key: &str, known: &[&'static str]) -> Option<&'static str> {
    known
        .iter()
        .find(|f| **f == key)
        .or_else(|| known.iter().find(|f| f.eq_ignore_ascii_case(key)))
        .copied()
}

/// `encoding/json` decoding state: the first type or unknown-field error is
/// kept while decoding goes on (`saveError`); an error of a value's own
/// `UnmarshalJSON` (a time) stops decoding and wins.
struct Dec {
    mode: Mode,
    saved: Option<String>,
}

impl Dec {
    fn save(&mut self, e: String) {
        if self.saved.is_none() {
            self.saved = Some(e);
        }
    }

    fn type_err(&mut self, n: &Node, strct: &str, path: &str, ty: &str) {
        self.save(format!(
            "json: cannot unmarshal {} into Go struct field {strct}.{path} of type {ty}",
            n.json_kind()
        ));
    }

    fn unknown(&mut self, key: &str) {
        // Only sigs.k8s.io/yaml's UnmarshalStrict refuses unknown fields.
        if self.mode == Mode::Yaml {
            self.save(format!("json: unknown field {}", quote(key)));
        }
    }

    /// A Go `string` field. sigs.k8s.io/yaml turns YAML scalars into
    /// strings for `convert` fields (those it finds on the target type: not
    /// the fields an index entry embeds from `chart.Metadata`);
    /// encoding/json accepts only strings.
    fn string(&mut self, n: &Node, convert: bool, strct: &str, path: &str) -> String {
        let convert = convert && self.mode == Mode::Yaml;
        match n {
            Node::Null => String::new(),
            Node::Str(s) => s.clone(),
            Node::Bool(b) if convert => b.to_string(),
            Node::Int(i) if convert => i.to_string(),
            Node::Float(f) if convert => crate::gostd::float::format_go_float32(*f as f32),
            other => {
                self.type_err(other, strct, path, "string");
                String::new()
            }
        }
    }

    fn strings(&mut self, n: &Node, convert: bool, strct: &str, path: &str) -> Vec<String> {
        match n {
            Node::Null => Vec::new(),
            Node::Seq(items) => items
                .iter()
                .map(|i| self.string(i, convert, strct, path))
                .collect(),
            other => {
                self.type_err(other, strct, path, "[]string");
                Vec::new()
            }
        }
    }

    fn bool(&mut self, n: &Node, strct: &str, path: &str) -> bool {
        match n {
            Node::Null => false,
            Node::Bool(b) => *b,
            other => {
                self.type_err(other, strct, path, "bool");
                false
            }
        }
    }

    fn string_map(
        &mut self,
        n: &Node,
        convert: bool,
        strct: &str,
        path: &str,
    ) -> BTreeMap<String, String> {
        match n {
            Node::Null => BTreeMap::new(),
            Node::Map(m) => m
                .iter()
                .map(|(k, v)| (k.clone(), self.string(v, convert, strct, path)))
                .collect(),
            other => {
                self.type_err(other, strct, path, "map[string]string");
                BTreeMap::new()
            }
        }
    }
}

/// A Go `time.Time` field: RFC 3339 text, normalised to what Go writes
/// back. Its errors are `UnmarshalJSON`'s, which end decoding.
fn time_field(n: &Node) -> Result<Option<String>, String> {
    match n {
        Node::Null => Ok(None),
        Node::Str(s) => {
            let t = parse_in_location("2006-01-02T15:04:05Z07:00", s, Location::Utc)
                .map_err(|e| e.to_string())?;
            Ok(Some(t.rfc3339_nano()))
        }
        _ => Err("Time.UnmarshalJSON: input is not a JSON string".into()),
    }
}

fn decode_index(doc: &Node, mode: Mode) -> Result<RawIndex, String> {
    let mut out = RawIndex {
        api_version: String::new(),
        generated: ZERO_TIME.into(),
        entries: BTreeMap::new(),
        server_info: BTreeMap::new(),
        public_keys: Vec::new(),
        annotations: BTreeMap::new(),
    };
    let m = match doc {
        Node::Null => return Ok(out),
        Node::Map(m) => m,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type repo.IndexFile",
                other.json_kind()
            ))
        }
    };
    let mut d = Dec { mode, saved: None };
    // Keys in sorted order: the order of the JSON sigs.k8s.io/yaml makes.
    for (key, v) in m {
        let Some(f) = field_of(key, INDEX_FIELDS) else {
            d.unknown(key);
            continue;
        };
        match f {
            "apiVersion" => out.api_version = d.string(v, true, "IndexFile", f),
            "generated" => {
                if let Some(t) = time_field(v)? {
                    out.generated = t;
                }
            }
            "publicKeys" => out.public_keys = d.strings(v, true, "IndexFile", f),
            "annotations" => out.annotations = d.string_map(v, true, "IndexFile", f),
            "serverInfo" => match v {
                Node::Null => out.server_info.clear(),
                Node::Map(sm) => out.server_info.extend(sm.clone()),
                other => d.type_err(other, "IndexFile", f, "map[string]interface {}"),
            },
            _ => match v {
                Node::Null => out.entries.clear(),
                Node::Map(em) => {
                    for (name, list) in em {
                        let versions = match list {
                            Node::Null => Vec::new(),
                            Node::Seq(items) => {
                                let mut vs = Vec::with_capacity(items.len());
                                for i in items {
                                    if let Some(cv) = decode_version(i, &mut d)? {
                                        vs.push(cv);
                                    }
                                }
                                vs
                            }
                            other => {
                                d.type_err(other, "IndexFile", "entries", "repo.ChartVersions");
                                Vec::new()
                            }
                        };
                        out.entries.insert(name.clone(), versions);
                    }
                }
                other => d.type_err(other, "IndexFile", f, "map[string]repo.ChartVersions"),
            },
        }
    }
    match d.saved {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// One entry of `entries`. `Ok(None)` when it is not an object (a type
/// error is saved); `Ok(Some((None, _)))` for a null entry.
#[allow(clippy::type_complexity)]
fn decode_version(
    n: &Node,
    d: &mut Dec,
) -> Result<Option<(Option<ChartVersion>, DecodeNotes)>, String> {
    let m = match n {
        Node::Null => return Ok(Some((None, DecodeNotes::default()))),
        Node::Map(m) => m,
        other => {
            d.type_err(other, "IndexFile", "entries", "repo.ChartVersion");
            return Ok(None);
        }
    };
    let mut cv = ChartVersion {
        created: ZERO_TIME.into(),
        ..ChartVersion::default()
    };
    let mut md_fields = BTreeMap::new();
    for (key, v) in m {
        if let Some(f) = field_of(key, VERSION_FIELDS) {
            let path = format!("entries.{f}");
            match f {
                "urls" => {
                    cv.null_urls = matches!(v, Node::Null);
                    cv.urls = d.strings(v, true, "ChartVersion", &path);
                }
                "created" => {
                    if let Some(t) = time_field(v)? {
                        cv.created = t;
                    }
                }
                "removed" => cv.removed = d.bool(v, "ChartVersion", &path),
                "digest" => cv.digest = d.string(v, true, "ChartVersion", &path),
                "checksum" => cv.checksum = d.string(v, true, "ChartVersion", &path),
                "engine" => cv.engine = d.string(v, true, "ChartVersion", &path),
                "tillerVersion" => cv.tiller_version = d.string(v, true, "ChartVersion", &path),
                _ => cv.url = d.string(v, true, "ChartVersion", &path),
            }
        } else if let Some(f) = field_of(key, METADATA_FIELDS) {
            check_metadata_field(f, v, d);
            md_fields.insert(key.clone(), v.clone());
        } else {
            d.unknown(key);
        }
    }
    if !m.keys().any(|k| field_of(k, &["urls"]).is_some()) {
        cv.null_urls = true;
    }
    if d.saved.is_some() {
        // The whole index fails; what this entry holds no longer matters.
        return Ok(Some((Some(cv), DecodeNotes::default())));
    }
    let mut notes = DecodeNotes::default();
    // The types are checked: this only fills the struct as encoding/json
    // would (case-insensitive keys, the last of equal ones winning).
    if let Err(e) = apply_metadata(&mut cv.metadata, &Node::Map(md_fields), &mut notes) {
        d.save(e.to_string());
    }
    Ok(Some((Some(cv), notes)))
}

/// Saves encoding/json's error for a `chart.Metadata` field of an entry of
/// the wrong type. sigs.k8s.io/yaml does not convert scalars for the
/// fields an entry embeds, so a number where a string belongs is an error
/// in YAML as in JSON.
fn check_metadata_field(f: &str, v: &Node, d: &mut Dec) {
    let path = format!("entries.{f}");
    match f {
        "sources" | "keywords" => {
            d.strings(v, false, "ChartVersion", &path);
        }
        "deprecated" => {
            d.bool(v, "ChartVersion", &path);
        }
        "annotations" => {
            d.string_map(v, false, "ChartVersion", &path);
        }
        "maintainers" => check_struct_list(
            v,
            d,
            &path,
            "[]*chart.Maintainer",
            "chart.Maintainer",
            "Maintainer",
            MAINTAINER_FIELDS,
        ),
        "dependencies" => check_struct_list(
            v,
            d,
            &path,
            "[]*chart.Dependency",
            "chart.Dependency",
            "Dependency",
            DEPENDENCY_FIELDS,
        ),
        _ => {
            d.string(v, false, "ChartVersion", &path);
        }
    }
}

/// `maintainers` or `dependencies`: a list of objects (or nulls).
fn check_struct_list(
    v: &Node,
    d: &mut Dec,
    path: &str,
    list_ty: &str,
    item_ty: &str,
    strct: &str,
    fields: &[&'static str],
) {
    let items = match v {
        Node::Null => return,
        Node::Seq(items) => items,
        other => return d.type_err(other, "ChartVersion", path, list_ty),
    };
    for item in items {
        let m = match item {
            Node::Null => continue,
            Node::Map(m) => m,
            other => {
                d.type_err(other, "ChartVersion", path, item_ty);
                continue;
            }
        };
        for (key, fv) in m {
            let Some(f) = field_of(key, fields) else {
                d.unknown(key);
                continue;
            };
            let p = format!("{path}.{f}");
            match f {
                "tags" => {
                    d.strings(fv, false, strct, &p);
                }
                "enabled" => {
                    d.bool(fv, strct, &p);
                }
                "import-values" => {
                    if !matches!(fv, Node::Null | Node::Seq(_)) {
                        d.type_err(fv, strct, &p, "[]interface {}");
                    }
                }
                _ => {
                    d.string(fv, false, strct, &p);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"apiVersion: v1
entries:
  nginx:
    - urls:
        - https://example.com/nginx-0.1.0.tgz
      name: nginx
      description: string
      version: 0.1.0
      home: https://github.com/something
      digest: "sha256:1234567890"
      created: 2016-10-06T16:23:20.499814565-06:00
    - urls:
        - https://example.com/nginx-0.2.0.tgz
      name: nginx
      version: 0.2.0
      created: "2016-10-06T16:23:20.000Z"
    - urls: [https://example.com/nginx-1.0.0-rc1.tgz]
      name: nginx
      version: 1.0.0-rc1
  alpine:
    - urls: [alpine-1.0.0.tgz]
      name: alpine
      version: 1.0.0
generated: 2016-10-06T16:23:20.499029981-06:00
"#;

    fn sample() -> IndexFile {
        parse(SAMPLE.as_bytes(), "index.yaml").unwrap()
    }

    #[test]
    fn parses_and_sorts() {
        let i = sample();
        assert_eq!(i.api_version, "v1");
        assert_eq!(i.generated, "2016-10-06T16:23:20.499029981-06:00");
        let v: Vec<_> = i.entries["nginx"].iter().map(|c| c.version()).collect();
        assert_eq!(v, ["1.0.0-rc1", "0.2.0", "0.1.0"]);
        let n = &i.entries["nginx"][1];
        assert_eq!(n.created, "2016-10-06T16:23:20Z");
        assert_eq!(i.entries["nginx"][0].created, ZERO_TIME);
        assert_eq!(n.metadata.api_version, "v1");
        assert_eq!(i.entries["nginx"][2].digest, "sha256:1234567890");
        assert_eq!(i.entries["alpine"][0].name(), "alpine");
    }

    #[test]
    fn get_resolves_like_helm() {
        let i = sample();
        let g = |n: &str, v: &str| i.get(n, v).map(|c| c.version().to_string());
        assert_eq!(g("nginx", "").unwrap(), "0.2.0");
        assert_eq!(g("nginx", "*").unwrap(), "0.2.0");
        assert_eq!(g("nginx", "1.0.0-rc1").unwrap(), "1.0.0-rc1");
        assert_eq!(g("nginx", ">=1.0.0-0").unwrap(), "1.0.0-rc1");
        assert_eq!(g("nginx", "<0.2.0").unwrap(), "0.1.0");
        assert_eq!(g("nginx", "0.1.x").unwrap(), "0.1.0");
        assert_eq!(g("nginx", "~0.1").unwrap(), "0.1.0");
        assert_eq!(g("nginx", "^0.1.0").unwrap(), "0.1.0");
        assert_eq!(g("nginx", "0.1.0 || 0.2.0").unwrap(), "0.2.0");
        assert_eq!(
            g("nginx", "3.x").unwrap_err().to_string(),
            "no chart version found for nginx-3.x"
        );
        assert_eq!(
            g("nope", "").unwrap_err().to_string(),
            "no chart name found"
        );
        assert_eq!(
            g("nginx", "not a version!").unwrap_err().to_string(),
            "improper constraint: not a version!"
        );
    }

    #[test]
    fn errors_name_the_source() {
        assert_eq!(
            parse(b"", "/x/index.yaml").unwrap_err().to_string(),
            "error loading /x/index.yaml: empty index.yaml file"
        );
        assert_eq!(
            parse(b"entries: {}\n", "https://r/index.yaml")
                .unwrap_err()
                .to_string(),
            "error loading https://r/index.yaml: no API version specified"
        );
        let e = parse(b"apiVersion: v1\nfoo: 1\n", "i").unwrap_err();
        assert_eq!(
            e.to_string(),
            "error loading i: error unmarshaling JSON: while decoding JSON: json: unknown field \"foo\""
        );
        // JSON is decoded leniently.
        assert!(parse(br#"{"apiVersion":"v1","foo":1}"#, "i").is_ok());
    }

    #[test]
    fn invalid_entries_are_skipped_with_helms_warning() {
        let text = "apiVersion: v1\nentries:\n  a:\n    - name: a\n      version: 1.0.0\n    - name: a\n      version: not-semver\n    - null\n";
        let (i, w) = parse_with_warnings(text.as_bytes(), "idx").unwrap();
        assert_eq!(i.entries["a"].len(), 1);
        assert_eq!(
            w,
            [
                "skipping loading invalid entry for chart \"a\" from idx: empty entry",
                "skipping loading invalid entry for chart \"a\" \"not-semver\" from idx: validation: chart.metadata.version \"not-semver\" is invalid",
            ]
        );
    }

    #[test]
    fn alias_bomb_is_refused_quickly() {
        let mut text = String::from("apiVersion: v1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let start = std::time::Instant::now();
        let e = parse(text.as_bytes(), "bomb").unwrap_err();
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert!(e.to_string().contains("excessive aliasing"), "{e}");
    }

    fn index_of(versions: &[&str]) -> IndexFile {
        let mut text = String::from("apiVersion: v1\nentries:\n  c:\n");
        for v in versions {
            text.push_str(&format!(
                "  - name: c\n    version: {v:?}\n    urls: [c-{v}.tgz]\n"
            ));
        }
        parse(text.as_bytes(), "t").unwrap()
    }

    #[test]
    fn get_constraint_forms() {
        let i = index_of(&[
            "1.15.2",
            "1.16.0-rc.1",
            "1.16.0",
            "1.16.3",
            "1.17.0-beta.1",
            "2.0.0",
            "0.3.1",
            "0.3.9",
            "0.4.0",
        ]);
        let g = |v: &str| {
            i.get("c", v)
                .map(|c| c.version().to_string())
                .map_err(|e| e.to_string())
        };
        // Sorted newest first, pre-releases in their semver place.
        let order: Vec<_> = i.entries["c"].iter().map(|c| c.version()).collect();
        assert_eq!(
            order,
            [
                "2.0.0",
                "1.17.0-beta.1",
                "1.16.3",
                "1.16.0",
                "1.16.0-rc.1",
                "1.15.2",
                "0.4.0",
                "0.3.9",
                "0.3.1"
            ]
        );
        assert_eq!(g("").unwrap(), "2.0.0");
        assert_eq!(g("1.16.x").unwrap(), "1.16.3");
        assert_eq!(g("~1.16.0").unwrap(), "1.16.3");
        assert_eq!(g("~1").unwrap(), "1.16.3");
        assert_eq!(g("^1.15").unwrap(), "1.16.3");
        assert_eq!(g("^0.3.0").unwrap(), "0.3.9");
        assert_eq!(g("^0.3.0 || ^1.15.0").unwrap(), "1.16.3");
        assert_eq!(g("<1.16.0 || 2.x").unwrap(), "2.0.0");
        assert_eq!(g(">=1.0.0, <1.16.0").unwrap(), "1.15.2");
        assert_eq!(g("1.15.0 - 1.16.1").unwrap(), "1.16.0");
        // Pre-releases only match a constraint that carries one.
        assert_eq!(
            g(">1.16.3 <2.0.0").unwrap_err(),
            "no chart version found for c->1.16.3 <2.0.0"
        );
        // Each part of a conjunction must allow it.
        assert_eq!(g(">1.16.3-0 <2.0.0").unwrap(), "1.16.3");
        assert_eq!(g(">1.16.3-0 <2.0.0-0").unwrap(), "1.17.0-beta.1");
        assert_eq!(g("1.16.0-rc.1").unwrap(), "1.16.0-rc.1");
        assert_eq!(g("~1.16.0-0").unwrap(), "1.16.3");
        assert_eq!(g("3").unwrap_err(), "no chart version found for c-3");
        assert_eq!(g("1.x.y").unwrap_err(), "improper constraint: 1.x.y");
        let e = i.get("c", "!!").unwrap_err();
        assert!(matches!(e, IndexError::Constraint { ref constraint, .. } if constraint == "!!"));
        assert!(i.has("c", "1.16.0") && !i.has("c", "9.9.9") && !i.has("d", ""));
    }

    #[test]
    fn get_prefers_an_exact_version_string() {
        // "1.2" as a constraint is ~1.2 (1.2.5 first); the entry written
        // "1.2" wins as an exact match, as does a "v"-prefixed one.
        let i = index_of(&["1.2", "1.2.5", "v1.3.0", "1.3.1"]);
        let g = |v: &str| i.get("c", v).unwrap().version().to_string();
        assert_eq!(g("1.2"), "1.2");
        // No entry reads "1.2.0"; as a constraint it is =1.2.0, which the
        // entry "1.2" satisfies (1.2.5, first in order, does not).
        assert_eq!(g("1.2.0"), "1.2");
        assert_eq!(g("~1.2.1"), "1.2.5");
        assert_eq!(g("v1.3.0"), "v1.3.0");
        assert_eq!(g("1.3"), "1.3.1");
    }

    #[test]
    fn no_versions_at_all() {
        let i = parse(b"apiVersion: v1\nentries:\n  c: []\n", "t").unwrap();
        assert_eq!(
            i.get("c", "").unwrap_err().to_string(),
            "no chart version found"
        );
    }

    #[test]
    fn writes_what_helm_writes() {
        let i = sample();
        assert_eq!(
            i.to_yaml(),
            r#"apiVersion: v1
entries:
  alpine:
  - apiVersion: v1
    created: "0001-01-01T00:00:00Z"
    name: alpine
    urls:
    - alpine-1.0.0.tgz
    version: 1.0.0
  nginx:
  - apiVersion: v1
    created: "0001-01-01T00:00:00Z"
    name: nginx
    urls:
    - https://example.com/nginx-1.0.0-rc1.tgz
    version: 1.0.0-rc1
  - apiVersion: v1
    created: "2016-10-06T16:23:20Z"
    name: nginx
    urls:
    - https://example.com/nginx-0.2.0.tgz
    version: 0.2.0
  - apiVersion: v1
    created: "2016-10-06T16:23:20.499814565-06:00"
    description: string
    digest: sha256:1234567890
    home: https://github.com/something
    name: nginx
    urls:
    - https://example.com/nginx-0.1.0.tgz
    version: 0.1.0
generated: "2016-10-06T16:23:20.499029981-06:00"
"#
        );
        let j = i.to_json();
        assert!(j.starts_with("{\n  \"apiVersion\": \"v1\",\n  \"generated\": \"2016-10-06T16:23:20.499029981-06:00\",\n  \"entries\": {\n    \"alpine\": [\n      {\n        \"name\": \"alpine\",\n        \"version\": \"1.0.0\",\n        \"apiVersion\": \"v1\",\n        \"urls\": [\n          \"alpine-1.0.0.tgz\"\n        ],\n        \"created\": \"0001-01-01T00:00:00Z\"\n      }\n    ],"), "{j}");
        assert!(j.ends_with("\n  }\n}"));
        assert_eq!(parse(j.as_bytes(), "j").unwrap(), i);
    }

    #[test]
    fn json_escapes_html_and_keeps_empty_collections_compact() {
        let mut i = IndexFile {
            api_version: "v1".into(),
            generated: ZERO_TIME.into(),
            ..IndexFile::default()
        };
        assert_eq!(
            i.to_json(),
            "{\n  \"apiVersion\": \"v1\",\n  \"generated\": \"0001-01-01T00:00:00Z\",\n  \"entries\": {}\n}"
        );
        i.annotations.insert("a".into(), "<b>&\u{2028}\"".into());
        assert!(i
            .to_json()
            .contains("\"a\": \"\\u003cb\\u003e\\u0026\\u2028\\\"\""));
    }

    #[test]
    fn urls_join_like_helm() {
        assert_eq!(
            url_join("https://x.io/charts/", "a.tgz").unwrap(),
            "https://x.io/charts/a.tgz"
        );
        assert_eq!(
            url_join("https://x.io", "a.tgz").unwrap(),
            "https://x.io/a.tgz"
        );
        assert_eq!(
            url_join("https://x.io/a b", "").unwrap(),
            "https://x.io/a%20b"
        );
        assert_eq!(url_join("", "").unwrap(), "");
        assert_eq!(url_join("", "sub").unwrap(), "sub");
        assert_eq!(url_join("sub", "a.tgz").unwrap(), "sub/a.tgz");
        assert_eq!(
            url_join("https://x.io/c?t=1", "a.tgz").unwrap(),
            "https://x.io/c/a.tgz?t=1"
        );
        assert!(url_join(":bad", "a").is_none());
        assert_eq!(go_path_join(&[":bad", "a"]), ":bad/a");
    }

    #[test]
    fn merge_keeps_local_entries() {
        let mut a = index_of(&["1.0.0", "2.0.0"]);
        let mut b = index_of(&["2.0.0", "3.0.0"]);
        for cv in b.entries.get_mut("c").unwrap() {
            cv.urls = vec!["https://old/".into()];
        }
        a.merge(&b);
        a.sort_entries();
        let got: Vec<_> = a.entries["c"]
            .iter()
            .map(|c| (c.version(), c.urls[0].as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("3.0.0", "https://old/"),
                ("2.0.0", "c-2.0.0.tgz"),
                ("1.0.0", "c-1.0.0.tgz")
            ]
        );
    }

    #[test]
    fn deep_and_duplicate_documents_are_refused() {
        let deep = format!(
            "apiVersion: v1\nserverInfo:\n  x: {}{}\n",
            "[".repeat(20_000),
            "]".repeat(20_000)
        );
        let e = parse(deep.as_bytes(), "d").unwrap_err().to_string();
        assert!(e.contains("exceeded max depth"), "{e}");
        let e = parse(b"apiVersion: v1\napiVersion: v2\n", "d").unwrap_err();
        assert_eq!(
            e.to_string(),
            "error loading d: error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"apiVersion\" already set in map"
        );
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        fn version() -> impl Strategy<Value = String> {
            (
                0u32..20,
                0u32..20,
                0u32..20,
                proptest::option::of("[a-z]{1,4}(\\.(0|[1-9][0-9]?))?"),
            )
                .prop_map(|(a, b, c, pre)| match pre {
                    Some(p) => format!("{a}.{b}.{c}-{p}"),
                    None => format!("{a}.{b}.{c}"),
                })
        }

        fn entry(name: String) -> impl Strategy<Value = ChartVersion> {
            (
                version(),
                "[ -~]{0,24}",
                proptest::collection::vec("[!-~][ -~]{0,10}", 0..3),
                proptest::collection::btree_map("[a-z./]{1,8}", "[ -~]{0,12}", 0..3),
                "[0-9a-f]{0,64}",
                any::<bool>(),
                (0i64..4_000_000_000, 0i64..1_000_000_000),
            )
                .prop_map(move |(v, desc, kw, ann, digest, removed, (sec, nsec))| {
                    let mut md = Metadata {
                        name: name.clone(),
                        version: v.clone(),
                        api_version: "v2".into(),
                        description: desc.trim().to_string(),
                        keywords: kw,
                        annotations: ann,
                        ..Metadata::default()
                    };
                    md.app_version = format!("{v}+app");
                    ChartVersion {
                        urls: vec![format!("{name}-{v}.tgz")],
                        created: GoTime::unix(sec, nsec).rfc3339_nano(),
                        removed,
                        digest,
                        metadata: md,
                        ..ChartVersion::default()
                    }
                })
        }

        fn index() -> impl Strategy<Value = IndexFile> {
            proptest::collection::btree_set("[a-z][a-z0-9-]{0,8}", 0..4)
                .prop_flat_map(|names| {
                    names
                        .into_iter()
                        .map(|n| {
                            proptest::collection::vec(entry(n.clone()), 1..4)
                                .prop_map(move |vs| (n.clone(), vs))
                        })
                        .collect::<Vec<_>>()
                })
                .prop_map(|entries| {
                    let mut i = IndexFile {
                        api_version: "v1".into(),
                        generated: GoTime::unix(1_700_000_000, 5).rfc3339_nano(),
                        entries: entries.into_iter().collect(),
                        ..IndexFile::default()
                    };
                    i.sort_entries();
                    i
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
                let _ = parse_with_warnings(&bytes, "p");
            }

            #[test]
            fn parse_never_panics_on_index_like_text(
                text in "(apiVersion: v1\n|entries:\n|  [a-z]{1,3}:\n|  - name: [a-z0-9.]{0,4}\n|    version: [0-9.a-z-]{0,6}\n|    urls: \\[[a-z]{0,3}\\]\n|    created: [0-9T:.Z-]{0,12}\n|&a |\\*a |<<: |- |\\{|\\}|\\[|\\]|null\n){0,24}"
            ) {
                let _ = parse_with_warnings(text.as_bytes(), "p");
            }

            #[test]
            fn written_index_reads_back(i in index()) {
                let yaml = i.to_yaml();
                let back = parse(yaml.as_bytes(), "y").map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
                prop_assert_eq!(&back, &i, "{}", yaml);
                let json = i.to_json();
                let back = parse(json.as_bytes(), "j").map_err(|e| TestCaseError::fail(format!("{e}\n{json}")))?;
                prop_assert_eq!(&back, &i, "{}", json);
            }
        }
    }
}
