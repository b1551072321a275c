//! Rendered files -> manifests and hooks, as Helm's `releaseutil.SortManifests`.
//!
//! Files are visited in byte-wise name order; partials and blank files are
//! skipped; each file is split into documents, each document's head
//! (`apiVersion`, `kind`, `metadata.name`, `metadata.namespace`,
//! annotations) is decoded, and documents with a `helm.sh/hook` annotation
//! become hooks. Both lists are then stable-sorted by install order.
use crate::manifest::order::sort_by_install_order;
use crate::manifest::split::split_manifests;
use crate::manifest::ObjectId;
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The annotation that marks a hook.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// The hook weight annotation.
pub const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
/// The hook delete-policy annotation.
pub const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";

/// The identifying fields of a rendered document (Helm's `SimpleHead`, plus
/// the namespace).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Head {
    /// `apiVersion` (may be empty).
    pub api_version: String,
    /// `kind` (may be empty, e.g. for a comment-only document).
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, empty when not set.
    pub namespace: String,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

impl Head {
    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }
    /// The version within the group.
    pub fn version(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or(self.api_version.as_str(), |(_, v)| v)
    }

    /// The object's identity as the manifest stage names it (what the
    /// upgrade planner compares). The namespace is the one written in the
    /// document (`""` when unset; Helm applies namespaced objects without
    /// one to the release namespace).
    ///
    /// ```
    /// use rudder::render::manifests::Head;
    /// let head = Head {
    ///     api_version: "apps/v1".into(),
    ///     kind: "Deployment".into(),
    ///     name: "web".into(),
    ///     namespace: "prod".into(),
    ///     ..Head::default()
    /// };
    /// assert_eq!(head.id().to_string(), "apps/Deployment prod/web");
    /// ```
    pub fn id(&self) -> ObjectId {
        ObjectId {
            group: self.group().to_string(),
            version: self.version().to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// A rendered, non-hook document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Manifest {
    /// The template that produced it (`chart/templates/x.yaml`).
    pub source: String,
    /// The trimmed document text.
    pub content: String,
    /// Its identity: apiVersion, kind, name, namespace and annotations.
    pub head: Head,
}

impl Manifest {
    /// The object's identity, as [`RenderedHook::id`] gives a hook's.
    pub fn id(&self) -> ObjectId {
        self.head.id()
    }
}

/// A hook event (`helm.sh/hook` value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// `pre-install`
    PreInstall,
    /// `post-install`
    PostInstall,
    /// `pre-delete`
    PreDelete,
    /// `post-delete`
    PostDelete,
    /// `pre-upgrade`
    PreUpgrade,
    /// `post-upgrade`
    PostUpgrade,
    /// `pre-rollback`
    PreRollback,
    /// `post-rollback`
    PostRollback,
    /// `test` (also the legacy `test-success`)
    Test,
}

impl HookEvent {
    /// The event's name as the `helm.sh/hook` annotation and release
    /// records spell it (`pre-install`, ..., `test`).
    ///
    /// ```
    /// use rudder::render::HookEvent;
    /// assert_eq!(HookEvent::PreUpgrade.as_str(), "pre-upgrade");
    /// assert_eq!(HookEvent::parse("test-success"), Some(HookEvent::Test));
    /// assert_eq!(HookEvent::Test.to_string(), "test");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreInstall => "pre-install",
            HookEvent::PostInstall => "post-install",
            HookEvent::PreDelete => "pre-delete",
            HookEvent::PostDelete => "post-delete",
            HookEvent::PreUpgrade => "pre-upgrade",
            HookEvent::PostUpgrade => "post-upgrade",
            HookEvent::PreRollback => "pre-rollback",
            HookEvent::PostRollback => "post-rollback",
            HookEvent::Test => "test",
        }
    }

    /// Parses one trimmed, lower-cased event name.
    pub fn parse(s: &str) -> Option<HookEvent> {
        Some(match s {
            "pre-install" => HookEvent::PreInstall,
            "post-install" => HookEvent::PostInstall,
            "pre-delete" => HookEvent::PreDelete,
            "post-delete" => HookEvent::PostDelete,
            "pre-upgrade" => HookEvent::PreUpgrade,
            "post-upgrade" => HookEvent::PostUpgrade,
            "pre-rollback" => HookEvent::PreRollback,
            "post-rollback" => HookEvent::PostRollback,
            "test" | "test-success" => HookEvent::Test,
            _ => return None,
        })
    }
}

