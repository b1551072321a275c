//! The content-addressed chart cache: every downloaded chart archive is
//! kept once, under the sha256 of its bytes
//! (`<Helm's cache home>/rudder/sha256/<hex>.tgz`). A chart whose index or
//! manifest gives a digest already in the cache is never downloaded
//! again, and every archive read back is checked against its name.
//!
//! Files are written whole (temporary file, then rename), so concurrent
//! rudder processes sharing a cache never see a half-written file; a
//! download that fails or does not match its digest leaves nothing.
//!
//! ```
//! use rudder::source::cache::{sha256_hex, ContentCache};
//! let dir = tempfile::tempdir()?;
//! let cache = ContentCache::new(dir.path());
//! let hex = cache.put(b"chart bytes")?;
//! assert_eq!(hex, sha256_hex(b"chart bytes"));
//! assert_eq!(cache.get(&hex).as_deref(), Some(&b"chart bytes"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A digest as indexes and manifests give it (`sha256:<hex>` or bare
/// hex), reduced to lowercase hex; `None` for another algorithm or a
/// malformed value.
pub fn normalize_digest(d: &str) -> Option<String> {
    let hex = d.strip_prefix("sha256:").unwrap_or(d);
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

/// A download whose bytes do not match the digest its index or manifest
/// gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("digest mismatch for {what}: expected sha256:{expected}, got sha256:{actual}")]
pub struct DigestMismatch {
    /// What was downloaded (a URL or a reference).
    pub what: String,
    /// The digest the index or manifest gives.
    pub expected: String,
    /// The digest of the bytes received.
    pub actual: String,
}

/// Checks `bytes` against `expected` (`sha256:<hex>` or hex; an empty or
/// non-sha256 digest checks nothing, as an index entry without a digest
/// promises nothing).
pub fn check_digest(what: &str, expected: &str, bytes: &[u8]) -> Result<(), DigestMismatch> {
    let Some(want) = normalize_digest(expected) else {
        return Ok(());
    };
    let got = sha256_hex(bytes);
    if got == want {
        Ok(())
    } else {
        Err(DigestMismatch {
            what: what.to_string(),
            expected: want,
            actual: got,
        })
    }
}

/// The cache directory.
#[derive(Debug, Clone)]
pub struct ContentCache {
    dir: PathBuf,
}

impl ContentCache {
    /// A cache in `dir` (created on the first write).
    pub fn new(dir: impl AsRef<Path>) -> ContentCache {
        ContentCache {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// The file that holds the archive of digest `hex`.
    pub fn path(&self, hex: &str) -> PathBuf {
        self.dir.join(format!("{hex}.tgz"))
    }

    /// The archive of digest `digest` (`sha256:<hex>` or hex), when the
    /// cache has it and its bytes still match; a file that does not match
    /// is removed.
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        let hex = normalize_digest(digest)?;
        let p = self.path(&hex);
        let bytes = crate::input::read(&p).ok()?;
        if sha256_hex(&bytes) == hex {
            Some(bytes)
        } else {
            let _ = std::fs::remove_file(&p);
            None
        }
    }

    /// Stores `bytes` under their digest (atomically) and returns it.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let hex = sha256_hex(bytes);
        let p = self.path(&hex);
        if p.exists() {
            return Ok(hex);
        }
        std::fs::create_dir_all(&self.dir)?;
        crate::fsutil::replace_file(&p, bytes, crate::fsutil::Mode::PRIVATE)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(hex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let d = sha256_hex(b"x");
        assert_eq!(
            normalize_digest(&format!("sha256:{}", d.to_uppercase())),
            Some(d.clone())
        );
        assert_eq!(normalize_digest("sha512:ab"), None);
        assert!(check_digest("u", &d, b"x").is_ok());
        assert!(check_digest("u", "", b"x").is_ok());
        let e = check_digest("http://h/a.tgz", &d, b"y").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "digest mismatch for http://h/a.tgz: expected sha256:{d}, got sha256:{}",
                sha256_hex(b"y")
            )
        );
    }

    #[test]
    fn a_corrupted_entry_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let c = ContentCache::new(dir.path().join("c"));
        let hex = c.put(b"abc").unwrap();
        std::fs::write(c.path(&hex), b"abd").unwrap();
        assert_eq!(c.get(&hex), None);
        assert!(!c.path(&hex).exists());
    }
}
