//! Helm's built-in template objects: `.Release`, `.Chart`, `.Capabilities`,
//! `.Template`, `.Files` and the per-chart scope that holds them.
//!
//! Each object shows the Go shape Helm v3.17.2 gives it, because templates can
//! observe it: `.Release` and `.Template` are maps (unknown keys print empty),
//! `.Chart` is a struct with Go field names (unknown fields are errors),
//! `.Capabilities` is a struct with methods (`KubeVersion.GitVersion`,
//! `APIVersions.Has`), `.Files` is a map type with methods.
//!
//! Map-like objects ([`Files`], [`VersionSet`]) return their Go map or slice
//! from [`GoObject::to_json_value`] with the element types Go ranges over
//! (`[]uint8` for files, `string` for API versions), so `range`, `index` and
//! `len` can use that view.
use crate::chart::{ChartFile, Dependency, FileData, Maintainer, Metadata};
use crate::render::glob::Glob;
use crate::template::funcs::{FuncError, FuncResult, Param};
use crate::template::value::{GoObject, ListKind, MapKind, Value};
use crate::yaml::Node;
use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// The Helm version `helm template` reports in `.Capabilities.HelmVersion`.
pub const HELM_VERSION: &str = "v3.17.2";
/// The git commit of Helm v3.17.2.
pub const HELM_GIT_COMMIT: &str = "cc0bbbd6d6276b83880042c1ecb34087e84d41eb";
/// The Go version Helm v3.17.2 was built with.
pub const HELM_GO_VERSION: &str = "go1.23.7";
/// The default Kubernetes version of Helm v3.17.2 without a cluster.
pub const DEFAULT_KUBE_VERSION: &str = "v1.32.0";

/// Helm v3.17.2's default `.Capabilities.APIVersions` (client-go's scheme in
/// priority order, plus apiextensions), group/version only.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1alpha1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

fn s(v: &str) -> Value {
    Value::str(v)
}

fn str_list(items: &[String]) -> Value {
    Value::List(
        Rc::new(items.iter().map(|x| s(x)).collect()),
        ListKind::String,
    )
}

fn wrong_args(method: &str, want: usize, got: usize) -> Option<FuncResult> {
    Some(Err(FuncError::Msg(format!(
        "wrong number of args for {method}: want {want} got {got}"
    ))))
}

/// Converts a YAML node into a template value: numbers from YAML are
/// float64, integers that kept their type (`--set`) are int64, maps are
/// `map[string]interface {}`.
pub fn node_to_value(n: &Node) -> Value {
    crate::stack::deeper(|| node_to_value_inner(n))
}

fn node_to_value_inner(n: &Node) -> Value {
    match n {
        Node::Null => Value::Nil,
        Node::Bool(b) => Value::Bool(*b),
        Node::Int(i) => Value::Int64(*i),
        Node::Float(f) => Value::Float(*f),
        Node::Str(x) => Value::str(x.as_str()),
        Node::Seq(items) => Value::list(items.iter().map(node_to_value).collect()),
        Node::Map(m) => Value::map(
            m.iter()
                .map(|(k, v)| (k.clone(), node_to_value(v)))
                .collect(),
        ),
    }
}

/// Builds `.Release`: a `map[string]interface {}` as Helm v3 passes it.
pub fn release_value(name: &str, namespace: &str, is_upgrade: bool, revision: i64) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Name".to_string(), s(name));
    m.insert("Namespace".to_string(), s(namespace));
    m.insert("IsUpgrade".to_string(), Value::Bool(is_upgrade));
    m.insert("IsInstall".to_string(), Value::Bool(!is_upgrade));
    m.insert("Revision".to_string(), Value::Int(revision));
    m.insert("Service".to_string(), s("Helm"));
    Value::map(m)
}

/// Builds `.Template` for one file (a `chartutil.Values` map).
pub fn template_value(name: &str, base_path: &str) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Name".to_string(), s(name));
    m.insert("BasePath".to_string(), s(base_path));
    Value::Map(Rc::new(RefCell::new(m)), MapKind::Values)
}

