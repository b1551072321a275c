//! `helm dependency list`: each dependency of Chart.yaml with its status
//! (`ok`, `missing`, `wrong version`, `unpacked`, ...), in Helm's table
//! (`gosuri/uitable`: tab-separated, cells padded to their column, cut
//! with `...` past `--max-col-width`), then warnings for the charts in
//! `charts/` that Chart.yaml does not list.
use crate::chart::model::{Chart, Dependency};
use crate::chart::LoadError;
use crate::gostd::strconv::quote;
use crate::template::funcs::semver::{parse_version, Constraints};
use std::io::Write;
use std::path::Path;

/// Why `dependency list` failed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The chart does not load (the loader's message, as Helm prints it).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Writing the output failed.
    #[error("writing the dependency list: {0}")]
    Write(#[from] std::io::Error),
}

/// Prints `helm dependency list CHART` for the chart at `chart_path` (a
/// directory or an archive; the path cleaned as Helm cleans it) to `out`.
pub fn list(chart_path: &str, max_col_width: usize, out: &mut dyn Write) -> Result<(), ListError> {
    let c = crate::chart::load(chart_path)?;
    let charts = super::join(chart_path, "charts");
    if c.metadata.dependencies.is_empty() {
        writeln!(out, "WARNING: no dependencies at {charts}")?;
        return Ok(());
    }
    let mut rows = vec![vec![
        "NAME".to_string(),
        "VERSION".to_string(),
        "REPOSITORY".to_string(),
        "STATUS".to_string(),
    ]];
    for d in &c.metadata.dependencies {
        rows.push(vec![
            d.name.clone(),
            d.version.clone(),
            d.repository.clone(),
            status(&charts, d, &c),
        ]);
    }
    writeln!(out, "{}", table(&rows, max_col_width))?;
    writeln!(out)?;
    print_missing(&charts, &c.metadata.dependencies, out)?;
    Ok(())
}

/// The entries of `dir` (sorted, as Go's `filepath.Glob` returns them)
/// whose names `keep` accepts, as `dir/name`.
fn glob(dir: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| keep(n))
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v.into_iter().map(|n| format!("{dir}/{n}")).collect()
}

