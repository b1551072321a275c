//! lokoctl's feedback lines, from the executor's events.
//!
//! Control-plane components print `Ensuring controlplane component 'X' is
//! up to date... Done.` (or `Controlplane component 'X' is missing,
//! reinstalling... Done.` when the release does not exist); optional
//! components print `Installing component 'X'...` and `Successfully
//! installed component 'X'!`. On a terminal the start of a line is printed
//! when the release starts and the wait's progress is shown after it, on
//! the same line, until the result; off a terminal each line is printed
//! whole once its wait is over, and wait progress goes to a separate
//! writer (stderr in the binary), between whole lines.
use super::control_plane::Kind;
use crate::cluster::{Cluster, ObjectKey};
use crate::exec::{Event, Outcome, Progress, Report};
use crate::plan::{Plan, ReleaseAction};
use serde_json::Value;
use std::io::Write;
use std::sync::Mutex;

/// The header lokoctl prints before the control plane.
pub const HEADER: &str = "Ensuring that cluster controlplane is up to date.";

struct Row {
    rref: String,
    name: String,
    kind: Option<Kind>,
    action: ReleaseAction,
    keys: Vec<ObjectKey>,
}

/// The last wait of a release before it failed.
#[derive(Debug, Clone, Default)]
struct LastWait {
    object: String,
    message: String,
    condition: Option<String>,
    frozen: bool,
}

struct State<'a> {
    out: &'a mut (dyn Write + Send),
    progress: Option<&'a mut (dyn Write + Send)>,
    cursor: usize,
    line_open: bool,
    waits: Vec<LastWait>,
    /// A release whose result line waits for a check after its run.
    held: Option<String>,
}

/// Prints feedback for one plan's run; give it to the executor as its
/// [`Progress`].
pub struct Feedback<'a> {
    rows: Vec<Row>,
    cluster: &'a dyn Cluster,
    tty: bool,
    state: Mutex<State<'a>>,
}

/// Where a line starts and how it ends.
struct Line {
    /// `Ensuring ... up to date... ` (inline result) or a whole first line.
    begin: String,
    inline: bool,
    ok: String,
}

fn line(row: &Row) -> Line {
    let cp = row.kind.is_none_or(|k| k.is_control_plane());
    let n = &row.name;
    match (cp, row.action) {
        (true, ReleaseAction::Install) => Line {
            begin: format!("Controlplane component '{n}' is missing, reinstalling... "),
            inline: true,
            ok: "Done.".into(),
        },
        (true, _) => Line {
            begin: format!("Ensuring controlplane component '{n}' is up to date... "),
            inline: true,
            ok: "Done.".into(),
        },
        (false, ReleaseAction::Install) => Line {
            begin: format!("Installing component '{n}'..."),
            inline: false,
            ok: format!("Successfully installed component '{n}'!"),
        },
        (false, _) => Line {
            begin: format!("Applying component '{n}'..."),
            inline: false,
            ok: format!("Successfully applied component '{n}' configuration!"),
        },
    }
}

/// The condition that explains an object's state: the first one not
/// `True`, else the last.
pub fn condition_of(obj: &Value) -> Option<String> {
    let conds = obj.get("status")?.get("conditions")?.as_array()?;
    let c = conds
        .iter()
        .find(|c| c.get("status").and_then(Value::as_str) != Some("True"))
        .or(conds.last())?;
    let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
    let mut s = format!("{}={}", f("type"), f("status"));
    if !f("reason").is_empty() {
        s.push_str(&format!(" ({})", f("reason")));
    }
    if !f("message").is_empty() {
        s.push_str(&format!(": {}", f("message")));
    }
    Some(s)
}

