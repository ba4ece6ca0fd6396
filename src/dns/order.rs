//! The order in which a client's libc hands out the addresses of one name: RFC 6724's
//! destination address selection (RFC 3484's tables in glibc), with the container's own
//! `/etc/gai.conf`. A client's connect loop tries them in this order and stops at the
//! first that accepts, so a dual-stack provider listening on IPv6 only is reached over
//! IPv6 by a client whose IPv4 connect is refused: cordon must fall back the same way.
//!
//! Implemented: rules 1 (unusable destinations last), 2 (matching scope), 5 (matching
//! label), 6 (higher precedence), 8 (smaller scope), 9 (longest matching prefix, IPv6
//! only, as glibc does) and 10 (otherwise as answered). Rules 3, 4 and 7 (deprecated,
//! home and temporary addresses) never apply to container interfaces.

use std::net::{IpAddr, Ipv6Addr};

/// Which table the client's libc starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Libc {
    /// glibc: RFC 3484's defaults (IPv4 below every IPv6 address), replaced by
    /// `label`/`precedence` lines of `/etc/gai.conf`.
    Glibc,
    /// musl: RFC 6724's table, fixed (no gai.conf).
    Musl,
    /// A static binary or an image cordon cannot tell: RFC 6724's table.
    #[default]
    Unknown,
}

/// A prefix of the IPv6 address space (IPv4 as `::ffff:a.b.c.d`) and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    prefix: Ipv6Addr,
    len: u8,
    value: u32,
}

/// The precedence and label tables one client sorts by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    precedence: Vec<Entry>,
    label: Vec<Entry>,
}

fn entry(prefix: &str, len: u8, value: u32) -> Entry {
    Entry { prefix: prefix.parse().expect("a valid built-in prefix"), len, value }
}

impl Policy {
    /// The table `libc` starts from; for glibc, `gai_conf`'s lines replace it (each of
    /// the two tables is replaced as a whole when the file has a line for it, as glibc does).
    pub fn new(libc: Libc, gai_conf: Option<&str>) -> Policy {
        match libc {
            Libc::Glibc => {
                let mut policy = Policy {
                    precedence: vec![
                        entry("::1", 128, 50),
                        entry("::", 0, 40),
                        entry("2002::", 16, 30),
                        entry("::", 96, 20),
                        entry("::ffff:0:0", 96, 10),
                    ],
                    label: vec![
                        entry("::1", 128, 0),
                        entry("::", 0, 1),
                        entry("2002::", 16, 2),
                        entry("::", 96, 3),
                        entry("::ffff:0:0", 96, 4),
                        entry("fec0::", 10, 5),
                        entry("fc00::", 7, 6),
                        entry("2001::", 32, 7),
                    ],
                };
                if let Some(text) = gai_conf {
                    policy.apply_gai_conf(text);
                }
                policy
            }
            Libc::Musl | Libc::Unknown => Policy {
                precedence: vec![
                    entry("::1", 128, 50),
                    entry("::", 0, 40),
                    entry("::ffff:0:0", 96, 35),
                    entry("2002::", 16, 30),
                    entry("2001::", 32, 5),
                    entry("fc00::", 7, 3),
                    entry("::", 96, 1),
                    entry("fec0::", 10, 1),
                    entry("3ffe::", 16, 1),
                ],
                label: vec![
                    entry("::1", 128, 0),
                    entry("::", 0, 1),
                    entry("::ffff:0:0", 96, 4),
                    entry("2002::", 16, 2),
                    entry("2001::", 32, 5),
                    entry("fc00::", 7, 13),
                    entry("::", 96, 3),
                    entry("fec0::", 10, 11),
                    entry("3ffe::", 16, 12),
                ],
            },
        }
    }

    fn apply_gai_conf(&mut self, text: &str) {
        let mut precedence = Vec::new();
        let mut label = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let words: Vec<&str> = line.split_whitespace().collect();
            let [key, mask, value] = words[..] else { continue };
            let (Some((addr, len)), Ok(value)) = (mask.split_once('/'), value.parse::<u32>()) else { continue };
            let (Ok(prefix), Ok(len)) = (addr.parse::<Ipv6Addr>(), len.parse::<u8>()) else { continue };
            if len > 128 {
                continue;
            }
            let e = Entry { prefix, len, value };
            match key {
                "precedence" => precedence.push(e),
                "label" => label.push(e),
                _ => {}
            }
        }
        if !precedence.is_empty() {
            self.precedence = precedence;
        }
        if !label.is_empty() {
            self.label = label;
        }
    }

    fn lookup(table: &[Entry], ip: IpAddr) -> u32 {
        let v6 = as_v6(ip);
        table
            .iter()
            .filter(|e| common_prefix(v6, e.prefix) >= u32::from(e.len))
            .max_by_key(|e| e.len)
            .map_or(0, |e| e.value)
    }

    fn precedence(&self, ip: IpAddr) -> u32 {
        Self::lookup(&self.precedence, ip)
    }

    fn label(&self, ip: IpAddr) -> u32 {
        Self::lookup(&self.label, ip)
    }
}

