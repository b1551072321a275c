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
//! - glibc itself is linked statically when the C compiler has its archives
//!   (`libc.a` and friends, from libc6-dev): no dynamic loader runs, the
//!   shared libc, libm and ld.so are neither mapped nor relocated, and the
//!   few libc functions a render calls sit among the binary's own code
//!   instead of dragging in 1.9 MB of shared-library pages. Measured on
//!   kube-prometheus-stack: peak RSS 19.3 -> 18.0 MB; helm-alpine 2.8 ->
//!   2.0 ms. `getHostByName` (only with `--enable-dns`) still resolves
//!   through the system's NSS modules, which a static glibc loads at run
//!   time and which must come from the same glibc version: true where the
//!   binary was built. `RUDDER_STATIC=0` links glibc dynamically.
//! - Release builds put the functions a render runs together at the start of
//!   the code. A render runs a few thousand of the binary's functions, then
//!   exits; the kernel maps file-backed code in windows of up to 64 KiB
//!   around each page it faults in, so with the default layout (crate by
//!   crate) those functions drag most of the 10 MB of code into memory (6.8
//!   MB of cert-manager's 15 MB peak). `scripts/link-order.txt` lists them,
//!   hottest first (`scripts/gen-link-order` regenerates it), for LLD's
//!   `--symbol-ordering-file`. The flag is LLD's, so it is passed only where
//!   rustc links with its bundled LLD by default (x86_64 Linux, Rust 1.90 or
//!   later) and no other linker is configured; `RUDDER_LINK_ORDER=0` turns
//!   it off. A function the list lacks is laid out after the listed ones, as
//!   before: a stale list costs memory, never correctness.
use std::path::{Path, PathBuf};
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
        if static_libc(&dir) {
            println!("cargo:rustc-link-arg-bins=-static");
        }
    }
    if let Some(list) = link_order() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        // The list names the functions of one build; those another build
        // lacks are skipped, silently.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// `scripts/link-order.txt`, when this is a release build linked by rustc's
/// bundled LLD.
fn link_order() -> Option<PathBuf> {
    println!("cargo:rerun-if-changed=scripts/link-order.txt");
    println!("cargo:rerun-if-env-changed=RUDDER_LINK_ORDER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("RUDDER_LINK_ORDER") == "0"
        || var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
    {
        return None;
    }
    // Another linker (target.<triple>.linker, -C linker, a linker flavor or
    // self-contained setting) may not be LLD.
    if std::env::var_os("RUSTC_LINKER").is_some() || var("CARGO_ENCODED_RUSTFLAGS").contains("link")
    {
        return None;
    }
    if rustc_version()? < (1, 90) {
        return None;
    }
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join("scripts/link-order.txt");
    list.is_file().then_some(list)
}

/// The compiler's (major, minor) version.
fn rustc_version() -> Option<(u32, u32)> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace().nth(1)?.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// A directory holding a `libgcc_s.so` linker script that resolves to
/// `libgcc_eh.a`, plus that archive's own directory on the search path; or
/// `None` when the C compiler does not know a static unwinder.
fn static_unwinder_dir() -> Option<PathBuf> {
    let archive = cc_file("libgcc_eh.a")?;
    let archive_dir = archive.parent()?;
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-unwinder");
    std::fs::create_dir_all(&dir).ok()?;
    let script = format!(
        "SEARCH_DIR(\"{}\")\nINPUT(-lgcc_eh)\n",
        archive_dir.display()
    );
    // A static link looks for the archive name.
    for name in ["libgcc_s.so", "libgcc_s.a"] {
        std::fs::write(dir.join(name), &script).ok()?;
    }
    Some(dir)
}

/// Whether the binary is linked statically against glibc: only when the C
/// compiler knows the static archives of every library Rust links. Rust asks
/// for them as shared libraries (`-Bdynamic -lc`), so `dir` gets a linker
/// script per library, named as the shared one, that loads the archive.
fn static_libc(dir: &Path) -> bool {
    println!("cargo:rerun-if-env-changed=RUDDER_STATIC");
    if std::env::var("RUDDER_STATIC").as_deref() == Ok("0") {
        return false;
    }
    let libs = ["c", "m", "pthread", "dl", "rt", "util"];
    let Some(archives) = libs
        .iter()
        .map(|l| cc_file(&format!("lib{l}.a")))
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    libs.iter().zip(&archives).all(|(lib, path)| {
        std::fs::write(
            dir.join(format!("lib{lib}.so")),
            format!("INPUT(\"{}\")\n", path.display()),
        )
        .is_ok()
    })
}

/// Where the C compiler finds the library file `name`, if it has it.
fn cc_file(name: &str) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc)
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // Unknown files are echoed back as a bare name.
    (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}
