//! `contract::<provider>::{anonymous,wrong_bearer,foreign_bearer}`: a bearer the provider
//! must not honour is refused a session on every entry point, and learns no tool names.

use futures_util::future::BoxFuture;

use super::contract::{excerpt, open_session};
use super::{attempt_from_error, with_provider_endpoint};
use crate::config::{Provider, Refusal};
use crate::mcp::{Endpoint, EntryPoint, Limits, McpClient, RawAnswer, Transport};
use crate::model::Attempt;
use crate::runner::{Probe, RunContext};
use crate::secret::Secret;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearer {
    Anonymous,
    Wrong,
    /// Another provider's valid credential.
    Foreign,
}

impl Bearer {
    pub fn aspect(self) -> &'static str {
        match self {
            Bearer::Anonymous => "anonymous",
            Bearer::Wrong => "wrong_bearer",
            Bearer::Foreign => "foreign_bearer",
        }
    }
}

pub struct RefusalCheck {
    pub provider: String,
    pub bearer: Bearer,
}

pub fn entry_points(transport: Transport) -> &'static [EntryPoint] {
    match transport {
        Transport::StreamableHttp => {
            &[EntryPoint::Initialize, EntryPoint::Discover, EntryPoint::ToolsList, EntryPoint::SseGet]
        }
        Transport::Sse => &[EntryPoint::SseGet, EntryPoint::MessagePost],
    }
}

impl Probe for RefusalCheck {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let provider = ctx.scenario.provider(&self.provider).expect("planned from the scenario").clone();
            let bearer = match self.bearer_for(ctx, &provider) {
                Ok(b) => b,
                Err(attempt) => return attempt,
            };
            let valid = ctx.scenario.secret(&provider.credential).clone();
            let limits = ctx.suite.limits.clone();
            let kind = self.bearer;
            with_provider_endpoint(ctx, &provider.clone(), move |endpoint, evidence| {
                refuse_everywhere(provider, endpoint, kind, bearer, valid, limits, evidence)
            })
            .await
        })
    }
}

/// Presents `bearer` at every entry point of the transport; any answer that is not a
/// refusal fails the check.
async fn refuse_everywhere(
    provider: Provider,
    endpoint: Endpoint,
    kind: Bearer,
    bearer: Option<Secret>,
    valid: Secret,
    limits: Limits,
    mut evidence: Vec<String>,
) -> Attempt {
    evidence.push(format!("endpoint: {}", provider.url));
    evidence.push(format!("bearer: {}", describe(kind, bearer.as_ref())));
    // Legacy SSE hands out its POST URL only on a stream; borrow one from a valid
    // session, kept open while the bearer is tried, so the wrong bearer meets the POST
    // endpoint of a live session.
    let borrowed = if provider.transport == Transport::Sse {
        match open_session(endpoint.clone(), valid, limits.clone(), vec![]).await {
            Ok((client, session, _)) => Some((client, session)),
            Err(attempt) => return attempt,
        }
    } else {
        None
    };
    let message_url = borrowed.as_ref().and_then(|(_, session)| session.message_url.clone());
    let client = match McpClient::new(endpoint, bearer, limits) {
        Ok(c) => c,
        Err(e) => return attempt_from_error("cannot build the HTTP client", &e, evidence),
    };
    let mut failures = Vec::new();
    let mut not_ready = Vec::new();
    for &entry in entry_points(provider.transport) {
        match client.raw_exchange(entry, message_url.as_ref()).await {
            Ok(answer) => {
                evidence.push(summarize(&answer));
                if answer.status >= 500 {
                    not_ready.push(format!("{entry} answered {}", answer.status));
                } else if let Err(why) = judge(&answer, provider.refusal) {
                    failures.push(format!("{entry}: {why}"));
                }
            }
            Err(e) if e.is_not_ready() => {
                evidence.push(format!("{entry}: {e}"));
                not_ready.push(format!("{entry}: {e}"));
            }
            Err(e) => {
                evidence.push(format!("{entry}: {e}"));
                failures.push(format!("{entry}: {e}"));
            }
        }
    }
    if let Some((client, session)) = borrowed {
        client.close(session).await;
    }
    if !failures.is_empty() {
        Attempt::fail(format!("{} was not refused: {}", describe(kind, None), failures.join("; ")), evidence)
    } else if !not_ready.is_empty() {
        Attempt::not_ready(not_ready.join("; "), evidence)
    } else {
        Attempt::Pass { evidence }
    }
}