impl<'a> Feedback<'a> {
    /// Feedback for `plan`, reading conditions from `cluster`.
    pub fn new(
        plan: &Plan,
        cluster: &'a dyn Cluster,
        out: &'a mut (dyn Write + Send),
        progress: Option<&'a mut (dyn Write + Send)>,
        tty: bool,
    ) -> Feedback<'a> {
        let rows: Vec<Row> = plan
            .releases
            .iter()
            .map(|r| Row {
                rref: format!("{}/{}", r.namespace, r.name),
                name: r.name.clone(),
                kind: Kind::from_name(&r.name),
                action: r.action,
                keys: r.objects.iter().map(|o| o.key.object_key()).collect(),
            })
            .collect();
        let n = rows.len();
        Feedback {
            rows,
            cluster,
            tty,
            state: Mutex::new(State {
                out,
                progress,
                cursor: 0,
                line_open: false,
                waits: vec![LastWait::default(); n],
                held: None,
            }),
        }
    }

    fn index(&self, rref: &str) -> Option<usize> {
        self.rows.iter().position(|r| r.rref == rref)
    }

    /// Prints lokoctl's header.
    pub fn header(&self) {
        if let Ok(mut s) = self.state.lock() {
            let _ = writeln!(s.out, "{HEADER}");
            let _ = s.out.flush();
        }
    }

    /// Prints the lines of the up-to-date releases before `upto`.
    fn noops(&self, s: &mut State<'_>, upto: usize) {
        while s.cursor < upto.min(self.rows.len()) {
            let row = &self.rows[s.cursor];
            if row.action == ReleaseAction::Noop {
                let l = line(row);
                if l.inline {
                    let _ = writeln!(s.out, "{}{}", l.begin, l.ok);
                } else {
                    let _ = writeln!(s.out, "{}\n{}", l.begin, l.ok);
                }
            }
            s.cursor += 1;
        }
        let _ = s.out.flush();
    }

    /// Prints the lines of the up-to-date releases after the last one run,
    /// unless the run failed.
    pub fn finish(&self, report: &Report) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.line_open {
            let _ = writeln!(s.out);
            s.line_open = false;
        }
        if report.success() {
            let n = self.rows.len();
            self.noops(&mut s, n);
        }
    }

    /// After a failed run: what failed and why, where it was rolled back
    /// to, what stays upgraded, what was not attempted, how to retry.
    /// Returns the failed component's name.
    pub fn failure_summary(&self, plan: &Plan, report: &Report, retry: &str) -> Option<String> {
        let (i, o) = report.releases.iter().enumerate().find(|(_, o)| {
            !matches!(
                o.outcome,
                Outcome::Installed | Outcome::Upgraded | Outcome::Noop | Outcome::NotAttempted
            )
        })?;
        let row = self.rows.get(i)?;
        let Ok(mut s) = self.state.lock() else {
            return Some(row.name.clone());
        };
        let what = if row.kind.is_none_or(|k| k.is_control_plane()) {
            "controlplane component"
        } else {
            "component"
        };
        let mut text = format!("\nError: {what} '{}' failed.\n", row.name);
        let w = &s.waits[i];
        if !w.object.is_empty() {
            text.push_str(&format!("  Not ready: {}: {}", w.object, w.message));
            if let Some(c) = &w.condition {
                text.push_str(&format!(" (last condition: {c})"));
            }
            text.push('\n');
        }
        if let Some(e) = &o.error {
            text.push_str(&format!("  {e}\n"));
        }
        // Why, from the pods: reasons, their last events and log lines.
        for d in report.diagnoses.iter().filter(|d| d.release == row.rref) {
            let shown = d.to_string();
            let mut lines = shown.lines();
            if d.object != w.object {
                if let Some(first) = lines.next() {
                    text.push_str(&format!("  {first}\n"));
                }
            } else {
                lines.next();
            }
            for l in lines {
                text.push_str(&format!("  {l}\n"));
            }
        }
        let rp = &plan.releases[i];
        for w in &rp.preflight {
            text.push_str(&format!("  The plan warned: {w}\n"));
        }
        match &o.outcome {
            Outcome::RolledBack => text.push_str(&format!(
                "Component '{}' was rolled back to revision {} (recorded as revision {}).\n",
                row.name,
                rp.recovery.rollback_revision.unwrap_or_default(),
                o.revision
            )),
            Outcome::UninstalledAfterFailure => text.push_str(&format!(
                "Component '{}' was a first install: it was uninstalled.\n",
                row.name
            )),
            other => text.push_str(&format!(
                "Component '{}' was NOT rolled back ({other}, revision {}).\n",
                row.name, o.revision
            )),
        }
        let names = |f: &dyn Fn(&Outcome) -> bool| -> Vec<String> {
            report
                .releases
                .iter()
                .zip(&self.rows)
                .filter(|(o, _)| f(&o.outcome))
                .map(|(_, r)| r.name.clone())
                .collect()
        };
        let upgraded = names(&|o| matches!(o, Outcome::Installed | Outcome::Upgraded));
        let current = names(&|o| *o == Outcome::Noop);
        let skipped = names(&|o| *o == Outcome::NotAttempted);
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        text.push_str(&format!(
            "Components that stay upgraded: {}.\n",
            list(&upgraded)
        ));
        if !current.is_empty() {
            text.push_str(&format!(
                "Components already up to date: {}.\n",
                list(&current)
            ));
        }
        text.push_str(&format!("Components not attempted: {}.\n", list(&skipped)));
        text.push_str(&format!("To retry, fix the cause and run: {retry}\n"));
        let _ = s.out.write_all(text.as_bytes());
        let _ = s.out.flush();
        Some(row.name.clone())
    }
}

