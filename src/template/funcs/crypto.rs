//! Sprig crypto (genPrivateKey, genCA, certs, htpasswd, bcrypt, AES, derivePassword).
use super::Registry;

/// Adds this family's functions to the registry.
pub fn register(_r: &mut Registry) {}
