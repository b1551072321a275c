//! `rudder list`, `history`, `status` and `get`: the read side of release
//! records, printed as Helm v3.17.2 prints them.
use clap::{Args, Subcommand};
use rudder::release::view::{self, Format, StatusOptions};
use rudder::release::{self, ListQuery, Releases, Status};
use std::io::Write;
use std::process::ExitCode;

/// Where records are and which namespace to look in.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Namespace of the release.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
}

/// `-o table|json|yaml`.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Prints the output in the specified format. Allowed values: table, json, yaml.
    #[arg(short = 'o', long, default_value = "table")]
    output: String,
}

impl OutputArgs {
    fn format(&self) -> Result<Format, String> {
        Format::parse(&self.output).ok_or_else(|| "invalid format type".to_string())
    }
}

/// `rudder list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    out: OutputArgs,
    /// List releases across all namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Show all releases without any filter applied.
    #[arg(short = 'a', long)]
    all: bool,
    /// Show uninstalled releases.
    #[arg(long)]
    uninstalled: bool,
    /// Show superseded releases.
    #[arg(long)]
    superseded: bool,
    /// Show failed releases.
    #[arg(long)]
    failed: bool,
    /// Show pending releases.
    #[arg(long)]
    pending: bool,
    /// Show deployed releases.
    #[arg(long)]
    deployed: bool,
    /// Show releases being uninstalled.
    #[arg(long)]
    uninstalling: bool,
    /// Output short (quiet) listing format.
    #[arg(short = 'q', long)]
    short: bool,
    /// Don't print headers when using the default output format.
    #[arg(long)]
    no_headers: bool,
    /// Sort by release date.
    #[arg(short = 'd', long)]
    date: bool,
    /// Reverse the sort order.
    #[arg(short = 'r', long)]
    reverse: bool,
    /// Maximum number of releases to fetch.
    #[arg(short = 'm', long, default_value_t = 256)]
    max: usize,
    /// Next release index in the list, used to offset from start value.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// A regular expression; only releases whose names match are listed.
    #[arg(short = 'f', long)]
    filter: Option<String>,
    /// Selector (label query) to filter on, supports '=', '==', '!=', in,
    /// notin and existence (e.g. -l key1=value1,key2=value2).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Format time using golang time formatter. Example: --time-format "2006-01-02 15:04:05Z0700".
    #[arg(long)]
    time_format: Option<String>,
}

/// `rudder history NAME`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Release name.
    name: String,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    out: OutputArgs,
    /// Maximum number of revisions to include in history.
    #[arg(long, default_value_t = 256)]
    max: usize,
}

/// `rudder status NAME`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Release name.
    name: String,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    out: OutputArgs,
    /// Display the status of this revision.
    #[arg(long, default_value_t = 0)]
    revision: u64,
    /// Display the description message of the release.
    #[arg(long)]
    show_desc: bool,
}

/// `rudder get ...`.
#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(subcommand)]
    what: GetWhat,
}

/// Flags shared by the `get` sub-commands.
#[derive(Debug, Args)]
pub struct GetCommon {
    /// Release name.
    name: String,
    #[command(flatten)]
    store: StoreArgs,
    /// Get the named release with this revision.
    #[arg(long, default_value_t = 0)]
    revision: u64,
}

