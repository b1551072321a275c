//! Charts: the model, building charts from manifests and components, loading,
//! validating, linting and packaging.
//!
//! This stage owns everything about a chart as files: Helm's layout and
//! loader ([`load()`](loader::load)), `.helmignore` ([`ignore`]), Chart.yaml decoding and
//! `Metadata.Validate` ([`metadata`]), packaging ([`package`]), chart-level
//! lint rules ([`lint`]), and building charts from rendered manifests
//! ([`build`]) or components ([`component`]). Rendering templates is the
//! render stage's job.
pub mod build;
pub mod component;
pub mod ignore;
pub mod lint;
pub mod loader;
pub mod metadata;
pub mod model;
pub mod package;
pub mod semver;
pub mod snapshot;

pub use build::{chart_from_manifests, chart_from_manifests_with, BuildError, BuildOptions};
pub use component::{
    chart_from_component, BoxError, Component, ComponentError, ComponentStage, HandlebarsComponent,
};
pub use loader::{
    load, load_archive, load_dir, load_file, load_files, load_inspecting, load_mapped,
    load_mapped_inspecting, LoadError,
};
pub use model::{Chart, ChartFile, Dependency, FileData, Lock, Maintainer, Metadata};
pub use package::{package_bytes, save_archive, save_dir, PackageError};
