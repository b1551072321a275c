//! The order across releases: a topological order of their `needs`.
//!
//! The order is stable: among the releases whose needs are all met, the one
//! that comes first in the input goes next (Kahn's algorithm, always taking
//! the ready release with the lowest index). That makes it the
//! lexicographically smallest order that respects every need, so a file
//! already written in a valid order keeps it, and independent releases keep
//! their file order unless a need forces one of them later.
use super::input::{DesiredRelease, ReleaseRef};
use std::collections::{BTreeSet, HashMap};

/// Why no order exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// The needs form a cycle. `path` lists the releases in the order they
    /// would have to be updated (each before the next, so each needs the one
    /// before it), starting and ending with the same release.
    #[error("the needs form a cycle: {}", show_path(path))]
    Cycle {
        /// The cycle, first release repeated at the end (`a -> b -> a`).
        path: Vec<ReleaseRef>,
    },
    /// A release needs one that is not among the releases.
    #[error("release \"{release}\" needs \"{need}\", which is not among the releases")]
    Dangling {
        /// The release with the need.
        release: ReleaseRef,
        /// The missing release.
        need: ReleaseRef,
    },
    /// Two releases have the same namespace and name.
    #[error("release \"{0}\" is given twice")]
    Duplicate(ReleaseRef),
}

