//! Timestamps as Helm stores and prints them.
//!
//! Helm records times with Go's `time.Time`: RFC 3339 with nanoseconds in
//! the writing process's local zone, the zero time written as `""` (Helm 3)
//! or left out (Helm 4). The CLI prints them with Go's `time.ANSIC` layout
//! (`history`, `status`) or `Time.String()` (`list`). This type keeps the
//! instant and the UTC offset it was written with, so every one of those
//! forms can be reproduced without a date-time dependency.
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A point in time with the UTC offset it was recorded in, or Go's zero time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HelmTime {
    /// `None` is Go's zero `time.Time` (written as `""`).
    inner: Option<Instant>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Instant {
    /// Seconds since the Unix epoch (UTC).
    secs: i64,
    /// Nanoseconds within the second.
    nanos: u32,
    /// Offset from UTC in seconds; `None` means `Z` (Go's `time.UTC`).
    offset: Option<i32>,
}

/// `YYYY-MM-DD<sep>hh:mm:ss` plus Go's trimmed nanosecond fraction, the
/// part RFC 3339 and Go's `%v` layout of a time share.
fn date_time_nanos(i: &Instant, sep: char) -> String {
    let c = i.civil();
    let mut out = format!(
        "{}-{:02}-{:02}{sep}{:02}:{:02}:{:02}",
        fmt_year(c.year),
        c.month,
        c.day,
        c.hour,
        c.min,
        c.sec
    );
    if i.nanos != 0 {
        let frac = format!("{:09}", i.nanos);
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out
}

/// An RFC 3339 timestamp that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {0:?}: want RFC 3339 like 2006-01-02T15:04:05.999999999Z07:00")]
pub struct TimeParseError(pub String);

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days since 1970-01-01 for a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date for a day count since 1970-01-01: (year, month 1-12, day 1-31).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Broken-down local wall clock of an instant.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    min: u32,
    sec: u32,
    weekday: usize,
}

impl Instant {
    fn civil(&self) -> Civil {
        let local = self.secs + i64::from(self.offset.unwrap_or(0));
        let days = local.div_euclid(86_400);
        let rem = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            min: ((rem % 3600) / 60) as u32,
            sec: (rem % 60) as u32,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as usize,
        }
    }
}

fn fmt_year(y: i64) -> String {
    if (0..10_000).contains(&y) {
        format!("{y:04}")
    } else {
        y.to_string()
    }
}

impl HelmTime {
    /// Go's zero time (written `""` by Helm 3).
    pub const ZERO: HelmTime = HelmTime { inner: None };

    /// The current time in UTC, with nanoseconds, as Helm's `time.Now()` with `TZ=UTC`.
    pub fn now() -> HelmTime {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        HelmTime::from_unix(d.as_secs() as i64, d.subsec_nanos())
    }

    /// A UTC time from Unix seconds and nanoseconds.
    pub fn from_unix(secs: i64, nanos: u32) -> HelmTime {
        HelmTime {
            inner: Some(Instant {
                secs,
                nanos: nanos.min(999_999_999),
                offset: None,
            }),
        }
    }

    /// Whether this is Go's zero time.
    pub fn is_zero(&self) -> bool {
        self.inner.is_none()
    }

    /// Seconds since the Unix epoch (0 for the zero time).
    pub fn unix(&self) -> i64 {
        self.inner.map(|i| i.secs).unwrap_or(0)
    }

