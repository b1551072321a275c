//! Sprig type conversions (atoi, int, int64, float64, toString, toStrings, toDecimal, ...).
use super::Registry;

/// Adds this family's functions to the registry.
pub fn register(_r: &mut Registry) {}
