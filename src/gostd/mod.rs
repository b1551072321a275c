//! Ports of Go's standard library behaviour that Helm's output depends on.
//!
//! This module owns every piece of Go semantics the rest of rudder needs,
//! each written once and checked against Go's documented examples and
//! real Helm output: Go strings that are not UTF-8 ([`gostr`]), `strconv`
//! quoting ([`strconv`]), Unicode printability ([`unicode`]) and the
//! string-level `fmt` verbs ([`fmt`]). It is the first stage: it uses no
//! other module of the crate.
pub mod fmt;
pub mod gostr;
pub mod strconv;
pub mod unicode;
