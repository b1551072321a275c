//! Components: something that renders Kubernetes manifests, turned into a
//! chart by [`chart_from_component`].
//!
//! [`HandlebarsComponent`] is the stock implementation: handlebars templates
//! plus a typed configuration deserialised with serde, rendered in strict
//! mode (a missing variable is an error, not an empty string) and without
//! HTML escaping.
use super::build::{chart_from_manifests_with, BuildError, BuildOptions, DEFAULT_VERSION};
use super::model::Chart;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Any error a component may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Something that renders Kubernetes manifests for one Helm release.
pub trait Component {
    /// The component's name; also the chart's name.
    fn name(&self) -> &str;
    /// The Helm release name (the component name unless overridden).
    fn release_name(&self) -> &str {
        self.name()
    }
    /// The release namespace.
    fn namespace(&self) -> &str;
    /// The chart's version (SemVer; Chart.yaml `version`), which the CHART
    /// column of `helm history` shows. [`DEFAULT_VERSION`] unless
    /// overridden: a component whose manifests change between versions of
    /// the program that makes them should say so here.
    fn chart_version(&self) -> &str {
        DEFAULT_VERSION
    }
    /// The chart's `appVersion` (the APP VERSION column); none unless
    /// overridden.
    fn app_version(&self) -> &str {
        ""
    }
    /// Renders the manifests: file name to YAML text.
    fn render_manifests(&self) -> Result<BTreeMap<String, String>, BoxError>;
}

/// The stage of [`chart_from_component`] that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ComponentStage {
    /// `render_manifests` failed.
    Rendering,
    /// The manifests could not be turned into a chart.
    Building,
    /// The chart or one of its objects is invalid.
    Validating,
}

impl fmt::Display for ComponentStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ComponentStage::Rendering => "rendering manifests",
            ComponentStage::Building => "building the chart",
            ComponentStage::Validating => "validating the chart",
        })
    }
}

/// A [`chart_from_component`] failure: which component, which stage, and the
/// underlying error as the source (its text is not repeated in this one's:
/// print the chain, as `anyhow` or the CLI do, to see both).
#[derive(Debug, thiserror::Error)]
#[error("component {component:?}: {stage} failed")]
pub struct ComponentError {
    /// The component's name.
    pub component: String,
    /// The failed stage.
    pub stage: ComponentStage,
    /// The underlying error.
    #[source]
    pub source: BoxError,
}

impl BuildError {
    /// Whether this is a validation failure (as opposed to input that could
    /// not be turned into a chart at all).
    pub fn is_validation(&self) -> bool {
        matches!(
            self,
            BuildError::Object { .. }
                | BuildError::InvalidName { .. }
                | BuildError::NoValue { .. }
                | BuildError::UnknownHookEvent { .. }
                | BuildError::Duplicate { .. }
                | BuildError::Metadata(_)
        )
    }
}

/// Renders a component, builds its chart (named after the component, in its
/// namespace, with the component's [`chart_version`](Component::chart_version)
/// and [`app_version`](Component::app_version)) and validates the result:
/// the chart must package and load back unchanged.
///
/// The chart has no values: its templates are the rendered manifests,
/// escaped, so they render to exactly those objects whatever values a
/// release is given. A plan that gives such a chart values says so with a
/// warning ([`crate::plan::ReleasePlan::warnings`]).
pub fn chart_from_component(c: &dyn Component) -> Result<Chart, ComponentError> {
    let fail = |stage, source: BoxError| ComponentError {
        component: c.name().to_string(),
        stage,
        source,
    };
    let manifests = c
        .render_manifests()
        .map_err(|e| fail(ComponentStage::Rendering, e))?;
    let mut opts = BuildOptions::new(c.name(), c.namespace());
    opts.version = c.chart_version().to_string();
    opts.app_version = c.app_version().to_string();
    let chart = chart_from_manifests_with(&opts, &manifests).map_err(|e| {
        let stage = if e.is_validation() {
            ComponentStage::Validating
        } else {
            ComponentStage::Building
        };
        fail(stage, Box::new(e))
    })?;
    let bytes = super::package::package_bytes(&chart)
        .map_err(|e| fail(ComponentStage::Validating, Box::new(e)))?;
    let loaded = super::loader::load_archive(&bytes)
        .map_err(|e| fail(ComponentStage::Validating, Box::new(e)))?;
    if loaded.templates != chart.templates || loaded.files != chart.files {
        return Err(fail(
            ComponentStage::Validating,
            "the packaged chart does not load back to the same files".into(),
        ));
    }
    Ok(chart)
}

