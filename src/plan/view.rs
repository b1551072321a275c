//! Plans printed for people (`-o table`, `-o html`) and tools (`-o json|yaml`).
use super::model::*;
use std::fmt::Write;

pub use super::html::html;

const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

struct Paint(bool);

impl Paint {
    fn c(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    }
}

pub(super) fn revisions(r: &ReleasePlan) -> String {
    match (&r.from, r.action) {
        (_, ReleaseAction::Noop) => format!("revision {}", r.to.revision),
        (None, _) => format!("-> revision {}", r.to.revision),
        (Some(f), ReleaseAction::Uninstall) => format!("revision {} ->", f.revision),
        (Some(f), _) => format!("revision {} -> {}", f.revision, r.to.revision),
    }
}

pub(super) fn counts_text(c: &Counts) -> String {
    let mut parts = Vec::new();
    for (n, what) in [
        (c.create, "to create"),
        (c.update, "to update"),
        (c.adopt, "to adopt"),
        (c.delete, "to delete"),
        (c.keep, "kept"),
        (c.skip, "skipped"),
        (c.unchanged, "unchanged"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if parts.is_empty() {
        "no objects".into()
    } else {
        parts.join(", ")
    }
}

/// `Plan <id> for cluster <kind>:<id> (<version>), store <url>`.
pub(super) fn title(plan: &Plan) -> String {
    let short = plan.id.strip_prefix("sha256:").unwrap_or(&plan.id);
    format!(
        "Plan {} for cluster {}:{} ({}), store {}",
        &short[..short.len().min(12)],
        plan.cluster.kind,
        &plan.cluster.id[..plan.cluster.id.len().min(12)],
        plan.cluster.server_version,
        plan.store
    )
}

/// The chart a release's headline names: the one it goes to, or the one
/// an uninstall removes.
pub(super) fn chart(r: &ReleasePlan) -> String {
    if r.action == ReleaseAction::Uninstall {
        r.from.as_ref().map_or(String::new(), |f| f.chart.clone())
    } else {
        r.to.chart.clone()
    }
}

/// What follows a release's objects: its wait and what happens on
/// failure (of the release, and, in an atomic plan, of any release).
pub(super) fn followups(plan: &Plan, r: &ReleasePlan) -> Vec<String> {
    let mut out = Vec::new();
    if r.action == ReleaseAction::Noop || r.action == ReleaseAction::Uninstall {
        out.extend(rollback_point(plan, r));
        return out;
    }
    let waits = r.objects.iter().filter(|o| o.wait.is_some()).count();
    if waits > 0 {
        out.push(format!(
            "wait: {waits} object(s), {} rules, deadline {}",
            r.options.wait_strategy.as_str(),
            super::input::format_duration(r.options.timeout)
        ));
    }
    if let Some(rb) = r.recovery.rollback_revision {
        out.push(format!("on failure: roll back to revision {rb}"));
    } else if r.options.atomic && r.action == ReleaseAction::Install {
        out.push("on failure: uninstall".into());
    }
    out.extend(rollback_point(plan, r));
    out
}

/// Where an atomic plan returns a release when any release fails: its
/// rollback revision, or an uninstall for an install; `None` when the plan
/// is not atomic or the release is not changed (a noop) or not brought
/// back (a planned uninstall).
pub(super) fn rollback_point(plan: &Plan, r: &ReleasePlan) -> Option<String> {
    if plan.failure_policy.cross_release != super::planner::ATOMIC_PLAN {
        return None;
    }
    match r.action {
        ReleaseAction::Noop => None,
        ReleaseAction::Uninstall => Some("atomic plan: an uninstall is not undone".into()),
        _ => Some(match (&r.from, r.recovery.rollback_revision) {
            (Some(_), Some(rb)) => {
                format!("atomic plan: any failure rolls it back to revision {rb}")
            }
            _ => "atomic plan: any failure uninstalls it".into(),
        }),
    }
}

/// The plan's summary line, and a line saying it cannot be applied when a
/// release is blocked.
pub(super) fn summary(plan: &Plan) -> (String, Option<String>) {
    let mut per = std::collections::BTreeMap::new();
    let mut total = Counts::default();
    for r in &plan.releases {
        *per.entry(r.action.as_str()).or_insert(0usize) += 1;
        let c = r.counts();
        total.create += c.create;
        total.update += c.update + c.adopt;
        total.delete += c.delete;
        total.unchanged += c.unchanged;
    }
    let mut parts = Vec::new();
    for a in ["install", "upgrade", "recover", "uninstall", "noop"] {
        if let Some(n) = per.get(a) {
            parts.push(format!("{n} {a}"));
        }
    }
    let line =
        format!(
        "Plan: {} release(s): {}; objects: {} to create, {} to update, {} to delete, {} unchanged.",
        plan.releases.len(),
        if parts.is_empty() { "none".to_string() } else { parts.join(", ") },
        total.create,
        total.update,
        total.delete,
        total.unchanged
    );
    let blocked = plan.blocked().count();
    let blocked =
        (blocked > 0).then(|| format!("{blocked} release(s) blocked: the plan cannot be applied."));
    (line, blocked)
}

/// The plan for people: a headline per release (release, namespace,
/// action, revisions, counts), `+ ~ -` object lines with their reasons,
/// unified diffs, and a summary. `color` adds ANSI colours.
pub fn human(plan: &Plan, color: bool) -> String {
    let p = Paint(color);
    let mut out = String::new();
    let _ = writeln!(out, "{}", title(plan));
    for r in &plan.releases {
        out.push('\n');
        let action = r.action.as_str();
        let painted = match r.action {
            ReleaseAction::Install => p.c(GREEN, action),
            ReleaseAction::Upgrade => p.c(YELLOW, action),
            ReleaseAction::Uninstall => p.c(RED, action),
            ReleaseAction::Recover => p.c(RED, action),
            ReleaseAction::Noop => action.to_string(),
        };
        let chart = chart(r);
        let _ = writeln!(
            out,
            "{} {} {} {} ({}) [{}]",
            p.c(BOLD, &r.name),
            r.namespace,
            painted,
            revisions(r),
            chart,
            counts_text(&r.counts())
        );
        let _ = writeln!(out, "  {}", r.reason);
        if !r.needs.is_empty() {
            let needs: Vec<String> = r.needs.iter().map(|n| n.to_string()).collect();
            let _ = writeln!(out, "  after: {}", needs.join(", "));
        }
        if let Some(b) = &r.blocked {
            for line in b.lines() {
                let _ = writeln!(out, "  {} {}", p.c(RED, "blocked:"), line);
            }
        }
        for w in &r.warnings {
            let _ = writeln!(out, "  {} {}", p.c(YELLOW, "warning:"), w);
        }
        for w in &r.preflight {
            let _ = writeln!(out, "  {} {}", p.c(YELLOW, "preflight:"), w.message);
        }
        for h in r.hooks.iter().filter(|h| h.phase.starts_with("pre-")) {
            let _ = writeln!(
                out,
                "  {} hook {} {} (weight {})",
                p.c(CYAN, "*"),
                h.phase,
                h.key,
                h.weight
            );
        }
        for o in &r.objects {
            let (mark, code) = match o.action {
                ObjectAction::Create => ("+", GREEN),
                ObjectAction::Update | ObjectAction::Adopt => ("~", YELLOW),
                ObjectAction::Delete => ("-", RED),
                ObjectAction::Keep => ("=", CYAN),
                ObjectAction::Skip => ("!", RED),
                ObjectAction::Unchanged => continue,
            };
            let _ = writeln!(
                out,
                "  {} {} {}: {}",
                p.c(code, mark),
                o.action.as_str(),
                o.key,
                o.reason
            );
            if !o.diff.is_empty() {
                for line in o.diff.lines() {
                    let painted = if line.starts_with("+++") || line.starts_with("---") {
                        p.c(BOLD, line)
                    } else if line.starts_with('+') {
                        p.c(GREEN, line)
                    } else if line.starts_with('-') {
                        p.c(RED, line)
                    } else if line.starts_with("@@") {
                        p.c(CYAN, line)
                    } else {
                        line.to_string()
                    };
                    let _ = writeln!(out, "      {painted}");
                }
            }
        }
        for h in r.hooks.iter().filter(|h| h.phase.starts_with("post-")) {
            let _ = writeln!(
                out,
                "  {} hook {} {} (weight {})",
                p.c(CYAN, "*"),
                h.phase,
                h.key,
                h.weight
            );
        }
        for line in followups(plan, r) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let (line, blocked) = summary(plan);
    let _ = writeln!(out, "\n{line}");
    if plan.failure_policy.cross_release == super::planner::ATOMIC_PLAN {
        let _ = writeln!(
            out,
            "Atomic plan: if any release fails, every release the apply changed returns to its rollback point, newest first."
        );
    }
    if let Some(b) = blocked {
        let _ = writeln!(out, "{b}");
    }
    out
}

/// The plan as indented JSON, keys sorted, with a final newline.
pub fn json(plan: &Plan) -> String {
    let v = serde_json::to_value(plan).unwrap_or_default();
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// The plan as YAML.
pub fn yaml(plan: &Plan) -> String {
    let v = serde_json::to_value(plan).unwrap_or_default();
    serde_yaml::to_string(&v).unwrap_or_default()
}
