//! DNS the way the client resolves: hickory configured from the client container's own
//! resolv.conf (nameservers, search list, ndots), with no hosts file and no cache, so
//! every lookup is a fresh question to the client's nameserver.
//!
//! Build a [`ClientResolver`] *inside* the netns thread (see [`crate::netns`]): its
//! sockets open lazily at the first query, in the namespace of the thread that polls it.
//!
//! Clients resolve with their libc, and so does cordon ([`resolve_like_libc`]): the
//! container's `/etc/hosts` is consulted first (an `extra_hosts` pin wins over DNS),
//! unless its `/etc/nsswitch.conf` puts `dns` before `files`. With no nsswitch.conf (musl
//! and most minimal images) files come first.
//!
//! Deliberate differences from glibc, recorded here because they decide verdicts:
//! - `timeout:`/`attempts:` options are not honoured; every query has [`QUERY_TIMEOUT`]
//!   and [`ATTEMPTS`], so a dead nameserver costs seconds, not minutes.
//! - The search list is walked like glibc (and hickory) do: a name with at least
//!   `ndots` dots is tried as-is first, then with each search domain; fewer dots, the
//!   search domains first and the name as-is last. The first non-empty answer wins.
//!   When every candidate fails, the error of the *last* candidate is reported, so a
//!   timeout on an early candidate followed by NXDOMAIN on the last is "no records".

mod order;

pub use order::{Libc, Policy, libc_of, sort as sort_like_libc};

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use hickory_resolver::config::{LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::Name;
use hickory_resolver::{Resolver, TokioResolver};

/// Per-query timeout.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// Tries per query (per nameserver pool).
pub const ATTEMPTS: usize = 2;
/// glibc's cap on `ndots`.
const MAX_NDOTS: usize = 15;
/// How many random unknown single labels [`ClientResolver::learn_wildcard`] asks for.
pub const WILDCARD_BARE_PROBES: usize = 2;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
    #[error("unusable resolv.conf: {0}")]
    Config(String),
    #[error("{name:?} is not a valid DNS name: {detail}")]
    BadName { name: String, detail: String },
    /// No answer within the timeout from any nameserver.
    #[error("DNS lookup of {name:?} timed out (nameservers {nameservers}, {timeout:?} x {attempts})")]
    Timeout { name: String, nameservers: String, timeout: Duration, attempts: usize },
    /// SERVFAIL, REFUSED, a connection error, a malformed answer, ...
    #[error("DNS lookup of {name:?} failed (nameservers {nameservers}): {detail}")]
    Failed { name: String, nameservers: String, detail: String },
}

/// The parts of a resolv.conf that decide how a client resolves.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ResolvConf {
    /// In file order; glibc's default `127.0.0.1` when the file names none.
    pub nameservers: Vec<IpAddr>,
    /// From the last `search` or `domain` line (glibc: the last one wins).
    pub search: Vec<String>,
    /// From `options ndots:N` (default 1, capped at 15 like glibc).
    pub ndots: usize,
    /// Lines (or words) that were not understood or not valid, for evidence.
    pub ignored: Vec<String>,
}

impl ResolvConf {
    /// Parses resolv.conf text the way glibc does, leniently: unknown keywords and
    /// invalid addresses are skipped (and listed in `ignored`).
    pub fn parse(text: &str) -> ResolvConf {
        let mut nameservers = Vec::new();
        let mut search = Vec::new();
        let mut ndots = 1;
        let mut ignored = Vec::new();
        for raw in text.lines() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let mut words = line.split_whitespace();
            let keyword = words.next().unwrap_or_default();
            match keyword {
                "nameserver" => {
                    // An IPv6 zone (`fe80::1%eth0`) cannot be expressed in an IpAddr.
                    match words.next().map(|w| w.split('%').next().unwrap_or(w).parse::<IpAddr>()) {
                        Some(Ok(ip)) => nameservers.push(ip),
                        _ => ignored.push(line.to_string()),
                    }
                }
                "search" | "domain" => {
                    search = words
                        .take_while(|w| !w.starts_with('#') && !w.starts_with(';'))
                        .map(|w| w.trim_end_matches('.').to_string())
                        .filter(|w| !w.is_empty())
                        .collect();
                }
                "options" => {
                    for opt in words {
                        if let Some(n) = opt.strip_prefix("ndots:") {
                            match n.parse::<usize>() {
                                Ok(n) => ndots = n.min(MAX_NDOTS),
                                Err(_) => ignored.push(opt.to_string()),
                            }
                        } else if !is_known_option(opt) {
                            ignored.push(opt.to_string());
                        }
                    }
                }
                "sortlist" => ignored.push(line.to_string()),
                _ => ignored.push(line.to_string()),
            }
        }
        if nameservers.is_empty() {
            nameservers.push(IpAddr::from([127, 0, 0, 1]));
        }
        ResolvConf { nameservers, search, ndots, ignored }
    }

    fn nameserver_list(&self) -> String {
        self.nameservers.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
    }
}

