//! Go's `time` package: `time.Time` with its location, layout formatting
//! and parsing (`2006-01-02 15:04:05 MST`), civil-date arithmetic, and
//! `time.Duration` printing and `time.ParseDuration`.
//!
//! This is the one implementation of Go's time semantics in rudder:
//! templates (`template::funcs::gotime`, `dates`), release timestamps
//! (`release::time`) and Go duration flags (`duration`) all use it.
//! `parse_in_location` follows Go's `time.Parse` statement by statement, so
//! it stays diffable against `src/time/format.go`.
//!
//! Time zones follow Go on Unix: names are read as TZif files from the system
//! zoneinfo directories, and the local zone comes from `TZ` or `/etc/localtime`.
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const NANOS_PER_SEC: i64 = 1_000_000_000;
/// Go's `time.Second` in nanoseconds.
pub const SECOND: i64 = NANOS_PER_SEC;
/// Unix seconds of Go's zero time, January 1, year 1, 00:00:00 UTC.
pub const ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Directories Go searches for zoneinfo files on Unix.
const ZONE_DIRS: [&str; 4] = [
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
    "/etc/zoneinfo/",
];

/// A Go `*time.Location`.
#[derive(Clone, Debug)]
pub enum Location {
    /// `time.UTC`
    Utc,
    /// `time.Local`
    Local,
    /// A zone loaded by name from zoneinfo.
    Named(String, jiff::tz::TimeZone),
    /// `time.FixedZone(name, offset)`, made by parsing a numeric offset.
    Fixed(String, i32),
}

/// The process's local zone, as Go's `initLocal` determines it.
struct LocalZone {
    name: String,
    tz: Option<jiff::tz::TimeZone>,
}

fn read_tzif(name: &str, path: &str) -> Option<jiff::tz::TimeZone> {
    let data = std::fs::read(path).ok()?;
    jiff::tz::TimeZone::tzif(name, &data).ok()
}

fn load_from_dirs(name: &str) -> Option<jiff::tz::TimeZone> {
    if let Ok(dir) = std::env::var("ZONEINFO") {
        if !dir.is_empty() {
            if let Some(tz) = read_tzif(name, &format!("{dir}/{name}")) {
                return Some(tz);
            }
        }
    }
    ZONE_DIRS
        .iter()
        .find_map(|d| read_tzif(name, &format!("{d}{name}")))
}

fn local_zone() -> &'static LocalZone {
    static LOCAL: OnceLock<LocalZone> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let utc = LocalZone {
            name: "UTC".into(),
            tz: None,
        };
        match std::env::var("TZ") {
            Err(_) => match read_tzif("Local", "/etc/localtime") {
                Some(tz) => LocalZone {
                    name: "Local".into(),
                    tz: Some(tz),
                },
                None => utc,
            },
            Ok(tz) => {
                let tz = tz.strip_prefix(':').unwrap_or(&tz).to_string();
                if tz.starts_with('/') {
                    match read_tzif(&tz, &tz) {
                        Some(z) => LocalZone {
                            name: if tz == "/etc/localtime" {
                                "Local".into()
                            } else {
                                tz.clone()
                            },
                            tz: Some(z),
                        },
                        None => utc,
                    }
                } else if !tz.is_empty() && tz != "UTC" {
                    match load_from_dirs(&tz) {
                        Some(z) => LocalZone {
                            name: tz.clone(),
                            tz: Some(z),
                        },
                        None => utc,
                    }
                } else {
                    utc
                }
            }
        }
    })
}

/// The error of Go's `time.LoadLocation`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadLocationError {
    /// A name with `..` or an absolute path.
    #[error("time: invalid location name")]
    InvalidName,
    /// No zoneinfo file of that name.
    #[error("unknown time zone {0}")]
    Unknown(String),
}

impl Location {
    /// Go's `time.LoadLocation(name)`.
    pub fn load(name: &str) -> Result<Location, LoadLocationError> {
        if name.is_empty() || name == "UTC" {
            return Ok(Location::Utc);
        }
        if name == "Local" {
            return Ok(Location::Local);
        }
        if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
            return Err(LoadLocationError::InvalidName);
        }
        load_from_dirs(name)
            .map(|tz| Location::Named(name.to_string(), tz))
            .ok_or_else(|| LoadLocationError::Unknown(name.to_string()))
    }

    /// The location's name, as `{{ .Location }}` prints it.
    pub fn name(&self) -> String {
        match self {
            Location::Utc => "UTC".into(),
            Location::Local => local_zone().name.clone(),
            Location::Named(n, _) | Location::Fixed(n, _) => n.clone(),
        }
    }

    /// The zone abbreviation and offset (seconds east of UTC) in effect at
    /// the Unix second `sec`.
    pub fn lookup(&self, sec: i64) -> (String, i32) {
        let tz = match self {
            Location::Utc => return ("UTC".into(), 0),
            Location::Fixed(n, o) => return (n.clone(), *o),
            Location::Local => match &local_zone().tz {
                Some(tz) => tz,
                None => return ("UTC".into(), 0),
            },
            Location::Named(_, tz) => tz,
        };
        let ts = jiff::Timestamp::from_second(sec).unwrap_or(if sec < 0 {
            jiff::Timestamp::MIN
        } else {
            jiff::Timestamp::MAX
        });
        let info = tz.to_offset_info(ts);
        (info.abbreviation().to_string(), info.offset().seconds())
    }

    /// Whether daylight saving time is in effect at the Unix second `sec`.
    pub fn is_dst(&self, sec: i64) -> bool {
        let tz = match self {
            Location::Named(_, tz) => tz,
            Location::Local => match &local_zone().tz {
                Some(tz) => tz,
                None => return false,
            },
            _ => return false,
        };
        jiff::Timestamp::from_second(sec)
            .map(|ts| tz.to_offset_info(ts).dst().is_dst())
            .unwrap_or(false)
    }
}

/// A Go `time.Time`: an instant with a location and, for `now`, a monotonic
/// clock reading.
#[derive(Clone, Debug)]
pub struct GoTime {
    /// Seconds since the Unix epoch.
    sec: i64,
    /// Nanoseconds within the second, 0..1e9.
    nsec: i64,
    /// The location used to display the time.
    loc: Location,
    /// Monotonic clock reading in nanoseconds since process start.
    mono: Option<i64>,
}