fn show_path(path: &[ReleaseRef]) -> String {
    path.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The order in which `releases` are updated: indices into `releases`, each
/// release after every release it needs. See [`order_refs`].
pub fn release_order(releases: &[DesiredRelease]) -> Result<Vec<usize>, OrderError> {
    let nodes: Vec<(ReleaseRef, Vec<ReleaseRef>)> = releases
        .iter()
        .map(|r| {
            (
                r.reference(),
                r.needs.iter().map(|n| n.release.clone()).collect(),
            )
        })
        .collect();
    order_refs(&nodes)
}

/// A topological order of `nodes` (each a release and the releases it
/// needs), as indices into `nodes`: every release comes after all of its
/// needs, and among the releases that are ready the lowest index goes first.
///
/// A need listed twice counts once. Errors: a need that names no node
/// ([`OrderError::Dangling`], the first one in input order), a release given
/// twice ([`OrderError::Duplicate`]), or a cycle ([`OrderError::Cycle`],
/// found deterministically: from the lowest-index release left unordered,
/// following each release's first unmet need until a release repeats; the
/// cycle is then rotated to start at its lowest-index release).
pub fn order_refs(nodes: &[(ReleaseRef, Vec<ReleaseRef>)]) -> Result<Vec<usize>, OrderError> {
    let mut index: HashMap<&ReleaseRef, usize> = HashMap::with_capacity(nodes.len());
    for (i, (r, _)) in nodes.iter().enumerate() {
        if index.insert(r, i).is_some() {
            return Err(OrderError::Duplicate(r.clone()));
        }
    }
    // needs[i]: the indices i needs, in input order, without repeats.
    let mut needs: Vec<Vec<usize>> = Vec::with_capacity(nodes.len());
    for (r, ns) in nodes {
        let mut list = Vec::with_capacity(ns.len());
        for n in ns {
            let Some(&j) = index.get(n) else {
                return Err(OrderError::Dangling {
                    release: r.clone(),
                    need: n.clone(),
                });
            };
            if !list.contains(&j) {
                list.push(j);
            }
        }
        needs.push(list);
    }
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut unmet: Vec<usize> = needs.iter().map(Vec::len).collect();
    for (i, ns) in needs.iter().enumerate() {
        for &j in ns {
            dependents[j].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..nodes.len()).filter(|&i| unmet[i] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &d in &dependents[i] {
            unmet[d] -= 1;
            if unmet[d] == 0 {
                ready.insert(d);
            }
        }
    }
    if order.len() == nodes.len() {
        return Ok(order);
    }
    Err(OrderError::Cycle {
        path: find_cycle(nodes, &needs, &unmet),
    })
}

/// A cycle among the releases left unordered (those with `unmet > 0`): each
/// of them has an unmet need that is itself left unordered.
fn find_cycle(
    nodes: &[(ReleaseRef, Vec<ReleaseRef>)],
    needs: &[Vec<usize>],
    unmet: &[usize],
) -> Vec<ReleaseRef> {
    let left = |i: usize| unmet[i] > 0;
    let Some(start) = (0..nodes.len()).find(|&i| left(i)) else {
        return Vec::new();
    };
    // Walk needs: walk[k + 1] is a need of walk[k].
    let mut walk = vec![start];
    let mut seen_at: HashMap<usize, usize> = HashMap::from([(start, 0)]);
    let mut cur = start;
    let cycle_start = loop {
        let Some(&next) = needs[cur].iter().find(|&&j| left(j)) else {
            // Cannot happen: a node left unordered has an unmet need.
            return walk.iter().map(|&i| nodes[i].0.clone()).collect();
        };
        if let Some(&at) = seen_at.get(&next) {
            break at;
        }
        seen_at.insert(next, walk.len());
        walk.push(next);
        cur = next;
    };
    // walk[cycle_start..] needs each other in turn, the last needing the
    // first; the update order is the reverse.
    let mut cycle: Vec<usize> = walk[cycle_start..].iter().rev().copied().collect();
    if let Some(min_pos) = cycle
        .iter()
        .enumerate()
        .min_by_key(|(_, &i)| i)
        .map(|(p, _)| p)
    {
        cycle.rotate_left(min_pos);
    }
    if let Some(&first) = cycle.first() {
        cycle.push(first);
    }
    cycle.into_iter().map(|i| nodes[i].0.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn r(s: &str) -> ReleaseRef {
        let (ns, name) = s.split_once('/').unwrap();
        ReleaseRef {
            namespace: ns.into(),
            name: name.into(),
        }
    }

    fn graph(spec: &[(&str, &[&str])]) -> Vec<(ReleaseRef, Vec<ReleaseRef>)> {
        spec.iter()
            .map(|(n, ns)| (r(n), ns.iter().map(|s| r(s)).collect()))
            .collect()
    }

    fn idx_ref(i: usize) -> ReleaseRef {
        ReleaseRef {
            namespace: "ns".into(),
            name: format!("r{i}"),
        }
    }

    fn idx_graph(needs: &[Vec<usize>]) -> Vec<(ReleaseRef, Vec<ReleaseRef>)> {
        needs
            .iter()
            .enumerate()
            .map(|(i, ns)| (idx_ref(i), ns.iter().map(|&j| idx_ref(j)).collect()))
            .collect()
    }

    #[test]
    fn independent_releases_keep_file_order() {
        let g = graph(&[("a/x", &[]), ("a/y", &[]), ("b/z", &[])]);
        assert_eq!(order_refs(&g).unwrap(), vec![0, 1, 2]);
        assert_eq!(order_refs(&[]).unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn needs_move_releases_later_and_ties_go_to_the_lowest_index() {
        // 0 needs 2; 1 is independent: 1 and 2 are ready, 1 goes first.
        let g = graph(&[("a/x", &["a/z"]), ("a/y", &[]), ("a/z", &[])]);
        assert_eq!(order_refs(&g).unwrap(), vec![1, 2, 0]);
        // A need given twice counts once.
        let g = graph(&[("a/x", &["a/y", "a/y"]), ("a/y", &[])]);
        assert_eq!(order_refs(&g).unwrap(), vec![1, 0]);
    }

    #[test]
    fn cycles_are_named_in_update_order() {
        // x needs z, z needs y, y needs x: update order x -> y -> z -> x.
        let g = graph(&[
            ("a/w", &[]),
            ("a/x", &["b/z"]),
            ("a/y", &["a/x"]),
            ("b/z", &["a/y"]),
            ("a/v", &["a/y"]),
        ]);
        let e = order_refs(&g).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the needs form a cycle: a/x -> a/y -> b/z -> a/x"
        );
        // A release that needs itself.
        let g = graph(&[("a/x", &[]), ("a/y", &["a/y"])]);
        assert_eq!(
            order_refs(&g).unwrap_err().to_string(),
            "the needs form a cycle: a/y -> a/y"
        );
        // The walk may start outside the cycle: v needs the cycle x <-> y.
        let g = graph(&[("a/v", &["a/y"]), ("a/x", &["a/y"]), ("a/y", &["a/x"])]);
        assert_eq!(
            order_refs(&g).unwrap_err(),
            OrderError::Cycle {
                path: vec![r("a/x"), r("a/y"), r("a/x")]
            }
        );
    }

    #[test]
    fn dangling_and_duplicate_releases_are_errors() {
        let g = graph(&[("a/x", &[]), ("a/y", &["a/x", "kube-system/nope"])]);
        assert_eq!(
            order_refs(&g).unwrap_err().to_string(),
            "release \"a/y\" needs \"kube-system/nope\", which is not among the releases"
        );
        let g = graph(&[("a/x", &[]), ("a/x", &[])]);
        assert_eq!(order_refs(&g).unwrap_err(), OrderError::Duplicate(r("a/x")));
    }

    /// Random DAGs: `n` nodes, a random rank permutation, and edges from a
    /// lower to a higher rank only.
    fn dag() -> impl Strategy<Value = Vec<Vec<usize>>> {
        (1usize..14)
            .prop_flat_map(|n| {
                (
                    Just(n),
                    Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
                    proptest::collection::vec(proptest::bool::weighted(0.25), n * n),
                )
            })
            .prop_map(|(n, rank, bits)| {
                let mut needs = vec![Vec::new(); n];
                for a in 0..n {
                    for b in 0..n {
                        // b needs a when a ranks lower.
                        if rank[a] < rank[b] && bits[a * n + b] {
                            needs[b].push(a);
                        }
                    }
                }
                needs
            })
    }

    /// Checks a cycle path against the graph: closed, no other repeats, and
    /// each release needs the one before it.
    fn assert_real_cycle(needs: &[Vec<usize>], path: &[ReleaseRef]) {
        assert!(path.len() >= 2, "{path:?}");
        assert_eq!(path.first(), path.last());
        let ids: Vec<usize> = path
            .iter()
            .map(|r| r.name[1..].parse::<usize>().unwrap())
            .collect();
        let body = &ids[..ids.len() - 1];
        let distinct: BTreeSet<usize> = body.iter().copied().collect();
        assert_eq!(distinct.len(), body.len(), "{ids:?}");
        for w in ids.windows(2) {
            assert!(
                needs[w[1]].contains(&w[0]),
                "{} does not need {}",
                w[1],
                w[0]
            );
        }
    }

    proptest! {
        #[test]
        fn dags_give_the_smallest_valid_order(needs in dag()) {
            let n = needs.len();
            let order = order_refs(&idx_graph(&needs)).unwrap();
            // A permutation.
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            // Every need comes first.
            let mut pos = vec![0; n];
            for (p, &i) in order.iter().enumerate() {
                pos[i] = p;
            }
            for (i, ns) in needs.iter().enumerate() {
                for &j in ns {
                    prop_assert!(pos[j] < pos[i]);
                }
            }
            // Stability: each step takes the lowest-index ready release, so
            // no independent release is moved ahead of an earlier one.
            let mut placed = vec![false; n];
            for &i in &order {
                let lowest_ready = (0..n)
                    .find(|&k| !placed[k] && needs[k].iter().all(|&j| placed[j]));
                prop_assert_eq!(lowest_ready, Some(i));
                placed[i] = true;
            }
        }

        #[test]
        fn file_order_that_is_already_valid_is_kept(n in 1usize..14, bits in proptest::collection::vec(any::<bool>(), 196)) {
            let needs: Vec<Vec<usize>> = (0..n)
                .map(|b| (0..b).filter(|&a| bits[a * 14 + b]).collect())
                .collect();
            prop_assert_eq!(order_refs(&idx_graph(&needs)).unwrap(), (0..n).collect::<Vec<_>>());
        }

        #[test]
        fn graphs_with_a_cycle_name_a_real_cycle(
            mut needs in dag(),
            picks in proptest::collection::vec(any::<proptest::sample::Index>(), 1..6),
        ) {
            let n = needs.len();
            // Close a cycle through the picked nodes (a single pick needs itself).
            let mut cyc: Vec<usize> = Vec::new();
            for p in &picks {
                let i = p.index(n);
                if !cyc.contains(&i) {
                    cyc.push(i);
                }
            }
            for k in 0..cyc.len() {
                let a = cyc[k];
                let b = cyc[(k + 1) % cyc.len()];
                if !needs[b].contains(&a) {
                    needs[b].push(a);
                }
            }
            match order_refs(&idx_graph(&needs)) {
                Err(OrderError::Cycle { path }) => assert_real_cycle(&needs, &path),
                other => prop_assert!(false, "expected a cycle, got {:?}", other),
            }
        }

        #[test]
        fn random_graphs_give_a_valid_order_or_a_real_cycle(
            n in 1usize..10,
            bits in proptest::collection::vec(proptest::bool::weighted(0.15), 100),
        ) {
            let needs: Vec<Vec<usize>> = (0..n)
                .map(|b| (0..n).filter(|&a| bits[a * 10 + b]).collect())
                .collect();
            match order_refs(&idx_graph(&needs)) {
                Ok(order) => {
                    let mut pos = vec![0; n];
                    for (p, &i) in order.iter().enumerate() {
                        pos[i] = p;
                    }
                    for (i, ns) in needs.iter().enumerate() {
                        for &j in ns {
                            prop_assert!(pos[j] < pos[i]);
                        }
                    }
                }
                Err(OrderError::Cycle { path }) => assert_real_cycle(&needs, &path),
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }
    }
}
