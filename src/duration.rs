//! Go durations as rudder's own timeouts use them: Helm's `--timeout`, a
//! plan's `timeout` and the releases file. Parsing and printing are Go's
//! ([`crate::gostd::time::parse_duration`] and
//! [`crate::gostd::time::format_duration`], exact to the nanosecond); this
//! module only adds the rule of a timeout: it is not negative.
use crate::gostd::time::{format_duration, parse_duration};
use std::time::Duration;

/// Why a timeout did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a Go duration; prints Go's `time.ParseDuration` error, as Helm's
    /// `--timeout` flag reports it.
    #[error(transparent)]
    Go(#[from] crate::gostd::time::DurationError),
    /// A Go duration below zero (`-5s`), which no wait can last. The
    /// message leaves the text to the caller, which names the flag or field.
    #[error("a negative duration: rudder's timeouts and delays are zero or more")]
    Negative {
        /// The text.
        input: String,
    },
}

/// Go's `time.ParseDuration` for a timeout: `20s`, `1m30s`, `500ms`, `2h`,
/// `1.5s`, `0`; a negative duration is refused.
///
/// ```
/// use rudder::duration::{parse, DurationError};
/// use rudder::gostd::time::DurationError as Go;
/// assert_eq!(parse("1m30s"), Ok(std::time::Duration::from_secs(90)));
/// assert!(matches!(parse("20d"), Err(DurationError::Go(Go::UnknownUnit { unit, .. })) if unit == "d"));
/// assert_eq!(parse("20").unwrap_err().to_string(), "time: missing unit in duration \"20\"");
/// assert!(matches!(parse("-1s"), Err(DurationError::Negative { .. })));
/// ```
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let nanos = parse_duration(s)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError::Negative {
            input: s.to_string(),
        })
}

/// Go's `Duration.String()`: `5m0s`, `20s`, `1h0m0s`, `1.5s`, `250µs`, `0s`.
/// Durations past Go's range (about 292 years) print as its largest.
pub fn format(d: Duration) -> String {
    format_duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_round_trip() {
        assert_eq!(parse("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        // Exact to the nanosecond, both ways (the f64 parser was not).
        assert_eq!(parse("1.000000001s").unwrap(), Duration::new(1, 1));
        assert_eq!(format(Duration::new(1, 1)), "1.000000001s");
        assert_eq!(format(Duration::from_micros(250)), "250µs");
        assert_eq!(parse("0.1s").unwrap(), Duration::from_millis(100));
    }

    #[test]
    fn a_negative_timeout_is_refused_by_the_timeout_rule() {
        assert_eq!(
            parse("-5s"),
            Err(DurationError::Negative {
                input: "-5s".into()
            })
        );
        assert_eq!(parse("-0").unwrap(), Duration::ZERO);
    }
}
