//! A component's chart, built and snapshot-tested.
//!
//! A component renders its manifests (here with handlebars-free plain
//! Rust); `chart_from_component` wraps them in a chart that stock Helm
//! renders back to the same objects, and validates it. The test at the
//! bottom snapshots the chart, as a tool's own tests would:
//!
//! ```sh
//! cargo run --example component_chart      # prints the rendered manifests
//! cargo test --example component_chart     # checks the snapshot
//! ```
use rudder::chart::{chart_from_component, BoxError, Component};
use rudder::render::{render, RenderOptions};
use std::collections::BTreeMap;

/// A tiny cluster component: a namespace-scoped ConfigMap and Deployment.
struct Greeter {
    replicas: u32,
    greeting: String,
}

impl Component for Greeter {
    fn name(&self) -> &str {
        "greeter"
    }

    fn namespace(&self) -> &str {
        "apps"
    }

    fn render_manifests(&self) -> Result<BTreeMap<String, String>, BoxError> {
        let mut files = BTreeMap::new();
        files.insert(
            "configmap.yaml".to_string(),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeter\ndata:\n  greeting: {:?}\n",
                self.greeting
            ),
        );
        files.insert(
            "deployment.yaml".to_string(),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: greeter\nspec:\n  replicas: {}\n  selector:\n    matchLabels: {{app: greeter}}\n  template:\n    metadata:\n      labels: {{app: greeter}}\n    spec:\n      containers:\n      - name: greeter\n        image: busybox:1.36\n",
                self.replicas
            ),
        );
        Ok(files)
    }
}

fn greeter_chart() -> Result<rudder::Chart, Box<dyn std::error::Error>> {
    let component = Greeter {
        replicas: 2,
        greeting: "hello".into(),
    };
    Ok(chart_from_component(&component)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chart = greeter_chart()?;
    let opts = RenderOptions {
        release_name: "greeter".into(),
        namespace: "apps".into(),
        ..Default::default()
    };
    let rendered = render(&chart, &Default::default(), &opts)?;
    for m in &rendered.manifests {
        println!("---\n# Source: {}\n{}", m.source, m.content.trim_end());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example's `main` too.
    #[test]
    fn main_runs() {
        super::main().expect("the example runs");
    }

    #[test]
    fn greeter_chart_snapshot() {
        let chart = super::greeter_chart().expect("chart");
        rudder::assert_chart_snapshot!(chart);
    }
}
