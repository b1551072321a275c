//! Sprig defaults and flow (default, empty, coalesce, ternary, fail-free helpers, all, any, ...).
use super::Registry;

/// Adds this family's functions to the registry.
pub fn register(_r: &mut Registry) {}
