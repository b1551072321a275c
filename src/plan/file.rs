//! The releases file: a helmfile-like list of desired releases.
//!
//! ```yaml
//! defaults:                 # any release key except name and version
//!   namespace: kube-system
//!   timeout: 20s
//! atomicPlan: true          # one transaction: a failure rolls back every release
//! repositories:             # chart repositories of this file (helmfile's)
//! - name: internal
//!   url: https://charts.example.com
//!   username: ci                           # or env INTERNAL_USERNAME
//!   password: s3cret                       # or env INTERNAL_PASSWORD
//!   # also: caFile, certFile, keyFile (relative to the file),
//!   # insecureSkipTLSVerify (helmfile's skipTLSVerify), passCredentials
//! - name: ghcr
//!   url: ghcr.io/org/charts                # ghcr/app is oci://ghcr.io/org/charts/app
//!   oci: true                              # also: plainHttp
//! releases:
//! - name: kube-apiserver
//!   chart: charts/kube-apiserver          # a directory or .tgz, relative to the file
//!   values: [values/common.yaml]           # merged in order, as Helm merges -f files
//!   set:                                   # a --set path and a typed YAML value
//!     replicas: 3
//!     image.tag: v1.36.3
//!     args[0]: --foo
//!   needs:
//!   - kube-system/pod-checkpointer         # namespace/name
//!   - release: kube-system/bootstrap-secrets
//!     reason: should be updated first
//!   wait: true
//!   atomic: true
//!   createNamespace: true
//!   # also: waitStrategy (legacy|kstatus|none), waitForJobs, historyMax,
//!   # takeOwnership, installed (false plans the release's removal),
//!   # description
//! - name: cert-manager
//!   chart: internal/cert-manager           # REPO/CHART
//!   version: ~1.16.0                       # a version or Masterminds constraint
//! - name: app
//!   chart: oci://ghcr.io/org/charts/app    # also ghcr/app, or an https:// .tgz URL
//!   version: 2.1.0
//! ```
//!
//! [`parse`] reads the text into a [`ReleasesFile`] (paths resolved, nothing
//! loaded); [`load`] also loads every chart and values file into
//! [`DesiredRelease`]s. Every error names the file and the line and column of
//! the offending key or value.
//!
//! Charts ([`ChartSpec`]): `oci://...` is a chart in a registry and
//! `https://...` (or `http://`) a chart archive's URL; an absolute path, a
//! path starting with `.`, a name without `/` or a name ending in `.tgz` is a
//! directory or archive relative to the file. `NAME/CHART` is a chart of the
//! file's repository `NAME` when `repositories:` has one (an `oci: true`
//! repository makes it `oci://URL/CHART`); otherwise it is the path
//! `NAME/CHART` relative to the file when that exists, else a chart of the
//! repository `NAME` that `rudder repo add` or `helm repo add` added to
//! Helm's `repositories.yaml` (looked up in its cached index, as `helm
//! template NAME/CHART` does: `repo update` refreshes it). A repository of
//! the file has its `index.yaml` fetched when the file is loaded. Every
//! remote chart of a file is fetched at once ([`ReleasesFile::load_releases_with`]),
//! the downloads in parallel, through the content-addressed cache of
//! [`crate::source`]. `version:` is meaningless, and an error, for a chart
//! on disk or a chart URL. A repository without `username`/`password`
//! takes them from the environment variables `NAME_USERNAME` and
//! `NAME_PASSWORD` (the name upper-cased, `-` as `_`), as helmfile does; the
//! file has no templating.
//!
//! Defaults: a key given in a release replaces the same key of `defaults:`
//! (lists such as `values` and `needs` are replaced, not appended); options
//! given in neither take [`ReleaseOptions::default`]; the namespace is
//! `default`. `set` values are typed as in a values file (YAML 1.1 scalars,
//! numbers as float64) and placed at their path after the values files are
//! merged, as Helm applies `--set` on top of `-f` files.
use super::input::{
    parse_duration, DesiredRelease, Need, ReleaseOptions, ReleaseRef, WaitStrategy,
};
use crate::render::strvals::{MAX_INDEX, MAX_NESTED_NAME_LEVEL};
use crate::render::values::{merge_maps, parse_values_file, Map, ValuesFileError};
use crate::source::reference::ChartRef;
use crate::source::resolve::{fetch_each, LocateOptions, SourceError};
use crate::template::funcs::semver::Constraints;
use crate::yaml::Node;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// A place in a releases file: `file:line:col` (1-based; `col` 0 = unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pos {
    /// The file, as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (0 when unknown).
    pub col: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.col > 0 {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// Why a releases file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The file (or a values file) could not be read.
    #[error("read {path}: {message}")]
    Read {
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The text is not well-formed YAML.
    #[error("{at}: {message}")]
    Syntax {
        /// Where the parser stopped.
        at: Pos,
        /// The parser's message.
        message: String,
    },
    /// A key that the file format does not have.
    #[error("{at}: unknown key {key:?} in {context} (known keys: {known})")]
    UnknownKey {
        /// The key's place.
        at: Pos,
        /// The key.
        key: String,
        /// Where it was (`release "web"`, `defaults`, the top level).
        context: String,
        /// The keys allowed there, comma separated.
        known: String,
    },
    /// A value of the wrong type or form, or a key given twice.
    #[error("{at}: {context}: {message}")]
    Invalid {
        /// The value's place.
        at: Pos,
        /// Where it was (`release "web"`, `defaults`, ...).
        context: String,
        /// What is wrong (`wait must be a bool, got "maybe"`).
        message: String,
    },
    /// A required key is missing.
    #[error("{at}: {context}: missing required key {key:?}")]
    Missing {
        /// The place of the release that lacks it.
        at: Pos,
        /// Which release.
        context: String,
        /// `name` or `chart`.
        key: &'static str,
    },
    /// Two releases with the same namespace and name.
    #[error("{at}: release \"{release}\" is defined twice (first at line {first_line})")]
    Duplicate {
        /// The second definition.
        at: Pos,
        /// `namespace/name`.
        release: String,
        /// The line of the first definition.
        first_line: usize,
    },
    /// A `needs` entry that is not `namespace/name`.
    #[error("{at}: release {release:?}: needs entry {value:?} is not namespace/name")]
    BadNeed {
        /// The entry's place.
        at: Pos,
        /// The release's name.
        release: String,
        /// The entry.
        value: String,
    },
    /// A `needs` entry naming a release the file does not define.
    #[error("{at}: release \"{release}\" needs \"{need}\", which the file does not define")]
    DanglingNeed {
        /// The entry's place.
        at: Pos,
        /// The release with the need (`namespace/name`).
        release: String,
        /// The missing release.
        need: ReleaseRef,
    },
    /// The `needs` of the file's releases form a cycle.
    #[error(
        "{at}: release \"{release}\" needs \"{}\", and the needs form a cycle: {}",
        cycle_need(path),
        show_cycle(path)
    )]
    Cycle {
        /// A `needs` entry of the cycle: the one of `release` naming the
        /// first release of `path`.
        at: Pos,
        /// The release with that entry (`namespace/name`), the second of
        /// `path`.
        release: String,
        /// The cycle in update order (each release needs the one before
        /// it), the first release repeated at the end.
        path: Vec<ReleaseRef>,
    },
    /// A `set` path that is not a `--set` path.
    #[error("{at}: release {release:?}: set path {path:?}: {message}")]
    BadSetPath {
        /// The key's place.
        at: Pos,
        /// The release's name (or `defaults`).
        release: String,
        /// The path.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The chart path does not exist.
    #[error("{at}: release \"{release}\": chart {path} does not exist")]
    MissingChart {
        /// The `chart:` value's place.
        at: Pos,
        /// The release (`namespace/name`).
        release: String,
        /// The resolved path.
        path: String,
    },
    /// `NAME/CHART` that is neither a path nor a chart of a known repository.
    #[error(
        "{at}: release \"{release}\": chart {path} does not exist, and no repository {repo:?} \
         is defined (in the file's repositories: or in {repo_config})"
    )]
    MissingChartOrRepo {
        /// The `chart:` value's place.
        at: Pos,
        /// The release (`namespace/name`).
        release: String,
        /// The value, resolved as a path.
        path: String,
        /// The value's first segment, read as a repository's name (boxed,
        /// as the next: the error stays small).
        repo: Box<str>,
        /// Helm's `repositories.yaml` that was looked in.
        repo_config: Box<str>,
    },
    /// A chart from a repository, a registry or a URL could not be found or
    /// fetched.
    #[error("{at}: release \"{release}\": chart {chart}: {message}")]
    Source {
        /// The `version:` value's place when the version is not found, else
        /// the `chart:` value's.
        at: Pos,
        /// The release (`namespace/name`).
        release: String,
        /// The chart as the file gives it (`repo/chart`, `oci://...`, a URL).
        chart: String,
        /// The source stage's message, with its causes.
        message: String,
    },
    /// The chart exists but does not load.
    #[error("{at}: release \"{release}\": cannot load chart {path}: {message}")]
    Chart {
        /// The `chart:` value's place.
        at: Pos,
        /// The release (`namespace/name`).
        release: String,
        /// The resolved path.
        path: String,
        /// The loader's message.
        message: String,
    },
    /// A values file does not exist.
    #[error("{at}: release \"{release}\": values file {path} does not exist")]
    MissingValues {
        /// The entry's place.
        at: Pos,
        /// The release (`namespace/name`).
        release: String,
        /// The resolved path.
        path: String,
    },
    /// A values file is not a valid values file.
    #[error(
        "invalid values file {}: {} (values of release \"{release}\" at {at})",
        .error.file,
        .error.message
    )]
    BadValues {
        /// The YAML error; its file is the values file's resolved path.
        error: Box<ValuesFileError>,
        /// The release (`namespace/name`).
        release: String,
        /// The entry's place in the releases file.
        at: Pos,
    },
}

/// A releases file, parsed and checked but with nothing loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleasesFile {
    /// The file, as given.
    pub path: PathBuf,
    /// Its releases, in file order.
    pub releases: Vec<ReleaseEntry>,
    /// Its `repositories:`, in file order.
    pub repositories: Vec<RepositoryEntry>,
    /// `atomicPlan: true`: the apply is one transaction; a failure in any
    /// release returns every release it changed to where it was
    /// (`rudder apply --atomic-plan`).
    pub atomic_plan: bool,
}

/// One release of a releases file.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseEntry {
    /// Release name.
    pub name: String,
    /// Release namespace.
    pub namespace: String,
    /// What the `chart:` value names.
    pub chart: ChartSpec,
    /// Where the `chart:` value is.
    pub chart_at: Pos,
    /// `version:`: a version or Masterminds constraint of a chart from a
    /// repository or a registry (`None`: the newest stable version).
    pub version: Option<String>,
    /// Where the `version:` value is.
    pub version_at: Option<Pos>,
    /// The values files, resolved, in merge order.
    pub values: Vec<ValuesEntry>,
    /// The `set` entries, in file order.
    pub set: Vec<SetEntry>,
    /// What the release needs.
    pub needs: Vec<NeedEntry>,
    /// Options (defaults, then `defaults:`, then the release's own keys).
    pub options: ReleaseOptions,
    /// `installed:` (false plans the release's removal).
    pub installed: bool,
    /// Where the release's entry starts.
    pub at: Pos,
}