/// Options glibc knows that do not change which names are asked (or that cordon
/// replaces with its own limits).
fn is_known_option(opt: &str) -> bool {
    let name = opt.split(':').next().unwrap_or(opt);
    matches!(
        name,
        "timeout"
            | "attempts"
            | "rotate"
            | "edns0"
            | "debug"
            | "single-request"
            | "single-request-reopen"
            | "no-tld-query"
            | "use-vc"
            | "trust-ad"
            | "no-reload"
            | "no-aaaa"
            | "inet6"
            | "ip6-bytestring"
            | "ip6-dotint"
            | "no-ip6-dotint"
            | "no-check-names"
    )
}

/// A resolver that asks what the client would ask, of whom the client would ask it.
pub struct ClientResolver {
    resolver: TokioResolver,
    conf: ResolvConf,
}

impl std::fmt::Debug for ClientResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientResolver").field("conf", &self.conf).finish_non_exhaustive()
    }
}

/// Why a wildcard probe got no verdict.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeError {
    pub text: String,
    pub timed_out: bool,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What unknown names resolve to from one client: the wildcard set W. An address in W
/// proves nothing about a provider, whatever name produced it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WildcardSet {
    /// The union of every probe's answers.
    pub addrs: BTreeSet<IpAddr>,
    /// Each probe name as asked (bare, or fully qualified with a trailing dot) and what
    /// it resolved to; empty for NXDOMAIN / no records.
    pub probes: Vec<(String, Vec<IpAddr>)>,
    /// Probes that got no verdict (timeout, SERVFAIL): W may be incomplete when this is
    /// not empty.
    pub errors: Vec<(String, ProbeError)>,
    /// Every unknown name timed out while this known name answered: the resolver has
    /// nowhere to forward unknown names (the engine's DNS on an `internal: true` network),
    /// so they resolve to nothing and W is empty. A lookup that times out then means
    /// "unknown" too.
    #[serde(default)]
    pub unknown_names_time_out: Option<String>,
}

impl WildcardSet {
    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.addrs.contains(ip)
    }

    /// Every probe got an answer (possibly empty): W is what the resolver says.
    pub fn is_complete(&self) -> bool {
        self.errors.is_empty()
    }

    /// Every probe timed out and none answered: what an `internal: true` network's DNS
    /// does with unknown names (or a dead nameserver: a known name tells them apart).
    pub fn all_timed_out(&self) -> bool {
        self.probes.is_empty() && !self.errors.is_empty() && self.errors.iter().all(|(_, e)| e.timed_out)
    }
}

impl ClientResolver {
    /// Configures hickory from resolv.conf text: its nameservers (UDP, TCP on
    /// truncation), search list and ndots; no hosts file, no cache, A and AAAA.
    pub fn from_resolv_conf(text: &str) -> Result<Self, DnsError> {
        let conf = ResolvConf::parse(text);
        let mut search = Vec::with_capacity(conf.search.len());
        for domain in &conf.search {
            let mut name =
                Name::from_ascii(domain).map_err(|e| DnsError::Config(format!("search domain {domain:?}: {e}")))?;
            name.set_fqdn(true);
            search.push(name);
        }
        let servers = conf.nameservers.iter().map(|ip| NameServerConfig::udp_and_tcp(*ip)).collect();
        let config = ResolverConfig::from_parts(None, search, servers);
        let mut opts = ResolverOpts::default();
        opts.ndots = conf.ndots;
        opts.timeout = QUERY_TIMEOUT;
        opts.attempts = ATTEMPTS;
        opts.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        opts.cache_size = 0;
        opts.positive_max_ttl = Some(Duration::ZERO);
        opts.negative_max_ttl = Some(Duration::ZERO);
        opts.use_hosts_file = ResolveHosts::Never;
        opts.preserve_intermediates = true;
        let resolver = Resolver::builder_with_config(config, TokioRuntimeProvider::default())
            .with_options(opts)
            .build()
            .map_err(|e| DnsError::Config(e.to_string()))?;
        Ok(ClientResolver { resolver, conf })
    }

    pub fn config(&self) -> &ResolvConf {
        &self.conf
    }

