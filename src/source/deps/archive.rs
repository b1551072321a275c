//! A chart archive written as Helm's `chartutil.Save` writes it, for the
//! `file://` dependencies `dependency update` packages into `charts/`.
//!
//! [`crate::chart::package_bytes`] writes reproducible archives (entries
//! sorted, a fixed time); here the tar stream is Helm's instead:
//!
//! - Helm's entry order (`writeTarContents`): `Chart.yaml`, `Chart.lock`
//!   (apiVersion v2 only), `values.yaml`, `values.schema.json`, the
//!   templates and the other files in load order, then each subchart the
//!   same way under `charts/<name>/`;
//! - Go's `archive/tar` headers: USTAR (a long name split into prefix and
//!   name) when the name allows, else PAX with a `path` record; mode 0644,
//!   uid/gid 0, empty user and group names, the device numbers written as
//!   octal zeros;
//! - each entry's time as Helm 4 takes it (`writeToTar`): the file's own
//!   modification time where the chart was read from disk (a directory's
//!   files, or the headers of a subchart archive), `Chart.lock`'s
//!   `generated` for the lock, and the current time otherwise (Helm 3 uses
//!   the current time for every entry). Go rounds times to the second.
//!
//! The gzip layer is Go's `gzip.NewWriter` as Helm sets it up (no time,
//! `Helm` comment, Helm's extra field, the default level), through
//! [`crate::gostd::gzip`], fed the tar stream in the same `Write` calls
//! Go's `archive/tar` makes (Go's deflate output depends on that split):
//! the archive is Helm 4's byte for byte.
use crate::chart::metadata::{lock_to_yaml, metadata_to_yaml, DecodeNotes};
use crate::chart::model::Chart;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The gzip extra field Helm writes into every chart archive.
const HELM_GZIP_EXTRA: &[u8] = b"+aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=";

/// Why a chart could not be archived.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The chart (or a subchart) does not validate (`chart validation: ...`).
    #[error("chart validation: {0}")]
    Validation(#[from] crate::chart::metadata::ValidationError),
    /// `values.schema.json` is not JSON.
    #[error("Invalid JSON in values.schema.json")]
    InvalidSchema,
    /// The chart's name is not a plain file name.
    #[error("{0:?} is not a valid chart name")]
    InvalidName(String),
    /// Compressing failed.
    #[error("writing the archive of {chart}: {source}")]
    Gzip {
        /// The chart.
        chart: String,
        /// The cause.
        source: crate::gostd::gzip::GzipError,
    },
}

/// The modification times (Unix seconds, rounded as Go rounds them) of a
/// chart's files, by path relative to the chart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModTimes(pub BTreeMap<String, i64>);

impl ModTimes {
    /// The times of `chart`'s files as found under `dir`, the directory it
    /// was loaded from (files that cannot be read get none).
    pub fn from_dir(chart: &Chart, dir: &Path) -> ModTimes {
        let mut m = BTreeMap::new();
        for f in &chart.raw {
            if let Ok(md) = std::fs::metadata(dir.join(&f.name)) {
                if let Ok(t) = md.modified() {
                    m.insert(f.name.clone(), round_system_time(t));
                }
            }
        }
        ModTimes(m)
    }

    /// The times recorded in a chart archive's tar headers, by path with
    /// the archive's top directory removed (as the loader names files).
    pub fn from_archive(data: &[u8]) -> ModTimes {
        let mut m = BTreeMap::new();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(data));
        let Ok(entries) = archive.entries() else {
            return ModTimes(m);
        };
        for e in entries.flatten() {
            let Ok(path) = e.path() else { continue };
            let name = path.to_string_lossy().replace('\\', "/");
            let Some((_, rest)) = name.split_once('/') else {
                continue;
            };
            if let Ok(t) = e.header().mtime() {
                m.insert(rest.to_string(), i64::try_from(t).unwrap_or(i64::MAX));
            }
        }
        ModTimes(m)
    }

    /// The times under `prefix/` (a subchart's files), prefix removed.
    fn under(&self, prefix: &str) -> ModTimes {
        let p = format!("{prefix}/");
        ModTimes(
            self.0
                .iter()
                .filter_map(|(k, v)| k.strip_prefix(&p).map(|r| (r.to_string(), *v)))
                .collect(),
        )
    }
}

