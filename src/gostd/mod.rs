//! Ports of Go's standard library behaviour that Helm's output depends on.
//!
//! Each Go behaviour rudder reproduces lives here once, checked against
//! Go's own documented examples, and every stage (yaml, template, release,
//! plan, the CLI) uses it from here:
//! - [`time`]: `time.Time`, layouts, `time.Parse`, zones, `time.Duration`.
pub mod time;
