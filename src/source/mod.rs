//! Chart sources: where a chart comes from before it is loaded. Chart
//! repositories (`repo add`, `index.yaml`), OCI registries (`oci://`),
//! chart URLs, and a chart's dependencies (`Chart.lock`, `charts/`), read
//! and written in Helm's own files, so that helm and rudder can be used
//! side by side on one machine.
//!
//! - [`paths`]: where Helm keeps `repositories.yaml`, the repository cache
//!   and the registry's `config.json` (Helm's variables, XDG defaults).
//! - [`deps`]: a chart's dependencies (`dependency update|build|list`,
//!   `Chart.lock`, `charts/`), as Helm manages them.
//! - [`index`]: a repository's `index.yaml` (parse, resolve versions, write).
//! - [`reference`](mod@reference): what a chart argument names (a directory, a `.tgz`,
//!   `REPO/CHART`, `oci://HOST/PATH`, an `https://` URL).
//! - [`repofile`]: `repositories.yaml`, as `helm repo add` writes it.
//! - `http` (feature `remote`): downloads, with Helm's TLS and credential
//!   rules, and errors for hung, truncated and redirected downloads.
//! - [`cache`]: the content-addressed chart cache.
//! - `provenance`: Helm's `.prov` files, checked as `helm verify` checks
//!   them (feature `provenance`, on by default).
//!
//! Downloads need feature `remote` (on by default).
//!
//! This stage comes after [`crate::render`]: it loads what it fetched with
//! the chart stage and resolves versions with Masterminds constraints (the
//! template stage's `semverCompare`). The plan and the facade resolve
//! references through it.
pub mod cache;
pub mod deps;
#[cfg(feature = "remote")]
pub mod http;
pub mod index;
#[cfg(feature = "remote")]
pub mod oci;
#[cfg(feature = "remote")]
mod oci_relay;
pub mod paths;
#[cfg(feature = "provenance")]
pub mod provenance;
pub mod reference;
pub mod registry_config;
pub mod repofile;
pub mod resolve;

pub use paths::HelmPaths;
pub use reference::{ChartRef, RefError};

/// Runs `fut` to completion from blocking code: on a current-thread
/// runtime of its own, on a thread of its own, so that it works from any
/// thread, inside a caller's tokio runtime or not, and never panics for
/// it. Network code in this stage is async (reqwest, oci-client); its
/// blocking entry points come through here.
#[cfg(feature = "remote")]
pub(crate) fn block_on<F>(fut: F) -> std::io::Result<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("rudder-source".into())
        .spawn(move || rt.block_on(fut))?
        .join()
        .map_err(|_| std::io::Error::other("a download task panicked"))
}

/// Makes ring rustls' process-wide crypto provider if no provider was
/// installed yet (kube-rs uses ring too): reqwest and oci-client are built
/// without a provider of their own, so that rudder carries one TLS stack.
#[cfg(feature = "remote")]
pub(crate) fn ensure_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race; either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
