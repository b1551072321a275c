//! Go's durations (`time.ParseDuration`, `Duration.String`), as Helm's
//! `--timeout` and the releases file write them.
use std::time::Duration;

/// Why a duration did not parse. It prints Go's `time.ParseDuration`
/// error, as Helm's `--timeout` flag reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all (`5x5`, an empty text, too large).
    #[error("time: invalid duration {input:?}")]
    Invalid {
        /// The text.
        input: String,
    },
    /// A number without a unit (`20`).
    #[error("time: missing unit in duration {input:?}")]
    MissingUnit {
        /// The text.
        input: String,
    },
    /// A unit Go does not know (`20d`).
    #[error("time: unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The text.
        input: String,
    },
}

/// Go's `time.ParseDuration` for the units a timeout uses: `20s`, `1m30s`,
/// `500ms`, `2h`, `1.5s`. A bare `0` is zero.
///
/// ```
/// use rudder::duration::{parse, DurationError};
/// assert_eq!(parse("1m30s"), Ok(std::time::Duration::from_secs(90)));
/// assert!(matches!(parse("20d"), Err(DurationError::UnknownUnit { unit, .. }) if unit == "d"));
/// assert_eq!(parse("20").unwrap_err().to_string(), "time: missing unit in duration \"20\"");
/// ```
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let bad = || DurationError::Invalid {
        input: s.to_string(),
    };
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| DurationError::MissingUnit {
                input: s.to_string(),
            })?;
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => {
                return Err(DurationError::UnknownUnit {
                    unit: u.to_string(),
                    input: s.to_string(),
                })
            }
        };
        total += n * unit;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > 1e12 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(total))
}

/// Go's `Duration.String()` for whole and fractional seconds: `5m0s`, `20s`,
/// `1h0m0s`, `1.5s`, `0s`.
pub fn format(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs_total = d.as_secs();
    let frac = d.subsec_millis();
    let h = secs_total / 3600;
    let m = (secs_total % 3600) / 60;
    let s = secs_total % 60;
    let sec = if frac == 0 {
        format!("{s}s")
    } else {
        let f = format!("{:03}", frac);
        format!("{s}.{}s", f.trim_end_matches('0'))
    };
    if h > 0 {
        format!("{h}h{m}m{sec}")
    } else if m > 0 {
        format!("{m}m{sec}")
    } else {
        sec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_round_trip() {
        assert_eq!(parse("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
    }
}