/// Go's `t.Round(time.Second)` of a system time, in Unix seconds.
fn round_system_time(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => {
            let s = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            if d.subsec_nanos() >= 500_000_000 {
                s.saturating_add(1)
            } else {
                s
            }
        }
        Err(e) => {
            let d = e.duration();
            let s = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            // Go rounds halfway values away from zero.
            if d.subsec_nanos() >= 500_000_000 {
                s - 1
            } else {
                s
            }
        }
    }
}

fn now_unix() -> i64 {
    round_system_time(std::time::SystemTime::now())
}

/// `Chart.lock`'s `generated`, in Unix seconds rounded, if it parses.
fn lock_time(generated: &str) -> Option<i64> {
    if generated.is_empty() {
        return None;
    }
    let t = crate::gostd::time::parse_in_location(
        "2006-01-02T15:04:05Z07:00",
        generated,
        crate::gostd::time::Location::Utc,
    )
    .ok()?;
    if t.is_zero() {
        return None;
    }
    let s = t.unix_sec();
    Some(if t.nanosecond() >= 500_000_000 {
        s.saturating_add(1)
    } else {
        s
    })
}

/// The subcharts of `chart` paired with the `charts/` entry each was loaded
/// from (`x` for a directory, `x.tgz` for an archive), in the loader's
/// order; `None` where that cannot be told.
fn subchart_sources(chart: &Chart) -> Vec<Option<String>> {
    let mut names: Vec<String> = Vec::new();
    for f in &chart.raw {
        let Some(rest) = f.name.strip_prefix("charts/") else {
            continue;
        };
        if f.name.ends_with(".prov") {
            continue;
        }
        let cname = rest.split('/').next().unwrap_or("");
        if cname.is_empty() || cname.starts_with('_') || cname.starts_with('.') {
            continue;
        }
        if !names.iter().any(|n| n == cname) {
            names.push(cname.to_string());
        }
    }
    names.sort();
    if names.len() == chart.dependencies.len() {
        names.into_iter().map(Some).collect()
    } else {
        vec![None; chart.dependencies.len()]
    }
}

/// One archive entry: path, bytes, Unix time.
type Entry = (String, Vec<u8>, i64);

fn collect(
    chart: &Chart,
    prefix: &str,
    times: &ModTimes,
    now: i64,
    out: &mut Vec<Entry>,
) -> Result<(), ArchiveError> {
    let name = &chart.metadata.name;
    if name.contains('/') || name.is_empty() || name == "." || name == ".." {
        return Err(ArchiveError::InvalidName(name.clone()));
    }
    let base = if prefix.is_empty() {
        name.clone()
    } else {
        format!("{prefix}/{name}")
    };
    let t = |file: &str| times.0.get(file).copied().unwrap_or(now);
    let mut md = chart.metadata.clone();
    md.validate(DecodeNotes::default())?;
    // Helm drops `dependencies` from an apiVersion v1 Chart.yaml (they
    // belong in requirements.yaml there).
    let mut written = chart.metadata.clone();
    if written.api_version == "v1" {
        written.dependencies.clear();
    }
    out.push((
        format!("{base}/Chart.yaml"),
        metadata_to_yaml(&written).into_bytes(),
        t("Chart.yaml"),
    ));
    if chart.metadata.api_version == "v2" {
        if let Some(lock) = &chart.lock {
            out.push((
                format!("{base}/Chart.lock"),
                lock_to_yaml(lock).into_bytes(),
                lock_time(&lock.generated).unwrap_or(now),
            ));
        }
    }
    for f in chart.raw.iter().filter(|f| f.name == "values.yaml") {
        out.push((
            format!("{base}/values.yaml"),
            f.data.to_vec(),
            t("values.yaml"),
        ));
    }
    if let Some(schema) = &chart.schema {
        if serde_json::from_slice::<serde::de::IgnoredAny>(schema).is_err() {
            return Err(ArchiveError::InvalidSchema);
        }
        out.push((
            format!("{base}/values.schema.json"),
            schema.clone(),
            t("values.schema.json"),
        ));
    }
    for f in chart.templates.iter().chain(chart.files.iter()) {
        out.push((format!("{base}/{}", f.name), f.data.to_vec(), t(&f.name)));
    }
    let sources = subchart_sources(chart);
    for (dep, src) in chart.dependencies.iter().zip(sources) {
        let sub_times = match src {
            Some(s) if s.ends_with(".tgz") => {
                let key = format!("charts/{s}");
                match chart.raw.iter().find(|f| f.name == key) {
                    Some(f) => ModTimes::from_archive(f.data.as_slice()),
                    None => ModTimes::default(),
                }
            }
            Some(s) => times.under(&format!("charts/{s}")),
            None => ModTimes::default(),
        };
        collect(dep, &format!("{base}/charts"), &sub_times, now, out)?;
    }
    Ok(())
}

