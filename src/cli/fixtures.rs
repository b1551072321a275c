//! The fixture components embedded in rudder (`fixtures/` in the source
//! tree): rudder's default input and a test bed for chart building.
//!
//! Each fixture has a typed configuration, deserialised strictly (unknown
//! fields are errors) from its `component.yaml`.
//!
//! Part of the `rudder` binary (`rudder build-fixtures`), not of the
//! library; the chart tests and benchmarks include this file (`#[path]`).
use rudder::chart::component::{
    config_from_yaml, BoxError, Component, ConfigError, HandlebarsComponent,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `component.yaml`: the component's identity and its configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Descriptor<C> {
    /// Component (and chart) name.
    pub name: String,
    /// Release namespace.
    pub namespace: String,
    /// The typed configuration.
    pub config: C,
}

/// Requested resources.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// CPU request.
    pub cpu: String,
    /// Memory request.
    pub memory: String,
}

/// Configuration of the metrics-server fixture.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetricsServerConfig {
    /// Container image.
    pub image: String,
    /// Deployment replicas.
    pub replicas: u32,
    /// The HTTPS port.
    pub secure_port: u16,
    /// Extra command-line arguments.
    pub args: Vec<String>,
    /// Resource requests.
    pub resources: Resources,
}

/// Configuration of the CNI fixture.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CniConfig {
    /// calico-node image.
    pub image: String,
    /// install-cni image.
    pub cni_image: String,
    /// Pod network MTU.
    pub mtu: u32,
    /// The default IPv4 pool.
    pub ipv4_pool_cidr: String,
    /// Felix log level.
    pub log_level: String,
    /// IPAM block size.
    pub block_size: u8,
}

/// A Grafana dashboard of the monitoring fixture.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dashboard {
    /// ConfigMap suffix and file name.
    pub name: String,
    /// Dashboard title.
    pub title: String,
}

/// Configuration of the monitoring fixture.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MonitoringConfig {
    /// Owning team label.
    pub team: String,
    /// Dashboards to ship.
    pub dashboards: Vec<Dashboard>,
    /// Groups that may view the monitoring namespace.
    pub viewers: Vec<String>,
    /// Alert threshold for the error-rate rule.
    pub error_rate_threshold: f64,
}

macro_rules! templates {
    ($dir:literal: $($file:literal),* $(,)?) => {{
        let mut m = BTreeMap::new();
        $(
            m.insert(
                $file.trim_end_matches(".hbs").to_string(),
                include_str!(concat!("../../fixtures/", $dir, "/templates/", $file)).to_string(),
            );
        )*
        m
    }};
}

fn build<C: Serialize + serde::de::DeserializeOwned>(
    descriptor: &str,
    templates: BTreeMap<String, String>,
) -> Result<HandlebarsComponent<C>, ConfigError> {
    let d: Descriptor<C> = config_from_yaml(descriptor)?;
    Ok(HandlebarsComponent::new(
        d.name,
        d.namespace,
        templates,
        d.config,
    ))
}

/// The metrics-server fixture.
pub fn metrics_server() -> Result<HandlebarsComponent<MetricsServerConfig>, ConfigError> {
    build(
        include_str!("../../fixtures/metrics-server/component.yaml"),
        templates!("metrics-server": "apiservice.yaml.hbs", "deployment.yaml.hbs", "rbac.yaml.hbs", "service.yaml.hbs"),
    )
}

/// The CNI fixture.
pub fn cni() -> Result<HandlebarsComponent<CniConfig>, ConfigError> {
    build(
        include_str!("../../fixtures/cni/component.yaml"),
        templates!("cni": "config.yaml.hbs", "crds.yaml.hbs", "daemonset.yaml.hbs", "ippool.yaml.hbs", "rbac.yaml.hbs"),
    )
}

/// The monitoring fixture.
pub fn monitoring() -> Result<HandlebarsComponent<MonitoringConfig>, ConfigError> {
    build(
        include_str!("../../fixtures/monitoring/component.yaml"),
        templates!("monitoring": "access.yaml.hbs", "dashboards.yaml.hbs", "namespaces.yaml.hbs", "rules.yaml.hbs"),
    )
}

/// Every fixture component, in name order.
pub fn all() -> Result<Vec<Box<dyn Component>>, ConfigError> {
    let mut v: Vec<Box<dyn Component>> = vec![
        Box::new(cni()?),
        Box::new(metrics_server()?),
        Box::new(monitoring()?),
    ];
    v.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(v)
}

/// Builds every fixture's chart.
pub fn charts() -> Result<Vec<rudder::chart::Chart>, BoxError> {
    let mut out = Vec::new();
    for c in all()? {
        out.push(rudder::chart::chart_from_component(c.as_ref())?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fixtures_build() {
        let charts = super::charts().unwrap();
        assert_eq!(charts.len(), 3);
    }
}
