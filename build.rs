//! Build script: link settings for the `rudder` binary only (the library, and
//! any program that embeds it, is not affected).
//!
//! On Linux with glibc:
//!
//! - The binary is linked as a fixed-address executable (`-no-pie`). A
//!   position-independent executable carries about 23,000 relative
//!   relocations that the dynamic loader applies at every start, dirtying
//!   about a hundred pages of read-only data: roughly 0.3 ms and 100 page
//!   faults per run, which is a tenth of a small `rudder template` run.
//! - The unwinder comes from gcc's static `libgcc_eh.a` instead of the shared
//!   `libgcc_s.so.1`. Loading the shared library runs its CPU-model
//!   constructor, a burst of `cpuid` instructions; each one traps to the
//!   hypervisor on a virtual machine (about 5 us each where this was
//!   measured), which cost 60 us of a 0.9 ms hello-world start. Rust links
//!   `-lgcc_s` itself, so a linker script named `libgcc_s.so` that pulls in
//!   `libgcc_eh.a` is put first on the binary's library path. Without gcc's
//!   static unwinder the shared library is linked as usual.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os != "linux" || env != "gnu" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    if let Some(dir) = static_unwinder_dir() {
        println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
    }
}

/// A directory holding a `libgcc_s.so` linker script that resolves to
/// `libgcc_eh.a`, plus that archive's own directory on the search path; or
/// `None` when the C compiler does not know a static unwinder.
fn static_unwinder_dir() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let archive = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // Unknown files are echoed back as a bare name.
    if !out.status.success() || !archive.is_absolute() || !archive.is_file() {
        return None;
    }
    let archive_dir = archive.parent()?;
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-unwinder");
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::write(
        dir.join("libgcc_s.so"),
        format!(
            "SEARCH_DIR(\"{}\")\nINPUT(-lgcc_eh)\n",
            archive_dir.display()
        ),
    )
    .ok()?;
    Some(dir)
}
