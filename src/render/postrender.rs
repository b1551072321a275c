//! `--post-renderer`: Helm pipes the rendered manifests through an
//! executable and uses what it prints instead (`pkg/postrender`), with
//! Helm's lookup rules and error messages.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A post-renderer: the executable's absolute path and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostRenderer {
    /// The absolute path Helm resolved (`exec.LookPath`, then `filepath.Abs`).
    pub path: PathBuf,
    /// `--post-renderer-args`, each one argument.
    pub args: Vec<String>,
}

/// Why a post-renderer could not be found or did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostRenderError {
    /// `exec.LookPath` failed (the flag's own error text, without the
    /// `invalid argument` frame the flag parser adds).
    #[error("unable to find binary at {given}: exec: {quoted}: {reason}", quoted = crate::gostd::strconv::quote(given))]
    NotFound {
        /// The path or name as given.
        given: String,
        /// Go's reason (`executable file not found in $PATH`, ...).
        reason: String,
    },
    /// The command failed: Helm's `error while running command ...`.
    #[error("error while running command {}. error output:\n{stderr}: {status}", path.display())]
    Failed {
        /// The executable.
        path: PathBuf,
        /// What it wrote to stderr.
        stderr: String,
        /// Go's `ExitError` text (`exit status 1`, `signal: killed`) or the
        /// start error.
        status: String,
    },
}

fn is_executable(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("stat {}: no such file or directory", p.display()))
        }
        Err(e) => Err(format!("stat {}: {e}", p.display())),
        Ok(m) if m.is_dir() => Err("is a directory".into()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("permission denied".into()),
        Ok(_) => Ok(()),
    }
}

impl PostRenderer {
    /// Resolves `binary` as Helm's `postrender.NewExec` does: a name
    /// without `/` is searched in `PATH`, a path must be an executable
    /// file; the result is made absolute.
    pub fn new(binary: &str, args: Vec<String>) -> Result<PostRenderer, PostRenderError> {
        let not_found = |reason: String| PostRenderError::NotFound {
            given: binary.to_string(),
            reason,
        };
        let found = if binary.contains('/') {
            is_executable(Path::new(binary)).map_err(not_found)?;
            PathBuf::from(binary)
        } else {
            let path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path)
                .map(|d| {
                    if d.as_os_str().is_empty() {
                        PathBuf::from(".").join(binary)
                    } else {
                        d.join(binary)
                    }
                })
                .find(|c| is_executable(c).is_ok())
                .ok_or_else(|| not_found("executable file not found in $PATH".into()))?
        };
        let abs = if found.is_absolute() {
            found
        } else {
            std::env::current_dir()
                .map(|d| d.join(&found))
                .unwrap_or(found)
        };
        Ok(PostRenderer {
            path: clean(&abs),
            args,
        })
    }

    /// Runs the post-renderer on `manifests` and returns its stdout.
    pub fn run(&self, manifests: &[u8]) -> Result<Vec<u8>, PostRenderError> {
        let failed = |stderr: String, status: String| PostRenderError::Failed {
            path: self.path.clone(),
            stderr,
            status,
        };
        let mut child = Command::new(&self.path)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                failed(
                    String::new(),
                    format!("fork/exec {}: {}", self.path.display(), go_os_error(&e)),
                )
            })?;
        let input = manifests.to_vec();
        let stdin = child.stdin.take();
        // Written on its own thread, as Helm does, so a renderer that
        // prints before reading everything cannot dead-lock.
        let writer = std::thread::spawn(move || {
            if let Some(mut s) = stdin {
                let _ = s.write_all(&input);
            }
        });
        let out = child
            .wait_with_output()
            .map_err(|e| failed(String::new(), e.to_string()))?;
        let _ = writer.join();
        if !out.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&out.stderr).into_owned(),
                exit_text(&out.status),
            ));
        }
        Ok(out.stdout)
    }
}

/// Go's `ExitError` text.
fn exit_text(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    match status.signal() {
        Some(sig) => format!("signal: {}", signal_name(sig)),
        None => status.to_string(),
    }
}

/// Go's `syscall.Signal.String()` for the common signals.
fn signal_name(sig: i32) -> String {
    match sig {
        1 => "hangup".into(),
        2 => "interrupt".into(),
        3 => "quit".into(),
        6 => "aborted".into(),
        9 => "killed".into(),
        11 => "segmentation fault".into(),
        13 => "broken pipe".into(),
        15 => "terminated".into(),
        n => format!("signal {n}"),
    }
}

/// Go's text for an OS error (`exec format error`, `permission denied`).
fn go_os_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => {
            let mut t = s[..i].to_string();
            if let Some(c) = t.get(..1) {
                t = c.to_lowercase() + &t[1..];
            }
            t
        }
        None => s,
    }
}

/// Go's `filepath.Clean` for an absolute path.
fn clean(p: &Path) -> PathBuf {
    let mut out: Vec<&std::ffi::OsStr> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    let mut r = PathBuf::from("/");
    r.extend(out);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_errors_read_as_helm() {
        let e = PostRenderer::new("no-such-renderer-xyz", vec![]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unable to find binary at no-such-renderer-xyz: exec: \"no-such-renderer-xyz\": executable file not found in $PATH"
        );
        assert_eq!(clean(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
