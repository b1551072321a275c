//! Helm's command-line rules for the Helm-shaped commands (template,
//! install, upgrade, rollback, uninstall, list, history, status, get, lint,
//! package, show): flags are read as cobra/pflag reads them (a value flag
//! takes the next argument whatever it is, `-abc` groups, `--bool=false`),
//! and mistakes are reported with Helm's words and exit code 1 instead of
//! clap's: `unknown flag: --foo`, `flag needs an argument: 'n' in -n`,
//! `"helm template" requires at least 1 argument` and its usage line.
//!
//! The messages say `helm`, as every Helm-shaped message of rudder keeps
//! Helm's text verbatim (`helm dependency build`, `Happy Helming!`): a
//! script or a test that reads Helm's errors reads rudder's the same way.
//!
//! [`normalize`] rewrites a valid command line into one clap reads the same
//! way (`--long=value` for every value, positionals after `--`), so the
//! clap definitions stay the single description of each command.
use clap::{ArgAction, Command};
use std::ffi::OsString;

/// How many arguments a Helm command takes (Helm's `require.*`).
#[derive(Debug, Clone, Copy)]
enum Arity {
    /// `require.NoArgs`.
    None,
    /// `require.ExactArgs(n)`.
    Exact(usize),
    /// `require.MinimumNArgs(n)`.
    Min(usize),
    /// No check.
    Any,
    /// A command of subcommands: it prints its help (exit 0).
    Help,
}

/// A Helm command: its path after `helm`, its usage line and its arity.
struct Spec {
    path: &'static [&'static str],
    usage: &'static str,
    arity: Arity,
}

const SPECS: &[Spec] = &[
    spec(
        &["template"],
        "helm template [NAME] [CHART] [flags]",
        Arity::Min(1),
    ),
    spec(
        &["install"],
        "helm install [NAME] [CHART] [flags]",
        Arity::Min(1),
    ),
    spec(
        &["upgrade"],
        "helm upgrade [RELEASE] [CHART] [flags]",
        Arity::Exact(2),
    ),
    spec(
        &["rollback"],
        "helm rollback <RELEASE> [REVISION] [flags]",
        Arity::Min(1),
    ),
    spec(
        &["uninstall"],
        "helm uninstall RELEASE_NAME [...] [flags]",
        Arity::Min(1),
    ),
    spec(&["list"], "helm list [flags]", Arity::None),
    spec(
        &["history"],
        "helm history RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["status"],
        "helm status RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(&["lint"], "helm lint PATH [flags]", Arity::Any),
    spec(
        &["package"],
        "helm package [CHART_PATH] [...] [flags]",
        Arity::Any,
    ),
    spec(&["verify"], "helm verify PATH [flags]", Arity::Exact(1)),
    spec(&["dependency"], "helm dependency [command]", Arity::Help),
    spec(
        &["dependency", "build"],
        "helm dependency build CHART [flags]",
        Arity::Any,
    ),
    spec(
        &["dependency", "list"],
        "helm dependency list CHART [flags]",
        Arity::Any,
    ),
    spec(
        &["dependency", "update"],
        "helm dependency update CHART [flags]",
        Arity::Any,
    ),
    spec(
        &["push"],
        "helm push [chart] [remote] [flags]",
        Arity::Min(2),
    ),
    spec(&["registry"], "helm registry [command]", Arity::Help),
    spec(
        &["registry", "login"],
        "helm registry login [host] [flags]",
        Arity::Min(1),
    ),
    spec(
        &["registry", "logout"],
        "helm registry logout [host] [flags]",
        Arity::Min(1),
    ),
    spec(&["get"], "helm get [command]", Arity::Help),
    spec(
        &["get", "all"],
        "helm get all RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["get", "hooks"],
        "helm get hooks RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["get", "manifest"],
        "helm get manifest RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["get", "metadata"],
        "helm get metadata RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["get", "notes"],
        "helm get notes RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["get", "values"],
        "helm get values RELEASE_NAME [flags]",
        Arity::Exact(1),
    ),
    spec(&["repo"], "helm repo [command]", Arity::Help),
    spec(
        &["repo", "index"],
        "helm repo index [DIR] [flags]",
        Arity::Exact(1),
    ),
    spec(&["show"], "helm show [command]", Arity::Help),
    spec(
        &["show", "all"],
        "helm show all [CHART] [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["show", "chart"],
        "helm show chart [CHART] [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["show", "crds"],
        "helm show crds [CHART] [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["show", "readme"],
        "helm show readme [CHART] [flags]",
        Arity::Exact(1),
    ),
    spec(
        &["show", "values"],
        "helm show values [CHART] [flags]",
        Arity::Exact(1),
    ),
];

const fn spec(path: &'static [&'static str], usage: &'static str, arity: Arity) -> Spec {
    Spec { path, usage, arity }
}

