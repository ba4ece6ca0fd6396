//! `docker/build-images.sh` asks cargo where it put the fixture binary, so a
//! `CARGO_TARGET_DIR` (a common setup) neither breaks the build nor packs a stale binary.

use std::path::Path;
use std::process::Command;

#[test]
fn the_fixture_binary_is_found_where_cargo_put_it() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Another path to where the other tests' `build-images.sh` puts the fixture (the
    // CARGO_TARGET_DIR they inherit, else cargo's default for fixtures/Cargo.toml): a
    // script that guessed `target/` or `fixtures/target` prints another path, while cargo
    // reuses their build instead of building the fixture again (a release build from clean
    // in a directory of its own cost 85 s in CI).
    let shared = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => repo.join(dir),
        None => repo.join("fixtures/target"),
    };
    std::fs::create_dir_all(&shared).expect("the fixtures' target directory");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let target_dir = tmp.join("build-images-target");
    // An earlier run's link, or the directory older versions of this test built in.
    match std::fs::symlink_metadata(&target_dir) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&target_dir).unwrap(),
        Ok(_) => std::fs::remove_file(&target_dir).unwrap(),
        Err(_) => {}
    }
    std::os::unix::fs::symlink(&shared, &target_dir).expect("a link to the fixtures' target directory");
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