/// Month names, January first.
pub const LONG_MONTHS: [&str; 12] = [
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
/// Day names, Sunday first.
pub const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
/// Month abbreviations, January first.
pub const SHORT_MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
/// Day abbreviations, Sunday first.
pub const SHORT_DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12; days
/// out of range count on, as in Go's `time.Date`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y.wrapping_sub(1) } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = ((153 * mp + 2) / 5).wrapping_add(d).wrapping_sub(1);
    let doe = (yoe * 365 + yoe / 4 - yoe / 100).wrapping_add(doy);
    era.wrapping_mul(146_097)
        .wrapping_add(doe)
        .wrapping_sub(719_468)
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days before the first of `month` in a non-leap year (Go's `daysBefore`).
fn days_before(month: i64) -> i64 {
    (1..month).map(|m| days_in(m, 1)).sum()
}

/// Broken-down civil fields of a time in its location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// The year (`t.Year()`).
    pub year: i64,
    /// The month, 1 to 12.
    pub month: i64,
    /// The day of the month, 1 to 31.
    pub day: i64,
    /// The day of the year, 1 to 366.
    pub yday: i64,
    /// The day of the week, 0 (Sunday) to 6.
    pub weekday: usize,
    /// The hour, 0 to 23.
    pub hour: i64,
    /// The minute, 0 to 59.
    pub min: i64,
    /// The second, 0 to 59.
    pub sec: i64,
}

fn process_start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

impl GoTime {
    /// Go's `time.Now()`: the current time in the local zone, with a
    /// monotonic reading.
    pub fn now() -> GoTime {
        let start = process_start();
        let mono = i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
        let (sec, nsec) = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => (
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                i64::from(d.subsec_nanos()),
            ),
            Err(e) => {
                let d = e.duration();
                let s = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                let n = i64::from(d.subsec_nanos());
                if n == 0 {
                    (s, 0)
                } else {
                    (s - 1, NANOS_PER_SEC - n)
                }
            }
        };
        GoTime {
            sec,
            nsec,
            loc: Location::Local,
            mono: Some(mono.max(1)),
        }
    }

    /// Go's `time.Unix(sec, nsec)`, in the local zone.
    pub fn unix(sec: i64, nsec: i64) -> GoTime {
        let sec = sec.wrapping_add(nsec.div_euclid(NANOS_PER_SEC));
        GoTime {
            sec,
            nsec: nsec.rem_euclid(NANOS_PER_SEC),
            loc: Location::Local,
            mono: None,
        }
    }

    /// Go's zero `time.Time{}` (January 1, year 1, UTC).
    pub fn zero() -> GoTime {
        GoTime {
            sec: ZERO_TIME_UNIX,
            nsec: 0,
            loc: Location::Utc,
            mono: None,
        }
    }

    /// Go's `time.Date(...)`: normalizes out-of-range fields and resolves the
    /// wall clock in `loc`.
    #[allow(clippy::too_many_arguments)]
    pub fn date(
        year: i64,
        month: i64,
        day: i64,
        hour: i64,
        min: i64,
        sec: i64,
        nsec: i64,
        loc: Location,
    ) -> GoTime {
        let m0 = month.wrapping_sub(1);
        let year = year.wrapping_add(m0.div_euclid(12));
        let month = m0.rem_euclid(12) + 1;
        let sec = sec.wrapping_add(nsec.div_euclid(NANOS_PER_SEC));
        let nsec = nsec.rem_euclid(NANOS_PER_SEC);
        let days = days_from_civil(year, month, 1).wrapping_add(day.wrapping_sub(1));
        let local = days
            .wrapping_mul(86_400)
            .wrapping_add(hour.wrapping_mul(3600))
            .wrapping_add(min.wrapping_mul(60))
            .wrapping_add(sec);
        let (_, off1) = loc.lookup(local);
        let mut unix = local.wrapping_sub(i64::from(off1));
        if off1 != 0 {
            let (_, off2) = loc.lookup(unix);
            if off2 != off1 {
                unix = local.wrapping_sub(i64::from(off2));
            }
        }
        GoTime {
            sec: unix,
            nsec,
            loc,
            mono: None,
        }
    }

    /// Seconds since the Unix epoch (`t.Unix()`).
    pub fn unix_sec(&self) -> i64 {
        self.sec
    }

    /// Nanoseconds within the second (`t.Nanosecond()`).
    pub fn nanosecond(&self) -> i64 {
        self.nsec
    }

    /// `t.In(loc)`: the same instant shown in another location, without the
    /// monotonic reading.
    pub fn in_loc(&self, loc: Location) -> GoTime {
        GoTime {
            sec: self.sec,
            nsec: self.nsec,
            loc,
            mono: None,
        }
    }

    /// `t.Add(d)` for a duration in nanoseconds.
    pub fn add(&self, d: i64) -> GoTime {
        let total = i128::from(self.nsec) + i128::from(d);
        let dsec = total.div_euclid(i128::from(NANOS_PER_SEC));
        let nsec = total.rem_euclid(i128::from(NANOS_PER_SEC)) as i64;
        let sec = i128::from(self.sec) + dsec;
        GoTime {
            sec: clamp_i64(sec),
            nsec,
            loc: self.loc.clone(),
            mono: self.mono.map(|m| m.wrapping_add(d)),
        }
    }

    /// `t.Sub(u)` in nanoseconds, saturating like Go.
    pub fn sub(&self, u: &GoTime) -> i64 {
        if let (Some(a), Some(b)) = (self.mono, u.mono) {
            return a.saturating_sub(b);
        }
        let d = (i128::from(self.sec) - i128::from(u.sec)) * i128::from(NANOS_PER_SEC)
            + i128::from(self.nsec - u.nsec);
        clamp_i64(d)
    }

    /// Nanoseconds since Go's zero time, for rounding.
    fn abs_nanos(&self) -> i128 {
        (i128::from(self.sec) - i128::from(ZERO_TIME_UNIX)) * i128::from(NANOS_PER_SEC)
            + i128::from(self.nsec)
    }

    fn from_abs_nanos(n: i128, loc: Location) -> GoTime {
        let ns = i128::from(NANOS_PER_SEC);
        GoTime {
            sec: clamp_i64(n.div_euclid(ns) + i128::from(ZERO_TIME_UNIX)),
            nsec: n.rem_euclid(ns) as i64,
            loc,
            mono: None,
        }
    }

    /// `t.Truncate(d)`.
    pub fn truncate(&self, d: i64) -> GoTime {
        if d <= 0 {
            return self.in_loc(self.loc.clone());
        }
        let n = self.abs_nanos();
        Self::from_abs_nanos(n - n.rem_euclid(i128::from(d)), self.loc.clone())
    }

    /// `t.Round(d)`: halfway values round up.
    pub fn round(&self, d: i64) -> GoTime {
        if d <= 0 {
            return self.in_loc(self.loc.clone());
        }
        let n = self.abs_nanos();
        let d = i128::from(d);
        let r = n.rem_euclid(d);
        let out = if r + r < d { n - r } else { n + d - r };
        Self::from_abs_nanos(out, self.loc.clone())
    }

    /// `t.AddDate(years, months, days)`.
    pub fn add_date(&self, years: i64, months: i64, days: i64) -> GoTime {
        let c = self.civil();
        GoTime::date(
            c.year.wrapping_add(years),
            c.month.wrapping_add(months),
            c.day.wrapping_add(days),
            c.hour,
            c.min,
            c.sec,
            self.nsec,
            self.loc.clone(),
        )
    }

    /// Whether this is Go's zero time.
    pub fn is_zero(&self) -> bool {
        self.sec == ZERO_TIME_UNIX && self.nsec == 0
    }

    /// The zone abbreviation and offset in effect.
    pub fn zone(&self) -> (String, i32) {
        self.loc.lookup(self.sec)
    }

    /// The location the time is shown in (`t.Location()`).
    pub fn location(&self) -> &Location {
        &self.loc
    }

    /// The civil fields of the time in its location.
    pub fn civil(&self) -> Civil {
        let (_, off) = self.zone();
        let local = self.sec.wrapping_add(i64::from(off));
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            yday: days - days_from_civil(year, 1, 1) + 1,
            weekday: (days + 4).rem_euclid(7) as usize,
            hour: secs / 3600,
            min: secs % 3600 / 60,
            sec: secs % 60,
        }
    }

    /// `t.Year()`
    pub fn year(&self) -> i64 {
        self.civil().year
    }

    /// Go's `t.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        let (name, offset) = self.zone();
        let c = self.civil();
        let mut b = String::with_capacity(layout.len() + 10);
        let mut rest = layout;
        while !rest.is_empty() {
            let (prefix, std, suffix) = next_std_chunk(rest);
            b.push_str(prefix);
            let Some(std) = std else { break };
            rest = suffix;
            match std {
                Std::Year => append_int(&mut b, c.year.abs() % 100, 2),
                Std::LongYear => append_int(&mut b, c.year, 4),
                Std::Month => b.push_str(SHORT_MONTHS[(c.month - 1) as usize]),
                Std::LongMonth => b.push_str(LONG_MONTHS[(c.month - 1) as usize]),
                Std::NumMonth => append_int(&mut b, c.month, 0),
                Std::ZeroMonth => append_int(&mut b, c.month, 2),
                Std::WeekDay => b.push_str(SHORT_DAYS[c.weekday]),
                Std::LongWeekDay => b.push_str(LONG_DAYS[c.weekday]),
                Std::Day => append_int(&mut b, c.day, 0),
                Std::UnderDay => {
                    if c.day < 10 {
                        b.push(' ');
                    }
                    append_int(&mut b, c.day, 0);
                }
                Std::ZeroDay => append_int(&mut b, c.day, 2),
                Std::UnderYearDay => {
                    if c.yday < 100 {
                        b.push(' ');
                        if c.yday < 10 {
                            b.push(' ');
                        }
                    }
                    append_int(&mut b, c.yday, 0);
                }
                Std::ZeroYearDay => append_int(&mut b, c.yday, 3),
                Std::Hour => append_int(&mut b, c.hour, 2),
                Std::Hour12 | Std::ZeroHour12 => {
                    let hr = match c.hour % 12 {
                        0 => 12,
                        h => h,
                    };
                    append_int(&mut b, hr, if std == Std::Hour12 { 0 } else { 2 });
                }
                Std::Minute => append_int(&mut b, c.min, 0),
                Std::ZeroMinute => append_int(&mut b, c.min, 2),
                Std::Second => append_int(&mut b, c.sec, 0),
                Std::ZeroSecond => append_int(&mut b, c.sec, 2),
                Std::PM => b.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
                Std::Pm => b.push_str(if c.hour >= 12 { "pm" } else { "am" }),
                Std::Tz => {
                    if name.is_empty() {
                        let mut zone = offset / 60;
                        if zone < 0 {
                            b.push('-');
                            zone = -zone;
                        } else {
                            b.push('+');
                        }
                        append_int(&mut b, i64::from(zone / 60), 2);
                        append_int(&mut b, i64::from(zone % 60), 2);
                    } else {
                        b.push_str(&name);
                    }
                }
                Std::Frac {
                    digits,
                    comma,
                    trim,
                } => append_nano(&mut b, self.nsec, digits, comma, trim),
                Std::Zone {
                    z,
                    colon,
                    secs,
                    short,
                } => {
                    if z && offset == 0 {
                        b.push('Z');
                        continue;
                    }
                    let mut zone = offset / 60;
                    let mut absoff = offset;
                    if zone < 0 {
                        b.push('-');
                        zone = -zone;
                        absoff = -absoff;
                    } else {
                        b.push('+');
                    }
                    append_int(&mut b, i64::from(zone / 60), 2);
                    if colon {
                        b.push(':');
                    }
                    if !short {
                        append_int(&mut b, i64::from(zone % 60), 2);
                    }
                    if secs {
                        if colon {
                            b.push(':');
                        }
                        append_int(&mut b, i64::from(absoff % 60), 2);
                    }
                }
            }
        }
        b
    }

    /// Go's `t.String()`, including the monotonic reading (`m=+0.001`).
    pub fn go_string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            s.push_str(" m=");
            s.push(if m < 0 { '-' } else { '+' });
            let u = m.unsigned_abs();
            let (secs, frac) = (u / 1_000_000_000, u % 1_000_000_000);
            s.push_str(&format!("{secs}.{frac:09}"));
        }
        s
    }

    /// RFC 3339 with nanoseconds, as `encoding/json` writes a time.
    pub fn rfc3339_nano(&self) -> String {
        self.format("2006-01-02T15:04:05.999999999Z07:00")
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// Go's `appendInt`: decimal with zero padding to `width` digits.
fn append_int(b: &mut String, x: i64, width: usize) {
    if x < 0 {
        b.push('-');
    }
    let digits = x.unsigned_abs().to_string();
    for _ in digits.len()..width {
        b.push('0');
    }
    b.push_str(&digits);
}

fn append_nano(b: &mut String, nsec: i64, digits: usize, comma: bool, trim: bool) {
    if trim && (digits == 0 || nsec == 0) {
        return;
    }
    let dot = if comma { ',' } else { '.' };
    let start = b.len();
    b.push(dot);
    let all = format!("{nsec:09}");
    b.push_str(&all[..digits.min(9)]);
    if trim {
        while b.len() > start && b.ends_with('0') {
            b.pop();
        }
        if b.len() > start && b.ends_with(dot) {
            b.pop();
        }
    }
}

/// One element of a Go layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    Tz,
    /// A numeric zone: `z` = ISO 8601 (`Z` for UTC), `colon`, with seconds,
    /// hours only.
    Zone {
        z: bool,
        colon: bool,
        secs: bool,
        short: bool,
    },
    /// A fractional second: digit count, separator, trailing zeros trimmed (`9`s).
    Frac {
        digits: usize,
        comma: bool,
        trim: bool,
    },
}

