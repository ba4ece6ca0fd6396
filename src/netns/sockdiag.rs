//! The TCP listeners of a network namespace through the kernel's sock_diag netlink
//! interface, asked for the LISTEN state only.
//!
//! Why not `/proc/<pid>/net/tcp`: every read of it makes the kernel walk its whole
//! established-connections hash, one table for every namespace on the host (262,144
//! buckets on a 24 GiB machine), about 2 ms of system time per read whatever the
//! namespace itself holds. At 5000 client×provider pairs those reads were more than half
//! of cordon's CPU. A dump for the LISTEN state walks the listening sockets only.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use nix::sched::{CloneFlags, setns};

use super::listener::{AcceptQueue, Listener};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const TCP_LISTEN: u32 = 10;
const HEADER: usize = 16;
/// `struct inet_diag_req_v2`: family, protocol, ext, pad, states, a 48-byte socket id.
const REQUEST: usize = 56;
/// `struct inet_diag_msg` up to the end of its socket id's source address.
const MESSAGE_ADDR_END: usize = 24;
/// Where `idiag_rqueue` and `idiag_wqueue` sit: for a listener, the accept queue's length
/// and its backlog.
const MESSAGE_QUEUES: usize = 56;
/// A dump that has not finished in this long is abandoned (the caller falls back).
const RECEIVE_TIMEOUT_SECS: libc::time_t = 2;

/// The listening TCP sockets (IPv4 and IPv6) in the network namespace of `pid`.
pub fn listeners(pid: u32) -> io::Result<Vec<Listener>> {
    crate::cost::PROC_READS.add(1);
    let socket = socket_in(pid)?;
    let mut out = dump(&socket, libc::AF_INET as u8)?;
    // Any failure of the IPv6 dump (a kernel without IPv6, a timeout) is an error: the
    // caller then reads `/proc/<pid>/net/tcp6`, so an IPv6-only listener is never missed.
    out.extend(dump(&socket, libc::AF_INET6 as u8)?);
    out.sort();
    out.dedup();
    Ok(out)
}

/// A sock_diag socket in the network namespace of `pid`. A socket stays in the namespace
/// it was made in, so it is made on a short-lived thread that enters the namespace and
/// then ends: no thread of cordon that outlives the call changes namespace.
fn socket_in(pid: u32) -> io::Result<OwnedFd> {
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    let here = std::fs::metadata("/proc/thread-self/ns/net").map(|m| m.ino()).ok();
    if here.is_some() && here == ns.metadata().map(|m| m.ino()).ok() {
        return diag_socket();
    }
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                setns(ns.as_fd(), CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
                diag_socket()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the thread entering the namespace panicked")))
    })
}

fn diag_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::NETLINK_SOCK_DIAG) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new, valid descriptor that nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let timeout = libc::timeval { tv_sec: RECEIVE_TIMEOUT_SECS, tv_usec: 0 };
    // SAFETY: the option value points at a live timeval of the size passed.
    let set = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(socket)
}