/// A configuration that does not deserialise.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The YAML is malformed; the YAML error has the line and column.
    #[error("invalid configuration YAML: {0}")]
    Yaml(crate::yaml::YamlError),
    /// The data does not fit the configuration type.
    #[error("invalid configuration: {message}")]
    Shape {
        /// serde's message (`invalid type: string "three", expected u32`).
        message: String,
        /// The 1-based line of the value or mapping that does not fit,
        /// when it can be told.
        line: Option<usize>,
        /// The 1-based column of that value or mapping, when `line` is known.
        column: Option<usize>,
    },
}

/// Deserialises a typed configuration from YAML (or JSON) text. Integers
/// stay integers (yaml.v2 typing), so they fit integer fields.
///
/// ```
/// use rudder::chart::component::{config_from_yaml, ConfigError};
///
/// #[derive(serde::Deserialize)]
/// struct Config {
///     replicas: u32,
/// }
/// let err = config_from_yaml::<Config>("# web\nreplicas: three\n").err().unwrap();
/// assert!(matches!(err, ConfigError::Shape { line: Some(2), column: Some(11), .. }));
/// ```
pub fn config_from_yaml<C: DeserializeOwned>(text: &str) -> Result<C, ConfigError> {
    let node = crate::yaml::parse_document(text).map_err(ConfigError::Yaml)?;
    let shape = |e: serde_json::Error| {
        // The value holds no places; serde_yaml reading the text itself
        // finds where the same mismatch is (when its YAML 1.2 typing fails
        // alike, which is nearly always).
        let at = serde_yaml::from_str::<C>(text)
            .err()
            .and_then(|e| e.location())
            .map(|l| (l.line(), l.column()));
        ConfigError::Shape {
            message: e.to_string(),
            line: at.map(|(l, _)| l),
            column: at.map(|(_, c)| c),
        }
    };
    let value = serde_json::to_value(&node).map_err(shape)?;
    serde_json::from_value(value).map_err(shape)
}

/// A component made of handlebars templates and a typed configuration.
///
/// Each template renders one manifest file of the same name. Templates see
/// `config` (the configuration) and `component` (`name`, `namespace`,
/// `releaseName`).
#[derive(Debug, Clone)]
pub struct HandlebarsComponent<C> {
    name: String,
    release_name: String,
    namespace: String,
    templates: BTreeMap<String, String>,
    config: C,
    chart_version: String,
    app_version: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ComponentInfo<'a> {
    name: &'a str,
    namespace: &'a str,
    release_name: &'a str,
}

#[derive(Serialize)]
struct Context<'a, C> {
    config: &'a C,
    component: ComponentInfo<'a>,
}

impl<C: Serialize> HandlebarsComponent<C> {
    /// A component with templates (file name to handlebars source) and its
    /// configuration; the release name is the component name.
    pub fn new(
        name: impl Into<String>,
        namespace: impl Into<String>,
        templates: BTreeMap<String, String>,
        config: C,
    ) -> Self {
        let name = name.into();
        HandlebarsComponent {
            release_name: name.clone(),
            name,
            namespace: namespace.into(),
            templates,
            config,
            chart_version: DEFAULT_VERSION.into(),
            app_version: String::new(),
        }
    }

    /// Sets the chart's version (SemVer), [`DEFAULT_VERSION`] otherwise.
    pub fn with_chart_version(mut self, version: impl Into<String>) -> Self {
        self.chart_version = version.into();
        self
    }

    /// Sets the chart's `appVersion`.
    pub fn with_app_version(mut self, app_version: impl Into<String>) -> Self {
        self.app_version = app_version.into();
        self
    }

    /// Sets a release name different from the component name.
    pub fn with_release_name(mut self, release_name: impl Into<String>) -> Self {
        self.release_name = release_name.into();
        self
    }

    /// The configuration.
    pub fn config(&self) -> &C {
        &self.config
    }
}

impl<C: Serialize> Component for HandlebarsComponent<C> {
    fn name(&self) -> &str {
        &self.name
    }

    fn release_name(&self) -> &str {
        &self.release_name
    }

    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn chart_version(&self) -> &str {
        &self.chart_version
    }

    fn app_version(&self) -> &str {
        &self.app_version
    }

