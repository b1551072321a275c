//! Charts: the model, building charts from manifests and components, loading,
//! validating, linting and packaging.
pub mod model;

pub use model::{Chart, ChartFile, Dependency, Lock, Maintainer, Metadata};