impl Progress for Feedback<'_> {
    fn event(&self, e: &Event) {
        let Ok(mut guard) = self.state.lock() else {
            return;
        };
        let s = &mut *guard;
        match e {
            Event::ReleaseStarted { release, .. } => {
                let Some(i) = self.index(release) else { return };
                self.noops(s, i);
                let l = line(&self.rows[i]);
                if !l.inline {
                    let _ = writeln!(s.out, "{}", l.begin);
                } else if self.tty {
                    let _ = write!(s.out, "{}", l.begin);
                    s.line_open = true;
                }
                let _ = s.out.flush();
            }
            Event::Waiting {
                release,
                object,
                message,
                reasons,
            } => {
                let message = &match reasons.first() {
                    Some(r) => format!("{message}; why: {r}"),
                    None => message.clone(),
                };
                let Some(i) = self.index(release) else { return };
                if !s.waits[i].frozen {
                    let condition = self.rows[i]
                        .keys
                        .iter()
                        .find(|k| {
                            format!("{} {}/{}", k.kind, k.namespace, k.name) == *object
                                || format!("{} {}", k.kind, k.name) == *object
                        })
                        .and_then(|k| self.cluster.get(k).ok().flatten())
                        .and_then(|v| condition_of(&v));
                    s.waits[i] = LastWait {
                        object: object.clone(),
                        message: message.clone(),
                        condition,
                        frozen: false,
                    };
                }
                let l = line(&self.rows[i]);
                if self.tty {
                    let begin = if l.inline { l.begin.as_str() } else { "" };
                    let _ = write!(s.out, "\r\x1b[2K{begin}[waiting for {object}: {message}]");
                    s.line_open = true;
                    let _ = s.out.flush();
                } else if let Some(p) = s.progress.as_mut() {
                    let _ = writeln!(
                        p,
                        "  {}: waiting for {object}: {message}",
                        self.rows[i].name
                    );
                    let _ = p.flush();
                }
            }
            Event::ObjectWritten { release, .. } => {
                // A write after a wait is the rollback: keep the failed wait.
                if let Some(i) = self.index(release) {
                    if !s.waits[i].object.is_empty() {
                        s.waits[i].frozen = true;
                    }
                }
            }
            // The failure is reported with the release's outcome.
            Event::Failed { .. } => {}
            Event::Recovered { release, what } => {
                if let Some(p) = s.progress.as_mut() {
                    let _ = writeln!(p, "  {release}: recovered an interrupted run: {what}");
                }
            }
            Event::ReleaseDone { release, outcome } => {
                let Some(i) = self.index(release) else { return };
                let ok = matches!(outcome.as_str(), "installed" | "upgraded");
                if ok && s.held.as_deref() == Some(release.as_str()) {
                    return;
                }
                self.done_line(s, i, ok);
            }
        }
    }
}

impl Feedback<'_> {
    /// Holds back the result line of `release` (`namespace/name`) until
    /// [`Feedback::settle`]: a check follows its run.
    pub fn hold(&self, release: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.held = Some(release.to_string());
        }
    }

    /// Prints the held result line of `release`.
    pub fn settle(&self, release: &str, ok: bool) {
        let Ok(mut guard) = self.state.lock() else {
            return;
        };
        let s = &mut *guard;
        if s.held.as_deref() == Some(release) {
            s.held = None;
            if let Some(i) = self.index(release) {
                self.done_line(s, i, ok);
            }
        }
    }

    /// Records the last wait of a release as the reason it failed.
    pub fn failed_wait(
        &self,
        release: &str,
        object: &str,
        message: &str,
        condition: Option<String>,
    ) {
        let Ok(mut s) = self.state.lock() else { return };
        if let Some(i) = self.index(release) {
            s.waits[i] = LastWait {
                object: object.into(),
                message: message.into(),
                condition,
                frozen: true,
            };
        }
    }

    fn done_line(&self, s: &mut State<'_>, i: usize, ok: bool) {
        {
            {
                let l = line(&self.rows[i]);
                let clear = if self.tty && s.line_open {
                    "\r\x1b[2K"
                } else {
                    ""
                };
                if l.inline {
                    let end = if ok { l.ok.as_str() } else { "Failed!" };
                    let _ = writeln!(s.out, "{clear}{}{end}", l.begin);
                } else if ok {
                    let _ = writeln!(s.out, "{clear}{}", l.ok);
                } else {
                    let _ = writeln!(s.out, "{clear}Failed!");
                }
                s.line_open = false;
                s.cursor = i + 1;
                let _ = s.out.flush();
            }
        }
    }
}
