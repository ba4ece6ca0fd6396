//! A login through the real OpenID Connect authorization-code flow, as a browser would
//! do it: Open WebUI's login path → the identity provider's `/authorize` (which approves
//! the test user at once) → Open WebUI's callback, which sets the `token` cookie. A
//! cookie jar per host; redirects are followed by hand, and only between Open WebUI and
//! the identity provider. Names are resolved with the namespace's own resolver.
//!
//! The groups claim is set through the fixture identity provider's control endpoint.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use reqwest::Method;
use url::Url;

use super::api::{Api, Token};
use crate::apps::webapp::{exchange, http_client};
use crate::mcp::Limits;
use crate::netns::NsView;
use crate::secret::Secret;

const MAX_HOPS: usize = 10;

/// One hop of the login, for evidence: method, host, path and status (no query: it holds
/// the state, the nonce and the code).
pub type Hop = String;

pub struct Login<'a> {
    pub view: &'a NsView,
    pub api: &'a Api,
    pub login_path: &'a str,
    pub idp: &'a Idp,
    pub limits: &'a Limits,
}

fn origin(url: &Url) -> String {
    format!("{}:{}", url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(80))
}

/// The identity provider as Open WebUI's namespace sees it: its control URL, and every
/// address that URL's host resolves to there (the host itself when it is an address).
#[derive(Clone, Debug)]
pub struct Idp {
    pub control: Url,
    pub addrs: Vec<IpAddr>,
}

impl Idp {
    pub async fn locate(view: &NsView, control: &Url) -> Result<Idp, String> {
        let addrs = resolve(view, control).await?;
        Ok(Idp { control: control.clone(), addrs })
    }

    pub(super) fn port(&self) -> u16 {
        self.control.port_or_known_default().unwrap_or(80)
    }

    fn describe(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(IpAddr::to_string).collect();
        format!("{} at [{}]", origin(&self.control), addrs.join(", "))
    }
}

/// Who a hop of the login goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Party {
    OpenWebui,
    Idp,
    Elsewhere,
}

/// Pure: `url` (whose host resolved to `addrs`) is Open WebUI when it is Open WebUI's own
/// origin as cordon reaches it, the identity provider when it shares an address and the
/// port with it, anything else otherwise.
pub fn party(url: &Url, addrs: &[IpAddr], webui: &Url, idp: &Idp) -> Party {
    if origin(url) == origin(webui) {
        Party::OpenWebui
    } else if url.port_or_known_default() == Some(idp.port()) && addrs.iter().any(|a| idp.addrs.contains(a)) {
        Party::Idp
    } else {
        Party::Elsewhere
    }
}

/// The addresses `url`'s host stands for in this namespace: itself when it is one, else
/// what the namespace's libc would answer.
pub(super) async fn resolve(view: &NsView, url: &Url) -> Result<Vec<IpAddr>, String> {
    match url.host() {
        Some(url::Host::Ipv4(a)) => Ok(vec![IpAddr::V4(a)]),
        Some(url::Host::Ipv6(a)) => Ok(vec![IpAddr::V6(a)]),
        Some(url::Host::Domain(name)) => {
            let answer = view.resolve(name).await.map_err(|e| format!("cannot resolve {name}: {e}"))?;
            if answer.addrs.is_empty() {
                return Err(format!("{name} resolves to nothing"));
            }
            Ok(answer.addrs)
        }
        None => Err(format!("{url} has no host")),
    }
}

/// A client that sends `url`'s host name (if it has one) to `addr`: names are resolved
/// here, in the namespace, never by reqwest.
pub(super) fn pinned_client(limits: &Limits, url: &Url, addr: IpAddr) -> Result<reqwest::Client, String> {
    match url.domain() {
        Some(host) => {
            http_client(limits, Some((host, SocketAddr::new(addr, url.port_or_known_default().unwrap_or(80)))))
        }
        None => http_client(limits, None),
    }
}

