//! The function map: Go's builtins, Sprig and Helm's own functions.
//!
//! Each family lives in its own file and exposes `pub fn register(r: &mut Registry)`.
//! A function declares its Go signature ([`Param`]s), so that the engine can
//! convert untyped template constants and report Go's argument errors exactly
//! as `text/template` does ("wrong type for value; expected string; got int").
pub(crate) mod builtins;
pub(crate) mod conversion;
pub(crate) mod crypto;
pub(crate) mod crypto_x509;
pub(crate) mod dates;
pub(crate) mod defaults;
pub(crate) mod dicts;
pub(crate) mod encoding;
pub(crate) mod gotime;
pub(crate) mod helm;
pub(crate) mod lists;
pub(crate) mod math;
pub(crate) mod network;
pub(crate) mod paths;
pub(crate) mod random;
pub(crate) mod reflect;
pub(crate) mod regex;
pub(crate) mod semver;
pub(crate) mod serialization;
pub(crate) mod sprig_only;
pub(crate) mod strings;
pub(crate) mod urls;
pub(crate) mod util;

use super::value::Value;
use foldhash::{HashMap, HashSet};

/// The Go type of a function parameter. The engine converts arguments to it
/// before the call, with `text/template`'s rules and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// `interface{}`: anything, passed as is (nil allowed).
    Any,
    /// `string`
    String,
    /// `int`
    Int,
    /// `int64`
    Int64,
    /// `float64`
    Float64,
    /// `bool`
    Bool,
    /// `[]interface{}`
    List,
    /// `map[string]interface{}`
    Map,
    /// `[]string`
    StringList,
}

impl Param {
    /// The Go type name, as `text/template` prints it in argument errors.
    pub fn go_type(self) -> &'static str {
        match self {
            Param::Any => "interface {}",
            Param::String => "string",
            Param::Int => "int",
            Param::Int64 => "int64",
            Param::Float64 => "float64",
            Param::Bool => "bool",
            Param::List => "[]interface {}",
            Param::Map => "map[string]interface {}",
            Param::StringList => "[]string",
        }
    }
    /// Whether an untyped `nil` can be assigned to the type (Go's `canBeNil`).
    pub fn can_be_nil(self) -> bool {
        matches!(
            self,
            Param::Any | Param::List | Param::Map | Param::StringList
        )
    }
    /// Whether a value of this dynamic type is assignable to the parameter.
    pub fn accepts(self, v: &Value) -> bool {
        use super::value::{ListKind, MapKind};
        match self {
            Param::Any => true,
            Param::String => matches!(v, Value::Str(_)),
            Param::Int => matches!(v, Value::Int(_)),
            Param::Int64 => matches!(v, Value::Int64(_)),
            Param::Float64 => matches!(v, Value::Float(_)),
            Param::Bool => matches!(v, Value::Bool(_)),
            Param::List => matches!(v, Value::List(_, ListKind::Interface)),
            Param::Map => matches!(v, Value::Map(_, MapKind::Interface | MapKind::Values)),
            Param::StringList => matches!(v, Value::List(_, ListKind::String)),
        }
    }
}

/// An error returned by a function. The engine wraps it as Go does:
/// `error calling NAME: MSG`.
#[derive(Debug, Clone, PartialEq)]
pub enum FuncError {
    /// An ordinary error (a Go `error` return or a recovered panic).
    Msg(String),
    /// From `required`/`fail`: Helm reports these as `execution error at (file:L:C): MSG`.
    Fail(String),
}

impl FuncError {
    /// An ordinary error with a message.
    pub fn msg(m: impl Into<String>) -> Self {
        FuncError::Msg(m.into())
    }
}

/// What a function returns.
pub type FuncResult = Result<Value, FuncError>;