    /// Parses RFC 3339 (`""` is the zero time).
    pub fn parse(s: &str) -> Result<HelmTime, TimeParseError> {
        if s.is_empty() {
            return Ok(HelmTime::ZERO);
        }
        let err = || TimeParseError(s.to_string());
        let b = s.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || (b[10] != b'T' && b[10] != b't') {
            return Err(err());
        }
        if b[13] != b':' || b[16] != b':' {
            return Err(err());
        }
        let num = |r: std::ops::Range<usize>| -> Result<u32, TimeParseError> {
            let part = s.get(r).ok_or_else(err)?;
            if !part.bytes().all(|c| c.is_ascii_digit()) {
                return Err(err());
            }
            part.parse::<u32>().map_err(|_| err())
        };
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&month) || day == 0 || day > 31 || hour > 23 || min > 59 || sec > 59 {
            return Err(err());
        }
        let mut pos = 19;
        let mut nanos = 0u32;
        if b.get(pos) == Some(&b'.') {
            pos += 1;
            let start = pos;
            while pos < b.len() && b[pos].is_ascii_digit() {
                pos += 1;
            }
            let digits = &s[start..pos];
            if digits.is_empty() || digits.len() > 9 {
                return Err(err());
            }
            let mut padded = digits.to_string();
            while padded.len() < 9 {
                padded.push('0');
            }
            nanos = padded.parse().map_err(|_| err())?;
        }
        let offset = match &s[pos..] {
            "Z" | "z" => None,
            rest => {
                let rb = rest.as_bytes();
                if rb.len() != 6 || (rb[0] != b'+' && rb[0] != b'-') || rb[3] != b':' {
                    return Err(err());
                }
                let oh = num(pos + 1..pos + 3)?;
                let om = num(pos + 4..pos + 6)?;
                if oh > 23 || om > 59 {
                    return Err(err());
                }
                let o = (oh * 3600 + om * 60) as i32;
                Some(if rb[0] == b'-' { -o } else { o })
            }
        };
        let days = days_from_civil(i64::from(year), month, day);
        let local = days * 86_400 + i64::from(hour * 3600 + min * 60 + sec);
        let secs = local - i64::from(offset.unwrap_or(0));
        Ok(HelmTime {
            inner: Some(Instant {
                secs,
                nanos,
                offset,
            }),
        })
    }

    fn offset_colon(o: Option<i32>) -> String {
        match o {
            None => "Z".into(),
            Some(o) => {
                let sign = if o < 0 { '-' } else { '+' };
                let a = o.unsigned_abs();
                format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60)
            }
        }
    }

    fn offset_plain(o: i32) -> String {
        let sign = if o < 0 { '-' } else { '+' };
        let a = o.unsigned_abs();
        format!("{sign}{:02}{:02}", a / 3600, (a % 3600) / 60)
    }

    /// Go's `time.RFC3339Nano` (`encoding/json` form); `""` for the zero time.
    pub fn to_rfc3339_nano(&self) -> String {
        let Some(i) = self.inner else {
            return String::new();
        };
        let mut out = date_time_nanos(&i, 'T');
        out.push_str(&Self::offset_colon(i.offset));
        out
    }

    /// Go's `time.RFC3339` (seconds, no fraction); Go's zero time prints as
    /// `0001-01-01T00:00:00Z`.
    pub fn to_rfc3339(&self) -> String {
        let i = self.inner.unwrap_or(Instant {
            secs: days_from_civil(1, 1, 1) * 86_400,
            nanos: 0,
            offset: None,
        });
        let c = i.civil();
        format!(
            "{}-{:02}-{:02}T{:02}:{:02}:{:02}{}",
            fmt_year(c.year),
            c.month,
            c.day,
            c.hour,
            c.min,
            c.sec,
            Self::offset_colon(i.offset)
        )
    }

    /// Go's `time.ANSIC` layout (`Mon Jan _2 15:04:05 2006`), used by
    /// `helm history` and `helm status`. The zero time prints as Go prints it.
    pub fn to_ansic(&self) -> String {
        let i = self.inner.unwrap_or(Instant {
            secs: days_from_civil(1, 1, 1) * 86_400,
            nanos: 0,
            offset: None,
        });
        let c = i.civil();
        format!(
            "{} {} {:>2} {:02}:{:02}:{:02} {}",
            DAYS[c.weekday],
            MONTHS[(c.month - 1) as usize],
            c.day,
            c.hour,
            c.min,
            c.sec,
            fmt_year(c.year)
        )
    }

    /// Go's `Time.String()` (`2006-01-02 15:04:05.999999999 -0700 MST`), used by
    /// `helm list`. A `Z` time prints zone `UTC`; a numeric offset prints it
    /// twice, as Go does for a zone without a name.
    pub fn to_go_string(&self) -> String {
        let i = self.inner.unwrap_or(Instant {
            secs: days_from_civil(1, 1, 1) * 86_400,
            nanos: 0,
            offset: None,
        });
        let mut out = date_time_nanos(&i, ' ');
        match i.offset {
            None => out.push_str(" +0000 UTC"),
            Some(o) => {
                let p = Self::offset_plain(o);
                out.push(' ');
                out.push_str(&p);
                out.push(' ');
                out.push_str(&p);
            }
        }
        out
    }
}

impl fmt::Display for HelmTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339_nano())
    }
}

impl Serialize for HelmTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339_nano())
    }
}

impl<'de> Deserialize<'de> for HelmTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HelmTime, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(HelmTime::ZERO),
            Some(s) => HelmTime::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_helm_forms() {
        for s in [
            "2026-11-29T22:50:17.680260609Z",
            "2026-11-30T00:39:53.040333429+01:00",
            "2024-02-29T23:59:59Z",
            "1999-12-31T00:00:00.5-05:30",
        ] {
            assert_eq!(HelmTime::parse(s).unwrap().to_rfc3339_nano(), s);
        }
        assert!(HelmTime::parse("").unwrap().is_zero());
        assert!(HelmTime::parse("2026-13-01T00:00:00Z").is_err());
        assert!(HelmTime::parse("garbage").is_err());
    }

    #[test]
    fn go_layouts() {
        let t = HelmTime::parse("2026-11-30T00:03:46.687171272Z").unwrap();
        assert_eq!(t.to_ansic(), "Mon Nov 30 00:03:46 2026");
        assert_eq!(t.to_go_string(), "2026-11-30 00:03:46.687171272 +0000 UTC");
        let t = HelmTime::parse("2026-11-03T01:00:00+01:00").unwrap();
        assert_eq!(t.to_ansic(), "Tue Nov  3 01:00:00 2026");
        assert_eq!(
            t.unix(),
            HelmTime::parse("2026-11-03T00:00:00Z").unwrap().unix()
        );
        assert_eq!(HelmTime::ZERO.to_ansic(), "Mon Jan  1 00:00:00 0001");
    }
}
