//! Rendering: chart + values -> manifests, exactly as `helm template`.
//!
//! The stage owns Helm's built-in objects ([`objects`]), values coalescing
//! ([`values`], [`strvals`]), schema validation (inside the render), the
//! render loop ([`pipeline`]) and the manifest post-processing
//! ([`manifests`]); the template language itself is [`crate::template`]'s,
//! and the document split and kind order are [`crate::manifest`]'s.
pub(crate) mod compat;
mod engine;
pub mod glob;
pub mod lint;
pub mod manifests;
pub mod names;
pub mod objects;
pub mod pipeline;
pub mod postrender;
pub(crate) mod schema;
pub mod strvals;
pub mod values;

pub use engine::{engine_for, render};
pub use manifests::{Head, HookEvent, Manifest, RenderedHook};
pub use pipeline::{
    load_for, load_mapped_for, render_with, CrdFile, RenderError, RenderOptions, Rendered,
    TemplateSet,
};
pub mod output;
