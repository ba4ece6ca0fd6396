//! What a container's own kernel view says, read through `/proc/<pid>` from the host:
//! its listening sockets (by sock_diag in the namespace of `pid`, or `net/tcp`, `net/tcp6`),
//! its default gateways (`net/route`), and its resolver files inside its root.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::listener::Listener;
use crate::fsutil::{self, ReadError};

/// resolv.conf, hosts and nsswitch.conf are small; anything bigger is not a real one.
pub const RESOLVER_FILE_CAP: u64 = 256 * 1024;
/// `/proc/<pid>/net/tcp` grows with sockets; a few MiB is thousands of them.
const PROC_NET_CAP: u64 = 8 * 1024 * 1024;

fn read_proc(path: &str) -> Result<String, ReadError> {
    crate::cost::PROC_READS.add(1);
    // procfs files report size 0; the regular-file rule and the cap still hold.
    fsutil::read_regular_text(std::path::Path::new(path), PROC_NET_CAP)
}

/// How long process `pid` has run: its start time in `/proc/<pid>/stat` (clock ticks
/// since boot) against `/proc/uptime`. None when it is gone or unreadable.
pub fn process_age(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    age_from(&stat, &uptime, u64::try_from(ticks).ok()?)
}

/// Pure part of [`process_age`]. The command name (field 2) may hold spaces and parens:
/// fields are counted after its last `)`; the start time is field 22.
pub fn age_from(stat: &str, uptime: &str, ticks_per_second: u64) -> Option<std::time::Duration> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let start_ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let up: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    let started = start_ticks as f64 / ticks_per_second.max(1) as f64;
    Some(std::time::Duration::from_secs_f64((up - started).max(0.0)))
}

/// Every TCP listener in the network namespace of `pid`, IPv4 and IPv6, sorted: by a
/// sock_diag dump (see [`super::sockdiag`] for why), or from `/proc/<pid>/net/tcp*` where
/// cordon may not make a socket in that namespace.
pub fn listeners(pid: u32) -> Result<Vec<Listener>, ReadError> {
    match super::sockdiag::listeners(pid) {
        Ok(found) => Ok(found),
        Err(_) => listeners_from_proc_text(pid),
    }
}

/// The same from `/proc/<pid>/net/tcp` and `tcp6`.
pub fn listeners_from_proc_text(pid: u32) -> Result<Vec<Listener>, ReadError> {
    let mut out = parse_tcp_table(&read_proc(&format!("/proc/{pid}/net/tcp"))?);
    // A kernel without IPv6 has no tcp6 table: that is not an error.
    if let Ok(text) = read_proc(&format!("/proc/{pid}/net/tcp6")) {
        out.extend(parse_tcp_table(&text));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Parses `/proc/net/tcp` or `tcp6`: the LISTEN rows (state `0A`).
pub fn parse_tcp_table(text: &str) -> Vec<Listener> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut cols = line.split_whitespace();
            let local = cols.nth(1)?;
            let state = cols.nth(1)?;
            if state != "0A" {
                return None;
            }
            let (ip, port) = local.split_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            Some(Listener::at(SocketAddr::new(parse_proc_ip(ip)?, port)))
        })
        .collect()
}

/// The kernel prints addresses as 32-bit words in host (little-endian) order.
fn parse_proc_ip(hex: &str) -> Option<IpAddr> {
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(hex, 16).ok()?.swap_bytes()))),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, word) in (0..4).map(|i| &hex[i * 8..i * 8 + 8]).enumerate() {
                let w = u32::from_str_radix(word, 16).ok()?.swap_bytes();
                bytes[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
            }
            let v6 = Ipv6Addr::from(bytes);
            Some(v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)))
        }
        _ => None,
    }
}

/// IPv6 addresses still in duplicate address detection (`IFA_F_TENTATIVE`) in the
/// network namespace of `pid`, with their interface. A tentative address neither sends
/// nor answers neighbour discovery: right after a network is created its bridge's
/// gateway address is tentative for a second or two, and every IPv6 connect routed
/// through it fails as if the path were closed.
pub fn tentative_ipv6(pid: u32) -> Result<Vec<(Ipv6Addr, String)>, ReadError> {
    Ok(parse_if_inet6_tentative(&read_proc(&format!("/proc/{pid}/net/if_inet6"))?))
}

/// `if_inet6` rows are `address ifindex prefixlen scope flags name`, all hex but the name.
pub fn parse_if_inet6_tentative(text: &str) -> Vec<(Ipv6Addr, String)> {
    const IFA_F_TENTATIVE: u32 = 0x40;
    text.lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (addr, flags, name) = (cols.first()?, cols.get(4)?, cols.get(5)?);
            let flags = u32::from_str_radix(flags, 16).ok()?;
            let addr = Ipv6Addr::from(u128::from_str_radix(addr, 16).ok()?);
            (flags & IFA_F_TENTATIVE != 0).then(|| (addr, name.to_string()))
        })
        .collect()
}

