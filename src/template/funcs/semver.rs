//! Sprig semver and semverCompare (Masterminds/semver v3 constraints).
use super::Registry;

/// Adds this family's functions to the registry.
pub fn register(_r: &mut Registry) {}
