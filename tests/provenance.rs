//! `rudder verify` against `helm verify` (v3.17.2 and v4.1.4) on a corpus
//! chart signed by real Helm (`helm package --sign`): the same output and
//! exit code for a good chart, and the same verdict (and, where Helm 3 and
//! 4 agree, the same message) for a tampered archive, a tampered `.prov`
//! body, a key not in the keyring, a missing `.prov`, and the other ways
//! `helm verify` refuses a chart.
//!
//! The keys are made here with the `pgp` crate (RSA 2048, no passphrase)
//! and written as binary keyrings, the format Helm reads: no `gpg` needed.
#![cfg(feature = "provenance")]

#[path = "support/chart_server.rs"]
mod chart_server;
mod common;
#[path = "support/oci_registry.rs"]
mod oci_registry;

use pgp::composed::{
    CleartextSignedMessage, KeyType, SecretKeyParamsBuilder, SignedPublicKey, SignedSecretKey,
};
use pgp::packet::PacketParser;
use pgp::ser::Serialize;
use pgp::types::Password;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const SIGNER: &str = "Rudder Provenance Test <prov@example.com>";
const OTHER: &str = "Someone Else <else@example.com>";

fn keygen(uid: &str) -> SignedSecretKey {
    let params = SecretKeyParamsBuilder::default()
        .key_type(KeyType::Rsa(2048))
        .can_certify(true)
        .can_sign(true)
        .primary_user_id(uid.into())
        .build()
        .unwrap();
    let mut rng = rand::thread_rng();
    params
        .generate(&mut rng)
        .unwrap()
        .sign(&mut rng, &Password::empty())
        .unwrap()
}

/// The two keys, made once per test binary (RSA key generation is the
/// slow part).
fn keys() -> &'static (SignedSecretKey, SignedSecretKey) {
    static KEYS: OnceLock<(SignedSecretKey, SignedSecretKey)> = OnceLock::new();
    KEYS.get_or_init(|| (keygen(SIGNER), keygen(OTHER)))
}

fn public_bytes(k: &SignedSecretKey) -> Vec<u8> {
    SignedPublicKey::from(k.clone()).to_bytes().unwrap()
}

