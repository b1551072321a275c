//! Faults injected into the simulated cluster's requests (see the module
//! documentation's "Injected faults"): the N-th write failing with its
//! retries, latency before every request, and writes of objects annotated
//! `sim.rudder.io/reject` failing.
use super::state::compact;
use super::{controllers, ClusterError, ObjectKey, SimCluster};
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
/// `RUDDER_SIM_FAIL_AT`: see [`SimFaults::fail_at`].
pub(super) const ENV_FAIL_AT: &str = "RUDDER_SIM_FAIL_AT";
/// `RUDDER_SIM_LATENCY_MS`: see [`SimFaults::latency`].
pub(super) const ENV_LATENCY_MS: &str = "RUDDER_SIM_LATENCY_MS";

/// Faults injected into a simulated cluster's requests (see the module
/// documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimFaults {
    /// Fail the N-th write (counting from 1), and its immediate retries
    /// (the same write again from the same thread),
    /// with a 500 (`RUDDER_SIM_FAIL_AT`).
    pub fail_at: Option<u64>,
    /// Sleep this long before every request (`RUDDER_SIM_LATENCY_MS`).
    pub latency: Duration,
}

impl SimFaults {
    /// The faults `RUDDER_SIM_FAIL_AT` and `RUDDER_SIM_LATENCY_MS` ask for
    /// (unset, empty or unparsable: none), when fault injection from the
    /// environment is on (see the module documentation); none otherwise.
    pub(super) fn from_env() -> SimFaults {
        use crate::env_faults::knob;
        SimFaults {
            fail_at: knob(ENV_FAIL_AT).filter(|n| *n > 0),
            latency: Duration::from_millis(knob(ENV_LATENCY_MS).unwrap_or(0)),
        }
    }

    pub(super) fn is_set(&self) -> bool {
        self.fail_at.is_some() || !self.latency.is_zero()
    }
}

/// How many writes a set of handles has sent, and the one failing now.
#[derive(Debug, Default)]
pub(super) struct FaultCounter {
    pub(super) writes: u64,
    /// The failing write, and the thread that sent it: its retries come
    /// from that thread, while other threads' writes go on around them.
    pub(super) failing: Option<(&'static str, Option<ObjectKey>, std::thread::ThreadId)>,
}

/// The counter of the handles whose faults come from the environment: one
/// per process.
pub(super) fn process_counter() -> Arc<Mutex<FaultCounter>> {
    static C: OnceLock<Arc<Mutex<FaultCounter>>> = OnceLock::new();
    C.get_or_init(Default::default).clone()
}

impl SimCluster {
    /// What every request does first: the injected latency.
    pub(super) fn request(&self) {
        if !self.faults.latency.is_zero() {
            std::thread::sleep(self.faults.latency);
        }
    }

    /// Counts a write and fails it when it is the one to fail.
    pub(super) fn inject(
        &self,
        verb: &'static str,
        key: Option<ObjectKey>,
    ) -> Result<(), ClusterError> {
        if !self.faults.is_set() {
            return Ok(());
        }
        let Some(n) = self.faults.fail_at else {
            return Ok(());
        };
        let mut c = self.counter.lock().unwrap_or_else(|e| e.into_inner());
        let fail = || ClusterError::Server {
            server: "sim".into(),
            code: 500,
            message: format!("injected failure ({ENV_FAIL_AT}={n})"),
        };
        let me = std::thread::current().id();
        if let Some((v, k, t)) = &c.failing {
            if *t == me {
                if *v == verb && *k == key {
                    return Err(fail());
                }
                c.failing = None;
            }
        }
        c.writes += 1;
        if c.writes == n {
            c.failing = Some((verb, key, me));
            return Err(fail());
        }
        Ok(())
    }