fn as_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

fn common_prefix(a: Ipv6Addr, b: Ipv6Addr) -> u32 {
    (u128::from(a) ^ u128::from(b)).leading_zeros()
}

/// RFC 6724 scopes: link-local 2, site-local 5, global 14 (IPv4 loopback and
/// 169.254/16 are link-local; every other IPv4 address, private ones included, global).
fn scope(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(a) if a.is_loopback() || a.is_link_local() => 2,
        IpAddr::V4(_) => 14,
        IpAddr::V6(a) if a.is_multicast() => a.segments()[0].to_be_bytes()[1] & 0x0f,
        IpAddr::V6(a) if a.is_loopback() || (a.segments()[0] & 0xffc0) == 0xfe80 => 2,
        IpAddr::V6(a) if (a.segments()[0] & 0xffc0) == 0xfec0 => 5,
        IpAddr::V6(_) => 14,
    }
}

/// The address the kernel would send from to `dest`: one of the namespace's own of the
/// same family, in the same subnet if there is one (a Docker network's interface), else
/// one of the same scope, else any. `None`: the family is unusable from here.
pub fn source_for(dest: IpAddr, sources: &[(IpAddr, u8)]) -> Option<IpAddr> {
    let same_family: Vec<&(IpAddr, u8)> = sources
        .iter()
        .filter(|(s, _)| s.is_ipv4() == dest.is_ipv4())
        .filter(|(s, _)| dest.is_loopback() || !s.is_loopback())
        .collect();
    let on_link = same_family.iter().find(|(s, len)| common_prefix(as_v6(*s), as_v6(dest)) >= prefix_v6(*s, *len));
    let same_scope = same_family.iter().find(|(s, _)| scope(*s) == scope(dest));
    on_link.or(same_scope).or(same_family.first()).map(|(s, _)| *s)
}

fn prefix_v6(ip: IpAddr, len: u8) -> u32 {
    if ip.is_ipv4() { 96 + u32::from(len.min(32)) } else { u32::from(len.min(128)) }
}

/// `addrs` in the order the client's libc returns them: the first is what a client
/// connects to first, the rest are what its connect loop falls back to.
pub fn sort(addrs: &[IpAddr], sources: &[(IpAddr, u8)], policy: &Policy) -> Vec<IpAddr> {
    let mut keyed: Vec<(usize, IpAddr, Option<IpAddr>)> =
        addrs.iter().enumerate().map(|(i, a)| (i, *a, source_for(*a, sources))).collect();
    keyed.sort_by(|(ia, a, sa), (ib, b, sb)| {
        use std::cmp::Ordering;
        // Rule 1: avoid unusable destinations.
        let usable = sb.is_some().cmp(&sa.is_some());
        if usable != Ordering::Equal {
            return usable;
        }
        let (Some(sa), Some(sb)) = (sa, sb) else { return ia.cmp(ib) };
        // Rule 2: prefer matching scope.
        let matching = |d: &IpAddr, s: &IpAddr| scope(*d) == scope(*s);
        let rule2 = matching(b, sb).cmp(&matching(a, sa));
        // Rule 5: prefer matching label.
        let labelled = |d: &IpAddr, s: &IpAddr| policy.label(*d) == policy.label(*s);
        let rule5 = labelled(b, sb).cmp(&labelled(a, sa));
        // Rule 6: prefer higher precedence.
        let rule6 = policy.precedence(*b).cmp(&policy.precedence(*a));
        // Rule 8: prefer smaller scope.
        let rule8 = scope(*a).cmp(&scope(*b));
        // Rule 9: longest matching prefix, between IPv6 destinations only.
        let rule9 = if a.is_ipv6() && b.is_ipv6() {
            common_prefix(as_v6(*b), as_v6(*sb)).cmp(&common_prefix(as_v6(*a), as_v6(*sa)))
        } else {
            Ordering::Equal
        };
        rule2.then(rule5).then(rule6).then(rule8).then(rule9).then(ia.cmp(ib))
    });
    keyed.into_iter().map(|(_, a, _)| a).collect()
}

