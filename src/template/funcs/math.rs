//! Sprig math functions (int64 and float64 families).
//!
//! The integer functions convert every operand with spf13/cast (`add 1.5 1.5`
//! is 2) and wrap on overflow like Go. The `*f` functions go through
//! shopspring/decimal: each operand becomes the shortest decimal of its
//! float64, the operation is exact (division rounds to 16 decimal places) and
//! the result is converted back to float64.
use super::util::{arg, arg_int, err, int_list, params, to_float64, to_int64};
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::Value;

const DIV_ZERO: &str = "runtime error: integer divide by zero";

fn i64_ok(v: i64) -> FuncResult {
    Ok(Value::Int64(v))
}

fn add1(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    i64_ok(to_int64(&arg(a, 0)).wrapping_add(1))
}

fn add(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    i64_ok(a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))))
}

fn sub(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    i64_ok(to_int64(&arg(a, 0)).wrapping_sub(to_int64(&arg(a, 1))))
}

fn div(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let d = to_int64(&arg(a, 1));
    if d == 0 {
        return Err(err(DIV_ZERO));
    }
    i64_ok(to_int64(&arg(a, 0)).wrapping_div(d))
}

fn modulo(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let d = to_int64(&arg(a, 1));
    if d == 0 {
        return Err(err(DIV_ZERO));
    }
    i64_ok(to_int64(&arg(a, 0)).wrapping_rem(d))
}

fn mul(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let first = to_int64(&arg(a, 0));
    i64_ok(
        a.iter()
            .skip(1)
            .fold(first, |acc, v| acc.wrapping_mul(to_int64(v))),
    )
}

fn max(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let first = to_int64(&arg(a, 0));
    i64_ok(a.iter().skip(1).map(to_int64).fold(first, i64::max))
}

fn min(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let first = to_int64(&arg(a, 0));
    i64_ok(a.iter().skip(1).map(to_int64).fold(first, i64::min))
}

/// Go's `math.Max` (NaN wins, +0 beats -0).
pub fn go_max(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x > 0.0 || y.is_infinite() && y > 0.0 {
        return f64::INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && x == y {
        return if x.is_sign_negative() { y } else { x };
    }
    if x > y {
        x
    } else {
        y
    }
}

/// Go's `math.Min` (NaN wins, -0 beats +0).
pub fn go_min(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x < 0.0 || y.is_infinite() && y < 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && x == y {
        return if x.is_sign_negative() { x } else { y };
    }
    if x < y {
        x
    } else {
        y
    }
}

fn maxf(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let first = to_float64(&arg(a, 0));
    Ok(Value::Float(
        a.iter().skip(1).map(to_float64).fold(first, go_max),
    ))
}

fn minf(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let first = to_float64(&arg(a, 0));
    Ok(Value::Float(
        a.iter().skip(1).map(to_float64).fold(first, go_min),
    ))
}

fn floor(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Float(to_float64(&arg(a, 0)).floor()))
}

fn ceil(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Float(to_float64(&arg(a, 0)).ceil()))
}

fn round(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let round_on = a.get(2).map(to_float64).unwrap_or(0.5);
    let val = to_float64(&arg(a, 0));
    let places = arg_int(a, 1) as f64;
    let pow = 10f64.powf(places);
    let digit = pow * val;
    let frac = digit.fract();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(r / pow))
}

/// The most elements `until`, `untilStep` and `seq` produce. Go would try to
/// build any size and die out of memory; past this bound the list is cut
/// instead of exhausting the machine.
pub const MAX_SEQUENCE: usize = 1 << 24;

