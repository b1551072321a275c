//! `helm template`'s output: the exact stdout framing and the
//! `--output-dir` tree.
//!
//! stdout: `TrimSpace(manifest) + "\n"`, where the manifest is the CRDs (with
//! `--include-crds`, raw) and the sorted manifests, each framed as
//! `---\n# Source: <path>\n<doc>\n`; then every hook framed the same way
//! (unless `--no-hooks`; test hooks dropped with `--skip-tests`).
//! `--show-only` re-splits that text and keeps the documents whose source
//! matches a pattern. `--output-dir` writes the same frames into files,
//! appending when a file gets several documents.
use super::manifests::HookEvent;
use super::pipeline::Rendered;
use crate::manifest::split::{go_trim_space, split_manifests};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// How `helm template` prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// `--include-crds`
    pub include_crds: bool,
    /// `--skip-tests`
    pub skip_tests: bool,
    /// `--no-hooks`
    pub no_hooks: bool,
    /// `--show-only` patterns, in order.
    pub show_only: Vec<String>,
}

/// Errors from printing or writing the output.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A `--show-only` pattern matched nothing.
    #[error("could not find template {0} in chart")]
    NoSuchTemplate(String),
    /// Writing under `--output-dir` failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The cause (its text ends the message).
        error: io::Error,
    },
}

fn frame(out: &mut String, source: &str, body: &str) {
    out.push_str("---\n# Source: ");
    out.push_str(source);
    out.push('\n');
    out.push_str(body);
    out.push('\n');
}

/// The release manifest (Helm's `rel.Manifest` when printing to stdout).
pub fn release_manifest(r: &Rendered, include_crds: bool) -> String {
    let mut b = String::with_capacity(r.files.values().map(|f| f.len() + 64).sum());
    if include_crds {
        for c in &r.crds {
            frame(&mut b, &c.path, &c.content.text());
        }
    }
    for m in &r.manifests {
        frame(&mut b, &m.source, &m.content);
    }
    b
}

fn is_test_hook(events: &[HookEvent]) -> bool {
    events.contains(&HookEvent::Test)
}