/// Access to the engine during a call, for functions that need it
/// (`include`, `tpl`, `lookup`, random sources, output limits).
pub trait CallContext {
    /// Runs a named template with `data` and returns its output (`include`).
    fn include(&mut self, name: &str, data: Value) -> FuncResult;
    /// Parses (cached) and runs `text` as a template with `data` (`tpl`).
    fn tpl(&mut self, text: &str, data: Value) -> FuncResult;
    /// `lookup apiVersion kind namespace name`; offline it returns an empty map.
    fn lookup(&mut self, api_version: &str, kind: &str, namespace: &str, name: &str) -> FuncResult;
    /// Whether network functions (`getHostByName`) may reach DNS.
    fn network_enabled(&self) -> bool {
        false
    }
    /// Whether the engine runs in Helm's lint mode.
    fn lint_mode(&self) -> bool {
        false
    }
    /// Records a line for the engine's log (lint mode's `[INFO]` lines).
    fn log(&mut self, _line: String) {}
    /// The most bytes any one value may hold: the engine's output limit
    /// ([`EngineOptions::max_output_bytes`](crate::template::EngineOptions)).
    /// Functions that can grow a value check the size they would produce
    /// before allocating it ([`check_size`]); the engine checks every
    /// result after the call as well.
    fn max_value_bytes(&self) -> usize {
        DEFAULT_MAX_VALUE_BYTES
    }
}

/// The value cap of a [`CallContext`] that does not set one: 100 MiB, the
/// engine's default output limit.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 100 * 1024 * 1024;

/// Refuses a value of `bytes` bytes (computed before it is built) when it
/// would be larger than the context's value cap. This keeps hostile
/// templates (`repeat 1000000000 "x" | repeat 1000000000`) from taking
/// gigabytes before they fail.
pub fn check_size(ctx: &dyn CallContext, bytes: u128) -> Result<(), FuncError> {
    let max = ctx.max_value_bytes();
    if bytes > max as u128 {
        Err(too_large(bytes, max))
    } else {
        Ok(())
    }
}

/// Refuses a call whose arguments together already hold more than the cap,
/// for functions whose result holds all of them (`print`, `cat`, `toJson`).
pub fn check_args_size(ctx: &dyn CallContext, args: &[Value]) -> Result<(), FuncError> {
    let max = ctx.max_value_bytes() as u128;
    let mut total = 0;
    for a in args {
        total += value_bytes(a, max);
        if total > max {
            return Err(too_large(total, ctx.max_value_bytes()));
        }
    }
    Ok(())
}

/// The error for a value over the cap.
pub(crate) fn too_large(bytes: u128, max: usize) -> FuncError {
    FuncError::Msg(format!(
        "a value of {bytes} bytes would exceed the limit of {max} bytes (the output limit)"
    ))
}

/// The bytes a value holds for the cap: string and byte lengths, and for
/// lists and maps their elements' bytes plus one slot each. Walks at most
/// `budget` bytes' worth, so shared or cyclic structures stop early.
pub(crate) fn value_bytes(v: &Value, budget: u128) -> u128 {
    const SLOT: u128 = std::mem::size_of::<Value>() as u128;
    fn walk(v: &Value, budget: u128, depth: usize, acc: &mut u128) {
        if *acc > budget || depth > 10_000 {
            return;
        }
        match v {
            Value::Str(s) => *acc += s.len() as u128,
            Value::Bytes(b) => *acc += b.len() as u128,
            Value::List(l, _) => {
                *acc += SLOT * l.len() as u128;
                for x in l.iter() {
                    walk(x, budget, depth + 1, acc);
                    if *acc > budget {
                        return;
                    }
                }
            }
            Value::Map(m, _) => {
                let Ok(m) = m.try_borrow() else { return };
                for (k, x) in m.iter() {
                    *acc += SLOT + k.len() as u128;
                    walk(x, budget, depth + 1, acc);
                    if *acc > budget {
                        return;
                    }
                }
            }
            _ => {}
        }
    }
    let mut acc = 0;
    walk(v, budget, 0, &mut acc);
    acc
}

