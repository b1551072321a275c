//! Reading the files rudder is handed (values, releases files, objects,
//! configs, plans, release records, journals, a simulated cluster's state
//! and log) within one size limit, so that a huge input is refused at once
//! instead of being read and parsed into several times its size.
//!
//! The limit, [`MAX_INPUT_BYTES`] (64 MiB), is far above any real input:
//! Helm keeps a whole release (chart, values and manifest, gzipped) in one
//! Secret of at most 1 MiB, and caps a chart at 100 MiB with 5 MiB per file
//! (see [`crate::chart::loader`]). Helm reads a values file of any size; a
//! values file over 64 MiB is the one input rudder refuses that Helm would
//! read (taking gigabytes to do it).
use std::io::{ErrorKind, Read};
use std::path::Path;

/// The most bytes rudder reads from one input file or stream: 64 MiB.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// The error for an input past [`MAX_INPUT_BYTES`]; its text follows the
/// caller's `open PATH: ` or `read PATH: `.
pub fn too_large() -> std::io::Error {
    std::io::Error::new(
        ErrorKind::FileTooLarge,
        format!("larger than the input limit of {MAX_INPUT_BYTES} bytes (64 MiB)"),
    )
}

/// Reads all of `r`, refusing more than [`MAX_INPUT_BYTES`]. Reads in
/// chunks: `read_to_end` would reserve room for a whole file up front.
pub fn read_from(r: impl Read) -> std::io::Result<Vec<u8>> {
    read_into(r, Vec::new())
}

fn read_into(mut r: impl Read, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(buf),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if (buf.len() + n) as u64 > MAX_INPUT_BYTES {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `std::fs::read` within [`MAX_INPUT_BYTES`]: a regular file over the
/// limit is refused before any of it is read.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len > MAX_INPUT_BYTES {
        return Err(too_large());
    }
    read_into(f, Vec::with_capacity(len as usize + 1))
}

/// `std::fs::read_to_string` within [`MAX_INPUT_BYTES`].
pub fn read_to_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    String::from_utf8(read(path)?).map_err(|_| {
        std::io::Error::new(ErrorKind::InvalidData, "stream did not contain valid UTF-8")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_past_the_limit_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, "a: 1\n").unwrap();
        assert_eq!(read_to_string(&small).unwrap(), "a: 1\n");
        // A sparse file: its size is past the limit, nothing is written.
        let big = dir.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_INPUT_BYTES + 1)
            .unwrap();
        let e = read(&big).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
        assert!(
            e.to_string().starts_with("larger than the input limit"),
            "{e}"
        );
        // A stream is cut at the limit.
        let e = read_from(std::io::repeat(b'a')).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
    }
}
