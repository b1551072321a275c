//! Sprig random functions (randAlphaNum, ..., shuffle, uuidv4).
use super::Registry;

/// Adds this family's functions to the registry.
pub fn register(_r: &mut Registry) {}