fn find_spec(path: &[String]) -> Option<&'static Spec> {
    SPECS
        .iter()
        .find(|s| s.path.len() == path.len() && s.path.iter().zip(path).all(|(a, b)| a == b))
}

/// `"helm NAME" requires at least 1 argument` and the usage line.
pub fn min_args_message(command: &str) -> String {
    let path = [command.to_string()];
    match find_spec(&path) {
        Some(s) => arity_message(s, 1, "requires at least"),
        None => format!("\"helm {command}\" requires at least 1 argument"),
    }
}

fn arity_message(s: &Spec, n: usize, what: &str) -> String {
    let plural = if n == 1 { "argument" } else { "arguments" };
    let head = if what == "accepts no" {
        format!("\"helm {}\" accepts no arguments", s.path.join(" "))
    } else if what.is_empty() {
        format!("\"helm {}\" requires {n} {plural}", s.path.join(" "))
    } else {
        format!("\"helm {}\" {what} {n} {plural}", s.path.join(" "))
    };
    format!("{head}\n\nUsage:  {}", s.usage)
}

/// What to do with a command line.
#[derive(Debug)]
pub enum Parsed {
    /// Not a Helm-shaped command (or help was asked for): clap reads the
    /// arguments as they are.
    Clap,
    /// The command line clap should read instead.
    Normalized(Vec<OsString>),
    /// Helm would fail with this message (after `Error: `), exit 1.
    Error(String),
    /// Helm would print the command's help to stdout and exit 0 (a
    /// command of subcommands without one).
    Help(Vec<String>),
}

/// One flag as pflag sees it: its names and whether it takes a value.
struct Flag {
    long: Option<String>,
    short: Option<char>,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `--flag`, `--flag=true|false`.
    Bool,
    /// `--flag value`, `--flag=value`.
    Value,
    /// `--flag` or `--flag=value` (pflag's `NoOptDefVal`).
    OptionalValue,
    /// `-h`, `--help`, `-V`, `--version`.
    Help,
}