fn starts_with_lower(s: &[u8]) -> bool {
    s.first().is_some_and(|c| c.is_ascii_lowercase())
}

/// Go's `nextStdChunk`: the text before the first layout element, the
/// element, and the text after it.
fn next_std_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let l = layout.as_bytes();
    let n = l.len();
    let at = |i: usize, s: &str| l.get(i..i + s.len()) == Some(s.as_bytes());
    for i in 0..n {
        let hit = |std: Std, len: usize| (&layout[..i], Some(std), &layout[i + len..]);
        match l[i] {
            b'J' if at(i, "Jan") => {
                if at(i, "January") {
                    return hit(Std::LongMonth, 7);
                }
                if !starts_with_lower(&l[i + 3..]) {
                    return hit(Std::Month, 3);
                }
            }
            b'M' if i + 3 <= n => {
                if at(i, "Mon") {
                    if at(i, "Monday") {
                        return hit(Std::LongWeekDay, 6);
                    }
                    if !starts_with_lower(&l[i + 3..]) {
                        return hit(Std::WeekDay, 3);
                    }
                }
                if at(i, "MST") {
                    return hit(Std::Tz, 3);
                }
            }
            b'0' => {
                if i + 2 <= n && (b'1'..=b'6').contains(&l[i + 1]) {
                    let std = [
                        Std::ZeroMonth,
                        Std::ZeroDay,
                        Std::ZeroHour12,
                        Std::ZeroMinute,
                        Std::ZeroSecond,
                        Std::Year,
                    ][usize::from(l[i + 1] - b'1')];
                    return hit(std, 2);
                }
                if at(i, "002") {
                    return hit(Std::ZeroYearDay, 3);
                }
            }
            b'1' => {
                if at(i, "15") {
                    return hit(Std::Hour, 2);
                }
                return hit(Std::NumMonth, 1);
            }
            b'2' => {
                if at(i, "2006") {
                    return hit(Std::LongYear, 4);
                }
                return hit(Std::Day, 1);
            }
            b'_' => {
                if at(i, "_2") {
                    if at(i + 1, "2006") {
                        return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
                    }
                    return hit(Std::UnderDay, 2);
                }
                if at(i, "__2") {
                    return hit(Std::UnderYearDay, 3);
                }
            }
            b'3' => return hit(Std::Hour12, 1),
            b'4' => return hit(Std::Minute, 1),
            b'5' => return hit(Std::Second, 1),
            b'P' if at(i, "PM") => return hit(Std::PM, 2),
            b'p' if at(i, "pm") => return hit(Std::Pm, 2),
            b'-' | b'Z' => {
                let z = l[i] == b'Z';
                let zone = |colon, secs, short| Std::Zone {
                    z,
                    colon,
                    secs,
                    short,
                };
                let sign = if z { "Z" } else { "-" };
                if at(i, &format!("{sign}070000")) {
                    return hit(zone(false, true, false), 7);
                }
                if at(i, &format!("{sign}07:00:00")) {
                    return hit(zone(true, true, false), 9);
                }
                if at(i, &format!("{sign}0700")) {
                    return hit(zone(false, false, false), 5);
                }
                if at(i, &format!("{sign}07:00")) {
                    return hit(zone(true, false, false), 6);
                }
                if at(i, &format!("{sign}07")) {
                    return hit(zone(false, false, true), 3);
                }
            }
            b'.' | b',' if i + 1 < n && (l[i + 1] == b'0' || l[i + 1] == b'9') => {
                let ch = l[i + 1];
                let mut j = i + 1;
                while j < n && l[j] == ch {
                    j += 1;
                }
                if !(j < n && l[j].is_ascii_digit()) {
                    let std = Std::Frac {
                        digits: (j - (i + 1)) & 0xfff,
                        comma: l[i] == b',',
                        trim: ch == b'9',
                    };
                    return (&layout[..i], Some(std), &layout[j..]);
                }
            }
            _ => {}
        }
    }
    (layout, None, "")
}

