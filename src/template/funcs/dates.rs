//! Sprig date functions with Go's layouts: `now`, `date`, `dateInZone`,
//! `toDate`, `dateModify`, `ago`, `duration`, `durationRound`, `unixEpoch`,
//! `htmlDate` and their aliases.
//!
//! Sprig is lenient with types: `date` formats the current time for anything
//! that is not a `time.Time` or a Go integer (so a values number, a float64,
//! means "now"), and `duration` reads only strings and int64.
use super::gotime::{as_time, time_value};
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::gostd::time::{
    format_duration, parse_duration, parse_in_location, round_duration, GoTime, Location, SECOND,
};
use crate::template::value::Value;

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use Param::{Any, String as S};
    r.add("now", &[], None, now);
    r.add("date", &[S, Any], None, date);
    r.add("dateInZone", &[S, Any, S], None, date_in_zone);
    r.add("date_in_zone", &[S, Any, S], None, date_in_zone);
    r.add("htmlDate", &[Any], None, html_date);
    r.add("htmlDateInZone", &[Any, S], None, html_date_in_zone);
    r.add("toDate", &[S, S], None, to_date);
    r.add("mustToDate", &[S, S], None, must_to_date);
    r.add("dateModify", &[S, Any], None, date_modify);
    r.add("date_modify", &[S, Any], None, date_modify);
    r.add("mustDateModify", &[S, Any], None, must_date_modify);
    r.add("must_date_modify", &[S, Any], None, must_date_modify);
    r.add("ago", &[Any], None, ago);
    r.add("duration", &[Any], None, duration);
    r.add("durationRound", &[Any], None, duration_round);
    r.add("unixEpoch", &[Any], None, unix_epoch);
}

fn str_arg(args: &[Value], i: usize) -> &str {
    match args.get(i) {
        Some(Value::Str(s)) => s,
        _ => "",
    }
}

/// A `time.Time` parameter: Go's template engine rejects anything else.
fn time_param(args: &[Value], i: usize) -> Result<&GoTime, FuncError> {
    match args.get(i) {
        Some(v) => as_time(v).ok_or_else(|| {
            FuncError::msg(match v {
                Value::Nil => "invalid value; expected time.Time".to_string(),
                other => format!(
                    "wrong type for value; expected time.Time; got {}",
                    other.type_name()
                ),
            })
        }),
        None => Err(FuncError::msg("invalid value; expected time.Time")),
    }
}

fn now(_: &mut dyn CallContext, _: &[Value]) -> FuncResult {
    Ok(time_value(GoTime::now()))
}

/// Sprig's `dateInZone`: the time (or now), shown in `zone` (UTC when the
/// zone cannot be loaded).
fn format_in_zone(layout: &str, date: &Value, zone: &str) -> String {
    let t = match date {
        Value::Int(i) | Value::Int64(i) => GoTime::unix(*i, 0),
        v => as_time(v).cloned().unwrap_or_else(GoTime::now),
    };
    let loc = Location::load(zone).unwrap_or(Location::Utc);
    t.in_loc(loc).format(layout)
}

fn date(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let d = args.get(1).cloned().unwrap_or_default();
    Ok(Value::str(format_in_zone(str_arg(args, 0), &d, "Local")))
}

fn date_in_zone(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let d = args.get(1).cloned().unwrap_or_default();
    Ok(Value::str(format_in_zone(
        str_arg(args, 0),
        &d,
        str_arg(args, 2),
    )))
}

fn html_date(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let d = args.first().cloned().unwrap_or_default();
    Ok(Value::str(format_in_zone("2006-01-02", &d, "Local")))
}

fn html_date_in_zone(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let d = args.first().cloned().unwrap_or_default();
    Ok(Value::str(format_in_zone(
        "2006-01-02",
        &d,
        str_arg(args, 1),
    )))
}

fn to_date(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let t = parse_in_location(str_arg(args, 0), str_arg(args, 1), Location::Local)
        .unwrap_or_else(|_| GoTime::zero());
    Ok(time_value(t))
}

fn must_to_date(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    parse_in_location(str_arg(args, 0), str_arg(args, 1), Location::Local)
        .map(time_value)
        .map_err(|e| FuncError::msg(e.0))
}

fn date_modify(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let t = time_param(args, 1)?;
    Ok(time_value(match parse_duration(str_arg(args, 0)) {
        Ok(d) => t.add(d),
        Err(_) => t.clone(),
    }))
}

fn must_date_modify(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let t = time_param(args, 1)?;
    parse_duration(str_arg(args, 0))
        .map(|d| time_value(t.add(d)))
        .map_err(|e| FuncError::msg(e.to_string()))
}

fn ago(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let t = match args.first() {
        Some(Value::Int(i) | Value::Int64(i)) => GoTime::unix(*i, 0),
        Some(v) => as_time(v).cloned().unwrap_or_else(GoTime::now),
        None => GoTime::now(),
    };
    let since = GoTime::now().sub(&t);
    Ok(Value::str(format_duration(round_duration(since, SECOND))))
}