// ---------------------------------------------------------------------------
// .Chart

/// `.Chart`: Helm v3's anonymous struct embedding `chart.Metadata` with an
/// extra `IsRoot` field. Fields use Go names; anything else is an error.
#[derive(Debug, Clone)]
pub struct ChartObject {
    meta: Rc<Metadata>,
    is_root: bool,
}

impl ChartObject {
    /// Wraps a chart's metadata.
    pub fn new(meta: Rc<Metadata>, is_root: bool) -> Self {
        ChartObject { meta, is_root }
    }
}

fn maintainers_value(ms: &[Maintainer]) -> Value {
    Value::list(
        ms.iter()
            .map(|m| Value::Object(Rc::new(MaintainerObject(m.clone()))))
            .collect(),
    )
}

fn dependencies_value(ds: &[Dependency]) -> Value {
    Value::list(
        ds.iter()
            .map(|d| Value::Object(Rc::new(DependencyObject(d.clone()))))
            .collect(),
    )
}

fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::Map(
        Rc::new(RefCell::new(
            m.iter().map(|(k, v)| (k.clone(), s(v))).collect(),
        )),
        MapKind::String,
    )
}

impl GoObject for ChartObject {
    fn type_name(&self) -> &str {
        "struct { chart.Metadata; IsRoot bool }"
    }
    fn field(&self, name: &str) -> Option<Value> {
        let m = &self.meta;
        Some(match name {
            "Name" => s(&m.name),
            "Home" => s(&m.home),
            "Sources" => str_list(&m.sources),
            "Version" => s(&m.version),
            "Description" => s(&m.description),
            "Keywords" => str_list(&m.keywords),
            "Maintainers" => maintainers_value(&m.maintainers),
            "Icon" => s(&m.icon),
            "APIVersion" => s(&m.api_version),
            "Condition" => s(&m.condition),
            "Tags" => s(&m.tags),
            "AppVersion" => s(&m.app_version),
            "Deprecated" => Value::Bool(m.deprecated),
            "Annotations" => string_map(&m.annotations),
            "KubeVersion" => s(&m.kube_version),
            "Dependencies" => dependencies_value(&m.dependencies),
            "Type" => s(&m.chart_type),
            "IsRoot" => Value::Bool(self.is_root),
            "Metadata" => Value::Object(Rc::new(MetadataObject(self.meta.clone()))),
            _ => return None,
        })
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<FuncResult> {
        metadata_methods(&self.meta, name, args)
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        fmt_metadata(&self.meta, f)?;
        write!(f, " {}}}", self.is_root)
    }
    fn to_json_value(&self) -> Value {
        let mut v = metadata_json(&self.meta);
        if let Value::Map(m, _) = &mut v {
            m.borrow_mut()
                .insert("IsRoot".to_string(), Value::Bool(self.is_root));
        }
        v
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `chart.Metadata` reached as `.Chart.Metadata`.
#[derive(Debug, Clone)]
pub struct MetadataObject(Rc<Metadata>);

impl GoObject for MetadataObject {
    fn type_name(&self) -> &str {
        "chart.Metadata"
    }
    fn field(&self, name: &str) -> Option<Value> {
        if name == "IsRoot" || name == "Metadata" {
            return None;
        }
        ChartObject::new(self.0.clone(), false).field(name)
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<FuncResult> {
        metadata_methods(&self.0, name, args)
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_metadata(&self.0, f)
    }
    fn to_json_value(&self) -> Value {
        metadata_json(&self.0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `(*Metadata).Validate` is the only exported method; templates never need
/// it, but Go would let them call it.
fn metadata_methods(_m: &Metadata, _name: &str, _args: &[Value]) -> Option<FuncResult> {
    None
}

fn fmt_strs(items: &[String], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("[")?;
    f.write_str(&items.join(" "))?;
    f.write_str("]")
}

/// Go's `%v` of `chart.Metadata` (struct fields in declaration order).
fn fmt_metadata(m: &Metadata, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{{{} {} ", m.name, m.home)?;
    fmt_strs(&m.sources, f)?;
    write!(f, " {} {} ", m.version, m.description)?;
    fmt_strs(&m.keywords, f)?;
    f.write_str(" [")?;
    for (i, _) in m.maintainers.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        // Go prints the pointers' addresses here.
        write!(f, "0xc{:09x}", 0x1000 + i * 0x40)?;
    }
    write!(
        f,
        "] {} {} {} {} {} {} map[",
        m.icon, m.api_version, m.condition, m.tags, m.app_version, m.deprecated
    )?;
    for (i, (k, v)) in m.annotations.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        write!(f, "{k}:{v}")?;
    }
    write!(f, "] {} [", m.kube_version)?;
    for (i, _) in m.dependencies.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        write!(f, "0xc{:09x}", 0x2000 + i * 0x40)?;
    }
    write!(f, "] {}}}", m.chart_type)
}

/// `encoding/json` of `chart.Metadata` (json tags, omitempty).
fn metadata_json(m: &Metadata) -> Value {
    let mut out = BTreeMap::new();
    let mut put_s = |k: &str, v: &str| {
        if !v.is_empty() {
            out.insert(k.to_string(), s(v));
        }
    };
    put_s("name", &m.name);
    put_s("home", &m.home);
    put_s("version", &m.version);
    put_s("description", &m.description);
    put_s("icon", &m.icon);
    put_s("apiVersion", &m.api_version);
    put_s("condition", &m.condition);
    put_s("tags", &m.tags);
    put_s("appVersion", &m.app_version);
    put_s("kubeVersion", &m.kube_version);
    put_s("type", &m.chart_type);
    if !m.sources.is_empty() {
        out.insert("sources".into(), str_list(&m.sources));
    }
    if !m.keywords.is_empty() {
        out.insert("keywords".into(), str_list(&m.keywords));
    }
    if !m.maintainers.is_empty() {
        out.insert(
            "maintainers".into(),
            Value::list(
                m.maintainers
                    .iter()
                    .map(|x| MaintainerObject(x.clone()).to_json_value())
                    .collect(),
            ),
        );
    }
    if m.deprecated {
        out.insert("deprecated".into(), Value::Bool(true));
    }
    if !m.annotations.is_empty() {
        out.insert("annotations".into(), string_map(&m.annotations));
    }
    if !m.dependencies.is_empty() {
        out.insert(
            "dependencies".into(),
            Value::list(
                m.dependencies
                    .iter()
                    .map(|x| DependencyObject(x.clone()).to_json_value())
                    .collect(),
            ),
        );
    }
    Value::map(out)
}

/// `*chart.Maintainer` (an element of `.Chart.Maintainers`).
#[derive(Debug, Clone)]
pub struct MaintainerObject(pub Maintainer);

impl GoObject for MaintainerObject {
    fn type_name(&self) -> &str {
        "*chart.Maintainer"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Name" => s(&self.0.name),
            "Email" => s(&self.0.email),
            "URL" => s(&self.0.url),
            _ => return None,
        })
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "&{{{} {} {}}}", self.0.name, self.0.email, self.0.url)
    }
    fn to_json_value(&self) -> Value {
        let mut out = BTreeMap::new();
        for (k, v) in [
            ("name", &self.0.name),
            ("email", &self.0.email),
            ("url", &self.0.url),
        ] {
            if !v.is_empty() {
                out.insert(k.to_string(), s(v));
            }
        }
        Value::map(out)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `*chart.Dependency` (an element of `.Chart.Dependencies`).
#[derive(Debug, Clone)]
pub struct DependencyObject(pub Dependency);

impl GoObject for DependencyObject {
    fn type_name(&self) -> &str {
        "*chart.Dependency"
    }
    fn field(&self, name: &str) -> Option<Value> {
        let d = &self.0;
        Some(match name {
            "Name" => s(&d.name),
            "Version" => s(&d.version),
            "Repository" => s(&d.repository),
            "Condition" => s(&d.condition),
            "Tags" => str_list(&d.tags),
            "Enabled" => Value::Bool(d.enabled),
            "ImportValues" => Value::list(d.import_values.iter().map(node_to_value).collect()),
            "Alias" => s(&d.alias),
            _ => return None,
        })
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.0;
        write!(
            f,
            "&{{{} {} {} {} [{}] {} [",
            d.name,
            d.version,
            d.repository,
            d.condition,
            d.tags.join(" "),
            d.enabled
        )?;
        for (i, v) in d.import_values.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}", node_to_value(v))?;
        }
        write!(f, "] {}}}", d.alias)
    }
    fn to_json_value(&self) -> Value {
        let d = &self.0;
        let mut out = BTreeMap::new();
        out.insert("name".to_string(), s(&d.name));
        out.insert("repository".to_string(), s(&d.repository));
        for (k, v) in [
            ("version", &d.version),
            ("condition", &d.condition),
            ("alias", &d.alias),
        ] {
            if !v.is_empty() {
                out.insert(k.to_string(), s(v));
            }
        }
        if !d.tags.is_empty() {
            out.insert("tags".into(), str_list(&d.tags));
        }
        if d.enabled {
            out.insert("enabled".into(), Value::Bool(true));
        }
        if !d.import_values.is_empty() {
            out.insert(
                "import-values".into(),
                Value::list(d.import_values.iter().map(node_to_value).collect()),
            );
        }
        Value::map(out)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---------------------------------------------------------------------------
// .Capabilities

/// A parsed Kubernetes version, `.Capabilities.KubeVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeVersion {
    /// `v1.32.0`
    pub version: String,
    /// `1`
    pub major: String,
    /// `32`
    pub minor: String,
}

/// Why a `--kube-version` was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid kube version '{0}': Invalid Semantic Version")]
pub struct KubeVersionError(pub String);

impl KubeVersion {
    /// Helm's `chartutil.ParseKubeVersion`: a lenient semver, normalised to
    /// `v<major>.<minor>.<patch>[-pre][+build]`.
    pub fn parse(text: &str) -> Result<KubeVersion, KubeVersionError> {
        let err = || KubeVersionError(text.to_string());
        let t = text.strip_prefix('v').unwrap_or(text);
        let (core, build) = match t.split_once('+') {
            Some((c, b)) => (c, Some(b)),
            None => (t, None),
        };
        let (core, pre) = match core.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (core, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(err());
        }
        let mut nums = [0u64; 3];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            nums[i] = p.parse().map_err(|_| err())?;
        }
        let ident_ok = |x: &str| {
            !x.is_empty()
                && x.split('.').all(|id| {
                    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
        };
        if let Some(p) = pre {
            if !ident_ok(p) {
                return Err(err());
            }
            for id in p.split('.') {
                if id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err());
                }
            }
        }
        if let Some(b) = build {
            if !ident_ok(b) {
                return Err(err());
            }
        }
        let mut version = format!("v{}.{}.{}", nums[0], nums[1], nums[2]);
        if let Some(p) = pre {
            version.push('-');
            version.push_str(p);
        }
        if let Some(b) = build {
            version.push('+');
            version.push_str(b);
        }
        Ok(KubeVersion {
            version,
            major: nums[0].to_string(),
            minor: nums[1].to_string(),
        })
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        KubeVersion {
            version: DEFAULT_KUBE_VERSION.to_string(),
            major: "1".to_string(),
            minor: "32".to_string(),
        }
    }
}

impl GoObject for KubeVersion {
    fn type_name(&self) -> &str {
        "chartutil.KubeVersion"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Version" | "GitVersion" | "String" => s(&self.version),
            "Major" => s(&self.major),
            "Minor" => s(&self.minor),
            _ => return None,
        })
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.version)
    }
    fn to_json_value(&self) -> Value {
        let mut m = BTreeMap::new();
        m.insert("Version".to_string(), s(&self.version));
        m.insert("Major".to_string(), s(&self.major));
        m.insert("Minor".to_string(), s(&self.minor));
        Value::map(m)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `.Capabilities.APIVersions` (`chartutil.VersionSet`, a `[]string` with `Has`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionSet(pub Vec<String>);

impl GoObject for VersionSet {
    fn type_name(&self) -> &str {
        "chartutil.VersionSet"
    }
    fn method_params(&self, name: &str) -> Option<(&'static [Param], Option<Param>)> {
        (name == "Has").then_some((STRING_PARAM, None))
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.0
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), s(v)))
                .collect(),
        )
    }
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<FuncResult> {
        match name {
            "Has" => {
                if args.len() != 1 {
                    return wrong_args("Has", 1, args.len());
                }
                let Value::Str(want) = &args[0] else {
                    return Some(Err(FuncError::Msg(format!(
                        "wrong type for value; expected string; got {}",
                        args[0].type_name()
                    ))));
                };
                Some(Ok(Value::Bool(self.0.iter().any(|v| **v == **want))))
            }
            _ => None,
        }
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_strs(&self.0, f)
    }
    fn to_json_value(&self) -> Value {
        str_list(&self.0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `.Capabilities.HelmVersion` (`version.BuildInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmVersion;

impl GoObject for HelmVersion {
    fn type_name(&self) -> &str {
        "version.BuildInfo"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Version" => s(HELM_VERSION),
            "GitCommit" => s(HELM_GIT_COMMIT),
            "GitTreeState" => s("clean"),
            "GoVersion" => s(HELM_GO_VERSION),
            _ => return None,
        })
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{{HELM_VERSION} {HELM_GIT_COMMIT} clean {HELM_GO_VERSION}}}"
        )
    }
    fn to_json_value(&self) -> Value {
        let mut m = BTreeMap::new();
        m.insert("version".to_string(), s(HELM_VERSION));
        m.insert("git_commit".to_string(), s(HELM_GIT_COMMIT));
        m.insert("git_tree_state".to_string(), s("clean"));
        m.insert("go_version".to_string(), s(HELM_GO_VERSION));
        Value::map(m)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `.Capabilities` (`*chartutil.Capabilities`).
#[derive(Debug, Clone)]
pub struct Capabilities {
    /// The Kubernetes version.
    pub kube_version: Rc<KubeVersion>,
    /// The API versions `Has` answers for.
    pub api_versions: Rc<VersionSet>,
}

impl Capabilities {
    /// Helm's defaults plus extra API versions (`--api-versions`), with an
    /// optional Kubernetes version (`--kube-version`).
    pub fn new(kube_version: Option<KubeVersion>, extra_api_versions: &[String]) -> Self {
        let mut apis: Vec<String> = DEFAULT_API_VERSIONS.iter().map(|x| x.to_string()).collect();
        apis.extend(extra_api_versions.iter().cloned());
        Capabilities {
            kube_version: Rc::new(kube_version.unwrap_or_default()),
            api_versions: Rc::new(VersionSet(apis)),
        }
    }
}

impl GoObject for Capabilities {
    fn type_name(&self) -> &str {
        "*chartutil.Capabilities"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "KubeVersion" => Value::Object(self.kube_version.clone()),
            "APIVersions" => Value::Object(self.api_versions.clone()),
            "HelmVersion" => Value::Object(Rc::new(HelmVersion)),
            _ => return None,
        })
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "&{{{} ", self.kube_version.version)?;
        fmt_strs(&self.api_versions.0, f)?;
        f.write_str(" ")?;
        HelmVersion.fmt_go(f)?;
        f.write_str("}")
    }
    fn to_json_value(&self) -> Value {
        let mut m = BTreeMap::new();
        m.insert("KubeVersion".to_string(), self.kube_version.to_json_value());
        m.insert("APIVersions".to_string(), self.api_versions.to_json_value());
        m.insert("HelmVersion".to_string(), HelmVersion.to_json_value());
        Value::map(m)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---------------------------------------------------------------------------
// .Files

/// `.Files`: Helm's `files` type, `map[string][]byte` with methods. Holds
/// every chart file that is not a template, Chart.yaml, values or schema.
#[derive(Debug, Clone, Default)]
pub struct Files {
    /// Path -> content, sorted by path.
    pub files: Rc<BTreeMap<String, FileData>>,
}

/// A file's content as the Go `[]byte` templates see (a copy: template
/// values are reference-counted per thread, chart bytes across threads).
fn bytes_value(d: &FileData) -> Value {
    Value::Bytes(Rc::from(d.as_slice()))
}

impl Files {
    /// Builds `.Files` from a chart's other files.
    pub fn new(files: &[ChartFile]) -> Self {
        Files {
            files: Rc::new(
                files
                    .iter()
                    .map(|f| (f.name.clone(), f.data.clone()))
                    .collect(),
            ),
        }
    }

    fn glob(&self, pattern: &str) -> Files {
        let g = Glob::new(pattern);
        Files {
            files: Rc::new(
                self.files
                    .iter()
                    .filter(|(k, _)| g.as_ref().is_none_or(|g| g.is_match(k)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
        }
    }

    fn lines(&self, path: &str) -> FuncResult {
        let Some(data) = self.files.get(path) else {
            return Ok(Value::List(Rc::new(Vec::new()), ListKind::String));
        };
        if data.is_empty() {
            return Err(FuncError::msg("runtime error: index out of range [-1]"));
        }
        let text = crate::gostd::gostr::go_string_from_bytes(data);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        Ok(Value::List(
            Rc::new(text.split('\n').map(s).collect()),
            ListKind::String,
        ))
    }

    /// `AsConfig` / `AsSecrets`: YAML map of base name -> content (or its
    /// base64), no trailing newline.
    fn as_map_yaml(&self, secret: bool) -> String {
        use base64::Engine;
        let mut m = BTreeMap::new();
        for (k, v) in self.files.iter() {
            let base = k.rsplit('/').next().unwrap_or(k).to_string();
            let content = if secret {
                base64::engine::general_purpose::STANDARD.encode(v)
            } else {
                String::from_utf8_lossy(v).into_owned()
            };
            m.insert(base, Node::Str(content));
        }
        let text = super::compat::to_yaml(&Node::Map(m));
        text.strip_suffix('\n').unwrap_or(&text).to_string()
    }

    fn method(&self, name: &str, args: &[Value]) -> Option<FuncResult> {
        let arg_str = |i: usize| -> Result<String, FuncError> {
            match &args[i] {
                Value::Str(x) => Ok(x.to_string()),
                other => Err(FuncError::Msg(format!(
                    "wrong type for value; expected string; got {}",
                    other.type_name()
                ))),
            }
        };
        let one = |m: &str| {
            if args.len() == 1 {
                None
            } else {
                wrong_args(m, 1, args.len())
            }
        };
        let none = |m: &str| {
            if args.is_empty() {
                None
            } else {
                wrong_args(m, 0, args.len())
            }
        };
        match name {
            "Get" => one("Get").or_else(|| {
                Some(arg_str(0).map(|p| match self.files.get(&p) {
                    // `string(bytes)`: bytes that are not UTF-8 stay bytes.
                    Some(d) => crate::template::funcs::util::str_value_from_bytes(d),
                    None => s(""),
                }))
            }),
            "GetBytes" => one("GetBytes").or_else(|| {
                Some(arg_str(0).map(|p| match self.files.get(&p) {
                    Some(d) => bytes_value(d),
                    None => Value::Bytes(Rc::from(Vec::new())),
                }))
            }),
            "Glob" => one("Glob")
                .or_else(|| Some(arg_str(0).map(|p| Value::Object(Rc::new(self.glob(&p)))))),
            "Lines" => one("Lines").or_else(|| Some(arg_str(0).and_then(|p| self.lines(&p)))),
            "AsConfig" => none("AsConfig").or_else(|| Some(Ok(s(&self.as_map_yaml(false))))),
            "AsSecrets" => none("AsSecrets").or_else(|| Some(Ok(s(&self.as_map_yaml(true))))),
            _ => None,
        }
    }
}

const STRING_PARAM: &[Param] = &[Param::String];

impl GoObject for Files {
    fn type_name(&self) -> &str {
        "engine.files"
    }
    /// `engine.files` is a Go map type (`map[string][]byte`).
    fn kind(&self) -> &'static str {
        "map"
    }
    fn method_params(&self, name: &str) -> Option<(&'static [Param], Option<Param>)> {
        match name {
            "Get" | "GetBytes" | "Glob" | "Lines" => Some((STRING_PARAM, None)),
            "AsConfig" | "AsSecrets" => Some((&[], None)),
            _ => None,
        }
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.files
                .iter()
                .map(|(k, v)| (s(k), bytes_value(v)))
                .collect(),
        )
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "AsConfig" | "AsSecrets" => self.method(name, &[]).and_then(|r| r.ok()),
            _ => None,
        }
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<FuncResult> {
        self.method(name, args)
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("map[")?;
        for (i, (k, v)) in self.files.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{k}:{}", bytes_value(v))?;
        }
        f.write_str("]")
    }
    /// The Go map itself: path -> `[]uint8`, which is also what `range`
    /// and `index` see.
    fn to_json_value(&self) -> Value {
        Value::map(
            self.files
                .iter()
                .map(|(k, v)| (k.clone(), bytes_value(v)))
                .collect(),
        )
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Files {
        Files::new(&[
            ChartFile {
                name: "files/a.txt".into(),
                data: b"alpha\n".to_vec().into(),
            },
            ChartFile {
                name: "files/crlf.txt".into(),
                data: b"x\r\ny\r\n".to_vec().into(),
            },
            ChartFile {
                name: "files/empty.txt".into(),
                data: Vec::new().into(),
            },
            ChartFile {
                name: "files/sub/c.txt".into(),
                data: b"c".to_vec().into(),
            },
        ])
    }

    #[test]
    fn glob_does_not_cross_separator() {
        let g = files().glob("files/*.txt");
        let keys: Vec<_> = g.files.keys().cloned().collect();
        assert_eq!(keys, ["files/a.txt", "files/crlf.txt", "files/empty.txt"]);
        let all = files().glob("files/[");
        assert_eq!(all.files.len(), 4);
    }

    #[test]
    fn lines_keep_cr_and_fail_on_empty() {
        let f = files();
        let l = f.lines("files/crlf.txt").unwrap();
        assert_eq!(l.to_string(), "[x\r y\r]");
        assert!(f.lines("files/empty.txt").is_err());
        assert_eq!(f.lines("nope").unwrap().to_string(), "[]");
    }

    #[test]
    fn kube_version_parse() {
        let k = KubeVersion::parse("1.31").unwrap();
        assert_eq!(
            (k.version.as_str(), k.major.as_str(), k.minor.as_str()),
            ("v1.31.0", "1", "31")
        );
        assert_eq!(
            KubeVersion::parse("v1.30.5-gke.1").unwrap().version,
            "v1.30.5-gke.1"
        );
        assert!(KubeVersion::parse("foo").is_err());
        assert_eq!(
            KubeVersion::parse("foo").unwrap_err().to_string(),
            "invalid kube version 'foo': Invalid Semantic Version"
        );
    }

    #[test]
    fn chart_fields_use_go_names() {
        let meta = Metadata {
            name: "conf".into(),
            version: "0.1.0".into(),
            api_version: "v2".into(),
            ..Default::default()
        };
        let c = ChartObject::new(Rc::new(meta), true);
        assert_eq!(c.field("Name").unwrap().to_string(), "conf");
        assert_eq!(c.field("IsRoot").unwrap().to_string(), "true");
        assert!(c.field("name").is_none());
    }

    #[test]
    fn api_versions_has() {
        let caps = Capabilities::new(None, &["foo/v1".to_string()]);
        let has = |v: &str| {
            caps.api_versions
                .call("Has", &[s(v)])
                .unwrap()
                .unwrap()
                .to_string()
        };
        assert_eq!(has("apps/v1"), "true");
        assert_eq!(has("apps/v1/Deployment"), "false");
        assert_eq!(has("foo/v1"), "true");
    }
}
