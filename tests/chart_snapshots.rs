//! Snapshots of the fixture charts in rudder's deterministic text form
//! (`chart::snapshot::snapshot_text`): every file, in path order.
// The fixture components, part of the `rudder` binary.
#[allow(dead_code)]
#[path = "../src/cli/fixtures.rs"]
mod fixtures;

use rudder::assert_chart_snapshot;
use rudder::chart;

#[test]
fn metrics_server_chart() {
    let c =
        chart::chart_from_component(&fixtures::metrics_server().expect("config")).expect("builds");
    assert_chart_snapshot!(c);
}

#[test]
fn cni_chart() {
    let c = chart::chart_from_component(&fixtures::cni().expect("config")).expect("builds");
    assert_chart_snapshot!(c);
}

#[test]
fn monitoring_chart() {
    let c = chart::chart_from_component(&fixtures::monitoring().expect("config")).expect("builds");
    assert_chart_snapshot!(c);
}

#[test]
fn snapshot_is_stable_through_package_and_load() {
    for c in fixtures::charts().expect("fixtures build") {
        let loaded =
            chart::load_archive(&chart::package_bytes(&c).expect("packages")).expect("loads");
        assert_eq!(
            chart::snapshot::snapshot_text(&c),
            chart::snapshot::snapshot_text(&loaded),
            "{}",
            c.metadata.name
        );
    }
}
