//! The in-memory chart, mirroring Helm's `pkg/chart` types.
//!
//! The serde form is the JSON Helm stores in release records: field order is
//! Go's struct order, empty fields are omitted where Helm's `omitempty` omits
//! them, file data is base64.
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A chart maintainer (`maintainers[]` in Chart.yaml).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Maintainer {
    /// The maintainer's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The maintainer's email.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    /// The maintainer's URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// A dependency declared in Chart.yaml (`dependencies[]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Dependency {
    /// The subchart's name; must equal the subchart's Chart.yaml name.
    #[serde(default)]
    pub name: String,
    /// A SemVer range.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The repository URL (always serialised, as in Helm).
    #[serde(default)]
    pub repository: String,
    /// Comma-separated values paths; the first that resolves to a bool wins.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    /// Tags that enable the dependency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Computed at render time; omitted when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enabled: bool,
    /// `import-values`: strings or `{child, parent}` maps.
    #[serde(
        default,
        rename = "import-values",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub import_values: Vec<Node>,
    /// An alias for the subchart.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alias: String,
}

/// `Chart.lock` (or `requirements.lock`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Lock {
    /// When the lock was generated (RFC 3339, kept as written).
    #[serde(default)]
    pub generated: String,
    /// `sha256:<hex>` of the requirements.
    #[serde(default)]
    pub digest: String,
    /// The locked dependencies.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
}

/// Chart.yaml, every field of chart API v1 and v2.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// The chart name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The project's home page.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub home: String,
    /// Source URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// The chart version (SemVer).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// A one-line description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Search keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// An icon URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub icon: String,
    /// `v1` or `v2`.
    #[serde(
        default,
        rename = "apiVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    /// Legacy top-level condition (unused by rendering).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    /// Legacy top-level tags (unused by rendering).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    /// The application's version (free-form).
    #[serde(
        default,
        rename = "appVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub app_version: String,
    /// Whether the chart is deprecated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// Free-form annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// A SemVer constraint on the Kubernetes version.
    #[serde(
        default,
        rename = "kubeVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub kube_version: String,
    /// Declared dependencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
    /// `""`, `application` or `library`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub chart_type: String,
}

/// `String::from_utf8_lossy` with the fast validator first: most chart files
/// are valid UTF-8 and the lossy decoder walks them far more slowly.
pub(crate) fn lossy_text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

/// A file's bytes, shared: cloning a [`ChartFile`] or a whole [`Chart`] (as
/// dependency processing does) copies a reference, not the contents.
///
/// The bytes live on the heap, or, for large files loaded by
/// [`load_mapped`](super::loader::load_mapped), in a read-only memory map of
/// the file: a file the render never reads (a chart's CRDs, say) then costs
/// neither a copy nor memory.
#[derive(Clone, Default)]
pub struct FileData(Arc<Storage>);

/// Where a [`FileData`]'s bytes are.
enum Storage {
    /// Owned bytes.
    Heap(Vec<u8>),
    /// A mapped file, from byte `start` on (past a byte-order mark).
    Mapped { map: memmap2::Mmap, start: usize },
}

impl Default for Storage {
    fn default() -> Self {
        Storage::Heap(Vec::new())
    }
}

impl FileData {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &*self.0 {
            Storage::Heap(v) => v,
            Storage::Mapped { map, start } => map.get(*start..).unwrap_or_default(),
        }
    }
    /// The bytes as text, invalid UTF-8 replaced by U+FFFD (Go's string
    /// conversion prints it that way); borrowed when the bytes are valid.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        lossy_text(self.as_slice())
    }
    /// Whether the bytes are a memory map of the file they came from.
    pub fn is_mapped(&self) -> bool {
        matches!(*self.0, Storage::Mapped { .. })
    }
    /// Wraps a map of a file, seen from byte `start` on.
    pub(crate) fn from_map(map: memmap2::Mmap, start: usize) -> FileData {
        FileData(Arc::new(Storage::Mapped { map, start }))
    }
}

