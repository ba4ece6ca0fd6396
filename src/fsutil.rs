//! Reading files that someone else controls: only regular files, never blocking on a
//! FIFO or a device, never more than a cap, and (inside a container's root) never
//! following a symlink out of that root.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("is not a regular file (it is a {kind}); only regular files are read")]
    NotRegular { kind: &'static str },
    #[error("is larger than the {cap}-byte limit")]
    TooLarge { cap: u64 },
    #[error("is not UTF-8 text")]
    NotText,
}

/// What a file is, in words, for errors that refuse it.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else if t.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

/// Reads an open file: refuses anything but a regular file, and stops past `cap`.
fn read_open(file: File, cap: u64) -> Result<Vec<u8>, ReadError> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular { kind: kind_of(&meta) });
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge { cap });
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    // The size may have grown since fstat: read at most one byte past the cap to tell.
    file.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(ReadError::TooLarge { cap });
    }
    Ok(out)
}

/// Opens without blocking (a FIFO would otherwise wait for a writer forever), then reads
/// a regular file up to `cap` bytes.
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    read_open(file, cap)
}

/// [`read_regular`], as UTF-8 text.
pub fn read_regular_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    String::from_utf8(read_regular(path, cap)?).map_err(|_| ReadError::NotText)
}

/// `openat2(2)`'s `struct open_how`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_IN_ROOT: u64 = 0x10;

/// Reads `relative` (e.g. `etc/resolv.conf`) inside the root filesystem of `pid`, as that
/// process sees it: symlinks resolve inside its root, never on the host.
/// Whether `relative` names anything (a file, or a link to one) inside the root of `pid`;
/// the look-up never leaves that root.
pub fn exists_in_root(pid: u32, relative: &str) -> bool {
    match read_in_root(pid, relative, 1) {
        Ok(_) => true,
        Err(ReadError::Io(e)) => e.kind() != io::ErrorKind::NotFound,
        Err(_) => true,
    }
}

pub fn read_in_root(pid: u32, relative: &str, cap: u64) -> Result<String, ReadError> {
    let root = File::open(format!("/proc/{pid}/root"))?;
    let path = std::ffi::CString::new(relative.trim_start_matches('/'))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path with a NUL byte"))?;
    let how = OpenHow {
        flags: (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 reads `how` (of the size passed) and the NUL-terminated path; both
    // outlive the call. A non-negative return is a new file descriptor we own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    String::from_utf8(read_open(file, cap)?).map_err(|_| ReadError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_regular_text(&p, 5).unwrap(), "hello");
        assert!(matches!(read_regular(&p, 4), Err(ReadError::TooLarge { cap: 4 })));
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR).unwrap();
        assert!(matches!(read_regular(&fifo, 10), Err(ReadError::NotRegular { kind: "FIFO" })));
        assert!(matches!(read_regular(Path::new("/dev/zero"), 10), Err(ReadError::NotRegular { .. })));
        assert!(matches!(read_regular(dir.path(), 10), Err(ReadError::NotRegular { kind: "directory" })));
    }

    #[test]
    fn reads_inside_a_process_root_with_the_same_rules() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("resolv.conf");
        std::fs::write(&file, "nameserver 127.0.0.11\n").unwrap();
        let me = std::process::id();
        let relative = file.to_str().unwrap().trim_start_matches('/');
        assert_eq!(read_in_root(me, relative, 1024).unwrap(), "nameserver 127.0.0.11\n");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR).unwrap();
        let relative = fifo.to_str().unwrap().trim_start_matches('/');
        assert!(matches!(read_in_root(me, relative, 1024), Err(ReadError::NotRegular { kind: "FIFO" })));
    }
}
