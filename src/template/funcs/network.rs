//! getHostByName (offline unless enabled).
use super::Registry;

/// Adds this family's functions to the registry.
pub fn register(_r: &mut Registry) {}