    /// A write of an object annotated `sim.rudder.io/reject` fails.
    pub(super) fn reject(obj: &Value) -> Result<(), ClusterError> {
        match controllers::rejection(obj) {
            None => Ok(()),
            Some(message) => Err(ClusterError::Invalid {
                key: ObjectKey::of(obj).ok_or_else(|| ClusterError::BadObject(compact(obj)))?,
                message,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::testing::*;
    use crate::cluster::Cluster;
    use serde_json::json;

    #[test]
    fn rejected_objects_fail_real_writes_only() {
        let c = SimCluster::in_memory();
        let mut o = config_map("bad", "1");
        o["metadata"]["annotations"] = json!({controllers::REJECT: "admission webhook denied it"});
        for r in [c.create(&o), c.apply(&o, &opts("m"))] {
            match r {
                Err(ClusterError::Invalid { key, message }) => {
                    assert_eq!(key, ckey("bad"));
                    assert_eq!(message, "admission webhook denied it");
                }
                other => panic!("{other:?}"),
            }
        }
        let mut dry = opts("m");
        dry.dry_run = true;
        assert!(c.apply(&o, &dry).is_ok());
        assert!(c.dry_run(&o).is_ok());
        assert!(c.get(&ckey("bad")).unwrap().is_none());
        let live = c.create(&config_map("bad", "1")).unwrap();
        let mut r = live.clone();
        r["metadata"]["annotations"] = json!({controllers::REJECT: "no"});
        assert!(matches!(c.replace(&r), Err(ClusterError::Invalid { .. })));
    }

    #[test]
    fn fail_at_fails_the_nth_write_and_its_retries() {
        let c = SimCluster::in_memory().with_faults(SimFaults {
            fail_at: Some(2),
            latency: Duration::ZERO,
        });
        let mut dry = opts("m");
        dry.dry_run = true;
        // Reads and dry runs do not count.
        c.get(&ckey("a")).unwrap();
        c.list("", "ConfigMap", None, &[]).unwrap();
        c.apply(&config_map("a", "1"), &dry).unwrap();
        c.dry_run(&config_map("a", "1")).unwrap();
        c.apply(&config_map("a", "1"), &opts("m")).unwrap();
        let is_injected = |r: Result<Value, ClusterError>| match r {
            Err(ClusterError::Server {
                server,
                code,
                message,
            }) => {
                assert_eq!((server.as_str(), code), ("sim", 500));
                assert_eq!(message, "injected failure (RUDDER_SIM_FAIL_AT=2)");
                true
            }
            _ => false,
        };
        assert!(is_injected(c.apply(&config_map("b", "1"), &opts("m"))));
        // Its retries fail too, reads in between or not.
        assert!(is_injected(c.apply(&config_map("b", "1"), &opts("m"))));
        assert!(c.get(&ckey("b")).unwrap().is_none());
        assert!(is_injected(c.apply(&config_map("b", "2"), &opts("m"))));
        // A different write clears it.
        c.create(&config_map("c", "1")).unwrap();
        c.apply(&config_map("b", "1"), &opts("m")).unwrap();
        assert!(c.delete(&ckey("c"), None).unwrap().is_some());
        assert_eq!(c.list("", "ConfigMap", None, &[]).unwrap().len(), 2);
        // Deletes count (the 2nd write here).
        let d = SimCluster::in_memory().with_faults(SimFaults {
            fail_at: Some(2),
            latency: Duration::ZERO,
        });
        d.create(&config_map("a", "1")).unwrap();
        let e = d.delete(&ckey("a"), None).unwrap_err();
        assert!(matches!(e, ClusterError::Server { code: 500, .. }), "{e}");
        assert!(d.delete(&ckey("a"), None).is_err());
        d.create(&config_map("b", "1")).unwrap();
        assert!(d.delete(&ckey("a"), None).unwrap().is_some());
    }

    #[test]
    fn latency_delays_every_request() {
        let c = SimCluster::in_memory().with_faults(SimFaults {
            fail_at: None,
            latency: Duration::from_millis(30),
        });
        let t = std::time::Instant::now();
        c.get(&ckey("a")).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(30));
        let t = std::time::Instant::now();
        c.create(&config_map("a", "1")).unwrap();
        c.dry_run(&config_map("a", "2")).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(60));
    }
}
