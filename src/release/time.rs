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

const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Go's layout elements, longest first where one is a prefix of another
/// (Go's `nextStdChunk` order of precedence).
const LAYOUT_TOKENS: &[&str] = &[
    "January",
    "Jan",
    "Monday",
    "Mon",
    "MST",
    "2006",
    "002",
    "01",
    "02",
    "03",
    "04",
    "05",
    "06",
    "__2",
    "_2",
    "15",
    "1",
    "2",
    "3",
    "4",
    "5",
    "PM",
    "pm",
    "Z07:00:00",
    "Z070000",
    "Z07:00",
    "Z0700",
    "Z07",
    "-07:00:00",
    "-070000",
    "-07:00",
    "-0700",
    "-07",
];

impl HelmTime {
    /// Go's `Time.Format(layout)` (`helm list --time-format`), in the
    /// offset the time was recorded with. The zero time is Go's
    /// `0001-01-01 00:00:00 UTC`.
    pub fn format_go(&self, layout: &str) -> String {
        let i = self.inner.unwrap_or(Instant {
            secs: days_from_civil(1, 1, 1) * 86_400,
            nanos: 0,
            offset: None,
        });
        let c = i.civil();
        let off = i.offset.unwrap_or(0);
        let zone = |colon: bool, secs: bool, z: bool, hours_only: bool| -> String {
            if z && off == 0 {
                return "Z".into();
            }
            let sign = if off < 0 { '-' } else { '+' };
            let a = off.unsigned_abs();
            let (h, m, s) = (a / 3600, (a % 3600) / 60, a % 60);
            let sep = if colon { ":" } else { "" };
            let mut out = format!("{sign}{h:02}");
            if !hours_only {
                out.push_str(&format!("{sep}{m:02}"));
            }
            if secs {
                out.push_str(&format!("{sep}{s:02}"));
            }
            out
        };
        let hour12 = match c.hour % 12 {
            0 => 12,
            h => h,
        };
        let yday = days_from_civil(c.year, c.month, c.day) - days_from_civil(c.year, 1, 1) + 1;
        let b = layout.as_bytes();
        let mut out = String::new();
        let mut k = 0;
        'scan: while k < b.len() {
            let rest = &layout[k..];
            // Fractional seconds: `.000`/`,000` (fixed) or `.999` (trimmed)
            // right after a seconds field... Go accepts them anywhere a
            // digit run of 0s or 9s follows `.` or `,`.
            if (b[k] == b'.' || b[k] == b',')
                && k + 1 < b.len()
                && (b[k + 1] == b'0' || b[k + 1] == b'9')
            {
                let d = b[k + 1];
                let mut j = k + 1;
                while j < b.len() && b[j] == d {
                    j += 1;
                }
                if j >= b.len() || !b[j].is_ascii_digit() {
                    let n = j - k - 1;
                    let digits = format!("{:09}", i.nanos);
                    let mut frac = digits[..n.min(9)].to_string();
                    if d == b'9' {
                        frac = frac.trim_end_matches('0').to_string();
                        if !frac.is_empty() {
                            out.push(b[k] as char);
                            out.push_str(&frac);
                        }
                    } else {
                        out.push(b[k] as char);
                        out.push_str(&frac);
                    }
                    k = j;
                    continue;
                }
            }
            for t in LAYOUT_TOKENS {
                if !rest.starts_with(t) {
                    continue;
                }
                // Go: `Jan`/`Mon` only when not followed by a lowercase
                // letter (`January`/`Monday` were tried first).
                let text = match *t {
                    "January" => LONG_MONTHS[(c.month - 1) as usize].to_string(),
                    "Jan" => MONTHS[(c.month - 1) as usize].to_string(),
                    "Monday" => LONG_DAYS[c.weekday].to_string(),
                    "Mon" => DAYS[c.weekday].to_string(),
                    "MST" => match i.offset {
                        None => "UTC".into(),
                        Some(_) => zone(false, false, false, false),
                    },
                    "2006" => fmt_year(c.year),
                    "002" => format!("{yday:03}"),
                    "01" => format!("{:02}", c.month),
                    "02" => format!("{:02}", c.day),
                    "03" => format!("{hour12:02}"),
                    "04" => format!("{:02}", c.min),
                    "05" => format!("{:02}", c.sec),
                    "06" => format!("{:02}", c.year.rem_euclid(100)),
                    "__2" => format!("{yday:>3}"),
                    "_2" => format!("{:>2}", c.day),
                    "15" => format!("{:02}", c.hour),
                    "1" => c.month.to_string(),
                    "2" => c.day.to_string(),
                    "3" => hour12.to_string(),
                    "4" => c.min.to_string(),
                    "5" => c.sec.to_string(),
                    "PM" => (if c.hour >= 12 { "PM" } else { "AM" }).to_string(),
                    "pm" => (if c.hour >= 12 { "pm" } else { "am" }).to_string(),
                    "Z07:00:00" => zone(true, true, true, false),
                    "Z070000" => zone(false, true, true, false),
                    "Z07:00" => zone(true, false, true, false),
                    "Z0700" => zone(false, false, true, false),
                    "Z07" => zone(false, false, true, true),
                    "-07:00:00" => zone(true, true, false, false),
                    "-070000" => zone(false, true, false, false),
                    "-07:00" => zone(true, false, false, false),
                    "-0700" => zone(false, false, false, false),
                    _ => zone(false, false, false, true),
                };
                out.push_str(&text);
                k += t.len();
                continue 'scan;
            }
            let ch = rest.chars().next().unwrap_or(' ');
            out.push(ch);
            k += ch.len_utf8();
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