/// Go's `time.quote`: double quotes, `\xNN` for control and non-ASCII bytes.
pub fn go_time_quote(s: &str) -> String {
    let bytes = super::gostr::go_bytes(s);
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes.iter() {
        if !(b' '..0x80).contains(&b) {
            out.push_str(&format!("\\x{b:02x}"));
        } else {
            if b == b'"' || b == b'\\' {
                out.push('\\');
            }
            out.push(char::from(b));
        }
    }
    out.push('"');
    out
}

/// A failed `time.Parse`, with Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

fn parse_err(layout: &str, value: &str, lelem: &str, velem: &str, msg: &str) -> ParseError {
    if msg.is_empty() {
        ParseError(format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_time_quote(value),
            go_time_quote(layout),
            go_time_quote(velem),
            go_time_quote(lelem)
        ))
    } else {
        ParseError(format!("parsing time {}{}", go_time_quote(value), msg))
    }
}

/// Parses one or two digits (`fixed` requires two).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    if !b.get(1).is_some_and(u8::is_ascii_digit) {
        if fixed {
            return None;
        }
        return Some((i64::from(b[0] - b'0'), &s[1..]));
    }
    Some((
        i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'),
        &s[2..],
    ))
}

fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < 3 && b.get(i).is_some_and(u8::is_ascii_digit) {
        n = n * 10 + i64::from(b[i] - b'0');
        i += 1;
    }
    if i == 0 || (fixed && i != 3) {
        return None;
    }
    Some((n, &s[i..]))
}

/// Go's `skip`: consumes a literal prefix, where runs of spaces match runs of spaces.
fn skip<'a>(value: &'a str, prefix: &str) -> Option<&'a str> {
    let (v, p) = (value.as_bytes(), prefix.as_bytes());
    let (mut vi, mut pi) = (0, 0);
    while pi < p.len() {
        if p[pi] == b' ' {
            if vi < v.len() && v[vi] != b' ' {
                return None;
            }
            while pi < p.len() && p[pi] == b' ' {
                pi += 1;
            }
            while vi < v.len() && v[vi] == b' ' {
                vi += 1;
            }
            continue;
        }
        if vi >= v.len() || v[vi] != p[pi] {
            return None;
        }
        pi += 1;
        vi += 1;
    }
    // The matched bytes equal the whole prefix (a complete string) plus
    // spaces, so `vi` is a character boundary.
    value.get(vi..)
}

/// Go's `leadingInt`: leading decimal digits, failing on overflow.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let b = s.as_bytes();
    let mut x: u64 = 0;
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        if x > (1u64 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(b[i] - b'0');
        if x > 1u64 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `atoi` used by the parser: optional sign, digits, nothing after.
fn atoi(s: &str) -> Option<i64> {
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (q, rem) = leading_int(s)?;
    if !rem.is_empty() {
        return None;
    }
    let x = q as i64;
    Some(if neg { x.wrapping_neg() } else { x })
}

fn comma_or_period(b: u8) -> bool {
    b == b'.' || b == b','
}

/// Go's `parseNanoseconds`: `value[..nbytes]` is a separator and digits.
fn parse_nanoseconds(value: &str, nbytes: usize) -> Result<i64, Option<&'static str>> {
    if !value
        .as_bytes()
        .first()
        .is_some_and(|&b| comma_or_period(b))
    {
        return Err(None);
    }
    let nbytes = nbytes.min(10);
    let ns = atoi(value.get(1..nbytes).ok_or(None)?).ok_or(None)?;
    if ns < 0 {
        return Err(Some("fractional second"));
    }
    let mut ns = ns;
    for _ in 0..(10 - nbytes) {
        ns *= 10;
    }
    Ok(ns)
}