/// Masterminds `StrictNewVersion` accepts `v`: `MAJOR.MINOR.PATCH`, no
/// `v`, no leading zeros, optional pre-release and build.
fn strict_version(v: &str) -> bool {
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let ident =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
        })
        && pre.is_none_or(|p| {
            p.split('.').all(|i| {
                ident(i)
                    && !(i.len() > 1 && i.starts_with('0') && i.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        && build.is_none_or(|b| b.split('.').all(ident))
}

/// `wrong version`, `invalid version`, or `None` when `version` satisfies
/// the dependency's constraint.
fn version_status(version: &str, d: &Dependency) -> Option<&'static str> {
    if version == d.version {
        return None;
    }
    let Ok(c) = Constraints::parse(&d.version) else {
        return Some("invalid version");
    };
    let Ok(v) = parse_version(version) else {
        return Some("invalid version");
    };
    if c.check(&v) {
        None
    } else {
        Some("wrong version")
    }
}

/// Helm's `statArchiveForStatus`.
fn archive_status(archive: &str, d: &Dependency) -> Option<&'static str> {
    if std::fs::metadata(archive).is_err() {
        return None;
    }
    let Ok(c) = crate::chart::load(archive) else {
        return Some("corrupt");
    };
    if c.metadata.name != d.name {
        return Some("misnamed");
    }
    Some(version_status(&c.metadata.version, d).unwrap_or("ok"))
}

/// Helm's `dependencyStatus`.
fn status(charts: &str, d: &Dependency, parent: &Chart) -> String {
    let prefix = format!("{}-", d.name);
    let archives = glob(charts, |n| n.starts_with(&prefix) && n.ends_with(".tgz"));
    if archives.len() > 1 {
        let found: Vec<&String> = archives
            .iter()
            .filter(|a| {
                let base = Path::new(a.as_str())
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let stem = base.strip_suffix(".tgz").unwrap_or(&base);
                strict_version(stem.strip_prefix(&prefix).unwrap_or(stem))
            })
            .collect();
        if found.len() == 1 {
            if let Some(r) = archive_status(found[0], d) {
                return r.to_string();
            }
        } else if found.len() > 1 {
            return "too many matches".to_string();
        }
    } else if archives.len() == 1 {
        if let Some(r) = archive_status(&archives[0], d) {
            return r.to_string();
        }
    }
    let Some(dep) = parent
        .dependencies
        .iter()
        .rev()
        .find(|c| c.metadata.name == d.name)
    else {
        return "missing".to_string();
    };
    version_status(&dep.metadata.version, d)
        .unwrap_or("unpacked")
        .to_string()
}

/// Helm's `printMissing`: a warning for each chart in `charts/` that is not
/// a chart, or not a dependency of Chart.yaml.
fn print_missing(charts: &str, reqs: &[Dependency], out: &mut dyn Write) -> std::io::Result<()> {
    for f in glob(charts, |_| true) {
        let is_dir = match std::fs::metadata(&f) {
            Ok(m) => m.is_dir(),
            Err(e) => {
                writeln!(out, "Warning: stat {f}: {e}")?;
                continue;
            }
        };
        if !is_dir && !f.ends_with(".tgz") {
            continue;
        }
        match crate::chart::load(&f) {
            Err(_) => writeln!(out, "WARNING: {} is not a chart.", quote(&f))?,
            Ok(c) => {
                if !reqs.iter().any(|d| d.name == c.metadata.name) {
                    writeln!(out, "WARNING: {} is not in Chart.yaml.", quote(&f))?;
                }
            }
        }
    }
    Ok(())
}

/// The display width of a cell (one column per character; East Asian
/// wide characters count two, as go-runewidth counts them).
fn width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    let u = c as u32;
    let wide = matches!(u,
        0x1100..=0x115F | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF | 0xA000..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F | 0x1F900..=0x1F9FF | 0x20000..=0x3FFFD);
    if wide {
        2
    } else {
        1
    }
}

/// `strutil.Resize`: pad to `n`, or cut to fit with `...`.
fn resize(s: &str, n: usize) -> String {
    let w = width(s);
    if w == n {
        return s.to_string();
    }
    if w < n {
        return format!("{s}{}", " ".repeat(n - w));
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        out.push(c);
        let cw = char_width(c);
        if used + cw >= n.saturating_sub(3) {
            break;
        }
        used += cw;
    }
    out.push_str("...");
    out
}

/// `uitable.Table.String()` with `MaxColWidth` (0: no limit).
fn table(rows: &[Vec<String>], max: usize) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            let mut w = width(cell);
            if max != 0 && w > max {
                w = max;
            }
            widths[i] = widths[i].max(w);
        }
    }
    rows.iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(i, c)| {
                    if widths[i] > 0 {
                        resize(c, widths[i])
                    } else {
                        c.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_uitables() {
        let rows = vec![
            vec!["NAME".into(), "VERSION".into(), "STATUS".into()],
            vec!["child".into(), ">=0.1.0 <1".into(), "unpacked".into()],
        ];
        assert_eq!(
            table(&rows, 80),
            "NAME \tVERSION   \tSTATUS  \nchild\t>=0.1.0 <1\tunpacked"
        );
        // helm dependency list --max-col-width 5
        assert_eq!(table(&rows, 5), "NAME \tVE...\tST...\nchild\t>=...\tun...");
    }

    #[test]
    fn strict_versions() {
        assert!(strict_version("1.2.3"));
        assert!(strict_version("1.2.3-rc.1+b"));
        assert!(!strict_version("v1.2.3"));
        assert!(!strict_version("1.2"));
        assert!(!strict_version("01.2.3"));
    }
}