/// The request: every TCP socket of `family` in the LISTEN state.
fn request(family: u8) -> [u8; HEADER + REQUEST] {
    let mut req = [0u8; HEADER + REQUEST];
    req[0..4].copy_from_slice(&((HEADER + REQUEST) as u32).to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    req[HEADER] = family;
    req[HEADER + 1] = libc::IPPROTO_TCP as u8;
    req[HEADER + 4..HEADER + 8].copy_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
    req
}

fn dump(socket: &OwnedFd, family: u8) -> io::Result<Vec<Listener>> {
    let req = request(family);
    // SAFETY: the buffer is live and its length is passed.
    let sent = unsafe { libc::send(socket.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: the buffer is live and its length is passed.
        let n = unsafe { libc::recv(socket.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        match parse(&buf[..n as usize], &mut out)? {
            Parsed::Done => return Ok(out),
            Parsed::More => {}
        }
    }
}

enum Parsed {
    More,
    Done,
}

/// One datagram of the dump: listeners are appended to `out`.
fn parse(datagram: &[u8], out: &mut Vec<Listener>) -> io::Result<Parsed> {
    let u16_at = |b: &[u8], at: usize| u16::from_ne_bytes([b[at], b[at + 1]]);
    let mut at = 0;
    while at + HEADER <= datagram.len() {
        let len = u32::from_ne_bytes(datagram[at..at + 4].try_into().expect("four bytes")) as usize;
        if len < HEADER || at + len > datagram.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a sock_diag message of length {len}")));
        }
        let body = &datagram[at + HEADER..at + len];
        match u16_at(datagram, at + 4) {
            NLMSG_DONE => return Ok(Parsed::Done),
            NLMSG_ERROR => {
                let errno = body.get(0..4).map_or(0, |e| i32::from_ne_bytes(e.try_into().expect("four bytes")));
                return Err(io::Error::from_raw_os_error(-errno));
            }
            SOCK_DIAG_BY_FAMILY if body.len() >= MESSAGE_ADDR_END => {
                if let Some(listener) = listener(body) {
                    out.push(listener);
                }
            }
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Ok(Parsed::More)
}

/// `struct inet_diag_msg`: family, state, timer, retrans, then the socket id (source
/// port and destination port in network order, source address in 16 bytes).
fn listener(msg: &[u8]) -> Option<Listener> {
    if u32::from(msg[1]) != TCP_LISTEN {
        return None;
    }
    let port = u16::from_be_bytes([msg[4], msg[5]]);
    let ip = match i32::from(msg[0]) {
        libc::AF_INET => IpAddr::V4(Ipv4Addr::new(msg[8], msg[9], msg[10], msg[11])),
        libc::AF_INET6 => {
            let v6 = Ipv6Addr::from(<[u8; 16]>::try_from(&msg[8..24]).ok()?);
            v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6))
        }
        _ => return None,
    };
    let u32_at = |at: usize| msg.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().expect("four bytes")));
    let queue = match (u32_at(MESSAGE_QUEUES), u32_at(MESSAGE_QUEUES + 4)) {
        (Some(waiting), Some(backlog)) => Some(AcceptQueue { waiting, backlog }),
        _ => None,
    };
    Some(Listener { addr: SocketAddr::new(ip, port), queue })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netns::procfs;

    #[test]
    fn sees_this_process_s_listeners_as_proc_net_tcp_does() {
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let v6 = std::net::TcpListener::bind("[::1]:0").ok();
        let got = listeners(std::process::id()).expect("a LISTEN dump of this namespace");
        let at = |addr: SocketAddr| got.iter().find(|l| l.addr == addr).copied();
        let seen = at(v4.local_addr().unwrap()).unwrap_or_else(|| panic!("{got:?}"));
        // std's listen(2) backlog is 128; the kernel caps it at somaxconn.
        assert!(matches!(seen.queue, Some(AcceptQueue { waiting: 0, backlog: 1.. })), "{seen:?}");
        if let Some(v6) = &v6 {
            assert!(at(v6.local_addr().unwrap()).is_some(), "{got:?}");
        }
        let from_proc = procfs::listeners_from_proc_text(std::process::id()).unwrap();
        for l in [v4.local_addr().unwrap()].into_iter().chain(v6.iter().map(|s| s.local_addr().unwrap())) {
            assert!(from_proc.contains(&Listener::at(l)), "{from_proc:?}");
        }
    }

    #[test]
    fn reads_a_dump_datagram_and_stops_at_done() {
        let mut datagram = Vec::new();
        let mut msg = [0u8; 72];
        msg[0] = libc::AF_INET as u8;
        msg[1] = TCP_LISTEN as u8;
        msg[4..6].copy_from_slice(&8000u16.to_be_bytes());
        msg[8..12].copy_from_slice(&[10, 1, 2, 3]);
        msg[MESSAGE_QUEUES..MESSAGE_QUEUES + 4].copy_from_slice(&129u32.to_ne_bytes());
        msg[MESSAGE_QUEUES + 4..MESSAGE_QUEUES + 8].copy_from_slice(&128u32.to_ne_bytes());
        let mut header = [0u8; HEADER];
        header[0..4].copy_from_slice(&((HEADER + msg.len()) as u32).to_ne_bytes());
        header[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        datagram.extend_from_slice(&header);
        datagram.extend_from_slice(&msg);
        let mut out = Vec::new();
        assert!(matches!(parse(&datagram, &mut out).unwrap(), Parsed::More));
        let queue = Some(AcceptQueue { waiting: 129, backlog: 128 });
        assert_eq!(out, vec![Listener { addr: "10.1.2.3:8000".parse().unwrap(), queue }]);
        assert!(out[0].queue_is_full(), "129 waiting over a backlog of 128: the kernel drops new SYNs");
        let mut done = [0u8; HEADER + 4];
        done[0..4].copy_from_slice(&((HEADER + 4) as u32).to_ne_bytes());
        done[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        assert!(matches!(parse(&done, &mut out).unwrap(), Parsed::Done));
        let mut truncated = header;
        truncated[0..4].copy_from_slice(&9999u32.to_ne_bytes());
        assert!(parse(&truncated, &mut out).is_err(), "a length past the datagram is an error, not a read past it");
    }
}
