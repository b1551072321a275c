//! Helm's lenient SemVer check for chart versions (Masterminds `NewVersion`).
//!
//! `v1.0`, `1` and `1.2` are valid chart versions (missing parts default to
//! 0, a leading `v` is allowed); `1.0.0.0` is not. The render stage owns
//! version *constraints*; this module only says whether a version parses.

/// A parsed lenient version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LenientVersion {
    /// Major.
    pub major: u64,
    /// Minor (0 when absent).
    pub minor: u64,
    /// Patch (0 when absent).
    pub patch: u64,
    /// Pre-release identifiers, dot-joined (empty when absent).
    pub pre: String,
    /// Build metadata (empty when absent).
    pub build: String,
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn dotted_ok(s: &str) -> bool {
    s.split('.').all(ident_ok)
}

/// Why a version is not a lenient SemVer version; it prints Masterminds'
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// The text is not a version (`1.0.0.0`, `x`).
    #[error("Invalid Semantic Version")]
    Invalid,
    /// A number is too large for 64 bits.
    #[error("Error parsing version segment: {0}")]
    Segment(std::num::ParseIntError),
    /// A numeric pre-release identifier has a leading zero (`1.0.0-01`).
    #[error("Version segment starts with 0")]
    LeadingZero,
}

/// Parses a version as Masterminds `semver.NewVersion` does; the error
/// prints Masterminds' message.
///
/// ```
/// use rudder::chart::semver::parse_lenient;
/// assert!(parse_lenient("v1.2").is_ok());
/// assert!(parse_lenient("1.0.0.0").is_err());
/// assert!(parse_lenient("1.0.0-01").is_err());
/// ```
pub fn parse_lenient(v: &str) -> Result<LenientVersion, VersionError> {
    let s = v.strip_prefix('v').unwrap_or(v);
    let (rest, build) = match s.split_once('+') {
        Some((r, b)) => {
            if !dotted_ok(b) {
                return Err(VersionError::Invalid);
            }
            (r, b)
        }
        None => (s, ""),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => {
            if !dotted_ok(p) {
                return Err(VersionError::Invalid);
            }
            (c, p)
        }
        None => (rest, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(VersionError::Invalid);
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(VersionError::Invalid);
        }
        nums[i] = p.parse::<u64>().map_err(VersionError::Segment)?;
    }
    for id in pre.split('.').filter(|_| !pre.is_empty()) {
        if id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(VersionError::LeadingZero);
        }
    }
    Ok(LenientVersion {
        major: nums[0],
        minor: nums[1],
        patch: nums[2],
        pre: pre.to_string(),
        build: build.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_versions() {
        for ok in [
            "1",
            "1.2",
            "v1.0",
            "1.2.3",
            "01.02.03",
            "1.2.3-alpha.1+build.5",
            "0.1.0",
            "1.0.0-0",
        ] {
            assert!(parse_lenient(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1.0.0.0",
            "a",
            "1..2",
            "1.2.3-",
            "1.2.3+",
            "1.2.3-a..b",
            "1.0.0-01",
            "vv1",
            " 1",
        ] {
            assert!(parse_lenient(bad).is_err(), "{bad}");
        }
    }
}
