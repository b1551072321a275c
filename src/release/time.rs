//! Timestamps as Helm stores and prints them.
//!
//! Helm records times with Go's `time.Time`: RFC 3339 with nanoseconds in
//! the writing process's local zone, the zero time written as `""` (Helm 3)
//! or left out (Helm 4). The CLI prints them with Go's `time.ANSIC` layout
//! (`history`, `status`) or `Time.String()` (`list`). This type keeps the
//! instant and the UTC offset it was written with, so every one of those
//! forms can be reproduced; the calendar and Go's layouts are
//! [`crate::gostd::time`]'s.
use crate::gostd::time::{days_from_civil, GoTime, Location, ZERO_TIME_UNIX};
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

/// Go's zero time, as Go prints it (`0001-01-01 00:00:00 +0000 UTC`).
const ZERO_INSTANT: Instant = Instant {
    secs: ZERO_TIME_UNIX,
    nanos: 0,
    offset: None,
};

impl Instant {
    /// The Go time this instant is: UTC for `Z`, else a zone without a
    /// name at the recorded offset (what Go's `time.Parse` makes of it).
    fn go_time(&self) -> GoTime {
        let loc = match self.offset {
            None => Location::Utc,
            Some(o) => Location::Fixed(String::new(), o),
        };
        GoTime::unix(self.secs, i64::from(self.nanos)).in_loc(loc)
    }

    /// RFC 3339 in `frac` precision (`""` or `.999999999`). A recorded
    /// `+00:00` stays `+00:00` (Go's `Z07:00` would print `Z`).
    fn rfc3339(&self, frac: &str) -> String {
        let zone = if self.offset.is_some() {
            "-07:00"
        } else {
            "Z07:00"
        };
        self.go_time()
            .format(&format!("2006-01-02T15:04:05{frac}{zone}"))
    }
}

/// An RFC 3339 timestamp that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {0:?}: want RFC 3339 like 2006-01-02T15:04:05.999999999Z07:00")]
pub struct TimeParseError(pub String);

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
        let days = days_from_civil(i64::from(year), i64::from(month), i64::from(day));
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

    /// Go's `time.RFC3339Nano` (`encoding/json` form); `""` for the zero time.
    pub fn to_rfc3339_nano(&self) -> String {
        match self.inner {
            Some(i) => i.rfc3339(".999999999"),
            None => String::new(),
        }
    }

    /// Go's `time.RFC3339` (seconds, no fraction); Go's zero time prints as
    /// `0001-01-01T00:00:00Z`.
    pub fn to_rfc3339(&self) -> String {
        self.inner.unwrap_or(ZERO_INSTANT).rfc3339("")
    }

    /// Go's `time.ANSIC` layout (`Mon Jan _2 15:04:05 2006`), used by
    /// `helm history` and `helm status`. The zero time prints as Go prints it.
    pub fn to_ansic(&self) -> String {
        self.format_go("Mon Jan _2 15:04:05 2006")
    }

    /// Go's `Time.String()` (`2006-01-02 15:04:05.999999999 -0700 MST`), used by
    /// `helm list`. A `Z` time prints zone `UTC`; a numeric offset prints it
    /// twice, as Go does for a zone without a name.
    pub fn to_go_string(&self) -> String {
        self.format_go("2006-01-02 15:04:05.999999999 -0700 MST")
    }

    /// Go's `Time.Format(layout)` (`helm list --time-format`), in the
    /// offset the time was recorded with. The zero time is Go's
    /// `0001-01-01 00:00:00 UTC`.
    pub fn format_go(&self, layout: &str) -> String {
        self.inner.unwrap_or(ZERO_INSTANT).go_time().format(layout)
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

    /// Go layout elements on one instant (the same layouts that
    /// tests/release_list_flags.rs checks against `helm list --time-format`).
    #[test]
    fn format_go_layouts() {
        let t = HelmTime::parse("2026-02-03T14:05:09.012300000-07:00").unwrap();
        let cases = [
            ("2006-01-02", "2026-02-03"),
            ("2006-01-02 15:04:05Z0700", "2026-02-03 14:05:09-0700"),
            ("Jan _2 15:04:05 MST 2006", "Feb  3 14:05:09 -0700 2026"),
            (
                "Monday, 02-Jan-06 03:04:05.000 PM -07:00",
                "Tuesday, 03-Feb-26 02:05:09.012 PM -07:00",
            ),
            ("15:04:05.999999999", "14:05:09.0123"),
            ("002 __2 Z07:00", "034  34 -07:00"),
            ("no layout here", "no layout here"),
        ];
        for (layout, want) in cases {
            assert_eq!(t.format_go(layout), want, "{layout}");
        }
        let utc = HelmTime::parse("2026-02-03T04:05:09Z").unwrap();
        assert_eq!(utc.format_go("3:04pm MST Z07:00"), "4:05am UTC Z");
    }

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