/// `public` with a GnuPG trust packet (tag 12, old format) after each
/// packet, as a legacy `pubring.gpg` stores them.
fn with_trust_packets(public: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in PacketParser::new(public) {
        p.unwrap().to_writer(&mut out).unwrap();
        out.extend_from_slice(&[0xb0, 0x02, 0x00, 0x00]);
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A scratch directory with the keyrings and `alpine` (from the corpus),
/// packaged and signed by `helm` into `signed/`.
struct Bed {
    dir: tempfile::TempDir,
    helm: PathBuf,
}

const ARCHIVE: &str = "signed/alpine-0.1.0.tgz";

impl Bed {
    fn new(major: u8) -> Option<Bed> {
        let helm = common::helm(major)?;
        let shared = common::shared_dir()?;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let d = d.as_path();
        copy_dir(
            &shared.join("conformance/charts/helm-alpine/chart"),
            &d.join("alpine"),
        );
        let (signer, other) = keys();
        std::fs::write(d.join("secring.gpg"), signer.to_bytes().unwrap()).unwrap();
        std::fs::write(d.join("pubring.gpg"), public_bytes(signer)).unwrap();
        std::fs::write(d.join("other.gpg"), public_bytes(other)).unwrap();
        let mut both = public_bytes(other);
        both.extend(public_bytes(signer));
        std::fs::write(d.join("both.gpg"), both).unwrap();
        std::fs::write(
            d.join("legacy.gpg"),
            with_trust_packets(&public_bytes(signer)),
        )
        .unwrap();
        std::fs::write(
            d.join("pubring.asc"),
            SignedPublicKey::from(signer.clone())
                .to_armored_bytes(Default::default())
                .unwrap(),
        )
        .unwrap();
        std::fs::create_dir_all(d.join("home/.gnupg")).unwrap();
        let bed = Bed { dir, helm };
        let out = bed.run(
            true,
            &[
                "package",
                "--sign",
                "--key",
                "Rudder Provenance Test",
                "--keyring",
                "secring.gpg",
                "-d",
                "signed",
                "alpine",
            ],
        );
        assert!(out.status.success(), "helm package --sign: {out:?}");
        assert!(d.join(format!("{ARCHIVE}.prov")).is_file());
        Some(bed)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Copies the signed archive and its `.prov` to `dir/name`.
    fn copy_signed(&self, dir: &str, name: &str) -> String {
        std::fs::create_dir_all(self.path(dir)).unwrap();
        let to = format!("{dir}/{name}");
        std::fs::copy(self.path(ARCHIVE), self.path(&to)).unwrap();
        std::fs::copy(
            self.path(&format!("{ARCHIVE}.prov")),
            self.path(&format!("{to}.prov")),
        )
        .unwrap();
        to
    }

    /// Runs helm (`helm == true`) or rudder in the scratch directory, with
    /// every home (Helm's, GnuPG's) inside it.
    fn run(&self, helm: bool, args: &[&str]) -> Output {
        let d = self.dir.path();
        let mut cmd = if helm {
            common::helm_command(&self.helm, &d.join("helmhome"))
        } else {
            let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
            c.env("HELM_CONFIG_HOME", d.join("helmhome/config"))
                .env("HELM_CACHE_HOME", d.join("helmhome/cache"))
                .env("HELM_DATA_HOME", d.join("helmhome/data"));
            c
        };
        cmd.current_dir(d)
            .env("HOME", d.join("home"))
            .env_remove("GNUPGHOME")
            .args(args);
        cmd.output().unwrap()
    }

    /// `verify ARGS` with both tools.
    fn both(&self, args: &[&str]) -> (Output, Output) {
        let mut a = vec!["verify"];
        a.extend_from_slice(args);
        (self.run(true, &a), self.run(false, &a))
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Same exit code, stdout and stderr.
fn assert_same(case: &str, major: u8, helm: &Output, rudder: &Output) {
    assert_eq!(
        (helm.status.code(), text(&helm.stdout), text(&helm.stderr)),
        (
            rudder.status.code(),
            text(&rudder.stdout),
            text(&rudder.stderr)
        ),
        "{case}: helm {major} (left) and rudder (right) differ"
    );
}

fn interop(major: u8) {
    let Some(bed) = Bed::new(major) else { return };

    // A good chart: Helm's three lines, exit 0.
    let (h, r) = bed.both(&[ARCHIVE, "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(0), "helm {major}: {h:?}");
    assert!(text(&h.stdout).contains("Chart Hash Verified: sha256:"));
    assert_same("good chart", major, &h, &r);

    // The same chart through keyrings of other shapes.
    for ring in ["both.gpg", "secring.gpg", "legacy.gpg"] {
        let (h, r) = bed.both(&[ARCHIVE, "--keyring", ring]);
        assert_eq!(h.status.code(), Some(0), "helm {major} {ring}: {h:?}");
        assert_same(ring, major, &h, &r);
    }

    // The default keyring: ~/.gnupg/pubring.gpg, missing, then present.
    let (h, r) = bed.both(&[ARCHIVE]);
    assert_eq!(h.status.code(), Some(1));
    assert_same("default keyring missing", major, &h, &r);
    std::fs::copy(bed.path("pubring.gpg"), bed.path("home/.gnupg/pubring.gpg")).unwrap();
    let (h, r) = bed.both(&[ARCHIVE]);
    assert_eq!(h.status.code(), Some(0), "{h:?}");
    assert_same("default keyring", major, &h, &r);

    // A tampered archive: the digests differ.
    let t = bed.copy_signed("tampered-archive", "alpine-0.1.0.tgz");
    let mut data = std::fs::read(bed.path(&t)).unwrap();
    data.push(0);
    std::fs::write(bed.path(&t), data).unwrap();
    let (h, r) = bed.both(&[&t, "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(1));
    assert!(text(&h.stderr).contains("sha256 sum does not match"));
    assert_same("tampered archive", major, &h, &r);

    // A tampered .prov body: the signature no longer matches. Helm 3 says
    // "hash tag doesn't match", Helm 4 "RSA verification failure"; rudder
    // says Helm 3's.
    let t = bed.copy_signed("tampered-body", "alpine-0.1.0.tgz");
    let prov = std::fs::read_to_string(bed.path(&format!("{t}.prov"))).unwrap();
    let changed = prov.replace("version: 0.1.0", "version: 0.1.1");
    assert_ne!(prov, changed);
    std::fs::write(bed.path(&format!("{t}.prov")), changed).unwrap();
    let (h, r) = bed.both(&[&t, "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(1));
    assert_eq!(r.status.code(), Some(1));
    assert!(r.stdout.is_empty() && h.stdout.is_empty());
    assert!(text(&h.stderr).starts_with("Error: openpgp: invalid signature: "));
    if major == 3 {
        assert_same("tampered body", major, &h, &r);
    } else {
        assert_eq!(
            text(&r.stderr),
            "Error: openpgp: invalid signature: hash tag doesn't match\n"
        );
    }

    // What Go's clear-sign and armor readers let through: a wrong armor
    // checksum line, a `Hash:` header that is not the signature's hash.
    let t = bed.copy_signed("armor-checksum", "alpine-0.1.0.tgz");
    // Helm 3 writes a checksum line, Helm 4 (RFC 9580) none: change it or
    // add one.
    let has_crc = prov.lines().any(|l| l.len() == 5 && l.starts_with('='));
    let crc: String = if has_crc {
        prov.lines()
            .map(|l| {
                if l.len() == 5 && l.starts_with('=') {
                    "=AAAA"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        prov.replace(
            "\n-----END PGP SIGNATURE-----",
            "\n=AAAA\n-----END PGP SIGNATURE-----",
        )
    };
    assert_ne!(crc, prov);
    std::fs::write(bed.path(&format!("{t}.prov")), crc).unwrap();
    let (h, r) = bed.both(&[&t, "--keyring", "pubring.gpg"]);
    assert_same("wrong armor checksum", major, &h, &r);
    let t = bed.copy_signed("hash-header", "alpine-0.1.0.tgz");
    let header = prov.replace("Hash: SHA512", "Hash: SHA256");
    assert_ne!(header, prov);
    std::fs::write(bed.path(&format!("{t}.prov")), header).unwrap();
    let (h, r) = bed.both(&[&t, "--keyring", "pubring.gpg"]);
    assert_same("wrong Hash header", major, &h, &r);

    // Signed by a key that is not in the keyring.
    let (h, r) = bed.both(&[ARCHIVE, "--keyring", "other.gpg"]);
    assert_eq!(h.status.code(), Some(1));
    assert_same("unknown key", major, &h, &r);

    // No .prov beside the archive.
    std::fs::create_dir_all(bed.path("noprov")).unwrap();
    std::fs::copy(bed.path(ARCHIVE), bed.path("noprov/alpine-0.1.0.tgz")).unwrap();
    let (h, r) = bed.both(&["noprov/alpine-0.1.0.tgz", "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(1));
    assert_same("missing .prov", major, &h, &r);

    // Renamed: the .prov has no digest for that name.
    let t = bed.copy_signed("renamed", "other-1.0.0.tgz");
    let (h, r) = bed.both(&[&t, "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(1));
    assert_same("renamed archive", major, &h, &r);

    // Paths and keyrings Helm refuses before reading a signature.
    std::fs::create_dir_all(bed.path("provdir/alpine-0.1.0.tgz.prov")).unwrap();
    std::fs::copy(bed.path(ARCHIVE), bed.path("provdir/alpine-0.1.0.tgz")).unwrap();
    for (case, args) in [
        ("directory", vec!["alpine", "--keyring", "pubring.gpg"]),
        ("not a tgz", vec!["pubring.gpg", "--keyring", "pubring.gpg"]),
        ("no chart", vec!["nothere.tgz", "--keyring", "pubring.gpg"]),
        ("empty chart path", vec!["", "--keyring", "pubring.gpg"]),
        ("no keyring", vec![ARCHIVE, "--keyring", "nothere.gpg"]),
        ("empty keyring flag", vec![ARCHIVE, "--keyring", ""]),
        ("keyring flag without value", vec![ARCHIVE, "--keyring"]),
        ("unknown flag", vec![ARCHIVE, "--bogus"]),
        ("armored keyring", vec![ARCHIVE, "--keyring", "pubring.asc"]),
        ("no argument", vec![]),
    ] {
        let (h, r) = bed.both(&args);
        assert_eq!(h.status.code(), Some(1), "{case}: {h:?}");
        assert_same(case, major, &h, &r);
    }

    // A .prov that is a directory: Helm 3 says so, Helm 4 fails to read
    // it; rudder says Helm 3's.
    let (h, r) = bed.both(&["provdir/alpine-0.1.0.tgz", "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(1));
    if major == 3 {
        assert_same("prov is a directory", major, &h, &r);
    } else {
        assert_eq!(
            text(&r.stderr),
            "Error: provdir/alpine-0.1.0.tgz.prov cannot be a directory\n"
        );
        assert_eq!(r.status.code(), Some(1));
    }

    // A .prov clear-signed by rpgp (not by Helm) over Helm's body: both
    // tools accept it, so the framing rudder parses is OpenPGP's and not
    // only its own.
    let t = bed.copy_signed("rpgp-signed", "alpine-0.1.0.tgz");
    let body = format!(
        "apiVersion: v1\nname: alpine\nversion: 0.1.0\n\n...\nfiles:\n  alpine-0.1.0.tgz: {}\n",
        rudder::source::provenance::digest(&std::fs::read(bed.path(&t)).unwrap())
    );
    let msg = CleartextSignedMessage::sign(
        rand::thread_rng(),
        &body,
        &keys().0.primary_key,
        &Password::empty(),
    )
    .unwrap();
    std::fs::write(
        bed.path(&format!("{t}.prov")),
        msg.to_armored_string(Default::default()).unwrap(),
    )
    .unwrap();
    let (h, r) = bed.both(&[&t, "--keyring", "pubring.gpg"]);
    assert_eq!(h.status.code(), Some(0), "helm {major}: {h:?}");
    assert_same("rpgp-signed .prov", major, &h, &r);
}

#[test]
fn verify_matches_helm3() {
    interop(3);
}

#[test]
fn verify_matches_helm4() {
    interop(4);
}

/// The library entry point for `--verify` on pull and install, on bytes.
#[test]
fn library_verify_on_bytes() {
    let Some(bed) = Bed::new(3) else { return };
    let archive = std::fs::read(bed.path(ARCHIVE)).unwrap();
    let prov = std::fs::read(bed.path(&format!("{ARCHIVE}.prov"))).unwrap();
    let ring = std::fs::read(bed.path("pubring.gpg")).unwrap();
    let v = rudder::source::provenance::verify(&archive, "alpine-0.1.0.tgz", &prov, &ring).unwrap();
    assert_eq!(v.signed_by, vec![SIGNER.to_string()]);
    assert_eq!(v.fingerprint.len(), 40);
    assert_eq!(v.file_hash, rudder::source::provenance::digest(&archive));
    assert_eq!(v.chart_name.as_deref(), Some("alpine"));
    assert_eq!(v.chart_version.as_deref(), Some("0.1.0"));

    use rudder::source::provenance::ProvenanceError as E;
    let other = std::fs::read(bed.path("other.gpg")).unwrap();
    assert!(matches!(
        rudder::source::provenance::verify(&archive, "alpine-0.1.0.tgz", &prov, &other),
        Err(E::UnknownSigner)
    ));
    let mut bad = archive.clone();
    bad[10] ^= 1;
    assert!(matches!(
        rudder::source::provenance::verify(&bad, "alpine-0.1.0.tgz", &prov, &ring),
        Err(E::DigestMismatch { .. })
    ));
    assert!(matches!(
        rudder::source::provenance::verify(&archive, "x.tgz", &prov, &ring),
        Err(E::NoDigest { .. })
    ));
}

/// Keys of other shapes. An Ed25519 key: Helm 4 signs and verifies with
/// it, Helm 3 cannot read it ("unsupported feature: public key type: 22");
/// rudder verifies it as Helm 4 does (a deliberate difference from Helm 3).
/// A certify-only primary key with a signing subkey: Helm signs with the
/// primary key anyway and then refuses its own signature (the primary may
/// not sign), and both tools accept a signature by the subkey.
#[test]
fn verify_other_key_shapes() {
    use pgp::composed::SubkeyParamsBuilder;
    let (Some(h3), Some(h4)) = (common::helm(3), common::helm(4)) else {
        return;
    };
    let Some(mut bed) = Bed::new(4) else { return };
    let mut rng = rand::thread_rng();
    let ed = SecretKeyParamsBuilder::default()
        .key_type(KeyType::Ed25519Legacy)
        .can_certify(true)
        .can_sign(true)
        .primary_user_id("Ed Signer <ed@example.com>".into())
        .build()
        .unwrap()
        .generate(&mut rng)
        .unwrap()
        .sign(&mut rng, &Password::empty())
        .unwrap();
    let sub = SecretKeyParamsBuilder::default()
        .key_type(KeyType::Rsa(2048))
        .can_certify(true)
        .can_sign(false)
        .primary_user_id("Sub Signer <sub@example.com>".into())
        .subkey(
            SubkeyParamsBuilder::default()
                .key_type(KeyType::Rsa(2048))
                .can_sign(true)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
        .generate(&mut rng)
        .unwrap()
        .sign(&mut rng, &Password::empty())
        .unwrap();
    let d = bed.dir.path().to_path_buf();
    for (name, k) in [("ed", &ed), ("sub", &sub)] {
        std::fs::write(d.join(format!("{name}-sec.gpg")), k.to_bytes().unwrap()).unwrap();
        std::fs::write(d.join(format!("{name}-pub.gpg")), public_bytes(k)).unwrap();
        let out = bed.run(
            true,
            &[
                "package",
                "--sign",
                "--key",
                name,
                "--keyring",
                &format!("{name}-sec.gpg"),
                "-d",
                name,
                "alpine",
            ],
        );
        assert!(
            out.status.success(),
            "helm 4 package --sign ({name}): {out:?}"
        );
    }

    // Ed25519, signed by Helm 4.
    let args = ["verify", "ed/alpine-0.1.0.tgz", "--keyring", "ed-pub.gpg"];
    let (h, r) = (bed.run(true, &args), bed.run(false, &args));
    assert_eq!(h.status.code(), Some(0), "{h:?}");
    assert_same("ed25519", 4, &h, &r);
    bed.helm = h3.clone();
    let h = bed.run(true, &args);
    assert_eq!(h.status.code(), Some(1));
    assert!(text(&h.stderr).contains("unsupported feature"), "{h:?}");

    // Certify-only primary: Helm's own signature is refused by both, in
    // both versions.
    let args = ["verify", "sub/alpine-0.1.0.tgz", "--keyring", "sub-pub.gpg"];
    for (major, helm) in [(3, &h3), (4, &h4)] {
        bed.helm = helm.clone();
        let (h, r) = (bed.run(true, &args), bed.run(false, &args));
        assert_eq!(h.status.code(), Some(1), "{h:?}");
        assert_same("certify-only primary", major, &h, &r);
    }

    // Signed by the signing subkey (as gpg --clearsign does): accepted.
    let t = bed.copy_signed("subkey", "alpine-0.1.0.tgz");
    let body = format!(
        "apiVersion: v1\nname: alpine\nversion: 0.1.0\n\n...\nfiles:\n  alpine-0.1.0.tgz: {}\n",
        rudder::source::provenance::digest(&std::fs::read(bed.path(&t)).unwrap())
    );
    let msg = CleartextSignedMessage::sign(
        rand::thread_rng(),
        &body,
        &sub.secret_subkeys[0].key,
        &Password::empty(),
    )
    .unwrap();
    std::fs::write(
        bed.path(&format!("{t}.prov")),
        msg.to_armored_string(Default::default()).unwrap(),
    )
    .unwrap();
    let args = ["verify", t.as_str(), "--keyring", "sub-pub.gpg"];
    for (major, helm) in [(3, &h3), (4, &h4)] {
        bed.helm = helm.clone();
        let (h, r) = (bed.run(true, &args), bed.run(false, &args));
        assert_eq!(h.status.code(), Some(0), "{h:?}");
        assert_same("signing subkey", major, &h, &r);
    }
}

/// `--verify` on charts from a repository: `pull` and `template` with the
/// signer's keyring, with another key, and with a tampered `.prov` served,
/// for both tools from one repository (Helm 3.17.2).
#[test]
fn verify_on_pull_and_template_from_a_repository() {
    use chart_server::{ChartServer, Fault, ServerOptions};
    let Some(bed) = Bed::new(3) else { return };
    let index = bed.run(true, &["repo", "index", "signed"]);
    assert!(index.status.success(), "{index:?}");
    let server = ChartServer::start(&bed.path("signed"), ServerOptions::default());
    for helm in [true, false] {
        let out = bed.run(helm, &["repo", "add", "signed", &server.url()]);
        assert!(out.status.success(), "{out:?}");
    }
    let pull = |helm: bool, dest: &str, ring: &str| {
        // (helm pull -d needs the directory to exist; rudder makes it.)
        std::fs::create_dir_all(bed.path(dest)).unwrap();
        bed.run(
            helm,
            &[
                "pull",
                "signed/alpine",
                "--verify",
                "--keyring",
                ring,
                "-d",
                dest,
            ],
        )
    };
    let (h, r) = (
        pull(true, "h1", "pubring.gpg"),
        pull(false, "r1", "pubring.gpg"),
    );
    assert!(h.status.success(), "{h:?}");
    assert_same("pull --verify", 3, &h, &r);
    for f in ["alpine-0.1.0.tgz", "alpine-0.1.0.tgz.prov"] {
        assert_eq!(
            std::fs::read(bed.path(&format!("h1/{f}"))).unwrap(),
            std::fs::read(bed.path(&format!("r1/{f}"))).unwrap(),
            "{f}"
        );
    }
    // A key that did not sign the chart: both refuse.
    let (h, r) = (
        pull(true, "h2", "other.gpg"),
        pull(false, "r2", "other.gpg"),
    );
    assert!(!h.status.success() && !r.status.success(), "{h:?}\n{r:?}");
    let t = bed.run(
        false,
        &[
            "template",
            "x",
            "signed/alpine",
            "--verify",
            "--keyring",
            "other.gpg",
        ],
    );
    assert!(!t.status.success(), "{t:?}");
    let t = bed.run(
        false,
        &[
            "template",
            "x",
            "signed/alpine",
            "--verify",
            "--keyring",
            "pubring.gpg",
        ],
    );
    assert!(t.status.success(), "{t:?}");
    // A tampered provenance file: both refuse.
    let prov = std::fs::read(bed.path(&format!("{ARCHIVE}.prov"))).unwrap();
    let tampered = text(&prov).replacen("name: alpine", "name: alpinf", 1);
    server.set_fault(
        "/alpine-0.1.0.tgz.prov",
        Some(Fault::Replace(tampered.into_bytes())),
    );
    let (h, r) = (
        pull(true, "h3", "pubring.gpg"),
        pull(false, "r3", "pubring.gpg"),
    );
    assert!(!h.status.success() && !r.status.success(), "{h:?}\n{r:?}");
    assert!(text(&r.stderr).starts_with("Error: "), "{r:?}");
    // No provenance file at all: Helm's message.
    server.set_fault("/alpine-0.1.0.tgz.prov", Some(Fault::Status(404)));
    let r = pull(false, "r4", "pubring.gpg");
    assert!(
        text(&r.stderr).contains("failed to fetch provenance"),
        "{r:?}"
    );
}

/// What one `dependency` run left: exit code, output (the `tmpcharts-PID`
/// directory named without its process id), the files of `charts/` and
/// `Chart.lock` without its `generated` line.
#[derive(Debug, PartialEq)]
struct DepRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// File name → sha256 of its bytes.
    charts: std::collections::BTreeMap<String, String>,
    lock: Option<String>,
}

/// Runs `dependency ARGS work` with helm or rudder on a fresh copy of the
/// chart `scenario` at `work` (with `lock` as its Chart.lock), so that both
/// tools see the same paths.
fn dep_run(bed: &Bed, helm: bool, scenario: &str, lock: Option<&str>, args: &[&str]) -> DepRun {
    let work = bed.path("work");
    let _ = std::fs::remove_dir_all(&work);
    copy_dir(&bed.path(scenario), &work);
    if let Some(l) = lock {
        std::fs::write(work.join("Chart.lock"), l).unwrap();
    }
    let mut full = vec!["dependency"];
    full.extend_from_slice(args);
    full.push("work");
    let out = bed.run(helm, &full);
    let pid = regex::Regex::new(r"tmpcharts-[0-9]+").unwrap();
    let mut charts = std::collections::BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(work.join("charts")) {
        for e in rd.flatten() {
            charts.insert(
                e.file_name().to_string_lossy().into_owned(),
                rudder::source::provenance::digest(&std::fs::read(e.path()).unwrap()),
            );
        }
    }
    let lock = std::fs::read_to_string(work.join("Chart.lock"))
        .ok()
        .map(|t| {
            t.lines()
                .filter(|l| !l.starts_with("generated:"))
                .collect::<Vec<_>>()
                .join("\n")
        });
    DepRun {
        code: out.status.code(),
        stdout: pid
            .replace_all(&text(&out.stdout), "tmpcharts-PID")
            .into_owned(),
        stderr: pid
            .replace_all(&text(&out.stderr), "tmpcharts-PID")
            .into_owned(),
        charts,
        lock,
    }
}

/// `dependency ARGS` with helm then rudder, compared whole; returns
/// Helm's run.
fn dep_same(
    bed: &Bed,
    major: u8,
    case: &str,
    scenario: &str,
    lock: Option<&str>,
    args: &[&str],
) -> DepRun {
    let h = dep_run(bed, true, scenario, lock, args);
    let r = dep_run(bed, false, scenario, lock, args);
    assert_eq!(
        h, r,
        "{case}: helm {major} (left) and rudder (right) differ"
    );
    eprintln!("INTEROP helm{major} dependency {case}: exit {:?}, output, charts/ and Chart.lock identical", h.code);
    h
}

/// `dependency update --verify` (Helm's VerifyAlways) and `dependency
/// build --verify` (VerifyIfPossible) against Helm on one repository
/// serving the chart Helm signed: for an `@alias` and a URL dependency,
/// success, a missing `.prov`, a key that did not sign, a changed body, a
/// signed digest that is not the archive's, and a missing keyring.
fn dependency_verify(major: u8) {
    use chart_server::{ChartServer, Fault, ServerOptions};
    let Some(bed) = Bed::new(major) else { return };
    let index = bed.run(true, &["repo", "index", "signed"]);
    assert!(index.status.success(), "{index:?}");
    let server = ChartServer::start(&bed.path("signed"), ServerOptions::default());
    let url = server.url();
    // One set of Helm files for both tools: helm adds the repository.
    let add = bed.run(true, &["repo", "add", "signed", &url]);
    assert!(add.status.success(), "{add:?}");
    for (name, repo) in [("alias", "\"@signed\"".to_string()), ("url", url.clone())] {
        let dir = bed.path(&format!("scenario-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("Chart.yaml"),
            format!(
                "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n- name: alpine\n  version: 0.1.0\n  repository: {repo}\n"
            ),
        )
        .unwrap();
    }
    let ring = ["--keyring", "pubring.gpg"];
    for scenario in ["scenario-alias", "scenario-url"] {
        let up = |case: &str, extra: &[&str]| {
            let mut args = vec!["update", "--verify"];
            args.extend_from_slice(extra);
            dep_same(
                &bed,
                major,
                &format!("update {scenario} {case}"),
                scenario,
                None,
                &args,
            )
        };
        // Signed by the keyring's key: the chart lands in charts/, the
        // .prov does not (Helm moves only what loads as a chart).
        let ok = up("signed", &ring);
        assert_eq!(ok.code, Some(0), "{ok:?}");
        assert_eq!(
            ok.charts.keys().collect::<Vec<_>>(),
            ["alpine-0.1.0.tgz"],
            "{ok:?}"
        );
        assert_eq!(
            ok.charts["alpine-0.1.0.tgz"],
            rudder::source::provenance::digest(&std::fs::read(bed.path(ARCHIVE)).unwrap())
        );
        // Build from the lock update wrote (Helm's own, regenerated).
        let built = {
            let h = dep_run(&bed, true, scenario, None, &["update"]);
            assert_eq!(h.code, Some(0), "{h:?}");
            std::fs::read_to_string(bed.path("work/Chart.lock")).unwrap()
        };
        let b = dep_same(
            &bed,
            major,
            &format!("build {scenario} signed"),
            scenario,
            Some(&built),
            &["build", "--verify", "--keyring", "pubring.gpg"],
        );
        assert_eq!(b.code, Some(0), "{b:?}");

        // A key that did not sign: refused, charts/ left empty.
        let bad = up("unknown key", &["--keyring", "other.gpg"]);
        assert_eq!(bad.code, Some(1));
        assert!(
            bad.stderr.contains("signature made by unknown entity"),
            "{bad:?}"
        );
        assert!(bad.charts.is_empty(), "{bad:?}");
        // No keyring: the named one, then the default one.
        let none = up("missing keyring", &["--keyring", "nothere.gpg"]);
        assert!(none.stderr.contains("failed to load keyring"), "{none:?}");
        let none = up("default keyring missing", &[]);
        assert!(none.stderr.contains(".gnupg/pubring.gpg"), "{none:?}");
        let b = dep_same(
            &bed,
            major,
            &format!("build {scenario} unknown key"),
            scenario,
            Some(&built),
            &["build", "--verify", "--keyring", "other.gpg"],
        );
        assert_eq!(b.code, Some(1));

        // No .prov on the server: update fails, build warns and goes on.
        server.set_fault("/alpine-0.1.0.tgz.prov", Some(Fault::Status(404)));
        let missing = up("missing .prov", &ring);
        assert_eq!(missing.code, Some(1));
        assert!(
            missing.stderr.contains("failed to fetch provenance"),
            "{missing:?}"
        );
        let b = dep_same(
            &bed,
            major,
            &format!("build {scenario} missing .prov"),
            scenario,
            Some(&built),
            &["build", "--verify", "--keyring", "pubring.gpg"],
        );
        assert_eq!(b.code, Some(0), "{b:?}");
        assert!(
            b.stdout.contains("WARNING: Verification not found for "),
            "{b:?}"
        );
        assert_eq!(b.charts.keys().collect::<Vec<_>>(), ["alpine-0.1.0.tgz"]);

        // A signed digest that is not the archive's (validly signed).
        let archive = std::fs::read(bed.path(ARCHIVE)).unwrap();
        let mut other = archive.clone();
        other.push(0);
        let body = format!(
            "apiVersion: v1\nname: alpine\nversion: 0.1.0\n\n...\nfiles:\n  alpine-0.1.0.tgz: {}\n",
            rudder::source::provenance::digest(&other)
        );
        let msg = CleartextSignedMessage::sign(
            rand::thread_rng(),
            &body,
            &keys().0.primary_key,
            &Password::empty(),
        )
        .unwrap();
        server.set_fault(
            "/alpine-0.1.0.tgz.prov",
            Some(Fault::Replace(
                msg.to_armored_string(Default::default())
                    .unwrap()
                    .into_bytes(),
            )),
        );
        let mismatch = up("digest mismatch", &ring);
        assert_eq!(mismatch.code, Some(1));
        assert!(
            mismatch.stderr.contains("sha256 sum does not match"),
            "{mismatch:?}"
        );

        // A changed body: Helm 3's words (Helm 4 says "RSA verification
        // failure"; rudder says Helm 3's).
        let prov = text(&std::fs::read(bed.path(&format!("{ARCHIVE}.prov"))).unwrap());
        server.set_fault(
            "/alpine-0.1.0.tgz.prov",
            Some(Fault::Replace(
                prov.replacen("name: alpine", "name: alpinf", 1)
                    .into_bytes(),
            )),
        );
        let args = ["update", "--verify", "--keyring", "pubring.gpg"];
        let h = dep_run(&bed, true, scenario, None, &args);
        let r = dep_run(&bed, false, scenario, None, &args);
        assert_eq!(h.code, Some(1), "{h:?}");
        if major == 3 {
            assert_eq!(
                h, r,
                "changed body: helm 3 (left) and rudder (right) differ"
            );
        } else {
            assert_eq!(
                (&h.stdout, &h.charts),
                (
                    &r.stdout
                        .replace("hash tag doesn't match", "RSA verification failure"),
                    &r.charts
                )
            );
            assert_eq!(r.code, Some(1));
        }
        assert!(r.stderr.contains("hash tag doesn't match"), "{r:?}");
        server.set_fault("/alpine-0.1.0.tgz.prov", None);
    }
}

#[test]
fn dependency_verify_matches_helm3() {
    dependency_verify(3);
}

#[test]
fn dependency_verify_matches_helm4() {
    dependency_verify(4);
}

/// `dependency update|build --verify` of an `oci://` dependency against
/// Helm: the chart pushed by helm with its `.prov` (the manifest's
/// provenance layer) verifies; one pushed without fails `update` (Helm's
/// `failed to fetch provenance "oci://...:TAG.prov"`) and makes `build`
/// warn; a key that did not sign fails both.
fn dependency_verify_oci(major: u8) {
    let Some(bed) = Bed::new(major) else { return };
    let Some(reg) = oci_registry::Registry::start_with(false, false) else {
        return;
    };
    std::fs::create_dir_all(bed.path("unsigned")).unwrap();
    std::fs::copy(bed.path(ARCHIVE), bed.path("unsigned/alpine-0.1.0.tgz")).unwrap();
    for (archive, repo) in [
        (ARCHIVE, "signed"),
        ("unsigned/alpine-0.1.0.tgz", "unsigned"),
    ] {
        let out = bed.run(true, &["push", archive, &reg.url(repo), "--plain-http"]);
        assert!(out.status.success(), "helm push: {out:?}");
        let dir = bed.path(&format!("scenario-{repo}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("Chart.yaml"),
            format!(
                "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n- name: alpine\n  version: 0.1.0\n  repository: {}\n",
                reg.url(repo)
            ),
        )
        .unwrap();
    }
    let lock = |scenario: &str| {
        let h = dep_run(&bed, true, scenario, None, &["update", "--plain-http"]);
        assert_eq!(h.code, Some(0), "{h:?}");
        std::fs::read_to_string(bed.path("work/Chart.lock")).unwrap()
    };
    let signed_lock = lock("scenario-signed");
    let unsigned_lock = lock("scenario-unsigned");
    let digest = rudder::source::provenance::digest(&std::fs::read(bed.path(ARCHIVE)).unwrap());
    for (case, scenario, lock, args, code) in [
        (
            "update oci signed",
            "scenario-signed",
            None,
            vec!["update", "--verify", "--keyring", "pubring.gpg"],
            0,
        ),
        (
            "build oci signed",
            "scenario-signed",
            Some(&signed_lock),
            vec!["build", "--verify", "--keyring", "pubring.gpg"],
            0,
        ),
        (
            "update oci unknown key",
            "scenario-signed",
            None,
            vec!["update", "--verify", "--keyring", "other.gpg"],
            1,
        ),
        (
            "build oci unknown key",
            "scenario-signed",
            Some(&signed_lock),
            vec!["build", "--verify", "--keyring", "other.gpg"],
            1,
        ),
        (
            "update oci missing keyring",
            "scenario-signed",
            None,
            vec!["update", "--verify", "--keyring", "nothere.gpg"],
            1,
        ),
        (
            "update oci no provenance layer",
            "scenario-unsigned",
            None,
            vec!["update", "--verify", "--keyring", "pubring.gpg"],
            1,
        ),
        (
            "build oci no provenance layer",
            "scenario-unsigned",
            Some(&unsigned_lock),
            vec!["build", "--verify", "--keyring", "pubring.gpg"],
            0,
        ),
    ] {
        let mut args = args.clone();
        args.push("--plain-http");
        let h = dep_same(&bed, major, case, scenario, lock.map(String::as_str), &args);
        assert_eq!(h.code, Some(code), "{case}: {h:?}");
        if code == 0 {
            assert_eq!(
                h.charts.values().collect::<Vec<_>>(),
                [&digest],
                "{case}: {h:?}"
            );
        } else {
            assert!(h.charts.is_empty(), "{case}: {h:?}");
        }
    }
}

#[test]
fn dependency_verify_oci_matches_helm3() {
    dependency_verify_oci(3);
}

#[test]
fn dependency_verify_oci_matches_helm4() {
    dependency_verify_oci(4);
}
