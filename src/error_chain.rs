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
/// let e = rudder::duration::parse("5 minutes").unwrap_err();
/// assert!(rudder::error_chain(&e).starts_with("time: invalid duration"));
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