impl RefusalCheck {
    fn bearer_for(&self, ctx: &RunContext, provider: &Provider) -> Result<Option<Secret>, Attempt> {
        match self.bearer {
            Bearer::Anonymous => Ok(None),
            Bearer::Wrong => Ok(Some(ctx.redactor.register("generated-wrong-bearer", wrong_bearer()))),
            Bearer::Foreign => {
                let own = ctx.scenario.secret(&provider.credential);
                ctx.scenario
                    .providers
                    .iter()
                    .filter(|other| other.id != provider.id)
                    .map(|other| ctx.scenario.secret(&other.credential))
                    .chain(ctx.scenario.foreign_credentials.iter().map(|c| ctx.scenario.secret(c)))
                    .find(|s| s.expose() != own.expose())
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| Attempt::Skip {
                        reason: "no other provider in the scenario holds a different credential to present".into(),
                    })
            }
        }
    }
}

fn wrong_bearer() -> String {
    use rand::RngExt;
    let bytes: [u8; 24] = rand::rng().random();
    format!("cordon-wrong-{}", hex::encode(bytes))
}

fn describe(bearer: Bearer, secret: Option<&Secret>) -> String {
    match (bearer, secret) {
        (Bearer::Anonymous, _) => "no bearer".into(),
        (Bearer::Wrong, _) => "a wrong bearer".into(),
        (Bearer::Foreign, Some(s)) => format!("another provider's valid bearer ({})", s.label()),
        (Bearer::Foreign, None) => "another provider's valid bearer".into(),
    }
}

pub fn summarize(a: &RawAnswer) -> String {
    let mut line = format!("{}: {} {} → {}", a.entry, a.method, a.url, a.status);
    if let Some(ct) = &a.content_type {
        line.push_str(&format!(", content-type {ct}"));
    }
    if let Some(loc) = &a.location {
        line.push_str(&format!(", location {loc}"));
    }
    if let Some(w) = &a.www_authenticate {
        line.push_str(&format!(", www-authenticate {}", excerpt(w, 120)));
    }
    if a.session_id_present {
        line.push_str(", mcp-session-id present");
    }
    if !a.body_excerpt.is_empty() {
        line.push_str(&format!(", body {}", excerpt(&a.body_excerpt, 160)));
    }
    line
}

