//! Docker fixtures for integration tests: a `FROM scratch` busybox image, user networks
//! and containers, each behind a guard whose `Drop` removes it (on panics too).
//!
//! - Names are `cordon-t-<pid>-<n>-<what>`, so parallel test binaries never collide;
//!   every object also carries the label `cordon-test=1` (`docker rm -f $(docker ps -aq
//!   --filter label=cordon-test=1)` clears anything a killed run left behind).
//! - Every network gets an explicit subnet `10.233.<octet>.0/24`; each test passes its
//!   own octet.
//! - Containers run `busybox sleep 600`, so even a leaked one stops by itself.
//! - The image is imported (`docker import`, no builder, no registry) from Debian's
//!   static `/bin/busybox` under a content-stable tag `cordon-t-busybox:<sha256 prefix>`
//!   and left cached between runs (3 MB): it is only rebuilt when busybox changes.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

const BUSYBOX: &str = "/bin/busybox";
pub const TEST_LABEL: &str = "cordon-test=1";

/// Fails `test` with what to install unless a Docker engine answers and busybox is
/// there: a skipped test would read as a pass.
pub fn require_docker(test: &str) {
    static OK: OnceLock<Result<(), String>> = OnceLock::new();
    let status = OK.get_or_init(|| {
        if !std::path::Path::new(BUSYBOX).exists() {
            return Err(format!("{BUSYBOX} is missing (apt-get install busybox-static)"));
        }
        match Command::new("docker").args(["version", "--format", "{{.Server.APIVersion}}"]).output() {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!("docker version: {}", String::from_utf8_lossy(&out.stderr).trim())),
            Err(e) => Err(format!("docker CLI: {e}")),
        }
    });
    if let Err(why) = status {
        panic!(
            "{test}: needs a running Docker engine and Debian's busybox-static ({why}); .ci/run installs and starts both"
        );
    }
}

/// A fresh name: `cordon-t-<pid>-<n>-<what>`.
pub fn unique(what: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("cordon-t-{}-{}-{what}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Runs `docker <args>`, panicking with its stderr on failure; returns trimmed stdout.
pub fn docker(args: &[&str]) -> String {
    let out = docker_output(args);
    assert!(out.status.success(), "docker {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn docker_output(args: &[&str]) -> Output {
    Command::new("docker").args(args).stdin(Stdio::null()).output().expect("running the docker CLI")
}

/// Best effort, for Drop: never panics.
fn docker_quiet(args: &[&str]) {
    let _ = Command::new("docker").args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// The busybox image's tag, imported once per test binary (and cached across runs).
pub fn busybox_image() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let binary = std::fs::read(BUSYBOX).expect("reading /bin/busybox");
        let digest = hex::encode(Sha256::digest(&binary));
        let tag = format!("cordon-t-busybox:{}", &digest[..16]);
        if docker_output(&["image", "inspect", &tag]).status.success() {
            return tag;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::copy(BUSYBOX, dir.path().join("bin/busybox")).unwrap();
        std::fs::create_dir(dir.path().join("etc")).unwrap();
        std::fs::write(
            dir.path().join("etc/passwd"),
            "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n",
        )
        .unwrap();
        let tar = dir.path().join("rootfs.tar");
        let status = Command::new("tar")
            .args(["-C", dir.path().to_str().unwrap(), "-cf", tar.to_str().unwrap(), "bin", "etc"])
            .status()
            .expect("tar");
        assert!(status.success(), "tar failed");
        // Two binaries racing here import the same content under the same tag: harmless.
        docker(&[
            "import",
            "--change",
            r#"ENTRYPOINT ["/bin/busybox"]"#,
            "--change",
            r#"CMD ["sleep", "600"]"#,
            "--change",
            "LABEL cordon-test=1",
            tar.to_str().unwrap(),
            &tag,
        ]);
        tag
    })
}

/// A user-defined bridge network with subnet `10.233.<octet>.0/24`, removed on drop.
/// Declare it before the containers that join it, so it is dropped after them.
pub struct Network {
    pub name: String,
    pub id: String,
    pub subnet: String,
    pub octet: u8,
}

impl Network {
    pub fn create(octet: u8) -> Network {
        let name = unique("net");
        let subnet = format!("10.233.{octet}.0/24");
        let id =
            docker(&["network", "create", "--driver", "bridge", "--subnet", &subnet, "--label", TEST_LABEL, &name]);
        Network { name, id, subnet, octet }
    }

    /// `10.233.<octet>.<host>`.
    pub fn addr(&self, host: u8) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::new(10, 233, self.octet, host)
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        docker_quiet(&["network", "rm", &self.name]);
    }
}

/// A busybox container, removed (with `-f`) on drop.
pub struct Container {
    pub name: String,
    pub id: String,
}

impl Container {
    /// `docker run -d` with the given options before the image, and `sleep 600`.
    /// Its name is `unique(what)`.
    pub fn run(what: &str, options: &[&str]) -> Container {
        Self::start("run", what, options)
    }

    /// `docker create` (never started): a stopped container.
    pub fn create(what: &str, options: &[&str]) -> Container {
        Self::start("create", what, options)
    }

    fn start(verb: &str, what: &str, options: &[&str]) -> Container {
        let name = unique(what);
        let mut args: Vec<&str> = vec![verb];
        if verb == "run" {
            args.push("-d");
        }
        args.extend(["--name", name.as_str(), "--label", TEST_LABEL]);
        args.extend(options);
        args.push(busybox_image());
        // Guard first, so a failing `docker run` (created, not started) is still removed.
        let mut guard = Container { name: name.clone(), id: String::new() };
        guard.id = docker(&args);
        guard
    }

    pub fn pid(&self) -> u32 {
        docker(&["inspect", "--format", "{{.State.Pid}}", &self.id]).parse().expect("pid")
    }

    pub fn ip(&self, network: &str) -> std::net::IpAddr {
        let fmt = format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}");
        docker(&["inspect", "--format", &fmt, &self.id]).parse().expect("container address")
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        docker_quiet(&["rm", "-f", "-v", &self.name]);
    }
}