/// Sprig's `untilStep`: `[start, stop)` by `step`, empty when the step
/// points the wrong way.
pub fn until_step(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut v = Vec::new();
    if stop < start {
        if step >= 0 {
            return v;
        }
        let mut i = start;
        while i > stop && v.len() < MAX_SEQUENCE {
            v.push(i);
            i = match i.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
        return v;
    }
    if step <= 0 {
        return v;
    }
    let mut i = start;
    while i < stop && v.len() < MAX_SEQUENCE {
        v.push(i);
        i = match i.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    v
}

/// Refuses a sequence from `start` towards `stop` by `step` whose list
/// would pass the value cap, before it is built.
fn check_sequence(
    ctx: &dyn CallContext,
    start: i64,
    stop: i64,
    step: i64,
) -> Result<(), FuncError> {
    if step == 0 {
        return Ok(());
    }
    let span = (stop as i128 - start as i128).unsigned_abs();
    let n = span
        .div_ceil(step.unsigned_abs() as u128)
        .min(MAX_SEQUENCE as u128);
    // A list slot, plus the i64 it is built from.
    super::check_size(ctx, n * (std::mem::size_of::<Value>() as u128 + 8))
}

fn until(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let count = arg_int(a, 0);
    let step = if count < 0 { -1 } else { 1 };
    check_sequence(ctx, 0, count, step)?;
    Ok(int_list(until_step(0, count, step)))
}

fn until_step_fn(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    check_sequence(ctx, arg_int(a, 0), arg_int(a, 1), arg_int(a, 2))?;
    Ok(int_list(until_step(
        arg_int(a, 0),
        arg_int(a, 1),
        arg_int(a, 2),
    )))
}

fn join_ints(v: &[i64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn seq(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let p: Vec<i64> = a.iter().map(to_int64).collect();
    match p.len() {
        1 => check_sequence(ctx, 1, p[0], 1)?,
        2 => check_sequence(ctx, p[0], p[1], 1)?,
        3 => check_sequence(ctx, p[0], p[2], p[1])?,
        _ => {}
    }
    let out = match p.len() {
        1 => {
            let (start, end) = (1, p[0]);
            let inc = if end < start { -1 } else { 1 };
            join_ints(&until_step(start, end.wrapping_add(inc), inc))
        }
        2 => {
            let (start, end) = (p[0], p[1]);
            let step = if end < start { -1 } else { 1 };
            join_ints(&until_step(start, end.wrapping_add(step), step))
        }
        3 => {
            let (start, step, end) = (p[0], p[1], p[2]);
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(Value::str(""));
                }
            }
            join_ints(&until_step(start, end.wrapping_add(inc), step))
        }
        _ => String::new(),
    };
    Ok(Value::str(out))
}

/// A decimal number `mant * 10^exp`, as shopspring/decimal holds it.
#[derive(Debug, Clone, Copy)]
struct Dec {
    mant: i128,
    exp: i32,
}

impl Dec {
    /// `decimal.NewFromFloat`: the shortest decimal that reads back as `f`.
    fn from_f64(f: f64) -> Result<Dec, FuncError> {
        if f.is_nan() {
            return Err(err("Cannot create a Decimal from NaN"));
        }
        if f.is_infinite() {
            return Err(err(if f > 0.0 {
                "Cannot create a Decimal from +Inf"
            } else {
                "Cannot create a Decimal from -Inf"
            }));
        }
        let sci = format!("{f:e}");
        let (m, e) = sci.split_once('e').unwrap_or((&sci, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let neg = m.starts_with('-');
        let (ip, fp) = m
            .trim_start_matches('-')
            .split_once('.')
            .unwrap_or((m.trim_start_matches('-'), ""));
        let digits = format!("{ip}{fp}");
        let mant: i128 = digits.parse().unwrap_or(0);
        Ok(Dec {
            mant: if neg { -mant } else { mant },
            exp: e - fp.len() as i32,
        })
    }

    /// `m * 10^exp` for a finite float mantissa `m`.
    fn approx(m: f64, exp: i32) -> Result<Dec, FuncError> {
        let d = Dec::from_f64(m)?;
        Ok(Dec {
            mant: d.mant,
            exp: d.exp.saturating_add(exp),
        })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.mant, self.exp)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// Both operands scaled to the smaller exponent, if that fits.
    fn align(a: Dec, b: Dec) -> Option<(i128, i128, i32)> {
        let exp = a.exp.min(b.exp);
        let sa = scale(a.mant, (a.exp - exp) as u32)?;
        let sb = scale(b.mant, (b.exp - exp) as u32)?;
        Some((sa, sb, exp))
    }
}

fn scale(m: i128, by: u32) -> Option<i128> {
    10i128.checked_pow(by).and_then(|p| m.checked_mul(p))
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

fn dec_op(x: Dec, y: Dec, op: Op) -> Result<Dec, FuncError> {
    let exact =
        match op {
            Op::Add => Dec::align(x, y)
                .and_then(|(a, b, e)| a.checked_add(b).map(|m| Dec { mant: m, exp: e })),
            Op::Sub => Dec::align(x, y)
                .and_then(|(a, b, e)| a.checked_sub(b).map(|m| Dec { mant: m, exp: e })),
            Op::Mul => x.mant.checked_mul(y.mant).map(|m| Dec {
                mant: m,
                exp: x.exp + y.exp,
            }),
            Op::Div => {
                if y.mant == 0 {
                    return Err(err("decimal division by 0"));
                }
                // q = x/y rounded half away from zero to 16 decimal places:
                // q * 10^16 = x.mant * 10^(x.exp - y.exp + 16) / y.mant.
                let shift = x.exp - y.exp + 16;
                let (num, den) = if shift >= 0 {
                    (scale(x.mant, shift as u32), Some(y.mant))
                } else {
                    (Some(x.mant), scale(y.mant, (-shift) as u32))
                };
                match (num, den) {
                    (Some(n), Some(d)) => {
                        let q = n / d;
                        let r = n % d;
                        let q = if r.unsigned_abs() * 2 >= d.unsigned_abs() {
                            if (n < 0) != (d < 0) {
                                q - 1
                            } else {
                                q + 1
                            }
                        } else {
                            q
                        };
                        Some(Dec { mant: q, exp: -16 })
                    }
                    _ => None,
                }
            }
        };
    match exact {
        Some(d) => Ok(d),
        // Out of the exact i128 range. shopspring/decimal has unbounded precision,
        // so the value stays finite here even when it no longer fits a float64
        // (that only shows as ±Inf when the result is converted back). Work on
        // the mantissas in float64 and keep the decimal exponent apart.
        None => match op {
            Op::Add | Op::Sub => {
                let (hi, lo) = if x.exp >= y.exp { (x, y) } else { (y, x) };
                let lo_m = lo.mant as f64 * 10f64.powi(lo.exp - hi.exp);
                let (hm, lm) = if x.exp >= y.exp {
                    (hi.mant as f64, lo_m)
                } else {
                    (lo_m, hi.mant as f64)
                };
                let m = match op {
                    Op::Sub => hm - lm,
                    _ => hm + lm,
                };
                Dec::approx(m, hi.exp)
            }
            Op::Mul => Dec::approx(x.mant as f64 * y.mant as f64, x.exp + y.exp),
            Op::Div => {
                if x.exp - y.exp + 16 < 0 {
                    // The divisor does not fit once scaled: the quotient rounds
                    // to 0 at decimal's 16 places.
                    Ok(Dec { mant: 0, exp: 0 })
                } else {
                    Dec::approx(x.mant as f64 / y.mant as f64, x.exp - y.exp)
                }
            }
        },
    }
}

fn exec_decimal(first: &Value, rest: &[Value], op: Op) -> FuncResult {
    let mut acc = Dec::from_f64(to_float64(first))?;
    for v in rest {
        acc = dec_op(acc, Dec::from_f64(to_float64(v))?, op)?;
    }
    Ok(Value::Float(acc.to_f64()))
}

fn add1f(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    exec_decimal(&arg(a, 0), &[Value::Int(1)], Op::Add)
}

fn addf(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    exec_decimal(&Value::Float(0.0), a, Op::Add)
}

fn subf(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    exec_decimal(&arg(a, 0), a.get(1..).unwrap_or(&[]), Op::Sub)
}

fn mulf(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    exec_decimal(&arg(a, 0), a.get(1..).unwrap_or(&[]), Op::Mul)
}

fn divf(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    exec_decimal(&arg(a, 0), a.get(1..).unwrap_or(&[]), Op::Div)
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    let any = Some(Param::Any);
    r.add("add1", params::A, None, add1);
    r.add("add", params::NONE, any, add);
    r.add("sub", params::AA, None, sub);
    r.add("div", params::AA, None, div);
    r.add("mod", params::AA, None, modulo);
    r.add("mul", params::A, any, mul);
    r.add("add1f", params::A, None, add1f);
    r.add("addf", params::NONE, any, addf);
    r.add("subf", params::A, any, subf);
    r.add("divf", params::A, any, divf);
    r.add("mulf", params::A, any, mulf);
    r.add("biggest", params::A, any, max);
    r.add("max", params::A, any, max);
    r.add("min", params::A, any, min);
    r.add("maxf", params::A, any, maxf);
    r.add("minf", params::A, any, minf);
    r.add("ceil", params::A, None, ceil);
    r.add("floor", params::A, None, floor);
    r.add(
        "round",
        &[Param::Any, Param::Int],
        Some(Param::Float64),
        round,
    );
    r.add("until", &[Param::Int], None, until);
    r.add(
        "untilStep",
        &[Param::Int, Param::Int, Param::Int],
        None,
        until_step_fn,
    );
    r.add("seq", params::NONE, Some(Param::Int), seq);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn int_math() {
        assert_eq!(show("add", &[i(1), i(2), i(3)]), "6");
        assert_eq!(show("add", &[f(1.5), f(1.5)]), "2");
        assert_eq!(show("sub", &[i(5), i(3)]), "2");
        assert_eq!(show("mul", &[i(2), i(3), i(4)]), "24");
        assert_eq!(show("mul", &[i(9223372036854775807), i(2)]), "-2");
        assert_eq!(show("mul", &[f(2.9), i(2)]), "4");
        assert_eq!(show("add1", &[i(5)]), "6");
        assert_eq!(show("add", &[Value::Nil, i(1)]), "1");
        assert_eq!(
            show("mod", &[i(1), i(0)]),
            "ERR: runtime error: integer divide by zero"
        );
        assert_eq!(show("div", &[i(7), i(2)]), "3");
        assert_eq!(show("max", &[i(1), i(5), i(3)]), "5");
        assert_eq!(show("min", &[i(4), i(2), i(8)]), "2");
        assert_eq!(show("max", &[f(1.5), f(1.2)]), "1");
    }

    #[test]
    fn float_math() {
        assert_eq!(show("maxf", &[f(1.5), f(2.5)]), "2.5");
        assert_eq!(show("minf", &[f(1.5), i(-2)]), "-2");
        assert_eq!(show("addf", &[f(0.1), f(0.2)]), "0.3");
        assert_eq!(show("subf", &[f(1.5), f(0.1)]), "1.4");
        assert_eq!(show("mulf", &[f(1.1), f(3.0)]), "3.3");
        assert_eq!(show("divf", &[i(1), i(3)]), "0.3333333333333333");
        assert_eq!(show("divf", &[i(1), i(0)]), "ERR: decimal division by 0");
        assert_eq!(show("add1f", &[f(1.5)]), "2.5");
        assert_eq!(show("divf", &[i(1), f(3e10)]), "3.33333e-11");
        assert_eq!(show("mulf", &[f(0.1), f(0.2)]), "0.02");
        assert_eq!(show("addf", &[f(1e20), i(1)]), "1e+20");
        assert_eq!(show("round", &[f(2.5), i(0), f(0.6)]), "2");
        assert_eq!(show("floor", &[f(1.7)]), "1");
        assert_eq!(show("ceil", &[f(1.2)]), "2");
        assert_eq!(show("round", &[f(1.5), i(0)]), "2");
        assert_eq!(show("round", &[f(2.5), i(0)]), "3");
        assert_eq!(show("round", &[f(1.23456), i(2)]), "1.23");
        assert_eq!(show("round", &[f(-1.5), i(0)]), "-2");
        assert_eq!(show("round", &[f(1.005), i(2)]), "1");
    }

    #[test]
    fn sequences() {
        assert_eq!(show("untilStep", &[i(0), i(10), i(3)]), "[0 3 6 9]");
        assert_eq!(show("untilStep", &[i(10), i(0), i(-4)]), "[10 6 2]");
        assert_eq!(show("untilStep", &[i(0), i(5), i(0)]), "[]");
        assert_eq!(show("until", &[i(-2)]), "[0 -1]");
        assert_eq!(show("seq", &[i(5)]), "1 2 3 4 5");
        assert_eq!(show("seq", &[i(2), i(5)]), "2 3 4 5");
        assert_eq!(show("seq", &[i(0), i(2), i(10)]), "0 2 4 6 8 10");
        assert_eq!(show("seq", &[i(5), i(1)]), "5 4 3 2 1");
        assert_eq!(show("seq", &[i(-2)]), "1 0 -1 -2");
        assert_eq!(show("seq", &[i(0)]), "1 0");
        assert_eq!(show("seq", &[]), "");
    }
}
