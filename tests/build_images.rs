//! `docker/build-images.sh` asks cargo where it put the fixture binary, so a
//! `CARGO_TARGET_DIR` (a common setup) neither breaks the build nor packs a stale binary.

use std::path::Path;
use std::process::Command;

#[test]
fn the_fixture_binary_is_found_where_cargo_put_it() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Kept between runs (cargo's per-target scratch space), so only the first run builds.
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("build-images-target");
    let out = Command::new("bash")
        .arg(repo.join("docker/build-images.sh"))
        .arg("--print-binary")
        .env("CARGO_TARGET_DIR", &target_dir)
        .output()
        .expect("run build-images.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "build-images.sh --print-binary failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed = Path::new(stdout.trim_end().lines().last().expect("a path on stdout"));
    assert_eq!(
        printed,
        target_dir.join("x86_64-unknown-linux-gnu/release/cordon-fixture"),
        "the binary cargo built, not a guess under fixtures/target:\n{stderr}"
    );
    let meta = std::fs::metadata(printed).expect("the printed binary exists");
    use std::os::unix::fs::PermissionsExt;
    assert!(meta.is_file() && meta.permissions().mode() & 0o111 != 0, "{printed:?} is not executable");
    let version = Command::new(printed).arg("--version").output().expect("run the fixture binary");
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("cordon-fixture "), "{version:?}");
}