    /// A and AAAA for `name`, through the search list unless `name` ends with a dot.
    /// NXDOMAIN or no records is `Ok(vec![])`; timeouts and server failures are errors.
    /// Addresses come back A before AAAA, in answer order, without duplicates.
    pub async fn lookup(&self, name: &str) -> Result<Vec<IpAddr>, DnsError> {
        if let Ok(ip) = name.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        let parsed =
            Name::from_ascii(name).map_err(|e| DnsError::BadName { name: name.to_string(), detail: e.to_string() })?;
        crate::cost::NAME_LOOKUPS.add(1);
        match self.resolver.lookup_ip(parsed).await {
            Ok(found) => {
                let mut out: Vec<IpAddr> = Vec::new();
                for ip in found.iter() {
                    if !out.contains(&ip) {
                        out.push(ip);
                    }
                }
                Ok(out)
            }
            Err(e) if e.is_no_records_found() => Ok(vec![]),
            Err(hickory_resolver::net::NetError::Timeout) => Err(DnsError::Timeout {
                name: name.to_string(),
                nameservers: self.conf.nameserver_list(),
                timeout: QUERY_TIMEOUT,
                attempts: ATTEMPTS,
            }),
            Err(e) => Err(DnsError::Failed {
                name: name.to_string(),
                nameservers: self.conf.nameserver_list(),
                detail: e.to_string(),
            }),
        }
    }

    /// Learns the wildcard set W: asks for [`WILDCARD_BARE_PROBES`] random unknown
    /// single labels (`cordon-wc-<16 hex>`, walked through the search list like a bare
    /// service name) and, for each search domain `D`, a random `cordon-wc-<hex>.D.`
    /// fully qualified. Every answer goes into W; each probe's answer is kept as
    /// evidence, and probes that failed are listed in `errors`.
    pub async fn learn_wildcard(&self) -> WildcardSet {
        let mut names: Vec<String> = (0..WILDCARD_BARE_PROBES).map(|_| random_label()).collect();
        for domain in &self.conf.search {
            names.push(format!("{}.{domain}.", random_label()));
        }
        let answers = futures_util::future::join_all(names.iter().map(|n| self.lookup(n))).await;
        let mut set = WildcardSet::default();
        for (name, answer) in names.into_iter().zip(answers) {
            match answer {
                Ok(addrs) => {
                    set.addrs.extend(addrs.iter().copied());
                    set.probes.push((name, addrs));
                }
                Err(e) => set
                    .errors
                    .push((name, ProbeError { text: e.to_string(), timed_out: matches!(e, DnsError::Timeout { .. }) })),
            }
        }
        set
    }
}

/// Where an answer came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The name was an address already.
    Literal,
    /// The container's `/etc/hosts`.
    HostsFile,
    Dns,
}

/// What a name resolves to, in the order the client would try the addresses.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NameAnswer {
    pub source: AnswerSource,
    pub addrs: Vec<IpAddr>,
}

impl NameAnswer {
    /// The address a client connects to first.
    pub fn first(&self) -> Option<IpAddr> {
        self.addrs.first().copied()
    }
}

/// The addresses `/etc/hosts` gives `name` (case-insensitive, canonical name or alias),
/// in file order.
pub fn hosts_lookup(hosts: &str, name: &str) -> Vec<IpAddr> {
    let wanted = name.trim_end_matches('.');
    let mut out = Vec::new();
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(Ok(addr)) = words.next().map(|w| w.split('%').next().unwrap_or(w).parse::<IpAddr>()) else {
            continue;
        };
        if words.any(|w| w.trim_end_matches('.').eq_ignore_ascii_case(wanted)) && !out.contains(&addr) {
            out.push(addr);
        }
    }
    out
}

/// Does the `hosts:` line of nsswitch.conf consult `files` before `dns`? With no file,
/// or no `hosts:` line, files come first (musl always reads /etc/hosts first).
pub fn files_before_dns(nsswitch: Option<&str>) -> bool {
    let Some(text) = nsswitch else { return true };
    let Some(line) = text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).find(|l| l.starts_with("hosts:"))
    else {
        return true;
    };
    let sources: Vec<&str> = line["hosts:".len()..].split_whitespace().filter(|w| !w.starts_with('[')).collect();
    match (sources.iter().position(|s| *s == "files"), sources.iter().position(|s| *s == "dns")) {
        (Some(f), Some(d)) => f < d,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => true,
    }
}

/// Resolves `name` as the client's libc would: an address literal as is; otherwise the
/// hosts file and DNS in nsswitch order, the first source with an answer winning.
pub async fn resolve_like_libc(
    resolver: &ClientResolver,
    hosts: &str,
    nsswitch: Option<&str>,
    name: &str,
) -> Result<NameAnswer, DnsError> {
    if let Ok(ip) = name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(NameAnswer { source: AnswerSource::Literal, addrs: vec![ip] });
    }
    let from_files = || NameAnswer { source: AnswerSource::HostsFile, addrs: hosts_lookup(hosts, name) };
    if files_before_dns(nsswitch) {
        let files = from_files();
        if !files.addrs.is_empty() {
            return Ok(files);
        }
        return Ok(NameAnswer { source: AnswerSource::Dns, addrs: resolver.lookup(name).await? });
    }
    let dns = resolver.lookup(name).await?;
    if dns.is_empty() {
        let files = from_files();
        if !files.addrs.is_empty() {
            return Ok(files);
        }
    }
    Ok(NameAnswer { source: AnswerSource::Dns, addrs: dns })
}

