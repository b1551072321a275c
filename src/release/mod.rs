//! Helm-compatible release records, their codec and their stores.