/// The archive of `chart` as Helm's `chartutil.Save` writes it, with
/// `times` the modification times of its files (see [`ModTimes`]).
pub fn helm_archive(chart: &Chart, times: &ModTimes) -> Result<Vec<u8>, ArchiveError> {
    let mut entries = Vec::new();
    collect(chart, "", times, now_unix(), &mut entries)?;
    let tar = go_tar(&entries);
    let header = crate::gostd::gzip::Header {
        extra: Some(HELM_GZIP_EXTRA.to_vec()),
        comment: "Helm".into(),
        ..crate::gostd::gzip::Header::default()
    };
    let gz_err = |source| ArchiveError::Gzip {
        chart: chart.metadata.name.clone(),
        source,
    };
    let mut gz = crate::gostd::gzip::Writer::new(
        Vec::new(),
        crate::gostd::flate::DEFAULT_COMPRESSION,
        header,
    )
    .map_err(gz_err)?;
    let mut start = 0;
    for &end in &tar.calls {
        gz.write_chunk(&tar.bytes[start..end]).map_err(gz_err)?;
        start = end;
    }
    gz.finish().map_err(gz_err)
}

/// The uncompressed tar stream of an archive (for comparisons).
pub fn tar_stream(archive: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(archive).read_to_end(&mut out)?;
    Ok(out)
}

const BLOCK: usize = 512;

/// Go's `formatOctal`: zero-padded octal with a trailing NUL.
fn octal(field: &mut [u8], v: u64) {
    let s = format!("{v:o}");
    let width = field.len() - 1;
    let padded = if s.len() < width {
        format!("{}{s}", "0".repeat(width - s.len()))
    } else {
        s
    };
    let b = padded.as_bytes();
    let n = b.len().min(field.len());
    field[..n].copy_from_slice(&b[..n]);
    if n < field.len() {
        field[n] = 0;
    }
}

/// Go's `formatString`: the bytes, NUL-terminated when shorter.
fn string_field(field: &mut [u8], s: &[u8]) {
    let n = s.len().min(field.len());
    field[..n].copy_from_slice(&s[..n]);
    if n < field.len() {
        field[n] = 0;
    }
}

/// Go's `splitUSTARPath`.
fn split_ustar(name: &str) -> Option<(&str, &str)> {
    let mut length = name.len();
    if length <= 100 || !name.is_ascii() {
        return None;
    } else if length > 156 {
        length = 156;
    } else if name.as_bytes()[length - 1] == b'/' {
        length -= 1;
    }
    let i = name[..length].rfind('/')?;
    let nlen = name.len() - i - 1;
    if i == 0 || nlen > 100 || nlen == 0 || i > 155 {
        return None;
    }
    Some((&name[..i], &name[i + 1..]))
}

/// A header block with the checksum Go writes (six octal digits, NUL,
/// space).
fn finish_header(mut h: [u8; BLOCK]) -> [u8; BLOCK] {
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    h
}

fn set_magic(h: &mut [u8; BLOCK]) {
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
}

/// A tar stream and where Go's `tar.Writer` cuts it into `Write` calls on
/// the writer beneath (the gzip writer).
struct TarCalls {
    bytes: Vec<u8>,
    /// The end offset of each call, in order.
    calls: Vec<usize>,
}

impl TarCalls {
    /// One `Write` call (Go skips empty ones: they change nothing).
    fn call(&mut self, data: &[u8]) {
        if !data.is_empty() {
            self.bytes.extend_from_slice(data);
            self.calls.push(self.bytes.len());
        }
    }

    /// An entry's contents (one call) and its padding (one call, made by
    /// the next header's or the footer's `Flush`).
    fn data(&mut self, data: &[u8]) {
        self.call(data);
        let pad = (BLOCK - data.len() % BLOCK) % BLOCK;
        self.call(&[0u8; BLOCK][..pad]);
    }
}

/// Go's PAX record `"%d %s=%s\n"`, its length counting itself.
fn pax_record(key: &str, value: &str) -> String {
    let body = format!(" {key}={value}\n");
    let mut n = body.len() + 1;
    loop {
        let total = n.to_string().len() + body.len();
        if total == n {
            return format!("{n}{body}");
        }
        n = total;
    }
}