/// `cordon-wc-` and 16 random hex digits: a single label no deployment defines.
pub fn random_label() -> String {
    format!("cordon-wc-{}", hex::encode(rand::random::<[u8; 8]>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_embedded_dns_conf() {
        let c = ResolvConf::parse("search demo.test\nnameserver 127.0.0.11\noptions ndots:0\n");
        assert_eq!(c.nameservers, vec![IpAddr::from([127, 0, 0, 11])]);
        assert_eq!(c.search, vec!["demo.test"]);
        assert_eq!(c.ndots, 0);
        assert!(c.ignored.is_empty(), "{:?}", c.ignored);
    }

    #[test]
    fn glibc_rules() {
        let c = ResolvConf::parse(
            "# generated\n; also a comment\ndomain first.example\nsearch a.example b.example. # trailing\n\
             nameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver not-an-ip\n\
             options timeout:1 attempts:3 ndots:99 rotate bogus-opt\nsortlist 10.0.0.0/8\n",
        );
        assert_eq!(c.search, vec!["a.example", "b.example"], "the last search/domain line wins");
        assert_eq!(c.nameservers, vec!["10.0.0.2".parse::<IpAddr>().unwrap(), "fe80::1".parse().unwrap()]);
        assert_eq!(c.ndots, 15, "capped like glibc");
        assert_eq!(c.ignored, vec!["nameserver not-an-ip", "bogus-opt", "sortlist 10.0.0.0/8"]);
    }

    #[test]
    fn defaults() {
        let c = ResolvConf::parse("");
        assert_eq!(c.nameservers, vec![IpAddr::from([127, 0, 0, 1])]);
        assert_eq!(c.ndots, 1);
        assert!(c.search.is_empty());
        let c = ResolvConf::parse("search x.example\ndomain only.example\n");
        assert_eq!(c.search, vec!["only.example"]);
    }

    #[test]
    fn hosts_file_matches_names_and_aliases() {
        let hosts =
            "127.0.0.1\tlocalhost\n10.240.1.5 native native.demo.test # pinned\n10.9.9.9 Other\n10.240.1.6 native\n";
        assert_eq!(hosts_lookup(hosts, "native"), vec![IpAddr::from([10, 240, 1, 5]), IpAddr::from([10, 240, 1, 6])]);
        assert_eq!(hosts_lookup(hosts, "NATIVE.demo.test."), vec![IpAddr::from([10, 240, 1, 5])]);
        assert_eq!(hosts_lookup(hosts, "other"), vec![IpAddr::from([10, 9, 9, 9])]);
        assert!(hosts_lookup(hosts, "pinned").is_empty(), "comments are not names");
    }

    #[test]
    fn nsswitch_order() {
        assert!(files_before_dns(None));
        assert!(files_before_dns(Some("passwd: files\nhosts: files dns\n")));
        assert!(!files_before_dns(Some("hosts: dns [!UNAVAIL=return] files\n")));
        assert!(files_before_dns(Some("hosts: files mdns4_minimal [NOTFOUND=return] dns\n")));
        assert!(!files_before_dns(Some("hosts: dns\n")));
    }

    #[tokio::test]
    async fn the_hosts_file_wins_without_asking_dns() {
        let r = ClientResolver::from_resolv_conf("nameserver 127.0.0.1\n").unwrap();
        let a = resolve_like_libc(&r, "10.1.2.3 native\n", None, "native").await.unwrap();
        assert_eq!(a, NameAnswer { source: AnswerSource::HostsFile, addrs: vec![IpAddr::from([10, 1, 2, 3])] });
        let lit = resolve_like_libc(&r, "", None, "10.0.0.7").await.unwrap();
        assert_eq!(lit.source, AnswerSource::Literal);
    }

    #[test]
    fn random_labels_are_single_fresh_labels() {
        let a = random_label();
        assert_eq!(a.len(), "cordon-wc-".len() + 16);
        assert!(!a.contains('.'));
        assert_ne!(a, random_label());
    }

    #[tokio::test]
    async fn ip_literals_and_bad_names_need_no_server() {
        // A nameserver nobody listens on: none of these may touch it.
        let r = ClientResolver::from_resolv_conf("nameserver 127.0.0.1\n").unwrap();
        assert_eq!(r.lookup("10.233.1.5").await.unwrap(), vec![IpAddr::from([10, 233, 1, 5])]);
        assert!(matches!(
            r.lookup("bad name with spaces").await,
            Err(DnsError::BadName { .. }) | Err(DnsError::Failed { .. })
        ));
        assert!(ClientResolver::from_resolv_conf("search bad..domain\n").is_err());
    }
}
