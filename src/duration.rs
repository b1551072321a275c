//! Go's durations (`time.ParseDuration`, `Duration.String`), as Helm's
//! `--timeout` and the releases file write them.
use std::time::Duration;

/// Go's `time.ParseDuration` for the units a timeout uses: `20s`, `1m30s`,
/// `500ms`, `2h`, `1.5s`. A bare `0` is zero.
pub fn parse(s: &str) -> Result<Duration, String> {
    let bad = || format!("time: invalid duration {s:?}");
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
            .ok_or_else(|| format!("time: missing unit in duration {s:?}"))?;
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
            u => return Err(format!("time: unknown unit {u:?} in duration {s:?}")),
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