/// Go's `toASCII`: non-ASCII characters dropped.
fn to_ascii(s: &str) -> String {
    s.chars().filter(char::is_ascii).collect()
}

/// Regular-file entries as Go's `tar.Writer` writes headers
/// `{Name, Mode: 0644, Size, ModTime}`, then the two zero blocks of the
/// end of the archive, in the `Write` calls Go makes.
fn go_tar(entries: &[Entry]) -> TarCalls {
    let mut out = TarCalls {
        bytes: Vec::new(),
        calls: Vec::new(),
    };
    for (name, data, mtime) in entries {
        let mtime = u64::try_from(*mtime).unwrap_or(0);
        let ustar_ok = name.len() <= 100 && name.is_ascii();
        let split = if ustar_ok { None } else { split_ustar(name) };
        let mut h = [0u8; BLOCK];
        if ustar_ok || split.is_some() {
            let (prefix, short) = split.unwrap_or(("", name.as_str()));
            string_field(&mut h[0..100], short.as_bytes());
            string_field(&mut h[345..500], prefix.as_bytes());
        } else {
            // PAX: an extended header carrying the path, then the entry
            // with its name cut to fit.
            let rec = pax_record("path", name);
            let (dir, file) = match name.rfind('/') {
                Some(i) => (&name[..=i], &name[i + 1..]),
                None => ("", name.as_str()),
            };
            let mut pax_name = to_ascii(&format!("{dir}PaxHeaders.0/{file}"));
            pax_name.truncate(100);
            let pax_name = pax_name.trim_end_matches('/').to_string();
            let mut p = [0u8; BLOCK];
            string_field(&mut p[0..100], pax_name.as_bytes());
            octal(&mut p[100..108], 0);
            octal(&mut p[108..116], 0);
            octal(&mut p[116..124], 0);
            octal(&mut p[124..136], rec.len() as u64);
            octal(&mut p[136..148], 0);
            p[156] = b'x';
            set_magic(&mut p);
            out.call(&finish_header(p));
            out.data(rec.as_bytes());
            string_field(&mut h[0..100], to_ascii(name).as_bytes());
        }
        octal(&mut h[100..108], 0o644);
        octal(&mut h[108..116], 0);
        octal(&mut h[116..124], 0);
        octal(&mut h[124..136], data.len() as u64);
        octal(&mut h[136..148], mtime);
        h[156] = b'0';
        set_magic(&mut h);
        string_field(&mut h[265..297], b"");
        string_field(&mut h[297..329], b"");
        octal(&mut h[329..337], 0);
        octal(&mut h[337..345], 0);
        out.call(&finish_header(h));
        out.data(data);
    }
    out.call(&[0u8; BLOCK]);
    out.call(&[0u8; BLOCK]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_count_their_own_length() {
        assert_eq!(pax_record("path", "a"), "9 path=a\n");
        assert_eq!(pax_record("path", "abcdefgh"), "17 path=abcdefgh\n");
        let long = "x".repeat(95);
        let r = pax_record("path", &long);
        assert_eq!(r.len().to_string(), r.split(' ').next().unwrap());
    }

    #[test]
    fn ustar_split_as_go() {
        let n = format!("{}/{}", "a".repeat(60), "b".repeat(60));
        assert_eq!(split_ustar(&n), Some((&n[..60], &n[61..])));
        assert_eq!(split_ustar("short"), None);
        assert_eq!(split_ustar(&"c".repeat(120)), None);
    }

    #[test]
    fn headers_are_gos() {
        let calls = go_tar(&[("c/Chart.yaml".into(), b"name: c\n".to_vec(), 0o17)]);
        // Header, contents, padding, two footer blocks: Go's calls.
        assert_eq!(calls.calls, [512, 520, 1024, 1536, 2048]);
        let tar = calls.bytes;
        assert_eq!(tar.len(), 3 * BLOCK + BLOCK);
        let h = &tar[..BLOCK];
        assert_eq!(&h[100..108], b"0000644\0");
        assert_eq!(&h[124..136], b"00000000010\0");
        assert_eq!(&h[136..148], b"00000000017\0");
        assert_eq!(&h[329..345], b"0000000\x000000000\0");
        assert_eq!(h[155], b' ');
        // tar reads it back.
        let mut a = tar::Archive::new(tar.as_slice());
        let e: Vec<_> = a.entries().unwrap().map(|e| e.unwrap().size()).collect();
        assert_eq!(e, [8]);
    }
}
