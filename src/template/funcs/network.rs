//! Sprig's network function `getHostByName`.
//!
//! Helm replaces it with a function returning "" unless DNS lookups are
//! enabled (`--enable-dns`); then Sprig resolves the name and returns one of
//! its addresses at random (and fails when there is none).
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::Value;
use rand::Rng;
use std::net::ToSocketAddrs;

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("getHostByName", &[Param::String], None, get_host_by_name);
}

fn get_host_by_name(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    if !ctx.network_enabled() {
        return Ok(Value::str(""));
    }
    let name = match args.first() {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    let mut addrs: Vec<String> = Vec::new();
    if let Ok(it) = (name.as_str(), 0u16).to_socket_addrs() {
        for a in it {
            let ip = a.ip().to_string();
            if !addrs.contains(&ip) {
                addrs.push(ip);
            }
        }
    }
    if addrs.is_empty() {
        // Sprig indexes the empty result with rand.Intn(0), which panics.
        return Err(FuncError::msg("invalid argument to Intn"));
    }
    let i = rand::thread_rng().gen_range(0..addrs.len());
    Ok(Value::str(addrs.swap_remove(i)))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ctx(bool);
    impl CallContext for Ctx {
        fn include(&mut self, _: &str, _: Value) -> FuncResult {
            Ok(Value::Nil)
        }
        fn tpl(&mut self, _: &str, _: Value) -> FuncResult {
            Ok(Value::Nil)
        }
        fn lookup(&mut self, _: &str, _: &str, _: &str, _: &str) -> FuncResult {
            Ok(Value::empty_map())
        }
        fn network_enabled(&self) -> bool {
            self.0
        }
    }

    #[test]
    fn offline_returns_empty() {
        let v = get_host_by_name(&mut Ctx(false), &[Value::str("localhost")]).unwrap();
        assert_eq!(v.to_string(), "");
    }

    #[test]
    fn resolves_localhost_when_enabled() {
        let v = get_host_by_name(&mut Ctx(true), &[Value::str("localhost")]).unwrap();
        let ip: std::net::IpAddr = v.to_string().parse().unwrap();
        assert!(ip.is_loopback(), "{ip}");
    }
}
