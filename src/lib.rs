//! # rudder
//!
//! Build, render and release Helm charts from Rust.
//!
//! rudder is a library first. Its modules follow the way the data flows, and a
//! module only uses the stages before it:
//!
//! | stage | module | owns |
//! |---|---|---|
//! | 0 | [`yaml`] | every YAML/JSON parse and emit with Go (yaml.v2, sigs.k8s.io/yaml, encoding/json) semantics |
//! | 1 | [`manifest`] | Kubernetes objects: parse, split, identity, install order |
//! | 2 | [`chart`] | the chart model; building charts from manifests and components; load, validate, lint, package |
//! | 3 | [`template`] | the Go `text/template` engine with Sprig and Helm's functions |
//! | 4 | [`render`] | chart + values -> manifests, exactly as `helm template` |
//! | 5 | [`release`] | Helm-compatible release records and their stores |
//!
//! The `rudder` binary is a thin shell over these modules.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chart;
pub mod manifest;
pub mod release;
pub mod render;
pub mod template;
pub mod yaml;
