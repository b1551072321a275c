//! Kubernetes objects: parse, split, identity and install order.
//!
//! This module knows what a Kubernetes object looks like from the outside:
//! its identity (group, version, kind, namespace, name), whether a kind is
//! namespaced, and which names the API server accepts for a kind. It leaves
//! YAML syntax to [`crate::yaml`]; Helm's manifest splitting and install
//! order live in [`split`] and [`order`].
pub mod kinds;
pub mod names;
pub mod object;
pub mod order;
pub mod split;

pub use kinds::{builtin_scope, Scope};
pub use names::{validate_name, InvalidName};
pub use object::{split_api_version, Object, ObjectError, ObjectId};