impl ReleaseEntry {
    /// The `namespace/name` of this release.
    pub fn reference(&self) -> ReleaseRef {
        ReleaseRef {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// The line of the release's entry.
    pub fn line(&self) -> usize {
        self.at.line
    }
}

/// What a release's `chart:` names (see the module doc for the rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartSpec {
    /// A directory or `.tgz` on disk, resolved against the file's directory:
    /// an absolute path, one starting with `.`, one without `/` or one
    /// ending in `.tgz`.
    Path(PathBuf),
    /// `NAME/CHART` with no repository `NAME` in the file: the path
    /// (resolved against the file's directory) when it exists, else `CHART`
    /// of the repository `NAME` of Helm's `repositories.yaml`.
    PathOrRepo {
        /// The value as a path, resolved against the file's directory.
        path: PathBuf,
        /// The repository's name.
        repo: String,
        /// The chart's name in the repository.
        chart: String,
    },
    /// `NAME/CHART` of the repository `NAME` of the file's `repositories:`.
    FileRepo {
        /// The repository's name.
        repo: String,
        /// The chart's name in the repository.
        chart: String,
    },
    /// `oci://HOST/PATH/CHART`, as written.
    Oci(String),
    /// An `https://` or `http://` URL of a chart archive.
    Url(String),
}

impl fmt::Display for ChartSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChartSpec::Path(p) => write!(f, "{}", p.display()),
            ChartSpec::PathOrRepo { repo, chart, .. } | ChartSpec::FileRepo { repo, chart } => {
                write!(f, "{repo}/{chart}")
            }
            ChartSpec::Oci(s) | ChartSpec::Url(s) => f.write_str(s),
        }
    }
}

/// A repository of the file's `repositories:` section (helmfile's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryEntry {
    /// The name that `NAME/CHART` uses.
    pub name: String,
    /// The repository's URL; for `oci: true`, the registry and path that
    /// charts are under, without `oci://`.
    pub url: String,
    /// Basic-auth user (empty: env `NAME_USERNAME`, else none).
    pub username: String,
    /// Basic-auth password (empty: env `NAME_PASSWORD`, else none).
    pub password: String,
    /// CA bundle (PEM), resolved against the file's directory.
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM), resolved against the file's directory.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's key (PEM), resolved against the file's
    /// directory.
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate.
    pub insecure_skip_tls_verify: bool,
    /// Send the credentials to every host, not only the repository's.
    pub pass_credentials: bool,
    /// An OCI registry: `NAME/CHART` is `oci://URL/CHART`.
    pub oci: bool,
    /// Talk to the registry over plain HTTP (`oci: true` only).
    pub plain_http: bool,
    /// Where the entry starts.
    pub at: Pos,
}

impl RepositoryEntry {
    /// The environment variable that gives the user or password when the
    /// file does not (`kind` is `USERNAME` or `PASSWORD`), as helmfile
    /// names it.
    pub fn env_var(&self, kind: &str) -> String {
        format!("{}_{kind}", self.name.to_uppercase().replace('-', "_"))
    }

    /// The credentials: the file's, else the environment's (`env` looks a
    /// variable up).
    pub fn credentials(&self, env: impl Fn(&str) -> Option<String>) -> (String, String) {
        let pick = |given: &str, kind: &str| {
            if given.is_empty() {
                env(&self.env_var(kind)).unwrap_or_default()
            } else {
                given.to_string()
            }
        };
        (
            pick(&self.username, "USERNAME"),
            pick(&self.password, "PASSWORD"),
        )
    }
}

/// A values file of a release.
#[derive(Debug, Clone, PartialEq)]
pub struct ValuesEntry {
    /// The path, resolved against the releases file's directory.
    pub path: PathBuf,
    /// Where it is listed.
    pub at: Pos,
}

/// A `set` entry: a value placed at a `--set` path.
#[derive(Debug, Clone, PartialEq)]
pub struct SetEntry {
    /// The path as written (`image.tag`, `args[0]`).
    pub path: String,
    /// The path's parts.
    pub parts: Vec<SetPathPart>,
    /// The value, typed as in a values file.
    pub value: Node,
    /// Where the key is.
    pub at: Pos,
}

/// A `needs` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedEntry {
    /// The need.
    pub need: Need,
    /// Where it is.
    pub at: Pos,
}

/// One step of a `--set` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetPathPart {
    /// A map key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// Parses a `--set` path in strvals' grammar: keys separated by `.`, list
/// indices as `[i]` after a key or another index, `\` escaping the next
/// character (`a\.b` is the one key `a.b`).
pub(crate) fn parse_set_path(path: &str) -> Result<Vec<SetPathPart>, String> {
    let mut parts = Vec::new();
    let mut key = String::new();
    // Whether `key` holds a (possibly empty) key being read, as opposed to
    // just having closed an index.
    let mut after_index = false;
    let mut chars = path.chars();
    let mut keys = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if after_index {
                    return Err("expected '.' or '[' after ']'".into());
                }
                match chars.next() {
                    Some(n) => key.push(n),
                    None => return Err("a trailing '\\' escapes nothing".into()),
                }
            }
            '.' => {
                if !after_index {
                    if key.is_empty() {
                        return Err("empty key".into());
                    }
                    parts.push(SetPathPart::Key(std::mem::take(&mut key)));
                    keys += 1;
                }
                after_index = false;
            }
            '[' => {
                if !after_index {
                    if key.is_empty() {
                        return Err("an index must follow a key".into());
                    }
                    parts.push(SetPathPart::Key(std::mem::take(&mut key)));
                    keys += 1;
                }
                let mut digits = String::new();
                loop {
                    match chars.next() {
                        Some(']') => break,
                        Some(d) => digits.push(d),
                        None => return Err("unclosed '['".into()),
                    }
                }
                let i: i64 = digits
                    .trim()
                    .parse()
                    .map_err(|_| format!("invalid index {digits:?}"))?;
                if i < 0 {
                    return Err(format!("negative {i} index not allowed"));
                }
                if i > MAX_INDEX {
                    return Err(format!(
                        "index of {i} is greater than maximum supported index of {MAX_INDEX}"
                    ));
                }
                parts.push(SetPathPart::Index(i as usize));
                after_index = true;
            }
            c => {
                if after_index {
                    return Err("expected '.' or '[' after ']'".into());
                }
                key.push(c);
            }
        }
    }
    if !after_index {
        if key.is_empty() {
            return Err("empty key".into());
        }
        parts.push(SetPathPart::Key(key));
        keys += 1;
    }
    if keys > MAX_NESTED_NAME_LEVEL + 1 {
        return Err(format!(
            "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
        ));
    }
    Ok(parts)
}

/// Places `value` at `parts` in `values`, as `--set` does on top of merged
/// values files: maps on the way are entered (a non-map is replaced by a
/// map), lists are entered or created and padded with nulls.
pub fn apply_set(values: &mut Map, parts: &[SetPathPart], value: Node) {
    match parts.split_first() {
        Some((SetPathPart::Key(k), rest)) => {
            if rest.is_empty() {
                values.insert(k.clone(), value);
            } else {
                let entry = values.entry(k.clone()).or_insert(Node::Null);
                set_in_node(entry, rest, value);
            }
        }
        // Paths start with a key (parse_set_path); a leading index has no
        // map key to go under and is ignored.
        Some((SetPathPart::Index(_), _)) | None => {}
    }
}

fn set_in_node(node: &mut Node, parts: &[SetPathPart], value: Node) {
    let Some((first, rest)) = parts.split_first() else {
        *node = value;
        return;
    };
    match first {
        SetPathPart::Key(_) => {
            if !matches!(node, Node::Map(_)) {
                *node = Node::Map(BTreeMap::new());
            }
            if let Node::Map(m) = node {
                apply_set(m, parts, value);
            }
        }
        SetPathPart::Index(i) => {
            if !matches!(node, Node::Seq(_)) {
                *node = Node::Seq(Vec::new());
            }
            if let Node::Seq(list) = node {
                if list.len() <= *i {
                    list.resize(*i + 1, Node::Null);
                }
                set_in_node(&mut list[*i], rest, value);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// A YAML tree with positions.

#[derive(Debug, Clone)]
enum Kind {
    Scalar { text: String, plain: bool },
    Seq(Vec<MNode>),
    Map(Vec<(MNode, MNode)>),
}

#[derive(Debug, Clone)]
struct MNode {
    kind: Kind,
    line: usize,
    col: usize,
}

impl MNode {
    fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar { text, plain: true }
            if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// A short description for type errors.
    fn describe(&self) -> String {
        match &self.kind {
            _ if self.is_null() => "null".into(),
            Kind::Scalar { text, .. } => format!("{text:?}"),
            Kind::Seq(_) => "a list".into(),
            Kind::Map(_) => "a map".into(),
        }
    }
}

struct Frame {
    node: MNode,
    anchor: usize,
    key: Option<MNode>,
    /// Nodes in `node` so far, itself included.
    size: usize,
}

/// Nodes that aliases may copy into the tree before the file is handed to
/// the guarded parser ([`crate::yaml::parse_values`]), which refuses alias
/// bombs and nesting past Helm's limit with Helm's errors. A releases file
/// that uses aliases at all copies a few dozen nodes.
const ALIAS_BUDGET: usize = 100_000;

/// Why [`build_tree`] stopped.
enum TreeFail {
    /// A syntax error, at its place.
    Syntax(FileError),
    /// The aliases copy more than [`ALIAS_BUDGET`] nodes, or the nesting
    /// passes [`crate::yaml`]'s limit: the guarded parser decides.
    Guard,
}

/// A parser error at its real place. yaml-rust2 marks an unclosed flow
/// collection where it gave up (often the end of the file); the offending
/// place is where the collection opened (`open`, the innermost collection
/// being parsed), as libyaml's context mark has it.
fn syntax_error(e: &yaml_rust2::ScanError, open: Option<&MNode>, file: &str) -> FileError {
    let (line, col) = (e.marker().line(), e.marker().col() + 1);
    let info = e.info();
    let unclosed = info.starts_with("while parsing a flow sequence")
        || info.starts_with("while parsing a flow mapping");
    match open {
        Some(o) if unclosed && (o.line, o.col) < (line, col) => {
            let what = if info.starts_with("while parsing a flow sequence") {
                "this flow sequence ([...])"
            } else {
                "this flow mapping ({...})"
            };
            FileError::Syntax {
                at: Pos {
                    file: file.to_string(),
                    line: o.line,
                    col: o.col,
                },
                message: format!("{info}: {what} is not closed (the parser gave up at line {line}, column {col})"),
            }
        }
        _ => FileError::Syntax {
            at: Pos {
                file: file.to_string(),
                line,
                col,
            },
            message: info.to_string(),
        },
    }
}

/// The first document of `text` as a tree with 1-based positions. With
/// `guarded`, stops (with [`TreeFail::Guard`]) where copying aliases or
/// nesting would cost more than a releases file needs.
fn build_tree(text: &str, file: &str, guarded: bool) -> Result<Option<MNode>, TreeFail> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, (MNode, usize)> = HashMap::new();
    let mut copied = 0usize;
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| {
            if guarded && e.info() == "recursion limit exceeded" {
                // Deep flow nesting: the guarded parser says it as Helm does.
                return TreeFail::Guard;
            }
            TreeFail::Syntax(syntax_error(&e, stack.last().map(|f| &f.node), file))
        })?;
        if guarded
            && matches!(ev, Event::SequenceStart(..) | Event::MappingStart(..))
            && stack.len() >= crate::yaml::MAX_DEPTH
        {
            return Err(TreeFail::Guard);
        }
        let (line, col) = (mark.line(), mark.col() + 1);
        let done = match ev {
            Event::StreamEnd => return Ok(None),
            Event::Scalar(text, style, anchor, _) => Some((
                MNode {
                    kind: Kind::Scalar {
                        text,
                        plain: style == TScalarStyle::Plain,
                    },
                    line,
                    col,
                },
                anchor,
                1,
            )),
            Event::Alias(id) => match anchors.get(&id) {
                Some((n, size)) => {
                    copied = copied.saturating_add(*size);
                    if guarded && copied > ALIAS_BUDGET {
                        return Err(TreeFail::Guard);
                    }
                    Some((n.clone(), 0, *size))
                }
                None => {
                    return Err(TreeFail::Syntax(FileError::Syntax {
                        at: Pos {
                            file: file.to_string(),
                            line,
                            col,
                        },
                        message: "unknown anchor".into(),
                    }))
                }
            },
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame {
                    node: MNode {
                        kind: Kind::Seq(Vec::new()),
                        line,
                        col,
                    },
                    anchor,
                    key: None,
                    size: 1,
                });
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame {
                    node: MNode {
                        kind: Kind::Map(Vec::new()),
                        line,
                        col,
                    },
                    anchor,
                    key: None,
                    size: 1,
                });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                stack.pop().map(|f| (f.node, f.anchor, f.size))
            }
            _ => None,
        };
        let Some((node, anchor, size)) = done else {
            continue;
        };
        if anchor > 0 {
            anchors.insert(anchor, (node.clone(), size));
        }
        match stack.last_mut() {
            None => return Ok(Some(node)),
            Some(f) => match &mut f.node.kind {
                Kind::Seq(items) => items.push(node),
                Kind::Map(entries) => match f.key.take() {
                    None => {
                        // A block mapping's start mark is after its first
                        // key: the map starts where that key does.
                        if entries.is_empty() && (node.line, node.col) < (f.node.line, f.node.col) {
                            f.node.line = node.line;
                            f.node.col = node.col;
                        }
                        f.key = Some(node)
                    }
                    Some(k) => entries.push((k, node)),
                },
                Kind::Scalar { .. } => {}
            },
        }
        if let Some(f) = stack.last_mut() {
            f.size = f.size.saturating_add(size);
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing.

const TOP_KEYS: &[&str] = &["atomicPlan", "defaults", "repositories", "releases"];
const RELEASE_KEYS: &[&str] = &[
    "name",
    "namespace",
    "chart",
    "version",
    "values",
    "set",
    "needs",
    "wait",
    "waitStrategy",
    "waitForJobs",
    "timeout",
    "atomic",
    "historyMax",
    "createNamespace",
    "takeOwnership",
    "installed",
    "description",
];
const NEED_KEYS: &[&str] = &["release", "reason"];
const REPOSITORY_KEYS: &[&str] = &[
    "name",
    "url",
    "username",
    "password",
    "caFile",
    "certFile",
    "keyFile",
    "insecureSkipTLSVerify",
    "skipTLSVerify",
    "passCredentials",
    "oci",
    "plainHttp",
];

struct Ctx<'a> {
    file: &'a str,
    dir: PathBuf,
    /// The names of the file's `repositories:`.
    repos: Vec<String>,
}

