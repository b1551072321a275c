//! The plan as one self-contained HTML page (`-o html`): the releases as a
//! graph in upgrade order, coloured by action, then each release's object
//! changes with their diffs.
//!
//! The page loads nothing: the styles are inline, the graph is inline SVG,
//! there is no script and no URL other than links within the page. The
//! output depends on the plan only, so it snapshots like the other views.
use super::input::ReleaseRef;
use super::model::*;
use super::view::{chart, counts_text, followups, revisions, summary, title};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Left edge and width of a node in the graph.
const NODE_X: usize = 16;
const NODE_W: usize = 340;
/// A node's height, and the distance between two nodes' tops.
const NODE_H: usize = 40;
const ROW: usize = 54;
/// The margin above the first node.
const TOP: usize = 16;
/// How far an arc between two adjacent nodes reaches right of the nodes,
/// what each further row of span adds, and the most it reaches.
const ARC_BASE: usize = 24;
const ARC_STEP: usize = 18;
const ARC_MAX: usize = 420;
/// How many characters of a release's name fit in its node, and of the
/// line below it.
const NAME_CHARS: usize = 28;
const DETAIL_CHARS: usize = 46;

/// The legend's order.
const ACTIONS: [ReleaseAction; 5] = [
    ReleaseAction::Install,
    ReleaseAction::Upgrade,
    ReleaseAction::Recover,
    ReleaseAction::Uninstall,
    ReleaseAction::Noop,
];

