//! Helm's values flags (`-f`, `--set`, `--set-string`, `--set-json`,
//! `--set-file`, `--set-literal`), shared by every command that renders.
use clap::Args;
use rudder::render::strvals::{parse_into, parse_literal_into, Mode};
use rudder::render::values::{merge_maps, Map};

/// The values flags, with Helm's names and meaning.
#[derive(Debug, Args, Default, Clone)]
pub struct ValuesArgs {
    /// Values files (repeatable, or comma-separated).
    #[arg(short = 'f', long = "values", value_delimiter = ',')]
    pub values: Vec<String>,
    /// `key=value` pairs (typed).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// `key=value` pairs, always strings.
    #[arg(long = "set-string")]
    pub set_string: Vec<String>,
    /// `key=<json>` pairs.
    #[arg(long = "set-json")]
    pub set_json: Vec<String>,
    /// `key=path` pairs; the value is the file's content.
    #[arg(long = "set-file")]
    pub set_file: Vec<String>,
    /// `key=value`, the whole value one literal string.
    #[arg(long = "set-literal")]
    pub set_literal: Vec<String>,
}

/// Reads a file, or standard input for `-`, with Go's error wording.
pub fn read_input(path: &str) -> Result<Vec<u8>, String> {
    if path == "-" {
        return rudder::input::read_from(std::io::stdin()).map_err(|e| rudder::error_chain(&e));
    }
    rudder::render::strvals::check_file_url(path).map_err(|e| rudder::error_chain(&e))?;
    rudder::input::read(path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
            _ => e.to_string(),
        };
        format!("open {path}: {reason}")
    })
}

impl ValuesArgs {
    /// Helm's `values.Options.MergeValues`.
    pub fn user_values(&self) -> Result<Map, String> {
        let mut base = Map::new();
        for f in &self.values {
            let bytes = read_input(f)?;
            match rudder::render::values::parse_values_bytes(f, &bytes) {
                Ok(m) => merge_maps(&mut base, m),
                Err(e) => return Err(e.to_string()),
            }
        }
        for s in &self.set_json {
            parse_into(s, &mut base, Mode::Json, None)
                .map_err(|_| format!("failed parsing --set-json data {s}"))?;
        }
        for s in &self.set {
            parse_into(s, &mut base, Mode::Typed, None)
                .map_err(|e| format!("failed parsing --set data: {e}"))?;
        }
        for s in &self.set_string {
            parse_into(s, &mut base, Mode::String, None)
                .map_err(|e| format!("failed parsing --set-string data: {e}"))?;
        }
        let reader = |p: &str| -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
            // Helm's `string(bytes)`: bytes that are not UTF-8 stay bytes.
            Ok(read_input(p).map(|b| rudder::gostd::gostr::go_string_from_bytes(&b))?)
        };
        for s in &self.set_file {
            parse_into(s, &mut base, Mode::File, Some(&reader))
                .map_err(|e| format!("failed parsing --set-file data: {e}"))?;
        }
        for s in &self.set_literal {
            parse_literal_into(s, &mut base)
                .map_err(|e| format!("failed parsing --set-literal data: {e}"))?;
        }
        Ok(base)
    }
}