fn duration(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let n = match args.first() {
        Some(Value::Str(s)) => crate::gostd::num::parse_int_lenient(s),
        Some(Value::Int64(i)) => *i,
        _ => 0,
    };
    Ok(Value::str(format_duration(n.wrapping_mul(SECOND))))
}

fn duration_round(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let d = match args.first() {
        Some(Value::Str(s)) => parse_duration(s).unwrap_or(0),
        Some(Value::Int64(i)) => *i,
        Some(v) => match as_time(v) {
            Some(t) => GoTime::now().sub(t),
            None => 0,
        },
        None => 0,
    };
    let u = d.unsigned_abs();
    const HOUR: u64 = 3_600_000_000_000;
    let units: [(u64, &str); 6] = [
        (HOUR * 24 * 365, "y"),
        (HOUR * 24 * 30, "mo"),
        (HOUR * 24, "d"),
        (HOUR, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
    ];
    for (unit, suffix) in units {
        if u > unit {
            return Ok(Value::str(format!("{}{suffix}", u / unit)));
        }
    }
    Ok(Value::str("0s"))
}

fn unix_epoch(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let t = time_param(args, 0)?;
    Ok(Value::str(t.unix_sec().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::template::funcs::util::testctx::TestCtx as Ctx;

    fn call(name: &str, args: &[Value]) -> FuncResult {
        let mut r = Registry::new();
        register(&mut r);
        let spec = r.get(name).expect("registered");
        (spec.f)(&mut Ctx, args)
    }

    fn s(v: &str) -> Value {
        Value::str(v)
    }

    fn out(name: &str, args: &[Value]) -> String {
        call(name, args).expect("ok").to_string()
    }

    #[test]
    fn date_in_zone_and_fallbacks() {
        assert_eq!(
            out(
                "dateInZone",
                &[
                    s("2006-01-02 15:04 MST"),
                    Value::Int(1_700_000_000),
                    s("UTC")
                ]
            ),
            "2023-11-14 22:13 UTC"
        );
        assert_eq!(
            out(
                "dateInZone",
                &[s("15:04"), Value::Int(1_700_000_000), s("Bad/Zone")]
            ),
            "22:13"
        );
        assert_eq!(
            out("htmlDateInZone", &[Value::Int64(0), s("UTC")]),
            "1970-01-01"
        );
        // A float64 (any values number) or a string formats the current time.
        let now_year = GoTime::now().in_loc(Location::Utc).format("2006");
        assert_eq!(
            out("dateInZone", &[s("2006"), Value::Float(1.0), s("UTC")]),
            now_year
        );
        assert_eq!(
            out("dateInZone", &[s("2006"), s("garbage"), s("UTC")]),
            now_year
        );
    }

    #[test]
    fn to_date_and_modify() {
        let t = call("toDate", &[s("2006-01-02"), s("2024-03-05")]).unwrap();
        assert_eq!(out("unixEpoch", std::slice::from_ref(&t)), "1709596800");
        let m = call("dateModify", &[s("+36h"), t.clone()]).unwrap();
        assert_eq!(
            out("unixEpoch", &[m]),
            (1_709_596_800 + 36 * 3600).to_string()
        );
        let same = call("dateModify", &[s("bogus"), t.clone()]).unwrap();
        assert_eq!(out("unixEpoch", &[same]), "1709596800");
        let e = call("mustDateModify", &[s("bogus"), t]).unwrap_err();
        assert_eq!(e, FuncError::msg("time: invalid duration \"bogus\""));
        let zero = call("toDate", &[s("2006"), s("bad")]).unwrap();
        assert_eq!(out("unixEpoch", &[zero]), "-62135596800");
        let e = call("mustToDate", &[s("2006-01-02"), s("not-a-date")]).unwrap_err();
        assert_eq!(
            e,
            FuncError::msg(
                "parsing time \"not-a-date\" as \"2006-01-02\": cannot parse \"not-a-date\" as \"2006\""
            )
        );
        assert!(call("unixEpoch", &[s("x")]).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(out("duration", &[Value::Int(95)]), "0s");
        assert_eq!(out("duration", &[Value::Int64(95)]), "1m35s");
        assert_eq!(out("duration", &[s("3600")]), "1h0m0s");
        assert_eq!(out("duration", &[s("x")]), "0s");
        assert_eq!(out("durationRound", &[s("2h10m5s")]), "2h");
        assert_eq!(out("durationRound", &[Value::Int(95)]), "0s");
        assert_eq!(out("durationRound", &[s("400h")]), "16d");
        assert_eq!(out("durationRound", &[s("90000h")]), "10y");
        assert_eq!(out("durationRound", &[s("-1000h")]), "1mo");
        assert_eq!(out("durationRound", &[s("1s")]), "0s");
        assert_eq!(out("ago", &[call("now", &[]).unwrap()]), "0s");
    }

    #[test]
    fn now_prints_monotonic_reading() {
        let n = out("now", &[]);
        let re = regex::Regex::new(
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} \S+ m=\+\d+\.\d{9}$",
        )
        .unwrap();
        assert!(re.is_match(&n), "{n}");
    }
}