impl Flag {
    /// How pflag names the flag in `invalid argument` errors.
    fn display(&self) -> String {
        match (&self.short, &self.long) {
            (Some(s), Some(l)) => format!("-{s}, --{l}"),
            (None, Some(l)) => format!("--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, None) => String::new(),
        }
    }

    /// The flag as clap should read it, with its value.
    fn emit(&self, value: Option<&str>, out: &mut Vec<OsString>) {
        let name = match (&self.long, &self.short) {
            (Some(l), _) => format!("--{l}"),
            (None, Some(s)) => format!("-{s}"),
            (None, None) => return,
        };
        match value {
            Some(v) => out.push(format!("{name}={v}").into()),
            None => out.push(name.into()),
        }
    }
}

fn flags_of(cmd: &Command) -> Vec<Flag> {
    let mut out = Vec::new();
    for a in cmd.get_arguments() {
        if a.is_positional() {
            continue;
        }
        let kind = match a.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => Kind::Bool,
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version => {
                Kind::Help
            }
            ArgAction::Count => Kind::Bool,
            _ => match a.get_num_args() {
                Some(r) if r.min_values() == 0 => Kind::OptionalValue,
                _ => Kind::Value,
            },
        };
        let longs: Vec<String> = a
            .get_long_and_visible_aliases()
            .unwrap_or_default()
            .into_iter()
            .map(str::to_string)
            .collect();
        let shorts: Vec<char> = a.get_short_and_visible_aliases().unwrap_or_default();
        let primary_short = shorts.first().copied();
        if longs.is_empty() {
            out.push(Flag {
                long: None,
                short: primary_short,
                kind,
            });
        }
        for (i, l) in longs.iter().enumerate() {
            out.push(Flag {
                long: Some(l.clone()),
                short: if i == 0 { primary_short } else { None },
                kind,
            });
        }
        for s in shorts.iter().skip(1) {
            out.push(Flag {
                long: longs.first().cloned(),
                short: Some(*s),
                kind,
            });
        }
    }
    out
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn quote(s: &str) -> String {
    rudder::gostd::strconv::quote(s)
}

/// Reads `args` (the command line without the program name) as Helm would.
pub fn normalize(root: &Command, argv: &[OsString]) -> Parsed {
    let Some(args) = argv
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
    else {
        return Parsed::Clap;
    };
    let before_dashes = args.iter().take_while(|a| *a != "--");
    if args.first().is_some_and(|a| a == "help")
        || before_dashes.clone().any(|a| a == "-h" || a == "--help")
    {
        return Parsed::Clap;
    }
    let mut root = root.clone();
    root.build();
    // Phase 1: the command path (cobra's `Find`: flags are skipped, a
    // value flag of the command found so far with its value).
    let mut cmd = &root;
    let mut path: Vec<String> = Vec::new();
    let mut path_at: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            break;
        }
        if a.starts_with('-') && a.len() > 1 {
            if !a.contains('=') {
                let flags = flags_of(cmd);
                let takes = if let Some(l) = a.strip_prefix("--") {
                    flags
                        .iter()
                        .any(|f| f.long.as_deref() == Some(l) && f.kind == Kind::Value)
                } else {
                    let last = a.chars().last();
                    a.len() == 2
                        && flags
                            .iter()
                            .any(|f| f.short == last && f.kind == Kind::Value)
                };
                if takes {
                    i += 1;
                }
            }
            i += 1;
            continue;
        }
        let sub = cmd
            .get_subcommands()
            .find(|s| s.get_name() == a || s.get_all_aliases().any(|x| x == a));
        match sub {
            Some(s) => {
                path.push(s.get_name().to_string());
                path_at.push(i);
                cmd = s;
            }
            None if path.is_empty() => return Parsed::Clap,
            None => break,
        }
        i += 1;
    }
    if path.is_empty() {
        // `rudder --foo`: Helm's flag errors, clap for the rest.
        let mut ignored = Vec::new();
        if let Err(Some(m)) = parse_flags(&flags_of(cmd), &args, &[], &mut ignored) {
            return Parsed::Error(m);
        }
        return Parsed::Clap;
    }
    let Some(spec) = find_spec(&path) else {
        return Parsed::Clap;
    };
    // Phase 2: every flag against the command's flags (its own and the
    // global ones), as pflag parses them.
    let mut out: Vec<OsString> = vec![argv[0].clone()];
    out.extend(path.iter().map(OsString::from));
    let mut positionals = match parse_flags(&flags_of(cmd), &args, &path_at, &mut out) {
        Ok(p) => p,
        Err(Some(m)) => return Parsed::Error(m),
        Err(None) => return Parsed::Clap,
    };
    let n = positionals.len();
    let bad = match spec.arity {
        Arity::None if n > 0 => Some(arity_message(spec, 0, "accepts no")),
        Arity::Exact(k) if n != k => Some(arity_message(spec, k, "")),
        Arity::Min(k) if n < k => Some(arity_message(spec, k, "requires at least")),
        Arity::Help => {
            // `rudder show readme`: a Helm subcommand rudder does not
            // have. Helm's argument check still speaks first.
            let Some(first) = positionals.first() else {
                return Parsed::Help(path);
            };
            let mut sub_path = path.clone();
            sub_path.push(first.clone());
            match find_spec(&sub_path) {
                Some(sub) => match sub.arity {
                    Arity::Exact(k) if n - 1 != k => Some(arity_message(sub, k, "")),
                    _ => return Parsed::Clap,
                },
                None => return Parsed::Help(path),
            }
        }
        _ => None,
    };
    if let Some(m) = bad {
        return Parsed::Error(m);
    }
    // What Helm checks first when the command runs.
    match spec.path {
        ["install"] if n > 2 => {
            return Parsed::Error(format!(
                "INSTALLATION FAILED: expected at most two arguments, unexpected arguments: {}",
                positionals[2..].join(", ")
            ))
        }
        ["install"] if n == 1 => {
            return Parsed::Error(
                "INSTALLATION FAILED: must either provide a name or specify --generate-name".into(),
            )
        }
        ["rollback"] => {
            // Helm reads the revision with `strconv.Atoi` and ignores
            // anything after it.
            if let Some(r) = positionals.get(1) {
                // Go's `strconv.Atoi` takes what Rust's `i64` parser
                // takes: an optional sign and decimal digits, in range.
                if r.parse::<i64>().is_err() {
                    return Parsed::Error(format!(
                        "could not convert revision to a number: strconv.Atoi: parsing {}: invalid syntax",
                        quote(r)
                    ));
                }
            }
            positionals.truncate(2);
        }
        ["package"] if n == 0 => {
            return Parsed::Error("need at least one argument, the path to the chart".into())
        }
        _ => {}
    }
    if !positionals.is_empty() {
        out.push("--".into());
        out.extend(positionals.into_iter().map(OsString::from));
    }
    Parsed::Normalized(out)
}

fn bool_error(f: &Flag, v: &str) -> String {
    format!(
        "invalid argument {} for {} flag: strconv.ParseBool: parsing {}: invalid syntax",
        quote(v),
        quote(&f.display()),
        quote(v)
    )
}