/// Is this answer a refusal of the session? `Err` says why not.
pub fn judge(a: &RawAnswer, refusal: Refusal) -> Result<(), String> {
    let html = a.content_type.as_deref().is_some_and(|ct| ct.contains("text/html"));
    if a.discloses_tools {
        return Err(format!("answered {} and disclosed a tool inventory", a.status));
    }
    match a.status {
        300..=399 => Err(format!(
            "answered {} redirecting to {} — a redirect is not a refusal of the MCP protocol (a client that follows it reads a 200)",
            a.status,
            a.location.as_deref().unwrap_or("(no Location header)")
        )),
        401 | 403 if a.jsonrpc.as_ref().is_some_and(|m| m.get("result").is_some()) => {
            Err(format!("answered {} but carried a JSON-RPC result", a.status))
        }
        401 | 403 => Ok(()),
        404 | 405 if a.entry == EntryPoint::SseGet => Ok(()),
        200..=299 if html => Err(format!("answered {} with an HTML page, not a refusal", a.status)),
        200..=299 => match (&a.jsonrpc, refusal) {
            (Some(msg), Refusal::JsonrpcError) if msg.get("error").is_some() && !a.session_id_present => Ok(()),
            (Some(msg), Refusal::HttpStatus) if msg.get("error").is_some() => Err(format!(
                "answered {} with a JSON-RPC error; only a provider marked `refusal: jsonrpc_error` may refuse that way, this one must answer 401 or 403",
                a.status
            )),
            (Some(msg), _) if msg.get("result").is_some() => {
                Err(format!("answered {} with a result: a session was granted", a.status))
            }
            _ if a.session_id_present => Err(format!("answered {} and issued an mcp-session-id", a.status)),
            _ if a.content_type.as_deref().is_some_and(|ct| ct.contains("text/event-stream")) => {
                Err(format!("answered {} and opened an event stream", a.status))
            }
            _ => Err(format!("answered {}, which is not a refusal", a.status)),
        },
        status => Err(format!("answered {status}; a refusal is 401 or 403")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn answer(entry: EntryPoint, status: u16) -> RawAnswer {
        RawAnswer {
            entry,
            method: "POST".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            status,
            content_type: Some("application/json".into()),
            location: None,
            www_authenticate: None,
            session_id_present: false,
            body_excerpt: String::new(),
            jsonrpc: None,
            discloses_tools: false,
        }
    }

    #[rstest]
    #[case(401)]
    #[case(403)]
    fn http_refusals_pass(#[case] status: u16) {
        assert_eq!(judge(&answer(EntryPoint::Initialize, status), Refusal::HttpStatus), Ok(()));
    }

    #[test]
    fn a_401_carrying_a_result_is_not_a_refusal() {
        let mut a = answer(EntryPoint::Initialize, 401);
        a.jsonrpc = Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}));
        assert!(judge(&a, Refusal::HttpStatus).unwrap_err().contains("JSON-RPC result"));
    }

    #[test]
    fn a_redirect_is_not_a_refusal() {
        let mut a = answer(EntryPoint::Initialize, 302);
        a.location = Some("http://idp/login".into());
        let why = judge(&a, Refusal::HttpStatus).unwrap_err();
        assert!(why.contains("redirect") && why.contains("http://idp/login"), "{why}");
    }

    #[test]
    fn an_html_page_is_not_a_refusal() {
        let mut a = answer(EntryPoint::Initialize, 200);
        a.content_type = Some("text/html; charset=utf-8".into());
        assert!(judge(&a, Refusal::HttpStatus).unwrap_err().contains("HTML"));
    }

    #[test]
    fn a_refusal_that_discloses_tools_fails() {
        let mut a = answer(EntryPoint::ToolsList, 401);
        a.discloses_tools = true;
        assert!(judge(&a, Refusal::HttpStatus).unwrap_err().contains("tool inventory"));
    }

    #[test]
    fn jsonrpc_error_refusal_only_where_marked() {
        let mut a = answer(EntryPoint::Initialize, 200);
        a.jsonrpc = Some(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "unauthorized"}}));
        assert_eq!(judge(&a, Refusal::JsonrpcError), Ok(()));
        assert!(judge(&a, Refusal::HttpStatus).unwrap_err().contains("jsonrpc_error"));
        a.session_id_present = true;
        assert!(judge(&a, Refusal::JsonrpcError).is_err());
    }

    #[test]
    fn a_result_is_a_granted_session() {
        let mut a = answer(EntryPoint::Initialize, 200);
        a.jsonrpc = Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}}));
        assert!(judge(&a, Refusal::JsonrpcError).unwrap_err().contains("session was granted"));
    }

    #[rstest]
    #[case(404)]
    #[case(405)]
    fn no_sse_get_entry_point_is_fine(#[case] status: u16) {
        assert_eq!(judge(&answer(EntryPoint::SseGet, status), Refusal::HttpStatus), Ok(()));
        assert!(judge(&answer(EntryPoint::Initialize, status), Refusal::HttpStatus).is_err());
    }
}
