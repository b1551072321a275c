//! Rendering: chart + values -> manifests, exactly as `helm template`.