fn parse_signed_offset(value: &str) -> usize {
    let b = value.as_bytes();
    if !matches!(b.first(), Some(b'-' | b'+')) {
        return 0;
    }
    match leading_int(&value[1..]) {
        Some((x, rem)) if rem.len() != value.len() - 1 && x <= 23 => value.len() - rem.len(),
        _ => 0,
    }
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start of `value`.
fn parse_time_zone(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if value.starts_with("ChST") || value.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = value.strip_prefix("GMT") {
        return Some(if rest.is_empty() {
            3
        } else {
            3 + parse_signed_offset(rest)
        });
    }
    if b[0] == b'+' || b[0] == b'-' {
        let n = parse_signed_offset(value);
        return (n > 0).then_some(n);
    }
    let mut upper = 0;
    while upper < 6 && upper < b.len() && b[upper].is_ascii_uppercase() {
        upper += 1;
    }
    match upper {
        5 if b[4] == b'T' => Some(5),
        4 if b[3] == b'T' || value.starts_with("WITA") => Some(4),
        3 => Some(3),
        _ => None,
    }
}

/// Go's `lookup` of a month or day name, case-insensitively.
fn lookup_name<'a>(tab: &[&str], val: &'a str) -> Option<(usize, &'a str)> {
    for (i, v) in tab.iter().enumerate() {
        if val.len() >= v.len()
            && val.is_char_boundary(v.len())
            && val[..v.len()].eq_ignore_ascii_case(v)
        {
            return Some((i, &val[v.len()..]));
        }
    }
    None
}