#[derive(Debug, Subcommand)]
enum GetWhat {
    /// The values of a release.
    Values {
        #[command(flatten)]
        common: GetCommon,
        #[command(flatten)]
        out: OutputArgs,
        /// Dump all (computed) values.
        #[arg(short = 'a', long)]
        all: bool,
    },
    /// The manifest of a release.
    Manifest {
        #[command(flatten)]
        common: GetCommon,
    },
    /// The notes of a release.
    Notes {
        #[command(flatten)]
        common: GetCommon,
    },
    /// The hooks of a release.
    Hooks {
        #[command(flatten)]
        common: GetCommon,
    },
    /// The metadata of a release.
    Metadata {
        #[command(flatten)]
        common: GetCommon,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Everything about a release.
    All {
        #[command(flatten)]
        common: GetCommon,
    },
}

fn finish(r: Result<String, String>) -> ExitCode {
    match r {
        Ok(s) => {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(s.as_bytes());
            let _ = o.flush();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// An open store and the URL it was opened from (for warnings).
struct Opened {
    store: Box<dyn release::Store>,
    url: String,
}

impl Opened {
    fn releases(&self) -> Releases<'_> {
        Releases::new(self.store.as_ref())
    }

    /// Says on stderr which records a read skipped, and why.
    fn warn(&self, skipped: &[release::store::Skipped]) {
        for s in skipped {
            eprintln!("warning: store {}: {s}", self.url);
        }
    }
}

fn open(_s: &StoreArgs) -> Result<Opened, String> {
    let g = super::global();
    let url = g.store_url().map_err(|e| rudder::error_chain(&e))?;
    let store = if release::store::needs_cluster(&url) {
        let cluster_url = g.cluster_url().map_err(|e| rudder::error_chain(&e))?;
        let cluster = rudder::cluster::open(&cluster_url).map_err(|e| rudder::error_chain(&e))?;
        release::store::open_in(&url, std::sync::Arc::from(cluster))
            .map_err(|e| rudder::error_chain(&e))?
    } else {
        release::open(&url).map_err(|e| rudder::error_chain(&e))?
    };
    Ok(Opened { store, url })
}

/// Runs `rudder list`.
pub fn list(a: ListArgs) -> ExitCode {
    finish((|| {
        let fmt = a.out.format()?;
        let store = open(&a.store)?;
        let mut statuses = Vec::new();
        let flags = [
            (a.deployed, vec![Status::Deployed]),
            (a.uninstalled, vec![Status::Uninstalled]),
            (a.uninstalling, vec![Status::Uninstalling]),
            (
                a.pending,
                vec![
                    Status::PendingInstall,
                    Status::PendingUpgrade,
                    Status::PendingRollback,
                ],
            ),
            (a.failed, vec![Status::Failed]),
            (a.superseded, vec![Status::Superseded]),
        ];
        for (on, s) in flags {
            if on {
                statuses.extend(s);
            }
        }
        let q = ListQuery {
            namespace: (!a.all_namespaces).then(|| a.store.namespace.clone()),
            statuses,
            all: a.all,
            filter: a.filter.clone(),
            by_date: a.date,
            reverse: a.reverse,
            limit: a.max,
            offset: a.offset,
            selector: a.selector.clone(),
        };
        let (rels, skipped) = store
            .releases()
            .list_reporting(&q)
            .map_err(|e| rudder::error_chain(&e))?;
        store.warn(&skipped);
        if a.short {
            let names: Vec<&str> = rels.iter().map(|r| r.name.as_str()).collect();
            return Ok(match fmt {
                Format::Json => view::go_json(&names),
                Format::Yaml => view::go_yaml(&names),
                Format::Table => names.iter().map(|n| format!("{n}\n")).collect(),
            });
        }
        Ok(view::list_with(
            &rels,
            fmt,
            a.no_headers,
            a.time_format.as_deref(),
        ))
    })())
}

/// Runs `rudder history`.
pub fn history(a: HistoryArgs) -> ExitCode {
    finish((|| {
        let fmt = a.out.format()?;
        let store = open(&a.store)?;
        let (h, skipped) = store
            .releases()
            .history_reporting(&a.store.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?;
        store.warn(&skipped);
        Ok(view::history(&h, a.max, fmt))
    })())
}

/// Runs `rudder status`.
pub fn status(a: StatusArgs) -> ExitCode {
    finish((|| {
        let fmt = a.out.format()?;
        let store = open(&a.store)?;
        let (r, skipped) = store
            .releases()
            .get_reporting(&a.store.namespace, &a.name, a.revision)
            .map_err(|e| rudder::error_chain(&e))?;
        store.warn(&skipped);
        Ok(view::status(
            &r,
            fmt,
            StatusOptions {
                show_description: a.show_desc,
                ..StatusOptions::default()
            },
        ))
    })())
}

fn load(c: &GetCommon) -> Result<release::Release, String> {
    let store = open(&c.store)?;
    let (r, skipped) = store
        .releases()
        .get_reporting(&c.store.namespace, &c.name, c.revision)
        .map_err(|e| rudder::error_chain(&e))?;
    store.warn(&skipped);
    Ok(r)
}

/// Runs `rudder get`.
pub fn get(a: GetArgs) -> ExitCode {
    finish((|| match a.what {
        GetWhat::Values { common, out, all } => {
            let fmt = out.format()?;
            Ok(view::values(&load(&common)?, all, fmt))
        }
        GetWhat::Manifest { common } => Ok(view::manifest(&load(&common)?)),
        GetWhat::Notes { common } => Ok(view::notes(&load(&common)?)),
        GetWhat::Hooks { common } => Ok(view::hooks(&load(&common)?)),
        GetWhat::Metadata { common, out } => {
            let fmt = out.format()?;
            Ok(view::metadata(&load(&common)?, fmt))
        }
        GetWhat::All { common } => Ok(view::all(&load(&common)?)),
    })())
}
