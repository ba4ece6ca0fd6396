//! A credential presented at a listener, and the same requests without it: whether the
//! listener honoured it. Used wherever a credential must be dead (`disabled::`) or must
//! reach nothing outside its provider (`reach::`, at containers outside the deployment).

use std::collections::BTreeSet;

use futures_util::future::join_all;
use serde::{Deserialize, Serialize};

use super::door::Door;
use super::sessions::{ErrorSeen, Try};
use super::vantage::pinned;
use crate::config::Provider;
use crate::mcp::{Ask, Endpoint, EntryPoint, Exchange, Limits, McpClient};
use crate::secret::Secret;

/// Query parameters servers and proxies read a token from. A credential there lands in
/// every proxy's access log; the platform allows credentials in authenticated headers only.
pub const QUERY_CREDENTIAL_PARAMS: [&str; 3] = ["access_token", "token", "api_key"];

/// A credential at one listener: what came back with it (MCP asks at the
/// endpoint's path, an SSE GET there and at `/sse`), and the same POSTs without it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Presented {
    pub door: Door,
    pub with: Vec<Try>,
    pub without: Vec<Try>,
}

/// The credential at every listener of `doors`, each also asked without it.
pub async fn credential_at(doors: Vec<Door>, provider: &Provider, secret: Secret, limits: &Limits) -> Vec<Presented> {
    // Listeners that speak no HTTP (a database, a DNS server) must not hold the look for
    // long; what does not answer in time is recorded, not judged.
    let short = std::time::Duration::from_secs(2);
    let quick = Limits {
        exchange_timeout: limits.exchange_timeout.min(short),
        read_timeout: limits.read_timeout.min(short),
        ..limits.clone()
    };
    join_all(doors.into_iter().map(|door| present(door, provider, secret.clone(), quick.clone()))).await
}

/// Presents the credential at one listener, and asks the same without it: a listener that
/// turns the request away without the credential but not with it has accepted it, even
/// where the path or the transport is not the disabled endpoint's.
async fn present(door: Door, provider: &Provider, secret: Secret, limits: Limits) -> Presented {
    let at = pinned(provider, door.addr.ip()).at_port(door.addr.port());
    let mut legacy = at.clone();
    legacy.url.set_path("/sse");
    let posts = [
        Ask::new(EntryPoint::Initialize),
        Ask::new(EntryPoint::Discover).modern(),
        Ask::new(EntryPoint::ToolsList).modern(),
    ];
    let sse = [Ask::new(EntryPoint::SseGet)];
    let mut plan: Vec<(Endpoint, Option<Secret>, &[Ask])> = vec![
        (at.clone(), Some(secret.clone()), &posts),
        (at.clone(), Some(secret.clone()), &sse),
        (at.clone(), None, &posts),
    ];
    if legacy.url != at.url {
        plan.push((legacy, Some(secret), &sse));
    }
    let none = BTreeSet::new();
    let runs = join_all(plan.into_iter().map(|(endpoint, bearer, asks)| {
        let presented = bearer.is_some();
        let client = McpClient::new(endpoint, bearer, limits.clone());
        let none = &none;
        async move {
            let Ok(client) = client else { return (presented, vec![]) };
            let tries = join_all(asks.iter().map(|ask| async {
                Try { ask: ask.clone(), outcome: client.exchange(ask, none).await.map_err(|e| ErrorSeen::from(&e)) }
            }))
            .await;
            (presented, tries)
        }
    }))
    .await;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for (presented, tries) in runs {
        if presented { with.extend(tries) } else { without.extend(tries) }
    }
    Presented { door, with, without }
}

/// The credential was honoured: a result, a session, or an inventory.
fn grants(e: &Exchange) -> bool {
    e.body.has_result()
        || e.body.endpoint_event
        || e.body.inventory
        || ((200..300).contains(&e.status) && e.session_id.is_some())
}

/// A status a server gives only to a request it let through authentication: a redirect, or
/// a client error other than a refusal (401, 403), a proxy's (407) or a rate limit (429).
fn past_authentication(status: u16) -> bool {
    (300..400).contains(&status) || ((400..500).contains(&status) && !matches!(status, 401 | 403 | 407 | 429))
}

/// How a listener honoured a credential.
#[derive(Clone, Debug, PartialEq)]
pub enum How {
    /// A JSON-RPC result (an inventory, an endpoint event) came back.
    Result,
    /// A session was opened.
    Session,
    /// Turned away without it (401, 403), let past authentication with it.
    PastAuthentication { status_without: u16 },
}

pub struct Honoured {
    pub exchange: Exchange,
    pub how: How,
}

/// Whether the listener honoured the credential, and the exchange that shows it.
pub fn honoured(p: &Presented) -> Option<Honoured> {
    let ok = |t: &Try| t.outcome.as_ref().ok().cloned();
    if let Some(e) = p.with.iter().filter_map(ok).find(grants) {
        let how = if e.body.has_result() { How::Result } else { How::Session };
        return Some(Honoured { exchange: e, how });
    }
    p.with.iter().filter_map(ok).find_map(|e| {
        let before = p.without.iter().filter(|t| t.ask == e.ask).find_map(ok)?;
        (matches!(before.status, 401 | 403) && past_authentication(e.status))
            .then_some(Honoured { exchange: e, how: How::PastAuthentication { status_without: before.status } })
    })
}

/// The listener grants as much without any credential: it is open, so honouring this one
/// says nothing of whose it is.
pub fn open_without(p: &Presented) -> bool {
    p.without.iter().filter_map(|t| t.outcome.as_ref().ok()).any(grants)
}