/// A rendered hook document. Its name and kind are in [`RenderedHook::head`], as a
/// [`Manifest`]'s are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RenderedHook {
    /// The template that produced it.
    pub source: String,
    /// The trimmed document text.
    pub content: String,
    /// The events, in annotation order.
    pub events: Vec<HookEvent>,
    /// `helm.sh/hook-weight` (0 when absent or not an integer).
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` entries, trimmed and lower-cased.
    pub delete_policies: Vec<String>,
    /// Its identity: apiVersion, kind, name, namespace and annotations.
    pub head: Head,
}

impl RenderedHook {
    /// The object's identity, as [`Manifest::id`] gives a manifest's.
    pub fn id(&self) -> ObjectId {
        self.head.id()
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A document that Helm cannot decode; aborts the render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("YAML parse error on {file}: {message}")]
pub struct ManifestError {
    /// The template file.
    pub file: String,
    /// The decoder's message.
    pub message: String,
}

/// The result of sorting: manifests and hooks in install order, plus what
/// Helm logs about skipped hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sorted {
    /// Generic manifests.
    pub manifests: Vec<Manifest>,
    /// Hooks.
    pub hooks: Vec<RenderedHook>,
    /// `info: skipping unknown hook: ...` lines.
    pub infos: Vec<String>,
}

/// A scalar as sigs.k8s.io/yaml gives it to a Go `string` field.
fn scalar_string(n: &Node, field: &str) -> Result<String, String> {
    Ok(match n {
        Node::Null => String::new(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Float(f) => crate::gostd::float::format_go_float(*f),
        Node::Str(s) => s.clone(),
        other => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field {field} of type string",
                other.json_kind()
            ))
        }
    })
}

/// Decodes Helm's `SimpleHead` (and the namespace) from a parsed document.
pub(crate) fn decode_head(doc: &Node) -> Result<Head, String> {
    let map = match doc {
        Node::Null => return Ok(Head::default()),
        Node::Map(m) => m,
        other => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type releaseutil.SimpleHead",
                other.json_kind()
            ))
        }
    };
    let mut head = Head::default();
    if let Some(v) = map.get("apiVersion") {
        head.api_version = scalar_string(v, "SimpleHead.apiVersion")?;
    }
    if let Some(v) = map.get("kind") {
        head.kind = scalar_string(v, "SimpleHead.kind")?;
    }
    match map.get("metadata") {
        None | Some(Node::Null) => {}
        Some(Node::Map(md)) => {
            if let Some(v) = md.get("name") {
                head.name = scalar_string(v, "SimpleHead.metadata.name")?;
            }
            if let Some(v) = md.get("namespace") {
                // Not part of SimpleHead: never an error, only identity.
                head.namespace = scalar_string(v, "namespace").unwrap_or_default();
            }
            match md.get("annotations") {
                None | Some(Node::Null) => {}
                Some(Node::Map(an)) => {
                    for (k, v) in an {
                        let s = scalar_string(v, "SimpleHead.metadata.annotations")?;
                        head.annotations.insert(k.clone(), s);
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field .metadata.annotations of type map[string]string",
                        other.json_kind()
                    ))
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SimpleHead.metadata of type struct {{ Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }}",
                other.json_kind()
            ))
        }
    }
    Ok(head)
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',').map(|x| x.trim().to_lowercase()).collect()
}

/// Whether a rendered file is split into documents at all: partials
/// (`_*`) and blank output are not.
pub(crate) fn holds_manifests(path: &str, content: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    !base.starts_with('_') && !content.trim().is_empty()
}

/// Helm's `SortManifests` over rendered files (name -> content). `parse`
/// decodes one document to a node, with the YAML decoder's error message.
/// Rendering uses [`sort_manifests_by`]; tests use this.
#[cfg(test)]
pub(crate) fn sort_manifests(
    files: &BTreeMap<String, String>,
    parse: &dyn Fn(&str) -> Result<Node, String>,
) -> Result<Sorted, ManifestError> {
    sort_manifests_by(files, &|_, _, doc| parse(doc))
}

/// Helm's `SortManifests` over rendered files (name -> content), with a
/// decoder of one document that gets the file name, the document's index
/// in it (to use heads decoded ahead of time) and its text, and gives the
/// YAML decoder's error message.
pub(crate) fn sort_manifests_by(
    files: &BTreeMap<String, String>,
    parse: &dyn Fn(&str, usize, &str) -> Result<Node, String>,
) -> Result<Sorted, ManifestError> {
    let mut out = Sorted::default();
    for (path, content) in files {
        if !holds_manifests(path, content) {
            continue;
        }
        for (index, doc) in split_manifests(content).into_iter().enumerate() {
            let err = |message: String| ManifestError {
                file: path.clone(),
                message,
            };
            let node = parse(path, index, doc).map_err(err)?;
            let head = decode_head(&node).map_err(err)?;
            let Some(hook_types) = head.annotations.get(HOOK_ANNOTATION).cloned() else {
                out.manifests.push(Manifest {
                    source: path.clone(),
                    content: doc.to_string(),
                    head,
                });
                continue;
            };
            let mut events = Vec::new();
            let mut unknown = false;
            for ev in split_list(&hook_types) {
                match HookEvent::parse(&ev) {
                    Some(e) => events.push(e),
                    None => {
                        unknown = true;
                        break;
                    }
                }
            }
            if unknown {
                out.infos
                    .push(format!("info: skipping unknown hook: {hook_types:?}"));
                continue;
            }
            let weight = head
                .annotations
                .get(HOOK_WEIGHT_ANNOTATION)
                .and_then(|w| w.parse::<i64>().ok())
                .unwrap_or(0);
            let delete_policies = head
                .annotations
                .get(HOOK_DELETE_ANNOTATION)
                .map(|v| split_list(v))
                .unwrap_or_default();
            out.hooks.push(RenderedHook {
                source: path.clone(),
                content: doc.to_string(),
                events,
                weight,
                delete_policies,
                head,
            });
        }
    }
    sort_by_install_order(&mut out.manifests, |m| &m.head.kind);
    sort_by_install_order(&mut out.hooks, |h| &h.head.kind);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Node, String> {
        serde_yaml::from_str::<Node>(s).map_err(|e| e.to_string())
    }

    #[test]
    fn hooks_split_and_unknown_dropped() {
        let mut files = BTreeMap::new();
        files.insert(
            "c/templates/a.yaml".to_string(),
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: post-install, PRE-upgrade\n    helm.sh/hook-weight: \"-5\"\n---\nkind: X\nmetadata:\n  annotations:\n    helm.sh/hook: crd-install\n".to_string(),
        );
        files.insert(
            "c/templates/b.yaml".to_string(),
            "kind: Deployment\n---\nkind: Namespace\n---\n# only a comment\n".to_string(),
        );
        files.insert("c/templates/_p.tpl".to_string(), "kind: Secret".to_string());
        let s = sort_manifests(&files, &parse).unwrap();
        let kinds: Vec<_> = s.manifests.iter().map(|m| m.head.kind.as_str()).collect();
        assert_eq!(kinds, ["Namespace", "Deployment", ""]);
        assert_eq!(s.hooks.len(), 1);
        assert_eq!(
            s.hooks[0].events,
            [HookEvent::PostInstall, HookEvent::PreUpgrade]
        );
        assert_eq!(s.hooks[0].weight, -5);
        assert_eq!(s.infos.len(), 1);
    }

    #[test]
    fn scalar_document_is_an_error() {
        let mut files = BTreeMap::new();
        files.insert("c/templates/a.yaml".to_string(), "just text".to_string());
        let e = sort_manifests(&files, &parse).unwrap_err();
        assert_eq!(
            e.to_string(),
            "YAML parse error on c/templates/a.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type releaseutil.SimpleHead"
        );
    }
}