impl Login<'_> {
    /// Logs `email` in; returns the session token (registered for redaction) and the hops.
    /// With a `password`, a login form the identity provider shows is filled in and sent
    /// (Keycloak); without, the provider approves the user it is hinted at (the fixture).
    pub async fn login(&self, who: &str, email: &str, password: Option<&Secret>) -> (Result<Token, String>, Vec<Hop>) {
        let mut hops = Vec::new();
        let result = self.run(who, email, password, &mut hops).await;
        (result, hops)
    }

    async fn run(
        &self,
        who: &str,
        email: &str,
        password: Option<&Secret>,
        hops: &mut Vec<Hop>,
    ) -> Result<Token, String> {
        let mut jar: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut url = self.api.base().join(self.login_path).map_err(|e| format!("login path: {e}"))?;
        let mut form: Option<String> = None;
        let mut forms_sent = 0;
        for _ in 0..MAX_HOPS {
            let host = origin(&url);
            let addrs = resolve(self.view, &url).await?;
            let to = party(&url, &addrs, self.api.base(), self.idp);
            let addr = match to {
                Party::OpenWebui => addrs[0],
                Party::Idp => *addrs.iter().find(|a| self.idp.addrs.contains(a)).expect("shares an address"),
                Party::Elsewhere => {
                    let shown: Vec<String> = addrs.iter().map(IpAddr::to_string).collect();
                    return Err(format!(
                        "the login went to {host}, which resolves from Open WebUI to [{}]: neither Open WebUI ({}) nor the identity provider ({})",
                        shown.join(", "),
                        origin(self.api.base()),
                        self.idp.describe()
                    ));
                }
            };
            if to == Party::Idp && form.is_none() && url.path().ends_with("/authorize") {
                // The fixture approves the user it is hinted at: a browser would have logged
                // in as that user. (A real provider takes it as a prefilled user name.)
                url.query_pairs_mut().append_pair("login_hint", email);
            }
            let method = if form.is_some() { Method::POST } else { Method::GET };
            let client = pinned_client(self.limits, &url, addr)?;
            let mut request = client.request(method.clone(), url.clone());
            if let Some(cookies) = jar.get(&host).filter(|c| !c.is_empty()) {
                let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", header.join("; "));
            }
            if let Some(body) = form.take() {
                request = request.header("content-type", "application/x-www-form-urlencoded").body(body);
            }
            let answer = exchange(request, &method, url.path(), self.limits).await.map_err(|e| e.to_string())?;
            hops.push(format!("{method} {host}{} → {}", url.path(), answer.status));
            for cookie in &answer.set_cookies {
                if let Some((name, value)) = cookie.split(';').next().and_then(|nv| nv.split_once('=')) {
                    jar.entry(host.clone()).or_default().insert(name.trim().to_string(), value.trim().to_string());
                }
            }
            if let Some(token) =
                jar.get(&origin(self.api.base())).and_then(|c| c.get("token")).filter(|t| !t.is_empty())
            {
                return Ok(self.api.token(who, token));
            }
            if let (Party::Idp, 200, Some(password)) = (to, answer.status, password) {
                let page = String::from_utf8_lossy(&answer.body);
                match super::login_form::login_form(&page) {
                    Some(f) if forms_sent == 0 => {
                        forms_sent += 1;
                        let action = url.join(&f.action).map_err(|e| format!("a login form posting nowhere: {e}"))?;
                        form = Some(f.filled(email, password.expose()));
                        url = action;
                        continue;
                    }
                    Some(_) => {
                        return Err(format!(
                            "the identity provider showed its login form again after cordon sent the test user's password ({host}{}): {}",
                            url.path(),
                            super::login_form::page_message(&page)
                        ));
                    }
                    None => {}
                }
            }
            let Some(location) = answer.location.clone().filter(|_| (300..400).contains(&answer.status)) else {
                return Err(format!(
                    "the login stopped at {host}{} with {}: {}",
                    url.path(),
                    answer.status,
                    answer.detail()
                ));
            };
            let next = url.join(&location).map_err(|e| format!("a redirect to an unreadable location: {e}"))?;
            if let Some((_, error)) = next.query_pairs().find(|(k, _)| k == "error") {
                return Err(format!("Open WebUI refused the login: {}", crate::text::sanitize(&error)));
            }
            url = next;
        }
        Err(format!("the login did not finish within {MAX_HOPS} steps"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idp(control: &str, addrs: &[&str]) -> Idp {
        Idp { control: Url::parse(control).unwrap(), addrs: addrs.iter().map(|a| a.parse().unwrap()).collect() }
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn the_identity_provider_is_told_by_address_not_by_name() {
        let webui = Url::parse("http://127.0.0.1:8080").unwrap();
        let u = |s: &str| Url::parse(s).unwrap();
        let by_name = idp("http://idp:9000/control", &["10.0.0.9"]);
        let by_address = idp("http://10.0.0.9:9000/control", &["10.0.0.9"]);
        let cases = [
            // The issuer by address, cordon's control URL by name, and the other way round.
            (&by_name, "http://10.0.0.9:9000/authorize", ips(&["10.0.0.9"]), Party::Idp),
            (&by_address, "http://idp:9000/authorize", ips(&["10.0.0.9"]), Party::Idp),
            (&by_address, "http://10.0.0.9:9000/authorize", ips(&["10.0.0.9"]), Party::Idp),
            (&by_name, "http://sso.example:9000/authorize", ips(&["10.0.0.7", "10.0.0.9"]), Party::Idp),
            (&by_name, "http://127.0.0.1:8080/oauth/oidc/callback", ips(&["127.0.0.1"]), Party::OpenWebui),
            // Same address, another port; another address on the port; a look-alike name.
            (&by_name, "http://10.0.0.9:9001/authorize", ips(&["10.0.0.9"]), Party::Elsewhere),
            (&by_name, "http://10.0.0.8:9000/authorize", ips(&["10.0.0.8"]), Party::Elsewhere),
            (&by_name, "http://idp.evil:9000/authorize", ips(&["10.6.6.6"]), Party::Elsewhere),
        ];
        for (idp, url, addrs, expected) in cases {
            assert_eq!(party(&u(url), &addrs, &webui, idp), expected, "{url} for {}", idp.control);
        }
    }
}