/// The IPv4 gateways of the default routes in the network namespace of `pid`.
pub fn default_gateways(pid: u32) -> Result<Vec<IpAddr>, ReadError> {
    Ok(parse_route_table(&read_proc(&format!("/proc/{pid}/net/route"))?))
}

pub fn parse_route_table(text: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (destination, gateway) = (cols.get(1)?, cols.get(2)?);
            if *destination != "00000000" || *gateway == "00000000" {
                return None;
            }
            parse_proc_ip(gateway)
        })
        .collect();
    out.dedup();
    out
}

/// The files that decide how a process resolves names, read inside its root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolverFiles {
    pub resolv_conf: String,
    /// Empty when the container has no `/etc/hosts`.
    pub hosts: String,
    /// `None` when there is no `/etc/nsswitch.conf` (musl and static images).
    pub nsswitch: Option<String>,
    /// `/etc/gai.conf` (glibc's address order), when there is one.
    pub gai_conf: Option<String>,
    /// Which libc the container's root carries: it decides the address order.
    pub libc: crate::dns::Libc,
}

pub fn resolver_files(pid: u32) -> Result<ResolverFiles, ReadError> {
    let optional = |path: &str| match fsutil::read_in_root(pid, path, RESOLVER_FILE_CAP) {
        Ok(text) => Ok(Some(text)),
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    };
    let exists = |path: &str| fsutil::exists_in_root(pid, path);
    Ok(ResolverFiles {
        resolv_conf: optional("etc/resolv.conf")?.unwrap_or_default(),
        hosts: optional("etc/hosts")?.unwrap_or_default(),
        nsswitch: optional("etc/nsswitch.conf")?,
        gai_conf: optional("etc/gai.conf")?,
        libc: crate::dns::libc_of(exists),
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn tentative_ipv6_addresses_are_the_ones_with_the_dad_flag() {
        // As read on the host right after `docker-compose up` of a dual-stack network.
        let text = "\
00000000000000000000000000000001 01 80 10 80       lo
fdcd0010022600010000000000000001 4898 40 00 c0 br-155a221d3fb1
fdcd0010022600060000000000000001 489c 40 00 80 br-fffdcd314229
fdcd0010022600060000000000000003 48b9 40 00 82     eth0
";
        assert_eq!(
            super::parse_if_inet6_tentative(text),
            vec![("fdcd:10:226:1::1".parse().unwrap(), "br-155a221d3fb1".to_string())]
        );
    }

    #[test]
    fn a_process_age_counts_fields_after_the_name() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 1000 0 0";
        assert_eq!(age_from(stat, "15.00 3.00", 100), Some(std::time::Duration::from_secs(5)));
        assert_eq!(age_from("garbage", "15.00 3.00", 100), None);
        assert!(process_age(std::process::id()).is_some());
        assert!(process_age(u32::MAX - 7).is_none());
    }

    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0301F00A:1F40 0501F00A:D2F0 01 00000000:00000000 00:00000000 00000000 65534        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0501F00A:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 4 1 0000000000000000 100 0 0 10 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000
   1: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000
   2: 0000000000000000FFFF00000501F00A:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000
";

    #[test]
    fn listen_rows_of_tcp_and_tcp6() {
        let v4: Vec<String> = parse_tcp_table(TCP).iter().map(|l| l.to_string()).collect();
        assert_eq!(v4, ["0.0.0.0:8000", "127.0.0.1:3306", "10.240.1.5:3000"]);
        let v6: Vec<String> = parse_tcp_table(TCP6).iter().map(|l| l.to_string()).collect();
        assert_eq!(v6, ["[::]:8080", "[::1]:80", "10.240.1.5:443"]);
    }

    #[test]
    fn which_addresses_a_listener_accepts() {
        let l = |s: &str| Listener::at(s.parse().unwrap());
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(l("0.0.0.0:80").accepts_on(ip("10.0.0.2")));
        assert!(l("[::]:80").accepts_on(ip("10.0.0.2")));
        assert!(l("10.0.0.2:80").accepts_on(ip("10.0.0.2")));
        assert!(!l("10.0.0.2:80").accepts_on(ip("10.0.1.2")));
        assert!(!l("127.0.0.1:80").accepts_on(ip("10.0.0.2")));
    }

    #[test]
    fn default_route_gateway() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n\
                     eth0\t00000000\t0100F00A\t0003\t0\t0\t0\t00000000\n\
                     eth0\t0000F00A\t00000000\t0001\t0\t0\t0\t00FFFFFF\n";
        assert_eq!(parse_route_table(table), vec!["10.240.0.1".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn our_own_listeners_are_visible() {
        let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = sock.local_addr().unwrap().port();
        let found = listeners(std::process::id()).unwrap();
        assert!(found.iter().any(|l| l.addr.port() == port && l.is_loopback()), "{found:?}");
    }
}
