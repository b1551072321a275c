//! One line for an error and its sources.
use std::error::Error;

/// An error and its sources on one line, the way the `rudder` binary
/// prints them: `a: b: c`. A source whose text its parent already quotes
/// is not repeated.
///
/// rudder's errors follow the Rust API guidelines: a message never
/// repeats its source's text, so printing only `{}` of an error shows the
/// outermost step. Use this (or `anyhow`'s `{:#}`) to show the whole
/// chain.
///
/// ```
/// use std::{error::Error, fmt, io};
///
/// #[derive(Debug)]
/// struct Reading(io::Error);
/// impl fmt::Display for Reading {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
///         f.write_str("reading values.yaml")
///     }
/// }
/// impl Error for Reading {
///     fn source(&self) -> Option<&(dyn Error + 'static)> {
///         Some(&self.0)
///     }
/// }
///
/// let e = Reading(io::Error::other("disk full"));
/// assert_eq!(e.to_string(), "reading values.yaml");
/// assert_eq!(rudder::error_chain(&e), "reading values.yaml: disk full");
/// ```
pub fn error_chain(e: &dyn Error) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !msg.contains(&t) {
            msg.push_str(": ");
            msg.push_str(&t);
        }
        cur = s.source();
    }
    msg
}