/// Helm's text for a clap error on a normalized command line (a value
/// clap rejects), or `None` to show clap's own.
pub fn clap_error_text(root: &Command, argv: &[OsString], e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation && e.kind() != ErrorKind::InvalidValue {
        return None;
    }
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => return None,
    };
    let value = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => return None,
    };
    // `--max <MAX>` -> the flag, to name it as pflag does.
    let long = arg
        .split_whitespace()
        .next()
        .and_then(|a| a.strip_prefix("--"))?
        .to_string();
    let mut root = root.clone();
    root.build();
    // The command: the leading words of the (normalized) line.
    let mut cmd = &root;
    for a in argv.iter().skip(1) {
        match cmd.get_subcommands().find(|s| a == s.get_name()) {
            Some(s) => cmd = s,
            None => break,
        }
    }
    let flag = flags_of(cmd)
        .into_iter()
        .find(|f| f.long.as_deref() == Some(long.as_str()))?;
    // Go's `strconv.ParseInt(s, 10, 64)`: an optional sign and decimal
    // digits, in range, as Rust's `i64` parser.
    if value.parse::<i64>().is_ok() {
        return None;
    }
    Some(format!(
        "invalid argument {} for {} flag: strconv.ParseInt: parsing {}: invalid syntax",
        quote(&value),
        quote(&flag.display()),
        quote(&value)
    ))
}

/// pflag's reading of `args` (the words at `skip` are the command path)
/// against `flags`: the flags as clap should read them, appended to
/// `out`, and the positionals; `Err(Some(message))` for Helm's error,
/// `Err(None)` when help was asked for.
fn parse_flags(
    flags: &[Flag],
    args: &[String],
    skip: &[usize],
    out: &mut Vec<OsString>,
) -> Result<Vec<String>, Option<String>> {
    let mut positionals: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if skip.contains(&i) {
            i += 1;
            continue;
        }
        let a = &args[i];
        i += 1;
        if a == "--" {
            positionals.extend(args[i..].iter().cloned());
            break;
        }
        if !a.starts_with('-') || a.len() == 1 {
            positionals.push(a.clone());
            continue;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            if name.is_empty() || name.starts_with('-') || name.starts_with('=') {
                return Err(Some(format!("bad flag syntax: {a}")));
            }
            let Some(f) = flags.iter().find(|f| f.long.as_deref() == Some(name)) else {
                return Err(Some(format!("unknown flag: --{name}")));
            };
            match (f.kind, attached) {
                (Kind::Help, _) => return Err(None),
                (Kind::Bool, None) => f.emit(None, out),
                (Kind::Bool, Some(v)) => match parse_bool(v) {
                    Some(true) => f.emit(None, out),
                    Some(false) => {}
                    None => return Err(Some(bool_error(f, v))),
                },
                (Kind::OptionalValue, v) => f.emit(v, out),
                (Kind::Value, Some(v)) => f.emit(Some(v), out),
                (Kind::Value, None) => match args.get(i) {
                    Some(v) => {
                        f.emit(Some(v), out);
                        i += 1;
                    }
                    None => return Err(Some(format!("flag needs an argument: {a}"))),
                },
            }
            continue;
        }
        // A group of shorthands: `-abc`, `-nvalue`, `-n=value`, `-n value`.
        let mut rest: &str = &a[1..];
        while let Some(c) = rest.chars().next() {
            let after = &rest[c.len_utf8()..];
            let Some(f) = flags.iter().find(|f| f.short == Some(c)) else {
                return Err(Some(format!(
                    "unknown shorthand flag: {} in -{rest}",
                    rudder::gostd::strconv::quote_rune(c)
                )));
            };
            match f.kind {
                Kind::Help => return Err(None),
                Kind::Bool | Kind::OptionalValue => {
                    if let Some(v) = after.strip_prefix('=') {
                        if f.kind == Kind::OptionalValue {
                            f.emit(Some(v), out);
                        } else {
                            match parse_bool(v) {
                                Some(true) => f.emit(None, out),
                                Some(false) => {}
                                None => return Err(Some(bool_error(f, v))),
                            }
                        }
                        rest = "";
                        continue;
                    }
                    f.emit(None, out);
                    rest = after;
                }
                Kind::Value => {
                    if let Some(v) = after.strip_prefix('=') {
                        f.emit(Some(v), out);
                    } else if !after.is_empty() {
                        f.emit(Some(after), out);
                    } else if let Some(v) = args.get(i) {
                        f.emit(Some(v), out);
                        i += 1;
                    } else {
                        return Err(Some(format!(
                            "flag needs an argument: {} in -{rest}",
                            rudder::gostd::strconv::quote_rune(c)
                        )));
                    }
                    rest = "";
                }
            }
        }
    }
    Ok(positionals)
}
