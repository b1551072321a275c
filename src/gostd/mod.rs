//! Ports of Go's standard library behaviour that Helm's output depends on.
//!
//! Each Go behaviour rudder reproduces lives here once, checked against
//! Go's own documented examples, and every stage (yaml, template, release,
//! plan, the CLI) uses it from here:
//! - [`time`]: `time.Time`, layouts, `time.Parse`, zones, `time.Duration`;
//! - [`num`]: `strconv.ParseInt`, `ParseUint`, `ParseFloat`;
//! - [`json`]: `encoding/json`'s float64 text and `json.Marshal` spelling;
//! - [`base64`]: `encoding/base64`'s `StdEncoding` and its error offsets.
pub mod base64;
pub mod json;
pub mod num;
pub mod time;