/// Go's `time.ParseInLocation(layout, value, loc)`.
pub fn parse_in_location(layout: &str, value: &str, loc: Location) -> Result<GoTime, ParseError> {
    let (alayout, avalue) = (layout, value);
    let mut layout = layout;
    let mut value = value;
    let (mut am_set, mut pm_set) = (false, false);
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0i64);
    let mut z: Option<Location> = None;
    let mut zone_offset: Option<i64> = None;
    let mut zone_name = String::new();

    loop {
        let (prefix, std, suffix) = next_std_chunk(layout);
        let stdstr = &layout[prefix.len()..layout.len() - suffix.len()];
        value = match skip(value, prefix) {
            Some(v) => v,
            None => return Err(parse_err(alayout, avalue, prefix, value, "")),
        };
        let Some(std) = std else {
            if !value.is_empty() {
                return Err(parse_err(
                    alayout,
                    avalue,
                    "",
                    value,
                    &format!(": extra text: {}", go_time_quote(value)),
                ));
            }
            break;
        };
        layout = suffix;
        let hold = value;
        let mut range_err: Option<&str> = None;
        let mut ok = true;
        let vb = value.as_bytes();
        match std {
            Std::Year => match value.get(..2).and_then(atoi) {
                Some(y) if vb.len() >= 2 => {
                    year = if y >= 69 { y + 1900 } else { y + 2000 };
                    value = &value[2..];
                }
                _ => ok = false,
            },
            Std::LongYear => {
                if vb.len() < 4 || !vb[0].is_ascii_digit() {
                    ok = false;
                } else {
                    match value.get(..4).and_then(atoi) {
                        Some(y) => {
                            year = y;
                            value = &value[4..];
                        }
                        None => ok = false,
                    }
                }
            }
            Std::Month | Std::LongMonth => {
                let tab: &[&str] = if std == Std::Month {
                    &SHORT_MONTHS
                } else {
                    &LONG_MONTHS
                };
                match lookup_name(tab, value) {
                    Some((i, rest)) => {
                        month = i as i64 + 1;
                        value = rest;
                    }
                    None => ok = false,
                }
            }
            Std::NumMonth | Std::ZeroMonth => match getnum(value, std == Std::ZeroMonth) {
                Some((m, rest)) => {
                    month = m;
                    value = rest;
                    if m <= 0 || m > 12 {
                        range_err = Some("month");
                    }
                }
                None => ok = false,
            },
            Std::WeekDay | Std::LongWeekDay => {
                let tab: &[&str] = if std == Std::WeekDay {
                    &SHORT_DAYS
                } else {
                    &LONG_DAYS
                };
                match lookup_name(tab, value) {
                    Some((_, rest)) => value = rest,
                    None => ok = false,
                }
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                if std == Std::UnderDay && value.starts_with(' ') {
                    value = &value[1..];
                }
                match getnum(value, std == Std::ZeroDay) {
                    Some((d, rest)) => {
                        day = d;
                        value = rest;
                    }
                    None => ok = false,
                }
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                for _ in 0..2 {
                    if std == Std::UnderYearDay && value.starts_with(' ') {
                        value = &value[1..];
                    }
                }
                match getnum3(value, std == Std::ZeroYearDay) {
                    Some((d, rest)) => {
                        yday = d;
                        value = rest;
                    }
                    None => ok = false,
                }
            }
            Std::Hour => match getnum(value, false) {
                Some((h, rest)) => {
                    hour = h;
                    value = rest;
                    if h >= 24 {
                        range_err = Some("hour");
                    }
                }
                None => ok = false,
            },
            Std::Hour12 | Std::ZeroHour12 => match getnum(value, std == Std::ZeroHour12) {
                Some((h, rest)) => {
                    hour = h;
                    value = rest;
                    if h > 12 {
                        range_err = Some("hour");
                    }
                }
                None => ok = false,
            },
            Std::Minute | Std::ZeroMinute => match getnum(value, std == Std::ZeroMinute) {
                Some((m, rest)) => {
                    min = m;
                    value = rest;
                    if m >= 60 {
                        range_err = Some("minute");
                    }
                }
                None => ok = false,
            },
            Std::Second | Std::ZeroSecond => match getnum(value, std == Std::ZeroSecond) {
                Some((s, rest)) => {
                    sec = s;
                    value = rest;
                    if s >= 60 {
                        range_err = Some("second");
                    } else {
                        let vb = value.as_bytes();
                        if vb.len() >= 2 && comma_or_period(vb[0]) && vb[1].is_ascii_digit() {
                            let (_, next, _) = next_std_chunk(layout);
                            if !matches!(next, Some(Std::Frac { .. })) {
                                let mut n = 2;
                                while n < vb.len() && vb[n].is_ascii_digit() {
                                    n += 1;
                                }
                                match parse_nanoseconds(value, n) {
                                    Ok(ns) => nsec = ns,
                                    Err(Some(r)) => range_err = Some(r),
                                    Err(None) => ok = false,
                                }
                                value = &value[n..];
                            }
                        }
                    }
                }
                None => ok = false,
            },
            Std::PM | Std::Pm => {
                let (p, a) = if std == Std::PM {
                    ("PM", "AM")
                } else {
                    ("pm", "am")
                };
                match value.get(..2) {
                    Some(x) if x == p => pm_set = true,
                    Some(x) if x == a => am_set = true,
                    _ => ok = false,
                }
                if ok {
                    value = &value[2..];
                }
            }
            Std::Zone {
                z: iso,
                colon,
                secs,
                short,
            } => {
                if iso && value.starts_with('Z') {
                    value = &value[1..];
                    z = Some(Location::Utc);
                } else {
                    let need = match (colon, secs, short) {
                        (true, false, _) => 6,
                        (_, _, true) => 3,
                        (true, true, _) => 9,
                        (false, true, _) => 7,
                        _ => 5,
                    };
                    let malformed = vb.len() < need
                        || !vb[..need].is_ascii()
                        || (colon && (vb[3] != b':' || (secs && vb[6] != b':')));
                    let fields = if malformed {
                        None
                    } else {
                        let (h, m, s) = match (colon, secs, short) {
                            (true, false, _) => (&value[1..3], &value[4..6], "00"),
                            (_, _, true) => (&value[1..3], "00", "00"),
                            (true, true, _) => (&value[1..3], &value[4..6], &value[7..9]),
                            (false, true, _) => (&value[1..3], &value[3..5], &value[5..7]),
                            _ => (&value[1..3], &value[3..5], "00"),
                        };
                        Some((vb[0], h, m, s))
                    };
                    match fields {
                        None => ok = false,
                        Some((sign, h, m, s)) => {
                            value = &value[need..];
                            let nums = getnum(h, true)
                                .zip(getnum(m, true))
                                .zip(getnum(s, true))
                                .map(|((h, m), s)| (h.0, m.0, s.0));
                            match nums {
                                None => ok = false,
                                Some((hr, mm, ss)) => {
                                    if hr > 24 {
                                        range_err = Some("time zone offset hour");
                                    }
                                    if mm > 60 {
                                        range_err = Some("time zone offset minute");
                                    }
                                    if ss > 60 {
                                        range_err = Some("time zone offset second");
                                    }
                                    let off = (hr * 60 + mm) * 60 + ss;
                                    match sign {
                                        b'+' => zone_offset = Some(off),
                                        b'-' => zone_offset = Some(-off),
                                        _ => ok = false,
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Std::Tz => {
                if value.starts_with("UTC") {
                    z = Some(Location::Utc);
                    value = &value[3..];
                } else {
                    match parse_time_zone(value) {
                        Some(n) if value.is_char_boundary(n) => {
                            zone_name = value[..n].to_string();
                            value = &value[n..];
                        }
                        _ => ok = false,
                    }
                }
            }
            Std::Frac { digits, trim, .. } => {
                if !trim {
                    let ndigit = 1 + digits;
                    if vb.len() < ndigit || !value.is_char_boundary(ndigit) {
                        ok = false;
                    } else {
                        match parse_nanoseconds(value, ndigit) {
                            Ok(ns) => nsec = ns,
                            Err(Some(r)) => range_err = Some(r),
                            Err(None) => ok = false,
                        }
                        value = &value[ndigit..];
                    }
                } else if vb.len() >= 2 && comma_or_period(vb[0]) && vb[1].is_ascii_digit() {
                    let mut i = 0;
                    while i + 1 < vb.len() && vb[i + 1].is_ascii_digit() {
                        i += 1;
                    }
                    match parse_nanoseconds(value, 1 + i) {
                        Ok(ns) => nsec = ns,
                        Err(Some(r)) => range_err = Some(r),
                        Err(None) => ok = false,
                    }
                    value = &value[1 + i..];
                }
            }
        }
        if let Some(r) = range_err {
            return Err(parse_err(
                alayout,
                avalue,
                stdstr,
                value,
                &format!(": {r} out of range"),
            ));
        }
        if !ok {
            return Err(parse_err(alayout, avalue, stdstr, hold, ""));
        }
    }
    if pm_set && hour < 12 {
        hour += 12;
    } else if am_set && hour == 12 {
        hour = 0;
    }

    if yday >= 0 {
        let mut d = 0;
        let mut m = 0;
        if is_leap(year) {
            if yday == 31 + 29 {
                m = 2;
                d = 29;
            } else if yday > 31 + 29 {
                yday -= 1;
            }
        }
        if !(1..=365).contains(&yday) {
            return Err(parse_err(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year out of range",
            ));
        }
        if m == 0 {
            m = (yday - 1) / 31 + 1;
            if days_before(m + 1) < yday {
                m += 1;
            }
            d = yday - days_before(m);
        }
        if month >= 0 && month != m {
            return Err(parse_err(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year does not match month",
            ));
        }
        month = m;
        if day >= 0 && day != d {
            return Err(parse_err(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year does not match day",
            ));
        }
        day = d;
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }
    if day < 1 || day > days_in(month, year) {
        return Err(parse_err(alayout, avalue, "", value, ": day out of range"));
    }

    if let Some(z) = z {
        return Ok(GoTime::date(year, month, day, hour, min, sec, nsec, z));
    }
    if let Some(off) = zone_offset {
        let mut t = GoTime::date(year, month, day, hour, min, sec, nsec, Location::Utc);
        t.sec -= off;
        let (name, loff) = loc.lookup(t.sec);
        if i64::from(loff) == off && (zone_name.is_empty() || name == zone_name) {
            t.loc = loc;
        } else {
            t.loc = Location::Fixed(zone_name, off as i32);
        }
        return Ok(t);
    }
    if !zone_name.is_empty() {
        let mut t = GoTime::date(year, month, day, hour, min, sec, nsec, Location::Utc);
        // Go looks the abbreviation up among the location's zones; without
        // the zone table, the zones in effect around the time are tried.
        let (name, loff) = loc.lookup(t.sec);
        let (name2, loff2) = loc.lookup(t.sec - i64::from(loff));
        let found = if name2 == zone_name {
            Some(loff2)
        } else if name == zone_name {
            Some(loff)
        } else {
            None
        };
        if let Some(off) = found {
            t.sec -= i64::from(off);
            t.loc = loc;
            return Ok(t);
        }
        let mut offset = 0i64;
        if zone_name.len() > 3 && zone_name.starts_with("GMT") {
            offset = atoi(&zone_name[3..]).unwrap_or(0) * 3600;
        }
        t.loc = Location::Fixed(zone_name, offset as i32);
        return Ok(t);
    }
    Ok(GoTime::date(year, month, day, hour, min, sec, nsec, loc))
}

/// Go's `time.Duration.String()` for a duration in nanoseconds.
pub fn format_duration(d: i64) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    // Built back to front, as Go does.
    let mut out: Vec<u8> = Vec::with_capacity(32);
    fn frac(out: &mut Vec<u8>, v: u64, prec: usize) -> u64 {
        let mut v = v;
        let mut print = false;
        for _ in 0..prec {
            let digit = (v % 10) as u8;
            print = print || digit != 0;
            if print {
                out.push(b'0' + digit);
            }
            v /= 10;
        }
        if print {
            out.push(b'.');
        }
        v
    }
    fn int(out: &mut Vec<u8>, v: u64) {
        out.extend(v.to_string().bytes().rev());
    }
    if u < 1_000_000_000 {
        out.push(b's');
        let prec;
        if u == 0 {
            return "0s".into();
        } else if u < 1_000 {
            prec = 0;
            out.push(b'n');
        } else if u < 1_000_000 {
            prec = 3;
            // "µ" reversed.
            out.push(0xb5);
            out.push(0xc2);
        } else {
            prec = 6;
            out.push(b'm');
        }
        u = frac(&mut out, u, prec);
        int(&mut out, u);
    } else {
        out.push(b's');
        u = frac(&mut out, u, 9);
        int(&mut out, u % 60);
        u /= 60;
        if u > 0 {
            out.push(b'm');
            int(&mut out, u % 60);
            u /= 60;
            if u > 0 {
                out.push(b'h');
                int(&mut out, u);
            }
        }
    }
    if neg {
        out.push(b'-');
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `Duration.Round(m)`.
pub fn round_duration(d: i64, m: i64) -> i64 {
    if m <= 0 {
        return d;
    }
    let less_than_half = |x: i64, y: i64| (x as u64).wrapping_add(x as u64) < y as u64;
    let mut r = d % m;
    if d < 0 {
        r = -r;
        if less_than_half(r, m) {
            return d + r;
        }
        return match d.checked_sub(m).map(|x| x + r) {
            Some(d1) if d1 < d => d1,
            _ => i64::MIN,
        };
    }
    if less_than_half(r, m) {
        return d - r;
    }
    match d.checked_add(m - r) {
        Some(d1) if d1 > d => d1,
        _ => i64::MAX,
    }
}

/// Why `time.ParseDuration` refused a text; `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all (`5x5`, an empty text, out of range).
    #[error("time: invalid duration {}", go_time_quote(input))]
    Invalid {
        /// The text.
        input: String,
    },
    /// A number without a unit (`20`).
    #[error("time: missing unit in duration {}", go_time_quote(input))]
    MissingUnit {
        /// The text.
        input: String,
    },
    /// A unit Go does not know (`20d`).
    #[error(
        "time: unknown unit {} in duration {}",
        go_time_quote(unit),
        go_time_quote(input)
    )]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The text.
        input: String,
    },
}

/// Go's `time.ParseDuration`: exact nanoseconds, a sign, several
/// `number unit` parts (`-1h2m3.5s`, `1.5µs`); a bare `0` is zero.
pub fn parse_duration(s: &str) -> Result<i64, DurationError> {
    let orig = s;
    let invalid = || DurationError::Invalid {
        input: orig.to_string(),
    };
    let mut s = s;
    let mut neg = false;
    if let Some(c) = s.as_bytes().first() {
        if *c == b'-' || *c == b'+' {
            neg = *c == b'-';
            s = &s[1..];
        }
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let c = s.as_bytes()[0];
        if !(c == b'.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let pl = s.len();
        let (v, rest) = leading_int(s).ok_or_else(invalid)?;
        let mut v = v;
        s = rest;
        let pre = pl != s.len();
        let mut post = false;
        let (mut f, mut scale) = (0u64, 1f64);
        if s.starts_with('.') {
            s = &s[1..];
            let pl = s.len();
            let b = s.as_bytes();
            let mut i = 0;
            let mut overflow = false;
            while i < b.len() && b[i].is_ascii_digit() {
                if !overflow {
                    if f > (i64::MAX as u64) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + u64::from(b[i] - b'0');
                        if y > 1u64 << 63 {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                i += 1;
            }
            s = &s[i..];
            post = pl != s.len();
        }
        if !pre && !post {
            return Err(invalid());
        }
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() && !(b[i] == b'.' || b[i].is_ascii_digit()) {
            i += 1;
        }
        if i == 0 {
            return Err(DurationError::MissingUnit {
                input: orig.to_string(),
            });
        }
        let u = &s[..i];
        s = &s[i..];
        let unit: u64 = match u {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: u.to_string(),
                    input: orig.to_string(),
                })
            }
        };
        if v > (1u64 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1u64 << 63 {
                return Err(invalid());
            }
        }
        d += v;
        if d > 1u64 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > i64::MAX as u64 {
        return Err(invalid());
    }
    Ok(d as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64, ns: i64) -> GoTime {
        GoTime::date(y, mo, d, h, mi, s, ns, Location::Utc)
    }

    #[test]
    fn civil_round_trip() {
        for days in [-800_000i64, -719_162, -1, 0, 1, 59, 365, 10_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(GoTime::zero().year(), 1);
        assert_eq!(GoTime::zero().format("2006-01-02"), "0001-01-01");
    }

    #[test]
    fn formats_reference_layouts() {
        let t = utc(2006, 1, 2, 15, 4, 5, 123_456_789);
        assert_eq!(
            t.format("Mon Jan _2 15:04:05 MST 2006"),
            "Mon Jan  2 15:04:05 UTC 2006"
        );
        assert_eq!(
            t.format("Monday, 02-Jan-06 3:4:5 PM pm"),
            "Monday, 02-Jan-06 3:4:5 PM pm"
        );
        assert_eq!(
            t.format("2006-01-02T15:04:05.000Z07:00"),
            "2006-01-02T15:04:05.123Z"
        );
        assert_eq!(t.format(".999999 ,00 __2 002"), ".123456 ,12   2 002");
        assert_eq!(t.format("January 1"), "January 1");
        assert_eq!(t.format("Month"), "Month");
        assert_eq!(t.format("_2006"), "_2006");
        assert_eq!(t.go_string(), "2006-01-02 15:04:05.123456789 +0000 UTC");
        let f = t.in_loc(Location::Fixed(String::new(), -(7 * 3600 + 30 * 60)));
        assert_eq!(
            f.format("-0700 -07:00 -07 Z07:00 -07:00:00 MST"),
            "-0730 -07:30 -07 -07:30 -07:30:00 -0730"
        );
    }

    #[test]
    fn parses_like_go() {
        let t = parse_in_location("2006-01-02 15:04", "2024-03-05 10:30", Location::Utc).unwrap();
        assert_eq!(t.unix_sec(), 1_709_634_600);
        let t = parse_in_location(
            "2006-01-02T15:04:05Z07:00",
            "2024-03-05T10:00:00+02:00",
            Location::Utc,
        )
        .unwrap();
        assert_eq!(t.unix_sec(), 1_709_625_600);
        assert_eq!(t.go_string(), "2024-03-05 10:00:00 +0200 +0200");
        let e = parse_in_location("2006-01-02", "not-a-date", Location::Utc).unwrap_err();
        assert_eq!(
            e.0,
            "parsing time \"not-a-date\" as \"2006-01-02\": cannot parse \"not-a-date\" as \"2006\""
        );
        let e = parse_in_location("2006-01-02", "2024-02-30", Location::Utc).unwrap_err();
        assert_eq!(e.0, "parsing time \"2024-02-30\": day out of range");
        let e = parse_in_location("2006", "x\u{e9}\u{10ffff}", Location::Utc).unwrap_err();
        assert_eq!(
            e.0,
            "parsing time \"x\\xc3\\xa9\\xff\" as \"2006\": cannot parse \"x\\xc3\\xa9\\xff\" as \"2006\""
        );
        let e = parse_in_location("2006", "2024x", Location::Utc).unwrap_err();
        assert_eq!(e.0, "parsing time \"2024x\": extra text: \"x\"");
        let e = parse_in_location("15", "25", Location::Utc).unwrap_err();
        assert_eq!(e.0, "parsing time \"25\": hour out of range");
        let t = parse_in_location("15:04:05", "10:00:00.25", Location::Utc).unwrap();
        assert_eq!(t.nanosecond(), 250_000_000);
        let t = parse_in_location("Jan 2 2006 3:04PM", "mar 5 2024 1:02AM", Location::Utc);
        assert_eq!(t.unwrap().format("2006-01-02 15:04"), "2024-03-05 01:02");
    }

    #[test]
    fn matches_helm_probe_outputs() {
        let t = parse_in_location(
            "2006-01-02T15:04:05.999999999Z07:00",
            "2024-02-29T03:04:05.0123+05:30",
            Location::Utc,
        )
        .unwrap();
        assert_eq!(t.go_string(), "2024-02-29 03:04:05.0123 +0530 +0530");
        let u = t.in_loc(Location::Utc);
        assert_eq!(u.go_string(), "2024-02-28 21:34:05.0123 +0000 UTC");
        assert_eq!(
            u.format("Mon Monday Jan January 1 01 2 _2 02 __2 002 15 3 03 4 04 5 05 2006 06 PM pm MST Z0700 Z07:00 -07 .000 ,999"),
            "Wed Wednesday Feb February 2 02 28 28 28  59 059 21 9 09 34 34 5 05 2024 24 PM pm UTC Z Z +00 .012 ,012"
        );
        if let Ok(ny) = Location::load("America/New_York") {
            assert_eq!(t.in_loc(ny).format("Z07:00 MST"), "-05:00 EST");
        }
        if let Ok(lh) = Location::load("Australia/Lord_Howe") {
            assert_eq!(t.in_loc(lh).format("MST"), "+11");
        }
        let p = parse_in_location("2006-01-02 MST", "2024-01-01 PST", Location::Utc).unwrap();
        assert_eq!(p.go_string(), "2024-01-01 00:00:00 +0000 PST");
        let p = parse_in_location("Jan _2 15:04:05", "Feb  3 04:05:06", Location::Utc).unwrap();
        assert_eq!(p.go_string(), "0000-02-03 04:05:06 +0000 UTC");
        let p = parse_in_location("2006", "2024", Location::Utc).unwrap();
        assert_eq!(p.rfc3339_nano(), "2024-01-01T00:00:00Z");
        assert_eq!(
            p.add(3_600 * SECOND).go_string(),
            "2024-01-01 01:00:00 +0000 UTC"
        );
        assert_eq!(
            p.add_date(1, 2, 3).go_string(),
            "2025-03-04 00:00:00 +0000 UTC"
        );
    }

    #[test]
    fn odd_input_does_not_panic() {
        for (layout, value) in [
            ("é2006", "é2024"),
            ("é2006", "è2024"),
            ("2006 -07:00", "2024 +0é:00"),
            ("2006 -0700", "2024 +é000"),
            ("Jan", "Jé"),
            ("MST", "ÉÉÉ"),
            (".000", ".1é"),
        ] {
            let _ = parse_in_location(layout, value, Location::Utc);
        }
        let t = parse_in_location("é2006", "é2024", Location::Utc).unwrap();
        assert_eq!(t.year(), 2024);
        let big = GoTime::unix(i64::MAX / 2, 0);
        let _ = big.add_date(i64::MAX, i64::MAX, i64::MAX).go_string();
        let _ = GoTime::unix(i64::MIN / 2, 0).go_string();
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(3_723_500_000_000), "1h2m3.5s");
        assert_eq!(format_duration(1_500), "1.5µs");
        assert_eq!(format_duration(-95 * SECOND), "-1m35s");
        assert_eq!(format_duration(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(parse_duration("+36h"), Ok(36 * 3600 * SECOND));
        assert_eq!(parse_duration("-1m30s"), Ok(-90 * SECOND));
        assert_eq!(parse_duration("1.5µs"), Ok(1_500));
        assert_eq!(parse_duration("0"), Ok(0));
        let err = |s: &str| parse_duration(s).unwrap_err().to_string();
        assert_eq!(err("1"), "time: missing unit in duration \"1\"");
        assert_eq!(err("1x"), "time: unknown unit \"x\" in duration \"1x\"");
        assert_eq!(err(""), "time: invalid duration \"\"");
        assert_eq!(round_duration(1_600_000_000, SECOND), 2 * SECOND);
        assert_eq!(round_duration(-1_400_000_000, SECOND), -SECOND);
    }

    #[test]
    fn named_zones() {
        let Ok(tokyo) = Location::load("Asia/Tokyo") else {
            eprintln!("no zoneinfo on this machine; skipping");
            return;
        };
        let t = GoTime::unix(1_700_000_000, 0).in_loc(tokyo);
        assert_eq!(
            t.format("2006-01-02 15:04 -0700 MST"),
            "2023-11-15 07:13 +0900 JST"
        );
        assert!(Location::load("Bad/Zone").is_err());
        assert!(matches!(
            Location::load("../x"),
            Err(LoadLocationError::InvalidName)
        ));
    }

    /// The examples of Go's documentation for `time.ParseDuration`,
    /// `Duration.String` and `Duration.Round`.
    #[test]
    fn go_documented_duration_examples() {
        let p = |s: &str| parse_duration(s).unwrap();
        assert_eq!(format_duration(p("10h")), "10h0m0s");
        assert_eq!(format_duration(p("1h10m10s")), "1h10m10s");
        assert_eq!(p("1h10m10s"), 4210 * SECOND);
        assert_eq!(p("1µs"), 1000);
        assert_eq!(format_duration(p("1µs")), "1µs");
        assert_eq!(p("1us"), 1000);
        assert_eq!(p("300ms"), 300_000_000);
        assert_eq!(p("-1.5h"), -5400 * SECOND);
        assert_eq!(p("2h45m"), 9900 * SECOND);
        assert_eq!(
            format_duration(3600 * SECOND + 2 * 60 * SECOND + 300_000_000),
            "1h2m0.3s"
        );
        assert_eq!(format_duration(300_000_000), "300ms");
        assert_eq!(format_duration(0), "0s");
        let d = p("1h15m30.918273645s");
        let minute = 60 * SECOND;
        for (m, want) in [
            (1, "1h15m30.918273645s"),
            (1_000, "1h15m30.918274s"),
            (1_000_000, "1h15m30.918s"),
            (SECOND, "1h15m31s"),
            (2 * SECOND, "1h15m30s"),
            (minute, "1h16m0s"),
            (10 * minute, "1h20m0s"),
            (60 * minute, "1h0m0s"),
        ] {
            assert_eq!(format_duration(round_duration(d, m)), want, "{m}");
        }
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(layout in "\\PC{0,24}", value in "\\PC{0,24}") {
            let _ = parse_in_location(&layout, &value, Location::Utc);
        }

        #[test]
        fn rfc3339_nano_round_trips(sec in -62_135_596_800i64..253_402_300_799, nsec in 0i64..1_000_000_000, off in -86_399i32..86_400) {
            let t = GoTime::unix(sec, nsec).in_loc(Location::Fixed(String::new(), off / 60 * 60));
            let text = t.rfc3339_nano();
            let back = parse_in_location("2006-01-02T15:04:05.999999999Z07:00", &text, Location::Utc).unwrap();
            proptest::prop_assert_eq!((back.unix_sec(), back.nanosecond()), (sec, nsec));
            proptest::prop_assert_eq!(back.rfc3339_nano(), text);
        }

        #[test]
        fn durations_round_trip(d in proptest::num::i64::ANY) {
            proptest::prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