/// What a container's root says of its libc: musl's loader, glibc's, or neither (a
/// static binary).
pub fn libc_of(has_file: impl Fn(&str) -> bool) -> Libc {
    if ["lib/ld-musl-x86_64.so.1", "lib/ld-musl-aarch64.so.1"].iter().any(|p| has_file(p)) {
        Libc::Musl
    } else if ["lib64/ld-linux-x86-64.so.2", "lib/ld-linux-aarch64.so.1", "lib/x86_64-linux-gnu/libc.so.6"]
        .iter()
        .any(|p| has_file(p))
    {
        Libc::Glibc
    } else {
        Libc::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A container on one dual-stack Docker network.
    fn dual_stack(v6: &str) -> Vec<(IpAddr, u8)> {
        vec![
            (ip("127.0.0.1"), 8),
            (ip("::1"), 128),
            (ip("10.77.1.3"), 24),
            (ip(v6), 64),
            (ip("fe80::42:aff:fe4d:103"), 64),
        ]
    }

    #[rstest]
    // Unique-local IPv6 (what Docker users pick): glibc's RFC 3484 table ranks every IPv6
    // address above IPv4; musl's RFC 6724 table ranks ULA below IPv4.
    #[case::glibc_ula(Libc::Glibc, None, "fd00:77:1::5", "fd00:77:1::3", "fd00:77:1::5")]
    #[case::musl_ula(Libc::Musl, None, "fd00:77:1::5", "fd00:77:1::3", "10.77.1.5")]
    #[case::static_ula(Libc::Unknown, None, "fd00:77:1::5", "fd00:77:1::3", "10.77.1.5")]
    // Global IPv6: both prefer it.
    #[case::musl_global(Libc::Musl, None, "2001:db8:77::5", "2001:db8:77::3", "2001:db8:77::5")]
    #[case::glibc_global(Libc::Glibc, None, "2001:db8:77::5", "2001:db8:77::3", "2001:db8:77::5")]
    // Debian's documented line to prefer IPv4.
    #[case::gai_conf_prefers_ipv4(
        Libc::Glibc,
        Some("# prefer IPv4\nprecedence ::ffff:0:0/96  100\n"),
        "fd00:77:1::5",
        "fd00:77:1::3",
        "10.77.1.5"
    )]
    fn the_first_address_is_the_libc_s(
        #[case] libc: Libc,
        #[case] gai: Option<&str>,
        #[case] dest_v6: &str,
        #[case] own_v6: &str,
        #[case] first: &str,
    ) {
        let policy = Policy::new(libc, gai);
        let sorted = sort(&[ip("10.77.1.5"), ip(dest_v6)], &dual_stack(own_v6), &policy);
        assert_eq!(sorted[0], ip(first), "{sorted:?}");
        assert_eq!(sorted.len(), 2);
    }

    #[test]
    fn a_family_the_namespace_has_no_address_of_goes_last() {
        let v4_only = vec![(ip("127.0.0.1"), 8), (ip("10.77.1.3"), 24)];
        let policy = Policy::new(Libc::Glibc, None);
        assert_eq!(sort(&[ip("fd00::5"), ip("10.77.1.5")], &v4_only, &policy), vec![ip("10.77.1.5"), ip("fd00::5")]);
    }

    #[test]
    fn answers_of_one_family_keep_their_order_but_for_the_longest_ipv6_match() {
        let policy = Policy::new(Libc::Musl, None);
        let sources = dual_stack("2001:db8:77::3");
        assert_eq!(
            sort(&[ip("10.77.1.9"), ip("10.77.2.9")], &sources, &policy),
            vec![ip("10.77.1.9"), ip("10.77.2.9")],
            "rule 9 does not reorder IPv4 (DNS round robin survives)"
        );
        assert_eq!(
            sort(&[ip("2001:db9::9"), ip("2001:db8:77::9")], &sources, &policy),
            vec![ip("2001:db8:77::9"), ip("2001:db9::9")]
        );
    }

    #[test]
    fn libc_is_told_by_its_loader() {
        assert_eq!(libc_of(|p| p == "lib/ld-musl-x86_64.so.1"), Libc::Musl);
        assert_eq!(libc_of(|p| p == "lib64/ld-linux-x86-64.so.2"), Libc::Glibc);
        assert_eq!(libc_of(|_| false), Libc::Unknown);
    }
}