const CSS: &str = "\
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif; color: #1d2125; background: #ffffff; margin: 0 auto; padding: 16px 24px 48px; max-width: 1100px; }
h1 { font-size: 20px; margin: 8px 0 4px; word-break: break-all; }
h2 { font-size: 16px; margin: 0 0 6px; }
p { margin: 4px 0; }
a { color: #0b57a4; }
code, pre { font: 12.5px/1.4 ui-monospace, \"DejaVu Sans Mono\", Menlo, Consolas, monospace; }
.summary { font-weight: 600; }
.blocked { color: #b3261e; font-weight: 600; white-space: pre-wrap; }
.warning { color: #8a4b00; font-weight: 600; }
.graph { margin: 16px 0 24px; }
.graph svg { display: block; max-width: 100%; height: auto; }
.node rect { stroke-width: 1.5; }
.node .n { font: 700 13px system-ui, sans-serif; fill: #1d2125; }
.node .name { font: 700 13px system-ui, sans-serif; fill: #1d2125; }
.node .detail { font: 11px system-ui, sans-serif; fill: #3c4349; }
.node .act { font: 600 11px system-ui, sans-serif; fill: #1d2125; text-anchor: end; }
.node.blocked rect { stroke: #b3261e; stroke-width: 3; stroke-dasharray: 6 3; }
.edge path { fill: none; stroke: #5f6b76; stroke-width: 1.5; }
.edge:hover path { stroke: #0b57a4; stroke-width: 2.5; }
#arrow path { fill: #5f6b76; }
.legend { list-style: none; padding: 0; margin: 8px 0 0; display: flex; flex-wrap: wrap; gap: 16px; }
.sw { display: inline-block; width: 14px; height: 14px; border: 1.5px solid; border-radius: 3px; vertical-align: -3px; margin-right: 6px; }
.node.install rect, .sw.install, .badge.install { fill: #c8e6c9; background: #c8e6c9; stroke: #2e7d32; border-color: #2e7d32; }
.node.upgrade rect, .sw.upgrade, .badge.upgrade { fill: #ffe0b2; background: #ffe0b2; stroke: #e65100; border-color: #e65100; }
.node.recover rect, .sw.recover, .badge.recover { fill: #e1bee7; background: #e1bee7; stroke: #6a1b9a; border-color: #6a1b9a; }
.node.uninstall rect, .sw.uninstall, .badge.uninstall { fill: #ffcdd2; background: #ffcdd2; stroke: #c62828; border-color: #c62828; }
.node.noop rect, .sw.noop, .badge.noop { fill: #eceff1; background: #eceff1; stroke: #90a4ae; border-color: #90a4ae; }
.badge { display: inline-block; font-size: 12px; font-weight: 600; padding: 0 8px; border: 1.5px solid; border-radius: 10px; vertical-align: 1px; }
.release { border-top: 1px solid #d0d7de; padding: 14px 0 10px; }
.release .n { color: #5f6b76; margin-right: 4px; }
.release .ns { color: #5f6b76; font-weight: 400; }
.meta { color: #3c4349; }
.why { color: #3c4349; }
ul.objects, ul.hooks, ul.followups { list-style: none; padding-left: 12px; margin: 6px 0; }
.obj { margin: 3px 0; }
.mark { display: inline-block; width: 1.2em; font-weight: 700; text-align: center; }
.obj.create .mark { color: #2e7d32; } .obj.update .mark, .obj.adopt .mark { color: #e65100; }
.obj.delete .mark, .obj.skip .mark { color: #c62828; } .obj.keep .mark { color: #00838f; }
.act { font-weight: 600; }
details { margin: 2px 0 6px 1.2em; }
summary { cursor: pointer; color: #3c4349; }
pre.diff { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; padding: 6px 8px; margin: 4px 0; overflow-x: auto; }
.diff .add { color: #116329; background: #dafbe1; }
.diff .del { color: #82071e; background: #ffebe9; }
.diff .hunk { color: #0550ae; }
.diff .head { font-weight: 700; }
footer { margin-top: 24px; color: #5f6b76; font-size: 12px; }
";

/// Escapes text for HTML text and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to `n` characters, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The vertical centre of the node at `i` (0-based).
fn centre(i: usize) -> usize {
    TOP + i * ROW + NODE_H / 2
}

/// How far right of the nodes the arc from node `i` to node `j` reaches.
fn bulge(i: usize, j: usize) -> usize {
    (ARC_BASE + ARC_STEP * i.abs_diff(j)).min(ARC_MAX)
}

/// The plan as one self-contained HTML page: a header with the plan's
/// target and summary; an SVG graph with one node per release in upgrade
/// order (each node carries `data-order="N"`, 1-based, and
/// `data-release="NAMESPACE/NAME"`), filled by its [`ReleaseAction`], and
/// an arrow per `needs` edge whose tooltip is the edge's reason; a legend;
/// then per release its headline, reason, dependencies, hooks and object
/// changes with their unified diffs. Every text from the plan is
/// HTML-escaped. The page loads nothing (no script, fonts or external
/// URLs), and the same plan gives the same bytes.
///
/// Pass a redacted plan ([`Plan::redact`]) unless secrets may be shown, as
/// for the other views.
///
/// ```
/// use rudder::cluster::sim::SimCluster;
/// use rudder::plan::{planner::Planner, view, DesiredRelease};
/// use rudder::release::store::memory::MemoryStore;
///
/// let mut files = std::collections::BTreeMap::new();
/// files.insert(
///     "cm.yaml".to_string(),
///     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  a: \"1\"\n".to_string(),
/// );
/// let chart = rudder::chart::chart_from_manifests("demo", "default", &files).unwrap();
/// let (store, cluster) = (MemoryStore::new(), SimCluster::in_memory());
/// let plan = Planner::new(&store, "memory:", &cluster)
///     .plan(&[DesiredRelease::new("demo", "default", chart)])
///     .unwrap();
/// let page = view::html(&plan.redact());
/// assert!(page.starts_with("<!DOCTYPE html>"));
/// assert!(page.contains(r#"data-order="1" data-release="default/demo""#));
/// assert!(!page.contains("http"));
/// ```
pub fn html(plan: &Plan) -> String {
    let mut o = String::with_capacity(16 * 1024);
    let head = title(plan);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(o, "<title>{}</title>", esc(&head));
    o.push_str("<style>\n");
    o.push_str(CSS);
    o.push_str("</style>\n</head>\n<body>\n<header>\n");
    let _ = writeln!(o, "<h1>{}</h1>", esc(&head));
    let (line, blocked) = summary(plan);
    let _ = writeln!(o, "<p class=\"summary\">{}</p>", esc(&line));
    if let Some(b) = blocked {
        let _ = writeln!(o, "<p class=\"blocked\">{}</p>", esc(&b));
    }
    o.push_str("</header>\n");
    let index: BTreeMap<ReleaseRef, usize> = plan
        .releases
        .iter()
        .enumerate()
        .rev()
        .map(|(i, r)| (r.reference(), i))
        .collect();
    graph(&mut o, plan, &index);
    for (i, r) in plan.releases.iter().enumerate() {
        release(&mut o, plan, &index, i, r);
    }
    let _ = writeln!(
        o,
        "<footer>{} {} · {}</footer>",
        esc(&plan.tool.name),
        esc(&plan.tool.version),
        esc(&plan.api_version)
    );
    o.push_str("</body>\n</html>\n");
    o
}

/// The graph section: the SVG and its legend.
fn graph(o: &mut String, plan: &Plan, index: &BTreeMap<ReleaseRef, usize>) {
    o.push_str("<section class=\"graph\">\n<h2>Upgrade order</h2>\n");
    let n = plan.releases.len();
    if n == 0 {
        o.push_str("<p>The plan has no releases.</p>\n");
    } else {
        let right = NODE_X + NODE_W;
        let edges: Vec<(usize, usize, &ReleaseEdge)> = plan
            .release_edges
            .iter()
            .filter_map(|e| {
                let (i, j) = (*index.get(&e.from)?, *index.get(&e.to)?);
                (i != j).then_some((i, j, e))
            })
            .collect();
        // A cubic whose two control points sit `b` right of the nodes
        // reaches 3b/4 right of them.
        let reach = edges
            .iter()
            .map(|(i, j, _)| bulge(*i, *j) * 3 / 4)
            .max()
            .unwrap_or(0);
        let width = right + reach.max(24) + 16;
        let height = TOP * 2 + (n - 1) * ROW + NODE_H;
        let _ = writeln!(
            o,
            "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{n} release(s) in upgrade order\">"
        );
        o.push_str("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\"/></marker></defs>\n");
        for (i, j, e) in &edges {
            let (y1, y2, b) = (centre(*i), centre(*j), bulge(*i, *j));
            let why = if e.reason.is_empty() {
                format!("{} is ready before {} starts", e.from, e.to)
            } else {
                format!("{} before {}: {}", e.from, e.to, e.reason)
            };
            let _ = writeln!(
                o,
                "<g class=\"edge\" data-from=\"{}\" data-to=\"{}\"><title>{}</title><path d=\"M{right},{y1} C{},{y1} {},{y2} {},{y2}\" marker-end=\"url(#arrow)\"/></g>",
                esc(&e.from.to_string()),
                esc(&e.to.to_string()),
                esc(&why),
                right + b,
                right + b,
                right + 3,
            );
        }
        for (i, r) in plan.releases.iter().enumerate() {
            let y = TOP + i * ROW;
            let action = r.action.as_str();
            let blocked = if r.blocked.is_some() { " blocked" } else { "" };
            let reference = r.reference().to_string();
            let mut tip = format!("{}. {} {}: {}", i + 1, reference, action, r.reason);
            if let Some(b) = &r.blocked {
                tip.push_str("\nblocked: ");
                tip.push_str(b);
            }
            let detail = if r.blocked.is_some() {
                format!("{} · blocked", r.namespace)
            } else {
                format!("{} · {}", r.namespace, revisions(r))
            };
            let _ = writeln!(
                o,
                "<a href=\"#release-{}\"><g class=\"node {action}{blocked}\" data-order=\"{}\" data-release=\"{}\" data-action=\"{action}\"><title>{}</title>\
<rect x=\"{NODE_X}\" y=\"{y}\" width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"6\"/>\
<text class=\"n\" x=\"{}\" y=\"{}\">{}</text>\
<text class=\"name\" x=\"{}\" y=\"{}\">{}</text>\
<text class=\"detail\" x=\"{}\" y=\"{}\">{}</text>\
<text class=\"act\" x=\"{}\" y=\"{}\">{action}</text></g></a>",
                i + 1,
                i + 1,
                esc(&reference),
                esc(&tip),
                NODE_X + 10,
                y + 25,
                i + 1,
                NODE_X + 36,
                y + 17,
                esc(&clip(&r.name, NAME_CHARS)),
                NODE_X + 36,
                y + 32,
                esc(&clip(&detail, DETAIL_CHARS)),
                NODE_X + NODE_W - 10,
                y + 17,
            );
        }
        o.push_str("</svg>\n");
    }
    o.push_str("<ul class=\"legend\">\n");
    for a in ACTIONS {
        let count = plan.releases.iter().filter(|r| r.action == a).count();
        let _ = writeln!(
            o,
            "<li><span class=\"sw {0}\"></span>{0}: {count}</li>",
            a.as_str()
        );
    }
    o.push_str("</ul>\n</section>\n");
}

/// The `+ ~ -` mark of an object action, as in the table view.
fn mark(a: ObjectAction) -> &'static str {
    match a {
        ObjectAction::Create => "+",
        ObjectAction::Update | ObjectAction::Adopt => "~",
        ObjectAction::Delete => "-",
        ObjectAction::Keep => "=",
        ObjectAction::Skip => "!",
        ObjectAction::Unchanged => " ",
    }
}

/// One release's section.
fn release(
    o: &mut String,
    plan: &Plan,
    index: &BTreeMap<ReleaseRef, usize>,
    i: usize,
    r: &ReleasePlan,
) {
    let action = r.action.as_str();
    let _ = writeln!(
        o,
        "<section class=\"release {action}\" id=\"release-{}\">",
        i + 1
    );
    let _ = writeln!(
        o,
        "<h2><span class=\"n\">{}.</span> {} <span class=\"ns\">{}</span> <span class=\"badge {action}\">{action}</span></h2>",
        i + 1,
        esc(&r.name),
        esc(&r.namespace)
    );
    let _ = writeln!(
        o,
        "<p class=\"meta\">{} · {} · {}</p>",
        esc(&revisions(r)),
        esc(&chart(r)),
        esc(&counts_text(&r.counts()))
    );
    let _ = writeln!(o, "<p class=\"reason\">{}</p>", esc(&r.reason));
    for w in &r.warnings {
        let _ = writeln!(o, "<p class=\"warning\">warning: {}</p>", esc(w));
    }
    for w in &r.preflight {
        let _ = writeln!(
            o,
            "<p class=\"warning preflight\">preflight: {}</p>",
            esc(&w.message)
        );
    }
    if !r.needs.is_empty() {
        let me = r.reference();
        let needs: Vec<String> = r
            .needs
            .iter()
            .map(|n| {
                let name = esc(&n.to_string());
                let link = match index.get(n) {
                    Some(k) => format!("<a href=\"#release-{}\">{name}</a>", k + 1),
                    None => name,
                };
                let reason = plan
                    .release_edges
                    .iter()
                    .find(|e| &e.from == n && e.to == me && !e.reason.is_empty())
                    .map(|e| format!(" <span class=\"why\">({})</span>", esc(&e.reason)))
                    .unwrap_or_default();
                format!("{link}{reason}")
            })
            .collect();
        let _ = writeln!(o, "<p class=\"after\">after: {}</p>", needs.join(", "));
    }
    if let Some(b) = &r.blocked {
        let _ = writeln!(o, "<p class=\"blocked\">blocked: {}</p>", esc(b));
    }
    let hooks = |o: &mut String, pre: bool| {
        let mut hs = r
            .hooks
            .iter()
            .filter(|h| h.phase.starts_with(if pre { "pre-" } else { "post-" }))
            .peekable();
        if hs.peek().is_none() {
            return;
        }
        o.push_str("<ul class=\"hooks\">\n");
        for h in hs {
            let _ = writeln!(
                o,
                "<li><span class=\"mark\">*</span> hook {} <code>{}</code> (weight {})</li>",
                esc(&h.phase),
                esc(&h.key.to_string()),
                h.weight
            );
        }
        o.push_str("</ul>\n");
    };
    hooks(o, true);
    let changes: Vec<&ObjectChange> = r
        .objects
        .iter()
        .filter(|c| c.action != ObjectAction::Unchanged)
        .collect();
    if !changes.is_empty() {
        o.push_str("<ul class=\"objects\">\n");
        for c in changes {
            object(o, c);
        }
        o.push_str("</ul>\n");
    }
    let unchanged: Vec<&ObjectChange> = r
        .objects
        .iter()
        .filter(|c| c.action == ObjectAction::Unchanged)
        .collect();
    if !unchanged.is_empty() {
        let _ = writeln!(
            o,
            "<details class=\"unchanged\"><summary>{} unchanged</summary><ul>",
            unchanged.len()
        );
        for c in unchanged {
            let _ = writeln!(o, "<li><code>{}</code></li>", esc(&c.key.to_string()));
        }
        o.push_str("</ul></details>\n");
    }
    hooks(o, false);
    let follow = followups(plan, r);
    if !follow.is_empty() {
        o.push_str("<ul class=\"followups\">\n");
        for f in follow {
            let _ = writeln!(o, "<li>{}</li>", esc(&f));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}

/// One changed object and its diff. Updates show their diff open; whole
/// objects created or deleted are folded.
fn object(o: &mut String, c: &ObjectChange) {
    let action = c.action.as_str();
    let _ = write!(
        o,
        "<li class=\"obj {action}\"><span class=\"mark\">{}</span> <span class=\"act\">{action}</span> <code>{}</code> <span class=\"why\">{}</span>",
        mark(c.action),
        esc(&c.key.to_string()),
        esc(&c.reason)
    );
    if let Some(w) = &c.wait {
        let _ = write!(
            o,
            " <span class=\"why\">(wait, {}: {})</span>",
            w.strategy.as_str(),
            esc(&w.rule)
        );
    }
    if !c.diff.is_empty() {
        let body = |l: &str| !l.starts_with("+++") && !l.starts_with("---");
        let adds = c
            .diff
            .lines()
            .filter(|l| l.starts_with('+') && body(l))
            .count();
        let dels = c
            .diff
            .lines()
            .filter(|l| l.starts_with('-') && body(l))
            .count();
        let open = matches!(c.action, ObjectAction::Update | ObjectAction::Adopt);
        let _ = write!(
            o,
            "\n<details{}><summary>diff: +{adds} −{dels}</summary><pre class=\"diff\">",
            if open { " open" } else { "" }
        );
        for line in c.diff.lines() {
            let class = if line.starts_with("+++") || line.starts_with("---") {
                "head"
            } else if line.starts_with('+') {
                "add"
            } else if line.starts_with('-') {
                "del"
            } else if line.starts_with("@@") {
                "hunk"
            } else {
                "ctx"
            };
            let _ = writeln!(o, "<span class=\"{class}\">{}</span>", esc(line));
        }
        o.push_str("</pre></details>");
    }
    o.push_str("</li>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterIdentity;
    use crate::plan::input::{ReleaseOptions, WaitStrategy};

    fn key(kind: &str, ns: &str, name: &str) -> PlanKey {
        PlanKey {
            group: if kind == "Deployment" { "apps" } else { "" }.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    fn change(k: PlanKey, action: ObjectAction, reason: &str, diff: &str) -> ObjectChange {
        ObjectChange {
            key: k,
            action,
            stage: if action == ObjectAction::Delete {
                Stage::Prune
            } else {
                Stage::Main
            },
            reason: reason.into(),
            changed: Vec::new(),
            diff: diff.into(),
            wait: None,
            desired: None,
            planned_crd: None,
        }
    }

    fn rref(ns: &str, name: &str) -> ReleaseRef {
        ReleaseRef {
            namespace: ns.into(),
            name: name.into(),
        }
    }

    fn rel(
        name: &str,
        action: ReleaseAction,
        from: Option<u64>,
        to: u64,
        objects: Vec<ObjectChange>,
    ) -> ReleasePlan {
        ReleasePlan {
            name: name.into(),
            namespace: "kube-system".into(),
            action,
            reason: format!("{name}: {}", action.as_str()),
            from: from.map(|revision| FromRevision {
                revision,
                status: "deployed".into(),
                chart: format!("{name}-0.1.0"),
                app_version: String::new(),
                manifest_digest: "sha256:aa".into(),
                values_digest: "sha256:bb".into(),
            }),
            to: ToRevision {
                revision: to,
                chart: format!("{name}-0.2.0"),
                app_version: String::new(),
                manifest_digest: "sha256:cc".into(),
                values_digest: "sha256:dd".into(),
            },
            needs: Vec::new(),
            options: ReleaseOptions::default(),
            blocked: None,
            warnings: Vec::new(),
            preflight: Vec::new(),
            objects,
            hooks: Vec::new(),
            recovery: Recovery {
                rollback_revision: from,
                ..Recovery::default()
            },
            preconditions: Preconditions::default(),
            record: None,
            record_digest: String::new(),
        }
    }

    /// Five releases, one per action, two `needs` edges (one spanning
    /// two rows), diffs, a wait rule, a hook and an unchanged object.
    fn plan() -> Plan {
        let mut create = change(
            key("ConfigMap", "kube-system", "settings"),
            ObjectAction::Create,
            "not in the cluster",
            "--- live\n+++ desired\n@@ -0,0 +1,3 @@\n+kind: ConfigMap\n+data:\n+  a: \"1\"\n",
        );
        create.wait = Some(WaitRule {
            strategy: WaitStrategy::Legacy,
            rule: "ConfigMap: exists".into(),
        });
        let base = rel("base", ReleaseAction::Install, None, 1, vec![create]);
        let mut api = rel(
            "api",
            ReleaseAction::Upgrade,
            Some(3),
            4,
            vec![
                change(
                    key("Deployment", "kube-system", "api"),
                    ObjectAction::Update,
                    "/spec/replicas differs",
                    "--- live\n+++ desired\n@@ -1,2 +1,2 @@\n spec:\n-  replicas: 1\n+  replicas: 2\n",
                ),
                change(
                    key("Service", "kube-system", "api"),
                    ObjectAction::Unchanged,
                    "no managed field differs",
                    "",
                ),
            ],
        );
        api.needs = vec![rref("kube-system", "base")];
        api.hooks = vec![HookPlan {
            key: key("Job", "kube-system", "migrate"),
            phase: "pre-upgrade".into(),
            weight: -5,
            delete_policies: vec!["before-hook-creation".into()],
            desired: None,
        }];
        let stuck = rel("stuck", ReleaseAction::Recover, Some(2), 3, Vec::new());
        let mut old = rel(
            "old",
            ReleaseAction::Uninstall,
            Some(7),
            7,
            vec![change(
                key("Secret", "kube-system", "old-token"),
                ObjectAction::Delete,
                "the release is removed",
                "",
            )],
        );
        old.needs = vec![rref("kube-system", "base")];
        let mut same = rel("same", ReleaseAction::Noop, Some(5), 5, Vec::new());
        same.warnings = vec![
            "values given (replicas) are ignored: no template of chart same-0.2.0 reads values"
                .into(),
        ];
        Plan {
            api_version: PLAN_API_VERSION.into(),
            id: "sha256:0123456789abcdef0123".into(),
            tool: Tool {
                name: "rudder".into(),
                version: "0.1.0".into(),
            },
            field_manager: "rudder".into(),
            cluster: ClusterIdentity {
                kind: "sim".into(),
                id: "c0ffee00-0000-4000-8000-000000000000".into(),
                server_version: "v1.32.0".into(),
            },
            store: "memory:".into(),
            failure_policy: FailurePolicy {
                per_release: "rollback".into(),
                cross_release: "stop".into(),
            },
            release_edges: vec![
                ReleaseEdge {
                    from: rref("kube-system", "base"),
                    to: rref("kube-system", "api"),
                    kind: "ready-before".into(),
                    reason: "the API server needs the base config".into(),
                },
                ReleaseEdge {
                    from: rref("kube-system", "base"),
                    to: rref("kube-system", "old"),
                    kind: "ready-before".into(),
                    reason: String::new(),
                },
            ],
            releases: vec![base, api, stuck, old, same],
            redacted: true,
        }
    }

    /// The `(order, release)` pairs of the graph's nodes, as written.
    fn nodes(page: &str) -> Vec<(usize, String)> {
        let re =
            regex::Regex::new(r#"<g class="node [^"]*" data-order="(\d+)" data-release="([^"]*)""#)
                .unwrap();
        re.captures_iter(page)
            .map(|c| (c[1].parse().unwrap(), c[2].to_string()))
            .collect()
    }

    #[test]
    fn page_snapshot() {
        insta::assert_snapshot!(html(&plan()));
    }

    #[test]
    fn one_node_per_release_in_order_and_one_arrow_per_edge() {
        let p = plan();
        let page = html(&p);
        let want: Vec<(usize, String)> = p
            .releases
            .iter()
            .enumerate()
            .map(|(i, r)| (i + 1, r.reference().to_string()))
            .collect();
        assert_eq!(nodes(&page), want);
        assert_eq!(page.matches("<g class=\"edge\"").count(), 2);
        assert_eq!(page.matches("<section class=\"release ").count(), 5);
        for a in ACTIONS {
            assert_eq!(
                page.matches(&format!("<g class=\"node {}\"", a.as_str()))
                    .count(),
                1,
                "{a:?}"
            );
        }
        assert_eq!(html(&p), page, "not deterministic");
    }

    #[test]
    fn self_contained() {
        let page = html(&plan());
        for bad in [
            "http:", "https:", "<script", "<link", "src=", "@import", "//",
        ] {
            assert!(!page.contains(bad), "page contains {bad:?}");
        }
        let href = regex::Regex::new(r#"href="([^"]*)""#).unwrap();
        for c in href.captures_iter(&page) {
            assert!(c[1].starts_with('#'), "external href {:?}", &c[1]);
        }
    }

    #[test]
    fn plan_text_is_escaped() {
        let mut p = plan();
        let evil = "<script>alert(\"x\")</script>&'";
        p.releases[2].name = evil.into();
        p.releases[2].reason = evil.into();
        p.releases[0].objects[0].diff = format!("--- live\n+++ desired\n+{evil}\n-{evil}\n");
        p.releases[0].objects[0].key.name = evil.into();
        p.releases[1].blocked = Some(evil.into());
        p.release_edges[0].reason = evil.into();
        p.store = evil.into();
        let page = html(&p);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("alert(\"x\")"));
        let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;";
        // The store in the title and h1; the name in the node's attribute,
        // its tooltip (with the reason), the section's heading and reason;
        // the object's key; two diff lines; blocked in the node's tooltip
        // and the section; the edge's tooltip and the "after" reason.
        assert_eq!(page.matches(escaped).count(), 14, "{page}");
        assert!(page.contains(&format!("<span class=\"add\">+{escaped}</span>")));
        assert!(page.contains(&format!("<span class=\"del\">-{escaped}</span>")));
        assert!(page.contains(&format!("data-release=\"kube-system/{escaped}\"")));
        // The blocked release is marked in the graph.
        assert!(page.contains("<g class=\"node upgrade blocked\""));
    }

    #[test]
    fn empty_plan() {
        let mut p = plan();
        p.releases.clear();
        p.release_edges.clear();
        let page = html(&p);
        assert!(page.contains("The plan has no releases."));
        assert!(nodes(&page).is_empty());
        assert!(page.ends_with("</html>\n"));
    }

    #[test]
    fn long_names_are_clipped_in_the_graph_only() {
        let mut p = plan();
        let long = "a-very-long-release-name-that-does-not-fit-in-a-node";
        p.releases[0].name = long.into();
        let page = html(&p);
        assert!(page.contains(&format!(">{}…</text>", &long[..NAME_CHARS - 1])));
        assert!(page.contains(&format!("data-release=\"kube-system/{long}\"")));
        assert!(page.contains(&format!(" {long} <span class=\"ns\">")));
    }
}
