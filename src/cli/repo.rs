//! `rudder repo add|update|list|remove|index`: Helm's repository commands,
//! on Helm's own `repositories.yaml` and repository cache (`index` is in
//! [`super::repo_index`]).
use clap::{Args, Subcommand};
use rudder::source::http::{self, Getter, HttpOptions};
use rudder::source::repofile::{RepoEntry, RepoFile, RepoLock};
use rudder::source::HelmPaths;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rudder repo ...`.
#[derive(Debug, Args)]
pub struct RepoArgs {
    #[command(subcommand)]
    what: RepoCommand,
}

#[derive(Debug, Subcommand)]
enum RepoCommand {
    /// Add a chart repository.
    Add(AddArgs),
    /// Update information of available charts locally from chart repositories.
    #[command(visible_alias = "up")]
    Update(UpdateArgs),
    /// List chart repositories.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Remove one or more chart repositories.
    #[command(visible_alias = "rm")]
    Remove(RemoveArgs),
    /// Generate an index file given a directory containing packaged charts.
    Index(super::repo_index::IndexArgs),
}

#[derive(Debug, Args)]
struct AddArgs {
    /// The repository's name.
    name: String,
    /// The repository's URL.
    url: String,
    /// Chart repository username.
    #[arg(long)]
    username: Option<String>,
    /// Chart repository password.
    #[arg(long)]
    password: Option<String>,
    /// Read chart repository password from stdin.
    #[arg(long = "password-stdin")]
    password_stdin: bool,
    /// Verify certificates of HTTPS-enabled servers using this CA bundle.
    #[arg(long = "ca-file")]
    ca_file: Option<String>,
    /// Identify HTTPS client using this SSL certificate file.
    #[arg(long = "cert-file")]
    cert_file: Option<String>,
    /// Identify HTTPS client using this SSL key file.
    #[arg(long = "key-file")]
    key_file: Option<String>,
    /// Skip tls certificate checks for the repository.
    #[arg(long = "insecure-skip-tls-verify")]
    insecure_skip_tls_verify: bool,
    /// Pass credentials to all domains.
    #[arg(long = "pass-credentials")]
    pass_credentials: bool,
    /// Replace (overwrite) the repo if it already exists.
    #[arg(long = "force-update")]
    force_update: bool,
    /// Raise error if repo is already registered (deprecated; Helm ignores it).
    #[arg(long = "no-update", hide = true)]
    no_update: bool,
}

#[derive(Debug, Args)]
struct UpdateArgs {
    /// Repositories to update (default: all).
    names: Vec<String>,
    /// Update fails if any of the repository updates fail.
    #[arg(long = "fail-on-repo-update-fail")]
    fail_on_repo_update_fail: bool,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Prints the output in the specified format. Allowed values: table, json, yaml.
    #[arg(short = 'o', long = "output", default_value = "table")]
    output: String,
}

#[derive(Debug, Args)]
struct RemoveArgs {
    /// Repositories to remove.
    #[arg(required = true)]
    names: Vec<String>,
}

/// Runs `rudder repo ...`.
pub fn run(a: RepoArgs) -> ExitCode {
    let paths = super::global().helm_paths();
    let r = match a.what {
        RepoCommand::Add(a) => add(&paths, a),
        RepoCommand::Update(a) => update(&paths, &a),
        RepoCommand::List(a) => list(&paths, &a),
        RepoCommand::Remove(a) => remove(&paths, &a),
        RepoCommand::Index(a) => super::repo_index::run(&a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn add(paths: &HelmPaths, a: AddArgs) -> Result<(), String> {
    if a.name.contains('/') {
        return Err(format!(
            "repository name ({}) contains '/', please specify a different name without '/'",
            a.name
        ));
    }
    let mut password = a.password.clone().unwrap_or_default();
    if a.password_stdin {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("reading the password from stdin: {e}"))?;
        password = s.trim_end_matches(['\n', '\r']).to_string();
    }
    let username = a.username.clone().unwrap_or_default();
    if !username.is_empty() && password.is_empty() {
        return Err(
            "a password is required with --username (--password or --password-stdin)".into(),
        );
    }
    let entry = RepoEntry {
        name: a.name.clone(),
        url: a.url.clone(),
        username,
        password,
        cert_file: a.cert_file.unwrap_or_default(),
        key_file: a.key_file.unwrap_or_default(),
        ca_file: a.ca_file.unwrap_or_default(),
        insecure_skip_tls_verify: a.insecure_skip_tls_verify,
        pass_credentials_all: a.pass_credentials,
    };
    let _lock = RepoLock::acquire(&paths.repository_config).map_err(|e| e.to_string())?;
    let mut file =
        RepoFile::load_or_default(&paths.repository_config).map_err(|e| e.to_string())?;
    if !a.force_update {
        if let Some(existing) = file.get(&a.name) {
            if *existing != entry {
                return Err(format!(
                    "repository name ({}) already exists, please specify a different name",
                    a.name
                ));
            }
            println!(
                "{:?} already exists with the same configuration, skipping",
                a.name
            );
            return Ok(());
        }
    }
    download_index(paths, &entry).map_err(|e| {
        format!(
            "looks like {:?} is not a valid chart repository or cannot be reached: {e}",
            a.url
        )
    })?;
    file.update(entry);
    file.write(&paths.repository_config)
        .map_err(|e| e.to_string())?;
    println!("{:?} has been added to your repositories", a.name);
    Ok(())
}

/// Downloads one repository's index into the cache, as `repo add` does.
fn download_index(paths: &HelmPaths, e: &RepoEntry) -> Result<(), String> {
    let mut r = fetch_indexes(paths, std::slice::from_ref(e));
    r.pop().unwrap_or_else(|| Err("no answer".into()))
}

/// Downloads the repositories' indexes at once, checks each is an index,
/// and caches it (with its `-charts.txt`) as Helm's `DownloadIndexFile`.
fn fetch_indexes(paths: &HelmPaths, entries: &[RepoEntry]) -> Vec<Result<(), String>> {
    let mut jobs = Vec::new();
    let mut slots: Vec<Result<usize, String>> = Vec::new();
    for e in entries {
        let prepared = Getter::new(&HttpOptions::from_entry(e), Some(&e.url))
            .and_then(|g| http::index_url(&e.url).map(|u| (g, u)));
        match prepared {
            Ok(job) => {
                slots.push(Ok(jobs.len()));
                jobs.push(job);
            }
            Err(err) => slots.push(Err(rudder::error_chain(&err))),
        }
    }
    let urls: Vec<String> = jobs.iter().map(|(_, u)| u.clone()).collect();
    let mut answers: Vec<Option<Result<Vec<u8>, http::HttpError>>> =
        http::get_all(jobs).into_iter().map(Some).collect();
    slots
        .into_iter()
        .zip(entries)
        .map(|(slot, e)| {
            let i = slot?;
            let bytes = answers[i]
                .take()
                .unwrap_or_else(|| {
                    Err(http::HttpError::Url {
                        url: String::new(),
                        message: "no answer".into(),
                    })
                })
                .map_err(|err| rudder::error_chain(&err))?;
            store_index(paths, &e.name, &urls[i], &bytes)
        })
        .collect()
}

fn store_index(paths: &HelmPaths, name: &str, url: &str, bytes: &[u8]) -> Result<(), String> {
    rudder::source::resolve::cache_index(paths, name, url, bytes)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn update(paths: &HelmPaths, a: &UpdateArgs) -> Result<(), String> {
    let file = RepoFile::load_or_default(&paths.repository_config).map_err(|e| e.to_string())?;
    if file.repositories.is_empty() {
        return Err("no repositories found. You must add one before updating".into());
    }
    let mut chosen: Vec<RepoEntry> = Vec::new();
    if a.names.is_empty() {
        chosen = file.repositories.clone();
    } else {
        for n in &a.names {
            match file.get(n) {
                Some(e) => chosen.push(e.clone()),
                None => {
                    return Err(format!(
                        "no repositories found matching '{n}'.  Nothing will be updated"
                    ))
                }
            }
        }
    }
    println!("Hang tight while we grab the latest from your chart repositories...");
    let results = fetch_indexes(paths, &chosen);
    let mut failed = Vec::new();
    for (e, r) in chosen.iter().zip(results) {
        match r {
            Ok(()) => println!(
                "...Successfully got an update from the {:?} chart repository",
                e.name
            ),
            Err(err) => {
                println!(
                    "...Unable to get an update from the {:?} chart repository ({}):\n\t{err}",
                    e.name, e.url
                );
                failed.push(e.url.clone());
            }
        }
    }
    if !failed.is_empty() && a.fail_on_repo_update_fail {
        return Err(format!(
            "Failed to update the following repositories: {failed:?}"
        ));
    }
    println!("Update Complete. ⎈Happy Helming!⎈");
    Ok(())
}

fn list(paths: &HelmPaths, a: &ListArgs) -> Result<(), String> {
    let file = RepoFile::load_or_default(&paths.repository_config).map_err(|e| e.to_string())?;
    if file.repositories.is_empty() && a.output == "table" {
        return Err("no repositories to show".into());
    }
    #[derive(serde::Serialize)]
    struct Row<'a> {
        name: &'a str,
        url: &'a str,
    }
    let rows: Vec<Row> = file
        .repositories
        .iter()
        .map(|r| Row {
            name: &r.name,
            url: &r.url,
        })
        .collect();
    match a.output.as_str() {
        "table" => {
            let mut t = vec![vec!["NAME".to_string(), "URL".to_string()]];
            t.extend(
                rows.iter()
                    .map(|r| vec![r.name.to_string(), r.url.to_string()]),
            );
            print!("{}", rudder::release::view::table(&t));
        }
        "json" => print!("{}", rudder::release::view::go_json(&rows)),
        "yaml" => {
            let node: Vec<rudder::yaml::Node> = rows
                .iter()
                .map(|r| {
                    rudder::yaml::Node::Map(
                        [
                            ("name".to_string(), rudder::yaml::Node::Str(r.name.into())),
                            ("url".to_string(), rudder::yaml::Node::Str(r.url.into())),
                        ]
                        .into_iter()
                        .collect(),
                    )
                })
                .collect();
            print!("{}", rudder::yaml::to_yaml(&rudder::yaml::Node::Seq(node)));
        }
        other => {
            return Err(format!(
                "invalid format type {other:?}: allowed values are table, json, yaml"
            ))
        }
    }
    Ok(())
}

fn remove(paths: &HelmPaths, a: &RemoveArgs) -> Result<(), String> {
    let _lock = RepoLock::acquire(&paths.repository_config).map_err(|e| e.to_string())?;
    let mut file =
        RepoFile::load_or_default(&paths.repository_config).map_err(|e| e.to_string())?;
    for name in &a.names {
        if !file.remove(name) {
            return Err(format!("no repo named {name:?} found"));
        }
        file.write(&paths.repository_config)
            .map_err(|e| e.to_string())?;
        for p in [paths.index_file(name), paths.charts_file(name)] {
            remove_if_present(&p)?;
        }
        println!("{name:?} has been removed from your repositories");
    }
    Ok(())
}

fn remove_if_present(p: &PathBuf) -> Result<(), String> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("can't remove index file {}: {e}", p.display())),
    }
}
