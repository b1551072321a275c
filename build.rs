//! Build script: link settings for the `rudder` binary only (the library is
//! not affected).
//!
//! On Linux the binary is linked as a fixed-address executable (`-no-pie`).
//! A position-independent executable carries about 23,000 relative
//! relocations that the dynamic loader applies at every start, dirtying
//! about a hundred pages of read-only data: roughly 0.3 ms and 100 page
//! faults per run, which is a tenth of a small `rudder template` run.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
