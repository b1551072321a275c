//! Kubernetes objects: parse, split, identity and install order.