/// Go's `path/filepath.Match` (no `**`; `*` and `?` do not cross `/`).
pub fn filepath_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        let Some((&c, rest)) = p.split_first() else {
            return s.is_empty();
        };
        match c {
            '*' => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != '/')
                .any(|i| go(rest, &s[i..])),
            '?' => s.first().is_some_and(|x| *x != '/') && go(rest, &s[1..]),
            '[' => {
                let Some(&x) = s.first() else { return false };
                if x == '/' {
                    return false;
                }
                let mut i = 0;
                let neg = rest.first() == Some(&'^');
                if neg {
                    i = 1;
                }
                let mut hit = false;
                let mut first = true;
                loop {
                    let Some(&a) = rest.get(i) else { return false };
                    if a == ']' && !first {
                        i += 1;
                        break;
                    }
                    first = false;
                    let a = if a == '\\' {
                        i += 1;
                        match rest.get(i) {
                            Some(&e) => e,
                            None => return false,
                        }
                    } else {
                        a
                    };
                    i += 1;
                    if rest.get(i) == Some(&'-') && rest.get(i + 1).is_some_and(|c| *c != ']') {
                        let b = rest[i + 1];
                        i += 2;
                        if a <= x && x <= b {
                            hit = true;
                        }
                    } else if a == x {
                        hit = true;
                    }
                }
                hit != neg && go(&rest[i..], &s[1..])
            }
            '\\' => match rest.split_first() {
                Some((&e, r2)) => s.first() == Some(&e) && go(r2, &s[1..]),
                None => false,
            },
            _ => s.first() == Some(&c) && go(rest, &s[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    go(&p, &s)
}

/// What `helm template` prints to stdout without `--output-dir`.
pub fn template_stdout(r: &Rendered, opts: &OutputOptions) -> Result<String, OutputError> {
    template_stdout_of(&release_manifest(r, opts.include_crds), r, opts)
}

/// [`template_stdout`] with the release manifest given: what
/// `--post-renderer` printed for [`release_manifest`] (Helm prints it,
/// trimmed, then the hooks, and `--show-only` selects from that text).
pub fn template_stdout_of(
    manifest: &str,
    r: &Rendered,
    opts: &OutputOptions,
) -> Result<String, OutputError> {
    let mut out = String::with_capacity(manifest.len() + 1);
    out.push_str(go_trim_space(manifest));
    out.push('\n');
    if !opts.no_hooks {
        for h in &r.hooks {
            if opts.skip_tests && is_test_hook(&h.events) {
                continue;
            }
            frame(&mut out, &h.source, &h.content);
        }
    }
    if opts.show_only.is_empty() {
        return Ok(out);
    }
    let docs = split_manifests(&out);
    let mut selected = String::new();
    for pat in &opts.show_only {
        let pat = pat.replace('\\', "/");
        let mut missing = true;
        for doc in &docs {
            let Some(name) = source_name(doc) else {
                continue;
            };
            if filepath_match(&pat, name) {
                selected.push_str("---\n");
                selected.push_str(doc);
                selected.push('\n');
                missing = false;
            }
        }
        if missing {
            return Err(OutputError::NoSuchTemplate(pat));
        }
    }
    Ok(selected)
}

/// The path after the chart name in the first `# Source: <chart>/<path>`.
fn source_name(doc: &str) -> Option<&str> {
    let idx = doc.find("# Source: ")?;
    let rest = &doc[idx + "# Source: ".len()..];
    let slash = rest.find('/')?;
    if slash == 0 || rest[..slash].contains('\n') {
        return None;
    }
    let tail = &rest[slash + 1..];
    let end = tail.find('\n').unwrap_or(tail.len());
    let name = &tail[..end];
    if name.is_empty() {
        None
    } else {
        Some(name)
    }
}

/// Files below this many are written on the calling thread alone.
const PARALLEL_WRITE_MIN_FILES: usize = 32;

/// The `--output-dir` files of one render, in the order Helm first writes
/// them, each with the (source, body) of all of its frames.
#[derive(Default)]
struct OutputTree<'a> {
    files: Vec<(PathBuf, Vec<Frame<'a>>)>,
    index: std::collections::HashMap<PathBuf, usize>,
    log: String,
}

/// One `---\n# Source: <source>\n<body>\n` block of an output file.
type Frame<'a> = (&'a str, Cow<'a, str>);

/// The largest write buffer a thread keeps after writing a file.
const MAX_KEPT_WRITE_BUFFER: usize = 4 << 20;

thread_local! {
    // Each writing thread frames its files into one reused buffer: the
    // rendered text is copied once, into memory already touched, instead
    // of into a fresh string per file that lives until the end.
    static WRITE_BUFFER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl<'a> OutputTree<'a> {
    /// Helm writes `name` under `dir` (creating it, or appending when this
    /// render already wrote it) and prints `wrote <path>`.
    fn add(&mut self, dir: &Path, name: &'a str, body: Cow<'a, str>) {
        let path: PathBuf = PathBuf::from(format!("{}/{}", dir.display(), name));
        self.log.push_str("wrote ");
        self.log.push_str(&path.display().to_string());
        self.log.push('\n');
        let i = match self.index.get(&path) {
            Some(&i) => i,
            None => {
                self.index.insert(path.clone(), self.files.len());
                self.files.push((path, Vec::new()));
                self.files.len() - 1
            }
        };
        self.files[i].1.push((name, body));
    }

    /// Creates the directories (each once) and writes every file whole:
    /// the same tree as Helm's create-then-append sequence, with one
    /// create per file, on several threads for large trees. The error is
    /// the one for the first file, in Helm's order, that failed.
    fn write(self) -> Result<String, OutputError> {
        let io_err = |path: &Path, error| OutputError::Io {
            path: path.display().to_string(),
            error,
        };
        let mut made: BTreeSet<&Path> = BTreeSet::new();
        for (path, _) in &self.files {
            if let Some(parent) = path.parent() {
                if made.insert(parent) {
                    fs::create_dir_all(parent).map_err(|e| io_err(path, e))?;
                }
            }
        }
        let results = crate::par::map_ordered(
            &self.files,
            |_| 1,
            PARALLEL_WRITE_MIN_FILES,
            |(path, frames)| {
                WRITE_BUFFER.with(|buf| {
                    let mut buf = buf.borrow_mut();
                    buf.clear();
                    for (name, body) in frames {
                        frame(&mut buf, name, body);
                    }
                    let r = fs::write(path, crate::template::output_bytes(&buf));
                    if buf.capacity() > MAX_KEPT_WRITE_BUFFER {
                        *buf = String::new();
                    }
                    r
                })
            },
        );
        for ((path, _), r) in self.files.iter().zip(results) {
            r.map_err(|e| io_err(path, e))?;
        }
        Ok(self.log)
    }
}

/// Writes the output tree under `dir` (and `dir/<release>` for manifests and
/// hooks when `release_dir` is set, as `--release-name` does; CRDs always go
/// to `dir`). Returns what Helm prints to stdout meanwhile.
pub fn write_output_dir(
    r: &Rendered,
    opts: &OutputOptions,
    dir: &Path,
    release_dir: Option<&str>,
) -> Result<String, OutputError> {
    let mut tree = OutputTree::default();
    if opts.include_crds {
        for c in &r.crds {
            tree.add(dir, &c.path, c.content.text());
        }
    }
    let sub: PathBuf = match release_dir {
        Some(rel) => dir.join(rel),
        None => dir.to_path_buf(),
    };
    for m in &r.manifests {
        tree.add(&sub, &m.source, Cow::Borrowed(&m.content));
    }
    if !opts.no_hooks {
        // Hooks go after the manifests, appended to files already written.
        for h in &r.hooks {
            if opts.skip_tests && is_test_hook(&h.events) {
                continue;
            }
            tree.add(&sub, &h.source, Cow::Borrowed(&h.content));
        }
    }
    let mut log = tree.write()?;
    // The (empty) release manifest is still printed.
    log.push('\n');
    Ok(log)
}

/// `--debug` output for a render whose manifests did not decode: every
/// non-blank rendered file verbatim.
pub fn debug_dump<'a>(files: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let mut b = String::new();
    for (name, content) in files {
        if content.trim().is_empty() {
            continue;
        }
        frame(&mut b, name, content);
    }
    let mut out = go_trim_space(&b).to_string();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_filepath_match() {
        assert!(filepath_match("templates/*.yaml", "templates/a.yaml"));
        assert!(!filepath_match("templates/*.yaml", "templates/x/a.yaml"));
        assert!(filepath_match("templates/[a-c].yaml", "templates/b.yaml"));
        assert!(filepath_match(
            "charts/sub/templates/cm.yaml",
            "charts/sub/templates/cm.yaml"
        ));
    }

    #[test]
    fn source_names() {
        assert_eq!(
            source_name("# Source: c/templates/a.yaml\nx: 1"),
            Some("templates/a.yaml")
        );
        assert_eq!(source_name("x: 1"), None);
    }
}