/// The native implementation of a template function.
pub type NativeFn = fn(&mut dyn CallContext, &[Value]) -> FuncResult;

/// One function in the function map.
#[derive(Debug, Clone)]
pub struct FuncSpec {
    /// The name used in templates.
    pub name: &'static str,
    /// Fixed parameters, in order.
    pub params: &'static [Param],
    /// The element type of a trailing variadic parameter, if any.
    pub variadic: Option<Param>,
    /// The implementation. It receives the converted arguments.
    pub f: NativeFn,
}

/// The function map, by name.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    funcs: HashMap<&'static str, FuncSpec>,
    builtins: HashSet<&'static str>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
    /// An empty registry with room for `n` functions (Helm's map holds
    /// about 250).
    pub fn with_capacity(n: usize) -> Self {
        Registry {
            funcs: HashMap::with_capacity_and_hasher(n, Default::default()),
            builtins: HashSet::default(),
        }
    }
    /// Adds or replaces a function (later registrations win, as in Helm's map).
    pub fn add(
        &mut self,
        name: &'static str,
        params: &'static [Param],
        variadic: Option<Param>,
        f: NativeFn,
    ) {
        self.builtins.remove(name);
        self.funcs.insert(
            name,
            FuncSpec {
                name,
                params,
                variadic,
                f,
            },
        );
    }
    /// Adds one of Go's own builtins. `and`, `or` and `call` get Go's special
    /// evaluation only while no later family has replaced them.
    pub fn add_builtin(
        &mut self,
        name: &'static str,
        params: &'static [Param],
        variadic: Option<Param>,
        f: NativeFn,
    ) {
        self.add(name, params, variadic, f);
        self.builtins.insert(name);
    }
    /// Whether `name` is still Go's builtin (not shadowed by a later family).
    pub fn is_builtin(&self, name: &str) -> bool {
        self.builtins.contains(name)
    }
    /// Looks a function up by name.
    pub fn get(&self, name: &str) -> Option<&FuncSpec> {
        self.funcs.get(name)
    }
    /// The number of functions.
    pub fn len(&self) -> usize {
        self.funcs.len()
    }
    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }
}

/// Helm v3.17.2's complete function map: Go builtins, Sprig (without `env`
/// and `expandenv`) and Helm's own functions, registered in Helm's order so
/// that later names win: Go's builtins are shadowed by Sprig (`slice`), and
/// Helm's serialization and engine functions replace Sprig's (`fail`, `toJson`).
pub fn helm_registry() -> Registry {
    let mut r = Registry::with_capacity(320);
    register_common(&mut r);
    serialization::register(&mut r);
    helm::register(&mut r);
    r
}

/// Go's builtins and the Sprig families Helm's and Sprig's own function
/// maps share (serialization differs: see [`serialization`]).
fn register_common(r: &mut Registry) {
    builtins::register(r);
    strings::register(r);
    lists::register(r);
    dicts::register(r);
    math::register(r);
    regex::register(r);
    encoding::register(r);
    conversion::register(r);
    reflect::register(r);
    paths::register(r);
    urls::register(r);
    semver::register(r);
    defaults::register(r);
    dates::register(r);
    random::register(r);
    crypto::register(r);
    network::register(r);
}

/// Sprig's own function map, `sprig.TxtFuncMap()`, which Helm evaluates
/// `--name-template` with: Go builtins and Sprig (with `env`, `expandenv`
/// and Sprig's plain `fail`), without Helm's functions (`toYaml`,
/// `include`, `tpl`, `required`, `lookup`, `toToml`, `fromYaml`, ...).
/// Verified against Helm v3.17.2 name by name. Sprig's `fromJson` is
/// Helm's here (they differ only on invalid JSON).
pub fn sprig_registry() -> Registry {
    let mut r = Registry::with_capacity(280);
    register_common(&mut r);
    serialization::register_sprig(&mut r);
    sprig_only::register(&mut r);
    r
}