impl Ctx<'_> {
    fn pos(&self, n: &MNode) -> Pos {
        Pos {
            file: self.file.to_string(),
            line: n.line,
            col: n.col,
        }
    }

    fn invalid(&self, n: &MNode, context: &str, message: String) -> FileError {
        FileError::Invalid {
            at: self.pos(n),
            context: context.to_string(),
            message,
        }
    }
}

/// A key of a release (or of `defaults:`) with its value and typed value.
#[derive(Clone, Copy)]
struct Field<'a> {
    key: &'a MNode,
    val: &'a MNode,
    typed: Option<&'a Node>,
    context: &'a str,
}

/// The entries of a map node as `(key text, key, value)`, checking that the
/// keys are known scalars given once.
fn map_entries<'a>(
    ctx: &Ctx<'_>,
    node: &'a MNode,
    what: &str,
    context: &str,
    known: &[&str],
) -> Result<Vec<(&'a str, &'a MNode, &'a MNode)>, FileError> {
    let Kind::Map(entries) = &node.kind else {
        return Err(ctx.invalid(
            node,
            context,
            format!("{what} must be a map, got {}", node.describe()),
        ));
    };
    let mut out: Vec<(&str, &MNode, &MNode)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let Kind::Scalar { text, .. } = &k.kind else {
            return Err(ctx.invalid(k, context, "keys must be strings".into()));
        };
        if !known.contains(&text.as_str()) {
            return Err(FileError::UnknownKey {
                at: ctx.pos(k),
                key: text.clone(),
                context: context.to_string(),
                known: known.join(", "),
            });
        }
        if let Some((_, first, _)) = out.iter().find(|(t, _, _)| *t == text.as_str()) {
            return Err(ctx.invalid(
                k,
                context,
                format!("key {text:?} is given twice (first at line {})", first.line),
            ));
        }
        out.push((text.as_str(), k, v));
    }
    Ok(out)
}

fn typed_get<'a>(typed: Option<&'a Node>, key: &str) -> Option<&'a Node> {
    match typed {
        Some(Node::Map(m)) => m.get(key),
        _ => None,
    }
}

fn field_str(ctx: &Ctx<'_>, f: Field<'_>, name: &str) -> Result<String, FileError> {
    match &f.val.kind {
        Kind::Scalar { text, .. } if !f.val.is_null() && !text.is_empty() => Ok(text.clone()),
        _ => Err(ctx.invalid(
            f.val,
            f.context,
            format!(
                "{name} must be a non-empty string, got {}",
                f.val.describe()
            ),
        )),
    }
}

fn field_bool(ctx: &Ctx<'_>, f: Field<'_>, name: &str) -> Result<bool, FileError> {
    match f.typed {
        Some(Node::Bool(b)) if matches!(f.val.kind, Kind::Scalar { .. }) => Ok(*b),
        _ => Err(ctx.invalid(
            f.val,
            f.context,
            format!("{name} must be a bool, got {}", f.val.describe()),
        )),
    }
}

fn field_count(ctx: &Ctx<'_>, f: Field<'_>, name: &str) -> Result<usize, FileError> {
    let n = match f.typed {
        Some(Node::Int(i)) if *i >= 0 => usize::try_from(*i).ok(),
        Some(Node::Float(x)) if *x >= 0.0 && x.fract() == 0.0 && *x < 1e15 => Some(*x as usize),
        _ => None,
    };
    n.ok_or_else(|| {
        ctx.invalid(
            f.val,
            f.context,
            format!(
                "{name} must be a whole number of 0 or more, got {}",
                f.val.describe()
            ),
        )
    })
}

fn parse_ref(s: &str) -> Option<ReleaseRef> {
    let (ns, name) = s.split_once('/')?;
    if ns.is_empty() || name.is_empty() || name.contains('/') {
        return None;
    }
    Some(ReleaseRef {
        namespace: ns.to_string(),
        name: name.to_string(),
    })
}