impl PartialEq for FileData {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for FileData {}

impl PartialOrd for FileData {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FileData {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl std::hash::Hash for FileData {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl std::ops::Deref for FileData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for FileData {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for FileData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl From<Vec<u8>> for FileData {
    fn from(v: Vec<u8>) -> Self {
        FileData(Arc::new(Storage::Heap(v)))
    }
}

impl From<&[u8]> for FileData {
    fn from(v: &[u8]) -> Self {
        FileData::from(v.to_vec())
    }
}

impl From<String> for FileData {
    fn from(v: String) -> Self {
        FileData::from(v.into_bytes())
    }
}

impl From<&str> for FileData {
    fn from(v: &str) -> Self {
        FileData::from(v.as_bytes())
    }
}

impl PartialEq<[u8]> for FileData {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for FileData {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// A file in a chart: its path relative to the chart root, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChartFile {
    /// Path relative to the chart root, with `/` separators (`templates/a.yaml`).
    pub name: String,
    /// The file's bytes (base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub data: FileData,
}

/// A chart: metadata, templates, values, schema, other files and subcharts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Chart {
    /// Parsed Chart.yaml.
    pub metadata: Metadata,
    /// Parsed Chart.lock, if any.
    #[serde(default)]
    pub lock: Option<Lock>,
    /// Files under `templates/`, in load order (Helm writes `null` for none).
    #[serde(default, with = "opt_files")]
    pub templates: Vec<ChartFile>,
    /// Parsed values.yaml (`None` when the chart has none or it is empty).
    #[serde(default)]
    pub values: Option<Node>,
    /// Raw `values.schema.json` bytes.
    #[serde(default, with = "opt_base64_bytes")]
    pub schema: Option<Vec<u8>>,
    /// Every other file (README, `crds/*`, `.helmignore`, ...).
    #[serde(default, with = "opt_files")]
    pub files: Vec<ChartFile>,
    /// Every loaded file in load order, including Chart.yaml and values.yaml
    /// (Helm's `Raw`; not part of the release JSON).
    #[serde(skip)]
    pub raw: Vec<ChartFile>,
    /// Subcharts (from `charts/`), in load order (not part of the release JSON).
    #[serde(skip)]
    pub dependencies: Vec<Chart>,
}

impl Chart {
    /// Helm's `findReadme`: the first file (in load order) named
    /// `README.md`, `README.txt` or `README`, any case, at the chart's top.
    pub fn readme(&self) -> Option<&ChartFile> {
        self.files.iter().find(|f| {
            ["readme.md", "readme.txt", "readme"]
                .iter()
                .any(|n| f.name.eq_ignore_ascii_case(n))
        })
    }

    /// Helm's `CRDObjects`: the chart's `crds/*.yaml|yml|json` files, then
    /// its subcharts' (all of them, enabled or not), depth first.
    pub fn crd_objects(&self) -> Vec<&ChartFile> {
        let mut out: Vec<&ChartFile> = self
            .files
            .iter()
            .filter(|f| {
                f.name.starts_with("crds/")
                    && [".yaml", ".yml", ".json"]
                        .iter()
                        .any(|e| f.name.ends_with(e))
            })
            .collect();
        for d in &self.dependencies {
            out.extend(d.crd_objects());
        }
        out
    }
}

mod base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }
    pub fn deserialize<'de, D: Deserializer<'de>, T: From<Vec<u8>>>(d: D) -> Result<T, D::Error> {
        let s = Option::<String>::deserialize(d)?.unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map(T::from)
            .map_err(serde::de::Error::custom)
    }
}

mod opt_base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

mod opt_files {
    //! Helm writes `"files": null` when a chart has no other files.
    use super::ChartFile;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &[ChartFile], s: S) -> Result<S::Ok, S::Error> {
        if v.is_empty() {
            s.serialize_none()
        } else {
            v.serialize(s)
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ChartFile>, D::Error> {
        Ok(Option::<Vec<ChartFile>>::deserialize(d)?.unwrap_or_default())
    }
}