    fn render_manifests(&self) -> Result<BTreeMap<String, String>, BoxError> {
        let mut hb = handlebars::Handlebars::new();
        hb.set_strict_mode(true);
        hb.register_escape_fn(handlebars::no_escape);
        for (name, src) in &self.templates {
            hb.register_template_string(name, src)?;
        }
        let ctx = Context {
            config: &self.config,
            component: ComponentInfo {
                name: &self.name,
                namespace: &self.namespace,
                release_name: &self.release_name,
            },
        };
        let mut out = BTreeMap::new();
        for name in self.templates.keys() {
            out.insert(name.clone(), hb.render(name, &ctx)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        replicas: u32,
        image: String,
    }

    fn comp(tpl: &str) -> HandlebarsComponent<Cfg> {
        let mut t = BTreeMap::new();
        t.insert("d.yaml".to_string(), tpl.to_string());
        HandlebarsComponent::new(
            "demo",
            "ns",
            t,
            Cfg {
                replicas: 2,
                image: "a<b>".into(),
            },
        )
    }

    #[test]
    fn renders_strictly_without_escaping() {
        let c = comp("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{component.name}}\n  namespace: {{component.namespace}}\ndata:\n  image: \"{{config.image}}\"\n  r: \"{{config.replicas}}\"\n");
        let m = c.render_manifests().unwrap();
        assert!(m["d.yaml"].contains("image: \"a<b>\""));
        let chart = chart_from_component(&c).unwrap();
        assert_eq!(chart.metadata.name, "demo");
        let e = chart_from_component(&comp("x: {{config.missing}}")).unwrap_err();
        assert_eq!(e.stage, ComponentStage::Rendering);
        assert!(
            e.to_string()
                .starts_with("component \"demo\": rendering manifests failed"),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn stages() {
        let e = chart_from_component(&comp("- a")).unwrap_err();
        assert_eq!(e.stage, ComponentStage::Building);
        let e = chart_from_component(&comp("apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad\n"))
            .unwrap_err();
        assert_eq!(e.stage, ComponentStage::Validating);
        assert!(e.source.downcast_ref::<BuildError>().is_some());
    }

    #[test]
    fn a_component_sets_its_chart_version_and_app_version() {
        let tpl = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  r: \"{{config.replicas}}\"\n";
        let chart = chart_from_component(&comp(tpl)).unwrap();
        assert_eq!(chart.metadata.version, DEFAULT_VERSION);
        assert_eq!(chart.metadata.app_version, "");
        let c = comp(tpl)
            .with_chart_version("1.31.2")
            .with_app_version("v1.31.2");
        let chart = chart_from_component(&c).unwrap();
        assert_eq!(chart.metadata.version, "1.31.2");
        assert_eq!(chart.metadata.app_version, "v1.31.2");
        // Packaged and loaded back with them.
        let bytes = crate::chart::package::package_bytes(&chart).unwrap();
        let loaded = crate::chart::loader::load_archive(&bytes).unwrap();
        assert_eq!(loaded.metadata.version, "1.31.2");
        assert_eq!(loaded.metadata.app_version, "v1.31.2");
        // A version that is not SemVer is a validation failure.
        let e = chart_from_component(&comp(tpl).with_chart_version("one")).unwrap_err();
        assert_eq!(e.stage, ComponentStage::Validating, "{e}");
    }

    #[test]
    fn typed_config() {
        let c: Cfg = config_from_yaml("replicas: 3\nimage: x\n").unwrap();
        assert_eq!(c.replicas, 3);
        assert!(config_from_yaml::<Cfg>("replicas: 3\nimage: x\nextra: 1\n").is_err());
        assert!(matches!(
            config_from_yaml::<Cfg>("replicas: 3\nimage: x\nextra: 1\n"),
            Err(ConfigError::Shape {
                line: Some(3),
                column: Some(1),
                ..
            })
        ));
        let e = config_from_yaml::<Cfg>("replicas: three\nimage: x\n")
            .err()
            .unwrap();
        assert!(
            matches!(&e, ConfigError::Shape { line: Some(1), column: Some(11), message }
                if message.starts_with("invalid type: string \"three\"")),
            "{e:?}"
        );
        let e = config_from_yaml::<Cfg>("replicas: 3\nimage: [x\n")
            .err()
            .unwrap();
        assert!(
            matches!(
                &e,
                ConfigError::Yaml(crate::yaml::YamlError::Syntax { line: 3, .. })
            ),
            "{e:?}"
        );
    }
}
