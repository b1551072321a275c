//! `rudder pull`: download charts from repositories, URLs and registries
//! (as `helm pull`), all at once.
use super::source::ChartPathArgs;
use clap::Args;
use rudder::source::reference::parse_arg;
use rudder::source::resolve;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rudder pull [chart URL | repo/chartname | oci://...] [...]`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// The charts to download.
    #[arg(required = true)]
    charts: Vec<String>,
    #[command(flatten)]
    path: ChartPathArgs,
    /// Location to write the chart. If this and untardir are specified,
    /// untardir is appended to this.
    #[arg(short = 'd', long = "destination", default_value = ".")]
    destination: PathBuf,
    /// If set to true, will untar the chart after downloading it.
    #[arg(long)]
    untar: bool,
    /// If untar is specified, this flag specifies the name of the directory
    /// into which the chart is expanded.
    #[arg(long = "untardir", default_value = ".")]
    untardir: PathBuf,
    /// Fetch the provenance file, but don't perform verification.
    #[arg(long)]
    prov: bool,
}

/// Runs `rudder pull`.
pub fn run(a: PullArgs) -> ExitCode {
    match pull(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn pull(a: &PullArgs) -> Result<(), String> {
    let mut opts = a.path.locate();
    opts.prov = a.prov;
    let mut refs = Vec::new();
    for c in &a.charts {
        refs.push(parse_arg(c, opts.repo_url.as_deref()).map_err(|e| e.to_string())?);
    }
    // Every download runs at once; the results are written in order, and
    // the first failure ends the command, as Helm's loop would. A chart
    // saved with -d enters the content cache as a link to the saved file.
    let fetched = resolve::fetch_all_deferred(&refs, &opts);
    let mut fetched = fetched.into_iter();
    while let Some(f) = fetched.next() {
        let saved = match f {
            Err(e) => Err(rudder::error_chain(&e)),
            Ok(f) => save(a, &opts, &f).inspect_err(|_| {
                let _ = resolve::keep(&f, &opts, None);
            }),
        };
        if let Err(e) = saved {
            // What was downloaded is cached even when it is not saved.
            for f in fetched.flatten() {
                let _ = resolve::keep(&f, &opts, None);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Prints and saves one fetched chart (archive or `--untar`), then caches
/// it.
fn save(a: &PullArgs, opts: &resolve::LocateOptions, f: &resolve::Fetched) -> Result<(), String> {
    if let Some(v) = &f.verified {
        print!("{v}");
    }
    if let Some(o) = &f.oci {
        println!("Pulled: {}", o.reference);
        println!("Digest: {}", o.manifest_digest);
    }
    if a.untar {
        let dest = if a.untardir.is_absolute() {
            a.untardir.clone()
        } else {
            a.destination.join(&a.untardir)
        };
        resolve::expand(&f.archive, &dest).map_err(|e| e.to_string())?;
        resolve::keep(f, opts, None).map_err(|e| rudder::error_chain(&e))?;
    } else {
        std::fs::create_dir_all(&a.destination)
            .map_err(|e| format!("{}: {e}", a.destination.display()))?;
        let target = a.destination.join(&f.file_name);
        rudder::fsutil::replace_file(&target, &f.archive, rudder::fsutil::Mode::Umask(0o644))
            .map_err(|e| e.to_string())?;
        resolve::keep(f, opts, Some(&target)).map_err(|e| rudder::error_chain(&e))?;
        if let Some(prov) = f.prov.as_ref().filter(|_| a.prov || opts.verify) {
            let p = a.destination.join(format!("{}.prov", f.file_name));
            rudder::fsutil::replace_file(&p, prov, rudder::fsutil::Mode::Umask(0o644))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
