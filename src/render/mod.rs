//! Rendering: chart + values -> manifests, exactly as `helm template`.
//!
//! The stage owns Helm's built-in objects ([`objects`]), values coalescing
//! and the render loop; the template language itself is [`crate::template`]'s,
//! and splitting/sorting manifests is [`crate::manifest`]'s.
mod compat;
pub mod glob;
pub mod objects;
pub mod strvals;
pub mod values;
