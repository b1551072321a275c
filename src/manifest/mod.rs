//! Kubernetes objects: parse, split, identity and install order.
pub mod order;
pub mod split;