fn parse_needs(ctx: &Ctx<'_>, f: Field<'_>, release: &str) -> Result<Vec<NeedEntry>, FileError> {
    let Kind::Seq(items) = &f.val.kind else {
        return Err(ctx.invalid(
            f.val,
            f.context,
            format!("needs must be a list, got {}", f.val.describe()),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let (text_node, reason) = match &item.kind {
            Kind::Scalar { .. } => (item, String::new()),
            Kind::Map(_) => {
                let entries = map_entries(ctx, item, "a needs entry", f.context, NEED_KEYS)?;
                let mut rel = None;
                let mut reason = String::new();
                for (k, _, v) in entries {
                    let sub = Field {
                        key: v,
                        val: v,
                        typed: None,
                        context: f.context,
                    };
                    match k {
                        "release" => rel = Some(v),
                        _ => {
                            reason = match &v.kind {
                                _ if v.is_null() => String::new(),
                                Kind::Scalar { text, .. } => text.clone(),
                                _ => field_str(ctx, sub, "reason")?,
                            }
                        }
                    }
                }
                let Some(rel) = rel else {
                    return Err(FileError::Missing {
                        at: ctx.pos(item),
                        context: format!("{} needs entry", f.context),
                        key: "release",
                    });
                };
                (rel, reason)
            }
            Kind::Seq(_) => {
                return Err(ctx.invalid(
                    item,
                    f.context,
                    "a needs entry must be namespace/name or a map with release and reason".into(),
                ))
            }
        };
        let text = match &text_node.kind {
            Kind::Scalar { text, .. } if !text_node.is_null() => text.clone(),
            _ => text_node.describe(),
        };
        let Some(r) = parse_ref(&text).filter(|_| !text_node.is_null()) else {
            return Err(FileError::BadNeed {
                at: ctx.pos(text_node),
                release: release.to_string(),
                value: text,
            });
        };
        out.push(NeedEntry {
            need: Need { release: r, reason },
            at: ctx.pos(text_node),
        });
    }
    Ok(out)
}

fn parse_set(ctx: &Ctx<'_>, f: Field<'_>, release: &str) -> Result<Vec<SetEntry>, FileError> {
    let Kind::Map(entries) = &f.val.kind else {
        return Err(ctx.invalid(
            f.val,
            f.context,
            format!("set must be a map, got {}", f.val.describe()),
        ));
    };
    let mut out: Vec<SetEntry> = Vec::with_capacity(entries.len());
    for (k, _) in entries {
        let Kind::Scalar { text, .. } = &k.kind else {
            return Err(ctx.invalid(k, f.context, "set keys must be strings".into()));
        };
        if let Some(first) = out.iter().find(|s| s.path == *text) {
            return Err(ctx.invalid(
                k,
                f.context,
                format!(
                    "set key {text:?} is given twice (first at line {})",
                    first.at.line
                ),
            ));
        }
        let parts = parse_set_path(text).map_err(|message| FileError::BadSetPath {
            at: ctx.pos(k),
            release: release.to_string(),
            path: text.clone(),
            message,
        })?;
        // The typed tree stringifies keys the YAML 1.1 way: a plain `on`
        // or `0x10` key is a bool or a number there, not the path written.
        let Some(value) = typed_get(f.typed, text).cloned() else {
            return Err(ctx.invalid(
                k,
                f.context,
                format!("set key {text:?} does not read as a string in YAML 1.1; quote it"),
            ));
        };
        out.push(SetEntry {
            path: text.clone(),
            parts,
            value,
            at: ctx.pos(k),
        });
    }
    Ok(out)
}

fn parse_values_list(ctx: &Ctx<'_>, f: Field<'_>) -> Result<Vec<ValuesEntry>, FileError> {
    let items: Vec<&MNode> = match &f.val.kind {
        Kind::Seq(items) => items.iter().collect(),
        Kind::Scalar { .. } if !f.val.is_null() => vec![f.val],
        _ => {
            return Err(ctx.invalid(
                f.val,
                f.context,
                format!("values must be a list of paths, got {}", f.val.describe()),
            ))
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let p = field_str(
            ctx,
            Field {
                key: item,
                val: item,
                typed: None,
                context: f.context,
            },
            "a values entry",
        )?;
        out.push(ValuesEntry {
            path: ctx.dir.join(p),
            at: ctx.pos(item),
        });
    }
    Ok(out)
}

/// Parses a releases file's text. `origin` is the file's path: error
/// messages name it and relative chart and values paths are resolved
/// against its directory. Nothing is loaded; the file's own consistency is
/// checked (keys, types, duplicate releases, `needs` that the file does not
/// define).
pub fn parse(text: &str, origin: &Path) -> Result<ReleasesFile, FileError> {
    let file = origin.display().to_string();
    let mut ctx = Ctx {
        file: &file,
        dir: origin.parent().map(Path::to_path_buf).unwrap_or_default(),
        repos: Vec::new(),
    };
    let mut empty = ReleasesFile {
        path: origin.to_path_buf(),
        releases: Vec::new(),
        repositories: Vec::new(),
        atomic_plan: false,
    };
    let typed_error = |e: crate::yaml::YamlError, root_line: usize| {
        let (line, col) = match &e {
            crate::yaml::YamlError::Syntax { line, column, .. }
            | crate::yaml::YamlError::Decode { line, column, .. }
                if *line > 0 =>
            {
                (*line, *column)
            }
            _ => (root_line, 0),
        };
        FileError::Syntax {
            at: Pos {
                file: file.clone(),
                line,
                col,
            },
            message: e.to_string(),
        }
    };
    // The tree is built first for its syntax errors, which name the place
    // better; an alias bomb or nesting past the limit goes to the guarded
    // parser before it can cost anything.
    let tree = match build_tree(text, &file, true) {
        Ok(t) => t,
        Err(TreeFail::Syntax(e)) => return Err(e),
        Err(TreeFail::Guard) => {
            crate::yaml::parse_values(text).map_err(|e| typed_error(e, 1))?;
            // Heavy but accepted: as Helm reads it.
            build_tree(text, &file, false).map_err(|f| match f {
                TreeFail::Syntax(e) => e,
                // An unguarded build never stops for the guard.
                TreeFail::Guard => FileError::Syntax {
                    at: Pos {
                        file: file.clone(),
                        line: 1,
                        col: 1,
                    },
                    message: "document too large".into(),
                },
            })?
        }
    };
    let Some(root) = tree else {
        return Ok(empty);
    };
    if root.is_null() {
        return Ok(empty);
    }
    let typed_root = crate::yaml::parse_values(text).map_err(|e| typed_error(e, root.line))?;
    let top = map_entries(&ctx, &root, "the file", "the file", TOP_KEYS)?;
    // Repositories first: `NAME/CHART` reads differently for their names.
    if let Some((_, _, v)) = top.iter().find(|(k, _, _)| *k == "repositories") {
        let typed = typed_get(Some(&typed_root), "repositories");
        empty.repositories = parse_repositories(&ctx, v, typed)?;
        ctx.repos = empty.repositories.iter().map(|r| r.name.clone()).collect();
    }
    let ctx = ctx;
    let mut defaults: Vec<(&str, Field<'_>)> = Vec::new();
    let mut releases_node = None;
    let default_keys: Vec<&str> = RELEASE_KEYS
        .iter()
        .copied()
        .filter(|k| *k != "name" && *k != "version")
        .collect();
    for (k, _, v) in &top {
        match *k {
            "repositories" => {}
            "defaults" => {
                if v.is_null() {
                    continue;
                }
                let typed = typed_get(Some(&typed_root), "defaults");
                for (dk, dkey, dv) in map_entries(&ctx, v, "defaults", "defaults", &default_keys)? {
                    defaults.push((
                        dk,
                        Field {
                            key: dkey,
                            val: dv,
                            typed: typed_get(typed, dk),
                            context: "defaults",
                        },
                    ));
                }
            }
            "atomicPlan" => {
                let f = Field {
                    key: v,
                    val: v,
                    typed: typed_get(Some(&typed_root), "atomicPlan"),
                    context: "the file",
                };
                empty.atomic_plan = field_bool(&ctx, f, "atomicPlan")?;
            }
            _ => releases_node = Some(*v),
        }
    }
    // Check the defaults once on their own, so that their errors show even
    // in a file without releases.
    let mut probe = ReleaseEntry {
        name: String::new(),
        namespace: String::new(),
        chart: ChartSpec::Path(PathBuf::new()),
        chart_at: ctx.pos(&root),
        version: None,
        version_at: None,
        values: Vec::new(),
        set: Vec::new(),
        needs: Vec::new(),
        options: ReleaseOptions::default(),
        installed: true,
        at: ctx.pos(&root),
    };
    for (k, f) in &defaults {
        apply_field(&ctx, k, *f, &mut probe)?;
    }
    let mut releases = Vec::new();
    let Some(list) = releases_node.filter(|n| !n.is_null()) else {
        return Ok(empty);
    };
    let Kind::Seq(items) = &list.kind else {
        return Err(ctx.invalid(
            list,
            "the file",
            format!("releases must be a list, got {}", list.describe()),
        ));
    };
    let typed_list: Option<&Vec<Node>> = match typed_get(Some(&typed_root), "releases") {
        Some(Node::Seq(s)) => Some(s),
        _ => None,
    };
    // The contexts must outlive the fields that borrow them.
    let contexts: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, item)| release_context(item, i))
        .collect();
    for (i, item) in items.iter().enumerate() {
        let typed = typed_list.and_then(|s| s.get(i));
        releases.push(parse_release(&ctx, item, typed, &contexts[i], &defaults)?);
    }
    check_releases(&releases)?;
    Ok(ReleasesFile { releases, ..empty })
}

/// `release "name"` when the entry has a string name, else `release #n`.
fn release_context(item: &MNode, i: usize) -> String {
    if let Kind::Map(entries) = &item.kind {
        for (k, v) in entries {
            if let (Kind::Scalar { text: kt, .. }, Kind::Scalar { text, .. }) = (&k.kind, &v.kind) {
                if kt == "name" && !v.is_null() && !text.is_empty() {
                    return format!("release {text:?}");
                }
            }
        }
    }
    format!("release #{}", i + 1)
}

fn parse_release<'a>(
    ctx: &Ctx<'_>,
    item: &'a MNode,
    typed: Option<&'a Node>,
    context: &'a str,
    defaults: &[(&'a str, Field<'a>)],
) -> Result<ReleaseEntry, FileError> {
    let entries = map_entries(ctx, item, "a release", context, RELEASE_KEYS)?;
    let mut fields: Vec<(&str, Field<'_>)> = defaults.to_vec();
    for (k, key, v) in entries {
        let f = Field {
            key,
            val: v,
            typed: typed_get(typed, k),
            context,
        };
        match fields.iter_mut().find(|(dk, _)| *dk == k) {
            Some(slot) => slot.1 = f,
            None => fields.push((k, f)),
        }
    }
    let get = |k: &str| fields.iter().find(|(dk, _)| *dk == k).map(|(_, f)| *f);
    let name = match get("name") {
        Some(f) => {
            let n = field_str(ctx, f, "name")?;
            if n.contains('/') {
                return Err(ctx.invalid(
                    f.val,
                    context,
                    format!("name must not contain '/', got {n:?}"),
                ));
            }
            n
        }
        None => {
            return Err(FileError::Missing {
                at: ctx.pos(item),
                context: context.to_string(),
                key: "name",
            })
        }
    };
    let mut entry = ReleaseEntry {
        name,
        namespace: "default".into(),
        chart: ChartSpec::Path(PathBuf::new()),
        chart_at: ctx.pos(item),
        version: None,
        version_at: None,
        values: Vec::new(),
        set: Vec::new(),
        needs: Vec::new(),
        options: ReleaseOptions::default(),
        installed: true,
        at: ctx.pos(item),
    };
    let mut has_chart = false;
    for (k, f) in &fields {
        has_chart |= apply_field(ctx, k, *f, &mut entry)?;
    }
    if !has_chart {
        return Err(FileError::Missing {
            at: ctx.pos(item),
            context: context.to_string(),
            key: "chart",
        });
    }
    if let (Some(f), Some(why)) = (get("version"), version_moot(&entry.chart)) {
        return Err(ctx.invalid(f.val, context, why));
    }
    Ok(entry)
}

/// Why `version:` cannot apply to `chart` (a chart on disk or a chart
/// URL); `None` when it can, or may (`NAME/CHART` that is not a path).
fn version_moot(chart: &ChartSpec) -> Option<String> {
    match chart {
        ChartSpec::Path(p) => Some(format!(
            "version applies only to a chart from a repository or a registry, \
             and chart {} is a path",
            p.display()
        )),
        ChartSpec::Url(u) => Some(format!(
            "version applies only to a chart from a repository or a registry, \
             and chart {u} is the URL of one archive"
        )),
        _ => None,
    }
}

/// Reads a `chart:` value (see [`ChartSpec`]).
fn chart_spec(ctx: &Ctx<'_>, text: &str) -> ChartSpec {
    if text.starts_with("oci://") {
        return ChartSpec::Oci(text.to_string());
    }
    if text.starts_with("https://") || text.starts_with("http://") {
        return ChartSpec::Url(text.to_string());
    }
    let path = ctx.dir.join(text);
    if text.starts_with('/') || text.starts_with('.') || text.ends_with(".tgz") {
        return ChartSpec::Path(path);
    }
    match text.split_once('/') {
        Some((repo, chart)) if !repo.is_empty() && !chart.is_empty() => {
            let (repo, chart) = (repo.to_string(), chart.to_string());
            if ctx.repos.contains(&repo) {
                ChartSpec::FileRepo { repo, chart }
            } else {
                ChartSpec::PathOrRepo { path, repo, chart }
            }
        }
        _ => ChartSpec::Path(path),
    }
}

/// Reads `repositories:`: a list of maps with a unique `name` and a `url`.
fn parse_repositories(
    ctx: &Ctx<'_>,
    node: &MNode,
    typed: Option<&Node>,
) -> Result<Vec<RepositoryEntry>, FileError> {
    if node.is_null() {
        return Ok(Vec::new());
    }
    let Kind::Seq(items) = &node.kind else {
        return Err(ctx.invalid(
            node,
            "the file",
            format!("repositories must be a list, got {}", node.describe()),
        ));
    };
    let typed_items: Option<&Vec<Node>> = match typed {
        Some(Node::Seq(s)) => Some(s),
        _ => None,
    };
    let mut out: Vec<RepositoryEntry> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let typed = typed_items.and_then(|s| s.get(i));
        let context = match &item.kind {
            Kind::Map(entries) => entries
                .iter()
                .find_map(|(k, v)| match (&k.kind, &v.kind) {
                    (Kind::Scalar { text: kt, .. }, Kind::Scalar { text, .. })
                        if kt == "name" && !v.is_null() && !text.is_empty() =>
                    {
                        Some(format!("repository {text:?}"))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| format!("repository #{}", i + 1)),
            _ => format!("repository #{}", i + 1),
        };
        let entries = map_entries(ctx, item, "a repository", &context, REPOSITORY_KEYS)?;
        let mut r = RepositoryEntry {
            name: String::new(),
            url: String::new(),
            username: String::new(),
            password: String::new(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            insecure_skip_tls_verify: false,
            pass_credentials: false,
            oci: false,
            plain_http: false,
            at: ctx.pos(item),
        };
        let mut url_node = None;
        let mut plain_http_node = None;
        let mut skip_tls: Option<&MNode> = None;
        for (k, key, v) in &entries {
            let f = Field {
                key,
                val: v,
                typed: typed_get(typed, k),
                context: &context,
            };
            let path = |name: &str| -> Result<Option<PathBuf>, FileError> {
                Ok(Some(ctx.dir.join(field_str(ctx, f, name)?)))
            };
            match *k {
                "name" => {
                    let n = field_str(ctx, f, "name")?;
                    if n.contains('/') {
                        return Err(ctx.invalid(
                            v,
                            &context,
                            format!("name must not contain '/', got {n:?}"),
                        ));
                    }
                    if let Some(first) = out.iter().find(|o| o.name == n) {
                        return Err(ctx.invalid(
                            v,
                            &context,
                            format!(
                                "repository {n:?} is defined twice (first at line {})",
                                first.at.line
                            ),
                        ));
                    }
                    r.name = n;
                }
                "url" => {
                    r.url = field_str(ctx, f, "url")?;
                    url_node = Some(*v);
                }
                "username" => r.username = field_str(ctx, f, "username")?,
                "password" => r.password = field_str(ctx, f, "password")?,
                "caFile" => r.ca_file = path("caFile")?,
                "certFile" => r.cert_file = path("certFile")?,
                "keyFile" => r.key_file = path("keyFile")?,
                "insecureSkipTLSVerify" | "skipTLSVerify" => {
                    if let Some(first) = skip_tls {
                        return Err(ctx.invalid(
                            key,
                            &context,
                            format!(
                                "{k} repeats the key at line {} (skipTLSVerify is helmfile's \
                                 name for insecureSkipTLSVerify)",
                                first.line
                            ),
                        ));
                    }
                    skip_tls = Some(key);
                    r.insecure_skip_tls_verify = field_bool(ctx, f, k)?;
                }
                "passCredentials" => r.pass_credentials = field_bool(ctx, f, "passCredentials")?,
                "oci" => r.oci = field_bool(ctx, f, "oci")?,
                _ => {
                    r.plain_http = field_bool(ctx, f, "plainHttp")?;
                    plain_http_node = Some(*v);
                }
            }
        }
        if r.name.is_empty() {
            return Err(FileError::Missing {
                at: ctx.pos(item),
                context,
                key: "name",
            });
        }
        let Some(url_node) = url_node else {
            return Err(FileError::Missing {
                at: ctx.pos(item),
                context,
                key: "url",
            });
        };
        if r.oci {
            r.url = r
                .url
                .strip_prefix("oci://")
                .unwrap_or(&r.url)
                .trim_end_matches('/')
                .to_string();
        } else {
            if !(r.url.starts_with("https://") || r.url.starts_with("http://")) {
                return Err(ctx.invalid(
                    url_node,
                    &context,
                    format!(
                        "url must be an http:// or https:// URL (or set oci: true for a \
                         registry), got {:?}",
                        r.url
                    ),
                ));
            }
            if let Some(n) = plain_http_node.filter(|_| r.plain_http) {
                return Err(ctx.invalid(
                    n,
                    &context,
                    "plainHttp applies only to an oci: true repository; use an http:// url".into(),
                ));
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// Applies one key of a release (or of `defaults:`) to `entry`; true for `chart`.
fn apply_field(
    ctx: &Ctx<'_>,
    k: &str,
    f: Field<'_>,
    entry: &mut ReleaseEntry,
) -> Result<bool, FileError> {
    let context = f.context;
    let mut has_chart = false;
    let o = &mut entry.options;
    match k {
        "name" => {}
        "namespace" => {
            let ns = field_str(ctx, f, "namespace")?;
            if ns.contains('/') {
                return Err(ctx.invalid(
                    f.val,
                    f.context,
                    format!("namespace must not contain '/', got {ns:?}"),
                ));
            }
            entry.namespace = ns;
        }
        "chart" => {
            entry.chart = chart_spec(ctx, &field_str(ctx, f, "chart")?);
            entry.chart_at = ctx.pos(f.val);
            has_chart = true;
        }
        "version" => {
            let v = field_str(ctx, f, "version")?;
            if let Err(e) = Constraints::parse(v.trim()) {
                return Err(ctx.invalid(
                    f.val,
                    context,
                    format!("version {v:?} is not a version or a version constraint: {e}"),
                ));
            }
            entry.version = Some(v.trim().to_string());
            entry.version_at = Some(ctx.pos(f.val));
        }
        "values" => entry.values = parse_values_list(ctx, f)?,
        "set" => entry.set = parse_set(ctx, f, &entry.name)?,
        "needs" => entry.needs = parse_needs(ctx, f, &entry.name)?,
        "wait" => o.wait = field_bool(ctx, f, "wait")?,
        "waitForJobs" => o.wait_for_jobs = field_bool(ctx, f, "waitForJobs")?,
        "atomic" => o.atomic = field_bool(ctx, f, "atomic")?,
        "createNamespace" => o.create_namespace = field_bool(ctx, f, "createNamespace")?,
        "takeOwnership" => o.take_ownership = field_bool(ctx, f, "takeOwnership")?,
        "installed" => entry.installed = field_bool(ctx, f, "installed")?,
        "description" => o.description = field_str(ctx, f, "description")?,
        "historyMax" => o.history_max = field_count(ctx, f, "historyMax")?,
        "timeout" => {
            let text = match &f.val.kind {
                Kind::Scalar { text, .. } if !f.val.is_null() => Some(text.clone()),
                _ => None,
            };
            o.timeout = text
                .as_deref()
                .map(|t| (t, parse_duration(t)))
                .and_then(|(_, r)| r.ok())
                .ok_or_else(|| {
                    ctx.invalid(
                        f.val,
                        f.context,
                        format!(
                            "timeout must be a Go duration such as 20s, got {}",
                            f.val.describe()
                        ),
                    )
                })?;
        }
        "waitStrategy" => {
            let s = field_str(ctx, f, "waitStrategy").ok();
            o.wait_strategy = match s.as_deref() {
                Some("legacy") => WaitStrategy::Legacy,
                Some("kstatus") => WaitStrategy::Kstatus,
                Some("none") => WaitStrategy::None,
                _ => {
                    return Err(ctx.invalid(
                        f.val,
                        f.context,
                        format!(
                            "waitStrategy must be legacy, kstatus or none, got {}",
                            f.val.describe()
                        ),
                    ))
                }
            };
        }
        _ => {
            // map_entries admits only RELEASE_KEYS, all handled above.
            return Err(FileError::UnknownKey {
                at: ctx.pos(f.key),
                key: k.to_string(),
                context: context.to_string(),
                known: RELEASE_KEYS.join(", "),
            });
        }
    }
    Ok(has_chart)
}

fn cycle_need(path: &[ReleaseRef]) -> String {
    path.first().map(ReleaseRef::to_string).unwrap_or_default()
}

fn show_cycle(path: &[ReleaseRef]) -> String {
    path.iter()
        .map(ReleaseRef::to_string)
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// Duplicate releases, needs that name no release of the file, and needs
/// that form a cycle.
fn check_releases(releases: &[ReleaseEntry]) -> Result<(), FileError> {
    let mut seen: HashMap<ReleaseRef, usize> = HashMap::new();
    for r in releases {
        if let Some(first_line) = seen.insert(r.reference(), r.at.line) {
            return Err(FileError::Duplicate {
                at: r.at.clone(),
                release: r.reference().to_string(),
                first_line,
            });
        }
    }
    for r in releases {
        for n in &r.needs {
            if !seen.contains_key(&n.need.release) {
                return Err(FileError::DanglingNeed {
                    at: n.at.clone(),
                    release: r.reference().to_string(),
                    need: n.need.release.clone(),
                });
            }
        }
    }
    // The planner's own order check, here with the places of the entries.
    let nodes: Vec<(ReleaseRef, Vec<ReleaseRef>)> = releases
        .iter()
        .map(|r| {
            (
                r.reference(),
                r.needs.iter().map(|n| n.need.release.clone()).collect(),
            )
        })
        .collect();
    if let Err(super::order::OrderError::Cycle { path }) = super::order::order_refs(&nodes) {
        // path[1] needs path[0]: name that entry.
        if let (Some(need), Some(by)) = (path.first(), path.get(1)) {
            let entry = releases
                .iter()
                .filter(|r| r.reference() == *by)
                .flat_map(|r| &r.needs)
                .find(|n| n.need.release == *need);
            if let Some(entry) = entry {
                return Err(FileError::Cycle {
                    at: entry.at.clone(),
                    release: by.to_string(),
                    path,
                });
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Loading.

/// Where a release's chart is to come from.
enum Located {
    /// A directory or archive on disk.
    Local(PathBuf),
    /// The request of this index in the one [`fetch_each`] call.
    Remote(usize),
}

impl ReleasesFile {
    /// Loads every release's chart and values files: the values files are
    /// merged in order (Helm's `-f` merge), then the `set` entries applied.
    /// Charts from repositories and registries are found with Helm's files
    /// where the environment says they are
    /// ([`ReleasesFile::load_releases_with`]).
    pub fn load_releases(&self) -> Result<Vec<DesiredRelease>, FileError> {
        self.load_releases_with(&LocateOptions::from_env())
    }

    /// [`ReleasesFile::load_releases`] with `opts`' Helm files
    /// (`repositories.yaml`, the caches), HTTP timeouts and limits; its
    /// `version`, `devel`, `repo_url` and credentials are not used (each
    /// release has its own `version:`, each repository of the file its
    /// own credentials). Every remote chart of the file is fetched in one
    /// [`fetch_each`] call, the downloads in parallel, before any chart is
    /// loaded; errors are reported in file order.
    pub fn load_releases_with(
        &self,
        opts: &LocateOptions,
    ) -> Result<Vec<DesiredRelease>, FileError> {
        let mut repo_file = None;
        let mut reqs: Vec<(ChartRef, LocateOptions)> = Vec::new();
        let mut located = Vec::with_capacity(self.releases.len());
        for e in &self.releases {
            located.push(self.locate(e, opts, &mut repo_file, &mut reqs)?);
        }
        let mut fetched: Vec<Option<Result<crate::source::resolve::Fetched, SourceError>>> =
            if reqs.is_empty() {
                Vec::new()
            } else {
                fetch_each(&reqs).into_iter().map(Some).collect()
            };
        self.releases
            .iter()
            .zip(located)
            .map(|(e, l)| {
                let chart = match l {
                    Located::Local(path) => load_local(e, &path)?,
                    Located::Remote(i) => {
                        let got = fetched
                            .get_mut(i)
                            .and_then(Option::take)
                            .unwrap_or_else(|| Err(SourceError::NoUrls(e.chart.to_string())));
                        let f = got.map_err(|err| source_error(e, &err))?;
                        crate::chart::load_archive(&f.archive).map_err(|err| FileError::Chart {
                            at: e.chart_at.clone(),
                            release: e.reference().to_string(),
                            path: f.url.clone(),
                            message: err.to_string(),
                        })?
                    }
                };
                load_entry(e, chart)
            })
            .collect()
    }

    /// Where `e`'s chart comes from; a remote one is added to `reqs`.
    fn locate(
        &self,
        e: &ReleaseEntry,
        opts: &LocateOptions,
        repo_file: &mut Option<crate::source::repofile::RepoFile>,
        reqs: &mut Vec<(ChartRef, LocateOptions)>,
    ) -> Result<Located, FileError> {
        let mut o = opts.clone();
        o.version = e.version.clone().unwrap_or_default();
        o.devel = false;
        o.repo_url = None;
        #[cfg(feature = "remote")]
        {
            o.http.username = String::new();
            o.http.password = String::new();
        }
        let r = match &e.chart {
            ChartSpec::Path(p) => return Ok(Located::Local(p.clone())),
            ChartSpec::PathOrRepo { path, repo, chart } => {
                if path.exists() {
                    if let (Some(at), Some(why)) =
                        (&e.version_at, version_moot(&ChartSpec::Path(path.clone())))
                    {
                        return Err(FileError::Invalid {
                            at: at.clone(),
                            context: format!("release {:?}", e.name),
                            message: why,
                        });
                    }
                    return Ok(Located::Local(path.clone()));
                }
                if repo_file.is_none() {
                    *repo_file = Some(
                        crate::source::resolve::repo_file(&opts.paths)
                            .map_err(|err| source_error(e, &err))?,
                    );
                }
                if repo_file.as_ref().and_then(|f| f.get(repo)).is_none() {
                    return Err(FileError::MissingChartOrRepo {
                        at: e.chart_at.clone(),
                        release: e.reference().to_string(),
                        path: path.display().to_string(),
                        repo: repo.as_str().into(),
                        repo_config: opts.paths.repository_config.display().to_string().into(),
                    });
                }
                ChartRef::Repo {
                    repo: repo.clone(),
                    chart: chart.clone(),
                }
            }
            ChartSpec::FileRepo { repo, chart } => {
                let Some(r) = self.repositories.iter().find(|r| r.name == *repo) else {
                    // parse makes FileRepo only for the file's repositories.
                    return Err(FileError::MissingChartOrRepo {
                        at: e.chart_at.clone(),
                        release: e.reference().to_string(),
                        path: e.chart.to_string(),
                        repo: repo.as_str().into(),
                        repo_config: opts.paths.repository_config.display().to_string().into(),
                    });
                };
                #[cfg(feature = "remote")]
                {
                    let (username, password) = r.credentials(|k| std::env::var(k).ok());
                    o.http.username = username;
                    o.http.password = password;
                    o.http.pass_credentials_all = r.pass_credentials;
                    o.http.ca_file = r.ca_file.clone();
                    o.http.cert_file = r.cert_file.clone();
                    o.http.key_file = r.key_file.clone();
                    o.http.insecure_skip_tls_verify = r.insecure_skip_tls_verify;
                }
                if r.oci {
                    o.plain_http = r.plain_http;
                    ChartRef::Oci {
                        reference: format!("oci://{}/{chart}", r.url),
                    }
                } else {
                    ChartRef::RepoUrl {
                        url: r.url.clone(),
                        chart: chart.clone(),
                    }
                }
            }
            ChartSpec::Oci(reference) => ChartRef::Oci {
                reference: reference.clone(),
            },
            ChartSpec::Url(url) => ChartRef::Url { url: url.clone() },
        };
        reqs.push((r, o));
        Ok(Located::Remote(reqs.len() - 1))
    }
}

/// A source-stage failure of `e`'s chart, at its `version:` when the
/// version is what was not found.
fn source_error(e: &ReleaseEntry, err: &SourceError) -> FileError {
    let at = match (err, &e.version_at) {
        (SourceError::NotInRepo { .. } | SourceError::NotInRepoUrl { .. }, Some(at)) => at.clone(),
        _ => e.chart_at.clone(),
    };
    FileError::Source {
        at,
        release: e.reference().to_string(),
        chart: e.chart.to_string(),
        message: crate::error_chain(err),
    }
}

/// Loads a chart on disk, with the file's errors for a missing or bad one.
fn load_local(e: &ReleaseEntry, path: &Path) -> Result<crate::chart::Chart, FileError> {
    let chart_path = path.display().to_string();
    if !path.exists() {
        return Err(FileError::MissingChart {
            at: e.chart_at.clone(),
            release: e.reference().to_string(),
            path: chart_path,
        });
    }
    crate::chart::load(path).map_err(|err| FileError::Chart {
        at: e.chart_at.clone(),
        release: e.reference().to_string(),
        path: chart_path,
        message: err.to_string(),
    })
}

fn load_entry(e: &ReleaseEntry, chart: crate::chart::Chart) -> Result<DesiredRelease, FileError> {
    let release = e.reference().to_string();
    let mut values = Map::new();
    for v in &e.values {
        let path = v.path.display().to_string();
        if !v.path.is_file() {
            return Err(FileError::MissingValues {
                at: v.at.clone(),
                release,
                path,
            });
        }
        let text = crate::input::read_to_string(&v.path).map_err(|err| FileError::Read {
            path: path.clone(),
            message: crate::chart::loader::io_message(&err),
        })?;
        let m = parse_values_file(&path, &text).map_err(|error| FileError::BadValues {
            error: Box::new(error),
            release: release.clone(),
            at: v.at.clone(),
        })?;
        merge_maps(&mut values, m);
    }
    for s in &e.set {
        apply_set(&mut values, &s.parts, s.value.clone());
    }
    Ok(DesiredRelease {
        name: e.name.clone(),
        namespace: e.namespace.clone(),
        chart: Arc::new(chart),
        values,
        needs: e.needs.iter().map(|n| n.need.clone()).collect(),
        options: e.options.clone(),
        absent: !e.installed,
    })
}

/// Reads a releases file, checks it ([`parse`]) and loads every chart and
/// values file it names, in file order.
pub fn load(path: &Path) -> Result<Vec<DesiredRelease>, FileError> {
    read(path)?.load_releases()
}

/// Reads and checks a releases file ([`parse`]), loading nothing else.
pub fn read(path: &Path) -> Result<ReleasesFile, FileError> {
    let text = crate::input::read_to_string(path).map_err(|e| FileError::Read {
        path: path.display().to_string(),
        message: crate::chart::loader::io_message(&e),
    })?;
    parse(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse_str(text: &str) -> Result<ReleasesFile, FileError> {
        parse(text, Path::new("releases.yaml"))
    }

    fn err(text: &str) -> String {
        parse_str(text).unwrap_err().to_string()
    }

    const ALL_KEYS: &str = "name, namespace, chart, version, values, set, needs, wait, waitStrategy, \
        waitForJobs, timeout, atomic, historyMax, createNamespace, takeOwnership, installed, description";

    #[test]
    fn parses_releases_with_defaults_paths_and_lines() {
        let text = "\
defaults:
  namespace: kube-system
  atomic: false
  timeout: 20s
releases:
- name: bootstrap-secrets
  chart: charts/bootstrap-secrets.tgz
- name: kube-apiserver
  chart: charts/kube-apiserver
  values: [values/common.yaml, values/apiserver.yaml]
  set:
    replicas: 3
    image.tag: v1.36.3
    args[0]: --foo
  needs:
  - kube-system/bootstrap-secrets
  - release: kube-system/bootstrap-secrets
    reason: \"should be updated first\"
  wait: true
  timeout: 1m30s
  waitStrategy: kstatus
  waitForJobs: yes
  historyMax: 3
  createNamespace: false
  takeOwnership: true
  description: control plane
- name: web
  namespace: apps
  chart: charts/web
  installed: false
";
        let f = parse(text, Path::new("plans/releases.yaml")).unwrap();
        assert_eq!(f.releases.len(), 3);
        let [a, b, c] = &f.releases[..] else {
            panic!("three releases")
        };
        assert_eq!(
            (a.namespace.as_str(), a.name.as_str()),
            ("kube-system", "bootstrap-secrets")
        );
        assert_eq!(
            a.chart,
            ChartSpec::Path("plans/charts/bootstrap-secrets.tgz".into())
        );
        assert_eq!(a.line(), 6);
        assert_eq!(a.chart_at.to_string(), "plans/releases.yaml:7:10");
        let mut want = ReleaseOptions {
            atomic: false,
            timeout: Duration::from_secs(20),
            ..ReleaseOptions::default()
        };
        assert_eq!(a.options, want);
        assert!(a.installed && a.values.is_empty() && a.set.is_empty() && a.needs.is_empty());

        assert_eq!(b.line(), 8);
        let paths: Vec<&Path> = b.values.iter().map(|v| v.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                Path::new("plans/values/common.yaml"),
                Path::new("plans/values/apiserver.yaml")
            ]
        );
        assert_eq!(b.values[1].at.to_string(), "plans/releases.yaml:10:32");
        let sets: Vec<(&str, &Node)> = b.set.iter().map(|s| (s.path.as_str(), &s.value)).collect();
        assert_eq!(
            sets,
            [
                ("replicas", &Node::Float(3.0)),
                ("image.tag", &Node::Str("v1.36.3".into())),
                ("args[0]", &Node::Str("--foo".into())),
            ]
        );
        assert_eq!(
            b.set[2].parts,
            [SetPathPart::Key("args".into()), SetPathPart::Index(0)]
        );
        assert_eq!(b.set[2].at.line, 14);
        assert_eq!(b.needs.len(), 2);
        assert_eq!(
            b.needs[0].need.release.to_string(),
            "kube-system/bootstrap-secrets"
        );
        assert_eq!(b.needs[0].need.reason, "");
        assert_eq!(b.needs[0].at.to_string(), "plans/releases.yaml:16:5");
        assert_eq!(b.needs[1].need.reason, "should be updated first");
        assert_eq!(b.needs[1].at.line, 17);
        want = ReleaseOptions {
            atomic: false,
            wait: true,
            wait_strategy: WaitStrategy::Kstatus,
            wait_for_jobs: true,
            timeout: Duration::from_secs(90),
            history_max: 3,
            create_namespace: false,
            take_ownership: true,
            description: "control plane".into(),
        };
        assert_eq!(b.options, want);

        assert_eq!(c.reference().to_string(), "apps/web");
        assert!(!c.installed);
    }

    #[test]
    fn plain_defaults_and_empty_files() {
        let f = parse_str("releases:\n- name: web\n  chart: web\n").unwrap();
        assert_eq!(f.releases[0].namespace, "default");
        assert_eq!(f.releases[0].options, ReleaseOptions::default());
        assert_eq!(f.releases[0].chart, ChartSpec::Path("web".into()));
        assert!(parse_str("").unwrap().releases.is_empty());
        assert!(parse_str("releases: []\n").unwrap().releases.is_empty());
    }

    #[test]
    fn atomic_plan_is_a_bool_at_the_top() {
        assert!(!parse_str("releases: []\n").unwrap().atomic_plan);
        let f = parse_str("atomicPlan: true\nreleases:\n- name: web\n  chart: web\n").unwrap();
        assert!(f.atomic_plan);
        assert_eq!(f.releases.len(), 1);
        assert!(parse_str("atomicPlan: true\n").unwrap().atomic_plan);
        assert_eq!(
            err("atomicPlan: yes please\nreleases: []\n"),
            "releases.yaml:1:13: the file: atomicPlan must be a bool, got \"yes please\""
        );
    }

    #[test]
    fn unknown_keys_name_the_place_and_the_known_keys() {
        let text = "releases:\n- name: web\n  chart: charts/web\n  chrt: x\n";
        assert_eq!(
            err(text),
            format!(
                "releases.yaml:4:3: unknown key \"chrt\" in release \"web\" (known keys: {ALL_KEYS})"
            )
        );
        assert_eq!(
            err("releases: []\nrelease: []\n"),
            "releases.yaml:2:1: unknown key \"release\" in the file (known keys: atomicPlan, defaults, repositories, releases)"
        );
        let e = err("defaults:\n  name: x\nreleases: []\n");
        assert!(
            e.starts_with("releases.yaml:2:3: unknown key \"name\" in defaults (known keys: namespace, chart,"),
            "{e}"
        );
        assert_eq!(
            err("releases:\n- name: web\n  chart: web\n  needs:\n  - release: a/b\n    because: x\n"),
            "releases.yaml:6:5: unknown key \"because\" in release \"web\" (known keys: release, reason)"
        );
    }

    #[test]
    fn bad_types_are_reported_at_the_value() {
        let head = "releases:\n- name: web\n  chart: charts/web\n";
        let case = |line: &str| err(&format!("{head}{line}\n"));
        assert_eq!(
            case("  timeout: soon"),
            "releases.yaml:4:12: release \"web\": timeout must be a Go duration such as 20s, got \"soon\""
        );
        assert_eq!(
            case("  timeout: 20"),
            "releases.yaml:4:12: release \"web\": timeout must be a Go duration such as 20s, got \"20\""
        );
        assert_eq!(
            case("  wait: maybe"),
            "releases.yaml:4:9: release \"web\": wait must be a bool, got \"maybe\""
        );
        assert_eq!(
            case("  atomic: \"true\""),
            "releases.yaml:4:11: release \"web\": atomic must be a bool, got \"true\""
        );
        assert_eq!(
            case("  historyMax: -1"),
            "releases.yaml:4:15: release \"web\": historyMax must be a whole number of 0 or more, got \"-1\""
        );
        assert_eq!(
            case("  waitStrategy: eventually"),
            "releases.yaml:4:17: release \"web\": waitStrategy must be legacy, kstatus or none, got \"eventually\""
        );
        assert_eq!(
            case("  needs: a/b"),
            "releases.yaml:4:10: release \"web\": needs must be a list, got \"a/b\""
        );
        assert_eq!(
            case("  set: [a]"),
            "releases.yaml:4:8: release \"web\": set must be a map, got a list"
        );
        assert_eq!(
            case("  namespace: {a: b}"),
            "releases.yaml:4:14: release \"web\": namespace must be a non-empty string, got a map"
        );
        assert_eq!(
            case("  wait: true\n  wait: false"),
            "releases.yaml:5:3: release \"web\": key \"wait\" is given twice (first at line 4)"
        );
        assert_eq!(
            err("releases: {web: x}\n"),
            "releases.yaml:1:11: the file: releases must be a list, got a map"
        );
        assert_eq!(
            err("defaults:\n  wait: 3\nreleases: []\n"),
            "releases.yaml:2:9: defaults: wait must be a bool, got \"3\""
        );
    }

    #[test]
    fn defaults_errors_are_reported_where_defaults_say_them() {
        // Checked on their own, even when every release sets the key.
        assert_eq!(
            err("defaults:\n  timeout: 5\nreleases:\n- name: web\n  chart: web\n  timeout: 1s\n"),
            "releases.yaml:2:12: defaults: timeout must be a Go duration such as 20s, got \"5\""
        );
        // A release's own key replaces the default.
        let f = parse_str(
            "defaults:\n  timeout: 1m\n  namespace: a\nreleases:\n- name: web\n  chart: web\n  timeout: 5s\n",
        )
        .unwrap();
        assert_eq!(f.releases[0].options.timeout, Duration::from_secs(5));
        assert_eq!(f.releases[0].namespace, "a");
    }

    #[test]
    fn missing_name_or_chart() {
        assert_eq!(
            err("releases:\n- chart: charts/web\n"),
            "releases.yaml:2:3: release #1: missing required key \"name\""
        );
        assert_eq!(
            err("releases:\n- name: a\n  chart: a\n- name: web\n  namespace: apps\n"),
            "releases.yaml:4:3: release \"web\": missing required key \"chart\""
        );
        assert_eq!(
            err("releases:\n- name: web\n  chart: web\n  needs:\n  - reason: x\n"),
            "releases.yaml:5:5: release \"web\" needs entry: missing required key \"release\""
        );
        assert_eq!(
            err("releases:\n- web\n"),
            "releases.yaml:2:3: release #1: a release must be a map, got \"web\""
        );
    }

    #[test]
    fn duplicate_releases() {
        let text = "\
defaults:
  namespace: kube-system
releases:
- name: calico
  chart: a
- name: calico
  namespace: other
  chart: a
- name: calico
  chart: b
";
        assert_eq!(
            err(text),
            "releases.yaml:9:3: release \"kube-system/calico\" is defined twice (first at line 4)"
        );
    }

    #[test]
    fn needs_must_be_namespace_slash_name_and_defined() {
        let head = "releases:\n- name: a\n  namespace: x\n  chart: a\n- name: web\n  chart: web\n  needs:\n";
        assert_eq!(
            err(&format!("{head}  - a\n")),
            "releases.yaml:8:5: release \"web\": needs entry \"a\" is not namespace/name"
        );
        assert_eq!(
            err(&format!("{head}  - release: x/a/b\n")),
            "releases.yaml:8:14: release \"web\": needs entry \"x/a/b\" is not namespace/name"
        );
        assert_eq!(
            err(&format!("{head}  - x/a\n  - /a\n")),
            "releases.yaml:9:5: release \"web\": needs entry \"/a\" is not namespace/name"
        );
        assert_eq!(
            err(&format!("{head}  - x/a\n  - release: kube-system/nope\n    reason: r\n")),
            "releases.yaml:9:14: release \"default/web\" needs \"kube-system/nope\", which the file does not define"
        );
        let f = parse_str(&format!("{head}  - x/a\n")).unwrap();
        assert_eq!(f.releases[1].needs[0].need.release.to_string(), "x/a");
    }

    #[test]
    fn bad_set_paths() {
        let head = "releases:\n- name: web\n  chart: web\n  set:\n";
        assert_eq!(
            err(&format!("{head}    a..b: 1\n")),
            "releases.yaml:5:5: release \"web\": set path \"a..b\": empty key"
        );
        assert_eq!(
            err(&format!("{head}    \"a[x]\": 1\n")),
            "releases.yaml:5:5: release \"web\": set path \"a[x]\": invalid index \"x\""
        );
    }

    #[test]
    fn set_keys_must_read_as_strings_and_reasons_may_be_empty() {
        assert_eq!(
            err("releases:\n- name: web\n  chart: web\n  set:\n    on: 1\n"),
            "releases.yaml:5:5: release \"web\": set key \"on\" does not read as a string in YAML 1.1; quote it"
        );
        let f = parse_str(
            "releases:\n- name: b\n  chart: b\n- name: a\n  chart: a\n  set:\n    \"on\": y\n  needs:\n  - release: default/b\n    reason:\n",
        )
        .unwrap();
        assert_eq!(f.releases[1].set[0].value, Node::Bool(true));
        assert_eq!(f.releases[1].needs[0].need.reason, "");
    }

    #[test]
    fn syntax_errors_have_a_position() {
        assert_eq!(
            err("releases:\n- name: web\n  chart: [web\n"),
            "releases.yaml:3:10: while parsing a flow sequence, expected ',' or ']': this flow sequence ([...]) is not closed (the parser gave up at line 4, column 1)"
        );
        assert_eq!(
            err("releases:\n- name: web\n   chart: x\n"),
            "releases.yaml:3:9: mapping values are not allowed in this context"
        );
        assert_eq!(
            err("releases:\n- name: a\n  chart: a\n  set:\n    x: 1\n    x: 2\n"),
            "releases.yaml:6:5: release \"a\": set key \"x\" is given twice (first at line 5)"
        );
    }

    #[test]
    fn set_paths_follow_strvals() {
        use SetPathPart::{Index, Key};
        let k = |s: &str| Key(s.to_string());
        assert_eq!(parse_set_path("a").unwrap(), [k("a")]);
        assert_eq!(parse_set_path("a.b.c").unwrap(), [k("a"), k("b"), k("c")]);
        assert_eq!(parse_set_path("a\\.b.c").unwrap(), [k("a.b"), k("c")]);
        assert_eq!(
            parse_set_path("a[0][2].b").unwrap(),
            [k("a"), Index(0), Index(2), k("b")]
        );
        for (bad, msg) in [
            ("", "empty key"),
            ("a.", "empty key"),
            (".a", "empty key"),
            ("[0]", "an index must follow a key"),
            ("a[0]b", "expected '.' or '[' after ']'"),
            ("a[", "unclosed '['"),
            ("a[-1]", "negative -1 index not allowed"),
            (
                "a[65537]",
                "index of 65537 is greater than maximum supported index of 65536",
            ),
            ("a\\", "a trailing '\\' escapes nothing"),
        ] {
            assert_eq!(parse_set_path(bad).unwrap_err(), msg, "{bad:?}");
        }
        let deep = vec!["a"; 32].join(".");
        assert!(parse_set_path(&deep).is_err());
        assert!(parse_set_path(&vec!["a"; 31].join(".")).is_ok());
    }

    #[test]
    fn set_values_go_on_top_of_values() {
        let mut m = match crate::yaml::parse_values(
            "image: {repo: r, tag: old}\nargs: [x, w]\nscalar: 1\n",
        )
        .unwrap()
        {
            Node::Map(m) => m,
            _ => unreachable!(),
        };
        let set = |m: &mut Map, p: &str, v: Node| apply_set(m, &parse_set_path(p).unwrap(), v);
        set(&mut m, "image.tag", Node::Str("new".into()));
        set(&mut m, "args[3]", Node::Str("z".into()));
        set(&mut m, "scalar.inner", Node::Bool(true));
        set(&mut m, "list[1].name", Node::Str("nm".into()));
        set(&mut m, "a\\.b", Node::Int(1));
        let want = crate::yaml::parse_values(
            "image: {repo: r, tag: new}\nargs: [x, w, null, z]\nscalar: {inner: true}\n\
             list: [null, {name: nm}]\n\"a.b\": 1\n",
        )
        .unwrap();
        let mut want = match want {
            Node::Map(m) => m,
            _ => unreachable!(),
        };
        want.insert("a.b".into(), Node::Int(1));
        assert_eq!(m, want);
    }

    #[test]
    fn charts_versions_and_repositories() {
        let text = "\
repositories:
- name: internal
  url: https://charts.example.com/stable/
  username: ci
  password: s3cret
  caFile: certs/ca.pem
  certFile: /etc/c.pem
  keyFile: certs/k.pem
  skipTLSVerify: true
  passCredentials: true
- name: ghcr
  url: oci://ghcr.io/org/charts/
  oci: true
  plainHttp: true
releases:
- name: a
  chart: internal/cert-manager
  version: ~1.16.0
- name: b
  chart: ghcr/app
  version: 2.1.0
- name: c
  chart: jetstack/cert-manager
  version: \">=1, <2\"
- name: d
  chart: oci://r.example/x/y
- name: e
  chart: https://r.example/y-1.0.0.tgz
- name: f
  chart: ./local/web
- name: g
  chart: web.tgz
- name: h
  chart: r/web
  version: 0.10
";
        let f = parse(text, Path::new("plans/releases.yaml")).unwrap();
        let [internal, ghcr] = &f.repositories[..] else {
            panic!("two repositories: {:?}", f.repositories)
        };
        assert_eq!(
            internal,
            &RepositoryEntry {
                name: "internal".into(),
                url: "https://charts.example.com/stable/".into(),
                username: "ci".into(),
                password: "s3cret".into(),
                ca_file: Some("plans/certs/ca.pem".into()),
                cert_file: Some("/etc/c.pem".into()),
                key_file: Some("plans/certs/k.pem".into()),
                insecure_skip_tls_verify: true,
                pass_credentials: true,
                oci: false,
                plain_http: false,
                at: Pos {
                    file: "plans/releases.yaml".into(),
                    line: 2,
                    col: 3
                },
            }
        );
        assert_eq!(ghcr.url, "ghcr.io/org/charts");
        assert!(ghcr.oci && ghcr.plain_http && ghcr.username.is_empty());
        let charts: Vec<(String, Option<&str>)> = f
            .releases
            .iter()
            .map(|r| (r.chart.to_string(), r.version.as_deref()))
            .collect();
        assert_eq!(
            charts,
            [
                ("internal/cert-manager".to_string(), Some("~1.16.0")),
                ("ghcr/app".into(), Some("2.1.0")),
                ("jetstack/cert-manager".into(), Some(">=1, <2")),
                ("oci://r.example/x/y".into(), None),
                ("https://r.example/y-1.0.0.tgz".into(), None),
                ("plans/./local/web".into(), None),
                ("plans/web.tgz".into(), None),
                ("r/web".into(), Some("0.10")),
            ]
            .map(|(c, v)| (c, v))
        );
        assert!(
            matches!(&f.releases[0].chart, ChartSpec::FileRepo { repo, chart }
            if repo == "internal" && chart == "cert-manager")
        );
        assert!(
            matches!(&f.releases[2].chart, ChartSpec::PathOrRepo { path, repo, .. }
            if repo == "jetstack" && path == Path::new("plans/jetstack/cert-manager"))
        );
        assert!(matches!(&f.releases[3].chart, ChartSpec::Oci(_)));
        assert!(matches!(&f.releases[4].chart, ChartSpec::Url(_)));
        assert_eq!(
            f.releases[0].version_at.as_ref().map(ToString::to_string),
            Some("plans/releases.yaml:18:12".into())
        );
        // `version: 0.10` is the text written, not the float 0.1.
        assert_eq!(f.releases[7].version.as_deref(), Some("0.10"));
        // The credentials come from the environment when the file has none,
        // under helmfile's names.
        let mut r = ghcr.clone();
        r.name = "my-repo".into();
        assert_eq!(r.env_var("USERNAME"), "MY_REPO_USERNAME");
        let env = |k: &str| match k {
            "MY_REPO_USERNAME" => Some("u".to_string()),
            "MY_REPO_PASSWORD" => Some("p".to_string()),
            _ => None,
        };
        assert_eq!(r.credentials(env), ("u".into(), "p".into()));
        r.password = "given".into();
        assert_eq!(r.credentials(env), ("u".into(), "given".into()));
    }

    #[test]
    fn version_and_repository_errors_have_a_position() {
        let cases: &[(&str, &str)] = &[
            (
                "releases:\n- name: web\n  chart: ./web\n  version: 1.0.0\n",
                "releases.yaml:4:12: release \"web\": version applies only to a chart from a \
                 repository or a registry, and chart ./web is a path",
            ),
            (
                "releases:\n- name: web\n  chart: https://r.example/web-1.0.0.tgz\n  version: 1.0.0\n",
                "releases.yaml:4:12: release \"web\": version applies only to a chart from a \
                 repository or a registry, and chart https://r.example/web-1.0.0.tgz is the URL \
                 of one archive",
            ),
            (
                "releases:\n- name: web\n  chart: r/web\n  version: latest\n",
                "releases.yaml:4:12: release \"web\": version \"latest\" is not a version or a \
                 version constraint: improper constraint: latest",
            ),
            (
                "releases:\n- name: web\n  chart: r/web\n  version: [1]\n",
                "releases.yaml:4:12: release \"web\": version must be a non-empty string, got a list",
            ),
            (
                "defaults:\n  version: 1.0.0\n",
                "releases.yaml:2:3: unknown key \"version\" in defaults (known keys: namespace, \
                 chart, values, set, needs, wait, waitStrategy, waitForJobs, timeout, atomic, \
                 historyMax, createNamespace, takeOwnership, installed, description)",
            ),
            (
                "repositories: {name: r}\n",
                "releases.yaml:1:15: the file: repositories must be a list, got a map",
            ),
            (
                "repositories:\n- url: https://r.example\n",
                "releases.yaml:2:3: repository #1: missing required key \"name\"",
            ),
            (
                "repositories:\n- name: r\n",
                "releases.yaml:2:3: repository \"r\": missing required key \"url\"",
            ),
            (
                "repositories:\n- name: r\n  url: https://r.example\n  user: me\n",
                "releases.yaml:4:3: unknown key \"user\" in repository \"r\" (known keys: name, \
                 url, username, password, caFile, certFile, keyFile, insecureSkipTLSVerify, \
                 skipTLSVerify, passCredentials, oci, plainHttp)",
            ),
            (
                "repositories:\n- name: r\n  url: https://a.example\n- name: r\n  url: https://b.example\n",
                "releases.yaml:4:9: repository \"r\": repository \"r\" is defined twice (first at line 2)",
            ),
            (
                "repositories:\n- name: r\n  url: r.example/charts\n",
                "releases.yaml:3:8: repository \"r\": url must be an http:// or https:// URL (or set \
                 oci: true for a registry), got \"r.example/charts\"",
            ),
            (
                "repositories:\n- name: r\n  url: https://r.example\n  plainHttp: true\n",
                "releases.yaml:4:14: repository \"r\": plainHttp applies only to an oci: true \
                 repository; use an http:// url",
            ),
            (
                "repositories:\n- name: r\n  url: https://r.example\n  oci: maybe\n",
                "releases.yaml:4:8: repository \"r\": oci must be a bool, got \"maybe\"",
            ),
            (
                "repositories:\n- name: r\n  url: https://r.example\n  skipTLSVerify: true\n  insecureSkipTLSVerify: true\n",
                "releases.yaml:5:3: repository \"r\": insecureSkipTLSVerify repeats the key at line 4 \
                 (skipTLSVerify is helmfile's name for insecureSkipTLSVerify)",
            ),
            (
                "repositories:\n- name: a/b\n  url: https://r.example\n",
                "releases.yaml:2:9: repository \"a/b\": name must not contain '/', got \"a/b\"",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(err(text), *want, "{text}");
        }
    }

    #[test]
    fn load_reports_missing_and_invalid_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("charts/web/templates")).unwrap();
        std::fs::write(
            d.join("charts/web/Chart.yaml"),
            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        )
        .unwrap();
        std::fs::write(d.join("charts/web/values.yaml"), "replicas: 1\n").unwrap();
        std::fs::write(d.join("a.yaml"), "image: {repo: r, tag: a}\nlist: [1]\n").unwrap();
        std::fs::write(d.join("b.yaml"), "image: {tag: b}\n").unwrap();
        std::fs::write(d.join("bad.yaml"), "a: [\n").unwrap();
        let file = d.join("releases.yaml");
        // Helm's files in the temporary directory, never the user's.
        let mut opts = LocateOptions::from_env();
        opts.paths = crate::source::HelmPaths::from_lookup(|k| {
            (k == "HOME").then(|| d.display().to_string())
        });
        let repo_config = opts.paths.repository_config.display().to_string();
        let run = |text: &str| {
            std::fs::write(&file, text).unwrap();
            read(&file)?.load_releases_with(&opts)
        };
        let shown = file.display().to_string();
        let dir_s = d.display().to_string();

        let rs = run("releases:\n- name: web\n  chart: charts/web\n  values: [a.yaml, b.yaml]\n  set:\n    image.tag: c\n    list[1]: 2\n")
            .unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].chart.metadata.name, "web");
        let want =
            match crate::yaml::parse_values("image: {repo: r, tag: c}\nlist: [1, 2]\n").unwrap() {
                Node::Map(m) => m,
                _ => unreachable!(),
            };
        assert_eq!(rs[0].values, want);
        assert!(!rs[0].absent);

        let e = run("releases:\n- name: web\n  chart: ./charts/nope\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{shown}:3:10: release \"default/web\": chart {dir_s}/./charts/nope does not exist"
            )
        );
        // Not a path that exists, nor a chart of a repository anyone added.
        let e = run("releases:\n- name: web\n  chart: charts/nope\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{shown}:3:10: release \"default/web\": chart {dir_s}/charts/nope does not exist, \
                 and no repository \"charts\" is defined (in the file's repositories: or in \
                 {repo_config})"
            )
        );
        // A version of a chart on disk means nothing.
        let e = run("releases:\n- name: web\n  chart: charts/web\n  version: 1.0.0\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{shown}:4:12: release \"web\": version applies only to a chart from a \
                 repository or a registry, and chart {dir_s}/charts/web is a path"
            )
        );
        let e =
            run("releases:\n- name: web\n  chart: charts/web\n  values:\n  - a.yaml\n  - c.yaml\n")
                .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{shown}:6:5: release \"default/web\": values file {dir_s}/c.yaml does not exist"
            )
        );
        let e =
            run("releases:\n- name: web\n  chart: charts/web\n  values: [bad.yaml]\n").unwrap_err();
        let FileError::BadValues { error, at, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(error.file, format!("{dir_s}/bad.yaml"));
        assert!(error.line.is_some(), "{error:?}");
        assert_eq!(at.to_string(), format!("{shown}:4:12"));
        assert!(
            e.to_string()
                .starts_with(&format!("invalid values file {dir_s}/bad.yaml: ")),
            "{e}"
        );
        let e = run("releases:\n- name: web\n  chart: a.yaml\n").unwrap_err();
        assert!(
            e.to_string().starts_with(&format!(
                "{shown}:3:10: release \"default/web\": cannot load chart {dir_s}/a.yaml: "
            )),
            "{e}"
        );
        let e = load(&d.join("missing.yaml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("read {dir_s}/missing.yaml: ")),
            "{e}"
        );
    }
}
