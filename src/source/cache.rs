//! The content-addressed chart cache: every downloaded chart archive is
//! kept once, under the sha256 of its bytes
//! (`<Helm's cache home>/rudder/sha256/<hex>.tgz`). A chart whose index or
//! manifest gives a digest already in the cache is never downloaded
//! again, and every archive read back is checked against its name.
//!
//! Files are written whole (temporary file, then rename), so concurrent
//! rudder processes sharing a cache never see a half-written file; a
//! download that fails or does not match its digest leaves nothing. An
//! archive that was just saved elsewhere whole (`pull -d`, a chart's
//! `charts/`) enters the cache as a hard link to that file
//! ([`ContentCache::put_linked`]) when the cache directory is its owner's
//! alone: no second copy, no second file to create.
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
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
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
/// promises nothing) and returns their sha256, hex.
pub fn check_digest(what: &str, expected: &str, bytes: &[u8]) -> Result<String, DigestMismatch> {
    let got = sha256_hex(bytes);
    let Some(want) = normalize_digest(expected) else {
        return Ok(got);
    };
    if got == want {
        Ok(got)
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
        self.create_dir()?;
        self.write(&p, bytes)?;
        Ok(hex)
    }

    /// Stores `bytes`, which the caller has just written whole to the file
    /// `saved`, under their digest, and returns it: as a hard link to
    /// `saved` when the cache directory is private to its owner (0700: the
    /// link keeps `saved`'s mode, and only the owner reaches it through the
    /// cache), `saved` is a regular file of the owner's with as many bytes
    /// and on the same file system; otherwise written as [`Self::put`]
    /// writes it. Whatever is linked is checked again when it is read
    /// ([`Self::get`]): a file changed in place later is dropped then.
    pub fn put_linked(&self, saved: &Path, bytes: &[u8]) -> std::io::Result<String> {
        self.put_linked_hashed(saved, sha256_hex(bytes), bytes)
    }

    /// [`Self::put_linked`] of bytes whose sha256 (`hex`) the caller has
    /// just computed (a wrong one costs a download: reads check it).
    pub(crate) fn put_linked_hashed(
        &self,
        saved: &Path,
        hex: String,
        bytes: &[u8],
    ) -> std::io::Result<String> {
        let p = self.path(&hex);
        if p.exists() {
            return Ok(hex);
        }
        let dir = self.create_dir()?;
        if dir.mode() & 0o077 == 0 {
            let ours = |m: &std::fs::Metadata| {
                m.file_type().is_file() && m.uid() == dir.uid() && m.len() == bytes.len() as u64
            };
            if std::fs::symlink_metadata(saved).is_ok_and(|m| ours(&m)) {
                match std::fs::hard_link(saved, &p) {
                    Ok(()) if std::fs::symlink_metadata(&p).is_ok_and(|m| ours(&m)) => {
                        return Ok(hex)
                    }
                    Ok(()) => {
                        let _ = std::fs::remove_file(&p);
                    }
                    // Another process cached it first.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(hex),
                    // Another file system, links not allowed: a copy.
                    Err(_) => {}
                }
            }
        }
        self.write(&p, bytes)?;
        Ok(hex)
    }

    /// The cache directory's metadata, created first when missing: its
    /// parents as any directory, the directory itself owner-only (0700).
    fn create_dir(&self) -> std::io::Result<std::fs::Metadata> {
        if let Ok(m) = std::fs::metadata(&self.dir) {
            return Ok(m);
        }
        if let Some(parent) = self.dir.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        std::fs::metadata(&self.dir)
    }

    fn write(&self, p: &Path, bytes: &[u8]) -> std::io::Result<()> {
        crate::fsutil::replace_file(p, bytes, crate::fsutil::Mode::PRIVATE)
            .map_err(|e| std::io::Error::other(e.to_string()))
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
    fn a_saved_file_is_linked_into_a_private_cache() {
        let dir = tempfile::tempdir().unwrap();
        let c = ContentCache::new(dir.path().join("c"));
        let saved = dir.path().join("a.tgz");
        std::fs::write(&saved, b"chart").unwrap();
        let hex = c.put_linked(&saved, b"chart").unwrap();
        assert_eq!(hex, sha256_hex(b"chart"));
        let (a, b) = (
            std::fs::metadata(&saved).unwrap(),
            std::fs::metadata(c.path(&hex)).unwrap(),
        );
        assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "not linked");
        assert_eq!(
            std::fs::metadata(dir.path().join("c")).unwrap().mode() & 0o777,
            0o700
        );
        assert_eq!(c.get(&hex).as_deref(), Some(&b"chart"[..]));
        // Changed in place after it was cached: dropped when read.
        std::fs::write(&saved, b"chary").unwrap();
        assert_eq!(c.get(&hex), None);
    }

    #[test]
    fn a_shared_cache_directory_gets_a_private_copy() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cdir = dir.path().join("c");
        std::fs::create_dir(&cdir).unwrap();
        std::fs::set_permissions(&cdir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = ContentCache::new(&cdir);
        let saved = dir.path().join("a.tgz");
        std::fs::write(&saved, b"chart").unwrap();
        let hex = c.put_linked(&saved, b"chart").unwrap();
        let (a, b) = (
            std::fs::metadata(&saved).unwrap(),
            std::fs::metadata(c.path(&hex)).unwrap(),
        );
        assert_ne!(a.ino(), b.ino(), "linked into a shared directory");
        assert_eq!(b.mode() & 0o777, 0o600);
        // A file that does not hold the bytes is not linked either.
        let other = dir.path().join("b.tgz");
        std::fs::write(&other, b"short").unwrap();
        let c2 = ContentCache::new(dir.path().join("c2"));
        let hex = c2.put_linked(&other, b"longer bytes").unwrap();
        assert_eq!(c2.get(&hex).as_deref(), Some(&b"longer bytes"[..]));
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
