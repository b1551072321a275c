//! Ports of Go's standard library behaviour that Helm's output depends on.
//!
//! This module owns every piece of Go semantics the rest of rudder needs,
//! each written once and checked against Go's documented examples and real
//! Helm output; every stage (yaml, template, release, plan, the CLI) uses it
//! from here. It is the first stage: it uses no other module of the crate.
//! - [`gostr`]: Go strings that are not UTF-8;
//! - [`strconv`]: `strconv` quoting and unquoting;
//! - [`unicode`]: Unicode printability, categories and case mappings;
//! - [`fmt`]: the string-level `fmt` verbs (`%q`, `%U`, `%c`, ...);
//! - [`time`]: `time.Time`, layouts, `time.Parse`, zones, `time.Duration`;
//! - [`float`]: `strconv.FormatFloat`, shortest and with a precision;
//! - [`num`]: `strconv.ParseInt`, `ParseUint`, `ParseFloat`;
//! - [`json`]: `encoding/json`'s float64 text and `json.Marshal` spelling;
//! - [`base64`]: `encoding/base64`'s `StdEncoding` and its error offsets;
//! - [`flate`], [`gzip`]: `compress/flate` and `compress/gzip` writers, byte for byte.
pub mod base64;
pub mod flate;
pub mod float;
pub mod fmt;
pub mod gostr;
pub mod gzip;
pub mod json;
pub mod num;
pub mod strconv;
pub mod time;
pub mod unicode;
