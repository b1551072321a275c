//! Go's `time` values as templates observe them: `time.Time` fields and
//! methods (`.Unix`, `.Format`, `.Add`, ...), and the `time.Month`,
//! `time.Weekday`, `time.Duration` and `*time.Location` values they return.
//! The time semantics themselves are [`crate::gostd::time`]'s.
use crate::gostd::time::{format_duration, GoTime, Location, LONG_DAYS, LONG_MONTHS, SECOND};
use crate::template::value::{GoObject, Value};
use std::fmt;
use std::rc::Rc;

/// A `time.Month`, `time.Weekday`, `time.Duration` or `*time.Location`
/// returned by a `time.Time` method: prints like Go's `String()`.
#[derive(Debug, Clone)]
pub struct GoTimeScalar {
    type_name: &'static str,
    text: String,
    json: Value,
}

impl GoObject for GoTimeScalar {
    fn type_name(&self) -> &str {
        self.type_name
    }
    fn field(&self, name: &str) -> Option<Value> {
        (name == "String").then(|| Value::str(self.text.as_str()))
    }
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
    fn to_json_value(&self) -> Value {
        self.json.clone()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A `time.Duration` value.
pub fn duration_value(d: i64) -> Value {
    Value::Object(Rc::new(GoTimeScalar {
        type_name: "time.Duration",
        text: format_duration(d),
        json: Value::Int64(d),
    }))
}

/// The time a template value holds, if it is a `time.Time`.
pub fn as_time(v: &Value) -> Option<&GoTime> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<GoTime>(),
        _ => None,
    }
}

/// Wraps a time as a template value.
pub fn time_value(t: GoTime) -> Value {
    Value::Object(Rc::new(t))
}

/// The nanoseconds of a `time.Duration` argument (an integer or a Duration).
fn duration_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) | Value::Int64(i) => Ok(*i),
        Value::Object(o) if o.type_name() == "time.Duration" => match o.to_json_value() {
            Value::Int64(i) => Ok(i),
            _ => Err("expected time.Duration".into()),
        },
        other => Err(format!(
            "wrong type for value; expected time.Duration; got {}",
            other.type_name()
        )),
    }
}

fn int_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) | Value::Int64(i) => Ok(*i),
        other => Err(format!(
            "wrong type for value; expected int; got {}",
            other.type_name()
        )),
    }
}

fn time_arg(v: &Value) -> Result<&GoTime, String> {
    as_time(v).ok_or_else(|| {
        format!(
            "wrong type for value; expected time.Time; got {}",
            v.type_name()
        )
    })
}

impl GoObject for GoTime {
    fn type_name(&self) -> &str {
        "time.Time"
    }

    fn field(&self, name: &str) -> Option<Value> {
        let c = || self.civil();
        let (sec, nsec) = (self.unix_sec(), self.nanosecond());
        Some(match name {
            "Unix" => Value::Int64(sec),
            "UnixMilli" => Value::Int64(sec.wrapping_mul(1000).wrapping_add(nsec / 1_000_000)),
            "UnixMicro" => Value::Int64(sec.wrapping_mul(1_000_000).wrapping_add(nsec / 1000)),
            "UnixNano" => Value::Int64(sec.wrapping_mul(SECOND).wrapping_add(nsec)),
            "Year" => Value::Int(c().year),
            "Day" => Value::Int(c().day),
            "Hour" => Value::Int(c().hour),
            "Minute" => Value::Int(c().min),
            "Second" => Value::Int(c().sec),
            "Nanosecond" => Value::Int(nsec),
            "YearDay" => Value::Int(c().yday),
            "Month" => {
                let m = c().month;
                Value::Object(Rc::new(GoTimeScalar {
                    type_name: "time.Month",
                    text: LONG_MONTHS[(m - 1) as usize].into(),
                    json: Value::Int(m),
                }))
            }
            "Weekday" => {
                let w = c().weekday;
                Value::Object(Rc::new(GoTimeScalar {
                    type_name: "time.Weekday",
                    text: LONG_DAYS[w].into(),
                    json: Value::Int(w as i64),
                }))
            }
            "Location" => Value::Object(Rc::new(GoTimeScalar {
                type_name: "*time.Location",
                text: self.location().name(),
                json: Value::empty_map(),
            })),
            "UTC" => time_value(self.in_loc(Location::Utc)),
            "Local" => time_value(self.in_loc(Location::Local)),
            "String" => Value::str(self.go_string()),
            "IsZero" => Value::Bool(self.is_zero()),
            "IsDST" => Value::Bool(self.location().is_dst(sec)),
            _ => return None,
        })
    }

    fn method_params(&self, name: &str) -> Option<(&'static [super::Param], Option<super::Param>)> {
        use super::Param::{Any, Int, Int64, String as S};
        Some(match name {
            "Format" => (&[S], None),
            // time.Duration is an int64 kind: untyped constants convert to it.
            "Add" | "Truncate" | "Round" => (&[Int64], None),
            "AddDate" => (&[Int, Int, Int], None),
            "Sub" | "After" | "Before" | "Equal" | "Compare" => (&[Any], None),
            _ => return None,
        })
    }

    fn call(&self, name: &str, args: &[Value]) -> Option<super::FuncResult> {
        let want = |n: usize| -> Result<(), String> {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "wrong number of args for {name}: want {n} got {}",
                    args.len()
                ))
            }
        };
        let r = match name {
            "Format" => want(1).and_then(|()| match &args[0] {
                Value::Str(s) => Ok(Value::str(self.format(s))),
                other => Err(format!(
                    "wrong type for value; expected string; got {}",
                    other.type_name()
                )),
            }),
            "Add" => want(1)
                .and_then(|()| duration_arg(&args[0]))
                .map(|d| time_value(self.add(d))),
            "Sub" => want(1)
                .and_then(|()| time_arg(&args[0]))
                .map(|u| duration_value(self.sub(u))),
            "AddDate" => want(3).and_then(|()| {
                let y = int_arg(&args[0])?;
                let m = int_arg(&args[1])?;
                let d = int_arg(&args[2])?;
                Ok(time_value(self.add_date(y, m, d)))
            }),
            "Truncate" => want(1)
                .and_then(|()| duration_arg(&args[0]))
                .map(|d| time_value(self.truncate(d))),
            "Round" => want(1)
                .and_then(|()| duration_arg(&args[0]))
                .map(|d| time_value(self.round(d))),
            "After" | "Before" | "Equal" | "Compare" => {
                want(1).and_then(|()| time_arg(&args[0])).map(|u| {
                    let ord =
                        (self.unix_sec(), self.nanosecond()).cmp(&(u.unix_sec(), u.nanosecond()));
                    match name {
                        "After" => Value::Bool(ord.is_gt()),
                        "Before" => Value::Bool(ord.is_lt()),
                        "Equal" => Value::Bool(ord.is_eq()),
                        _ => Value::Int(match ord {
                            std::cmp::Ordering::Less => -1,
                            std::cmp::Ordering::Equal => 0,
                            std::cmp::Ordering::Greater => 1,
                        }),
                    }
                })
            }
            _ => {
                if args.is_empty() {
                    return self.field(name).map(Ok);
                }
                return None;
            }
        };
        Some(r.map_err(super::FuncError::Msg))
    }

    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.go_string())
    }

    fn to_json_value(&self) -> Value {
        Value::str(self.rfc3339_nano())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
