//! Who answers at a door (swarm): a connect proves nothing when a packet to an overlay the
//! client is not on may leave the node and be answered upstream, so a door counts only
//! when it answers one fixed request as the container behind it answers from its own
//! namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Door, Knock, KnockPlan, Via};
use crate::engine::Target;
use crate::model::Attempt;

/// How a listener answers one fixed request: enough to tell one server from another.
/// Headers that change per answer (date, length, session ids) are left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The status line, or `None` when nothing came back in time.
    pub status: Option<String>,
    pub headers: Vec<String>,
    pub body_sha256: String,
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.status {
            None => write!(f, "no answer"),
            Some(s) => write!(
                f,
                "{s} [{}] body sha256 {}",
                self.headers.join(", "),
                &self.body_sha256[..12.min(self.body_sha256.len())]
            ),
        }
    }
}

/// The request that tells who answers: an unauthenticated `initialize` at the path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AskWho {
    pub host: String,
    pub path: String,
}

/// Sends the fixed request and reads at most 16 KiB for at most two seconds.
pub async fn who_answers(addr: SocketAddr, ask: &AskWho, timeout: Duration) -> Answer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cordon-reach","version":"0"}}}"#;
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        ask.path,
        ask.host,
        body.len()
    );
    let read = async {
        let mut stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await.ok()?.ok()?;
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while buf.len() < 16 * 1024 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        Some(buf)
    };
    let bytes =
        tokio::time::timeout(Duration::from_secs(2).max(timeout), read).await.ok().flatten().unwrap_or_default();
    answer_of(&bytes)
}

/// Pure: the parts of a raw HTTP answer that identify the server.
pub fn answer_of(bytes: &[u8]) -> Answer {
    use sha2::Digest;
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().filter(|l| l.starts_with("HTTP/")).map(|l| crate::text::sanitize(l.trim()));
    const VARYING: [&str; 5] = ["date", "content-length", "mcp-session-id", "transfer-encoding", "connection"];
    let mut headers: Vec<String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, _)| k.trim().to_ascii_lowercase())
        .filter(|k| !VARYING.contains(&k.as_str()))
        .collect();
    headers.sort();
    headers.dedup();
    let body_sha256 = if status.is_some() { hex::encode(sha2::Sha256::digest(body.as_bytes())) } else { String::new() };
    Answer { status, headers, body_sha256 }
}

/// How each container answers at each port of its doors, asked from its own namespace.
pub(crate) async fn references(
    deployment: &crate::deployment::Deployment,
    targets: &[Target],
    doors: &[Door],
    ask: &AskWho,
    timeout: Duration,
) -> Result<BTreeMap<(String, u16), Answer>, Attempt> {
    // Every container at once: a port that takes TCP but never answers HTTP (a database,
    // a name server) holds its ask for the whole read timeout, and one after another
    // those waits were most of a passing swarm run.
    let asked = futures_util::future::join_all(targets.iter().map(|t| async move {
        let own = t.addresses().first().copied().unwrap_or(IpAddr::from([127, 0, 0, 1]));
        let mut ports: BTreeSet<u16> =
            doors.iter().filter(|d| d.container == t.name).map(Door::container_port).collect();
        ports.extend(doors.iter().filter(|d| d.via == Via::Vip).map(|d| d.addr.port()));
        let own_doors: Vec<Door> = ports
            .into_iter()
            .map(|p| Door {
                addr: SocketAddr::new(own, p),
                container: t.name.clone(),
                network: "its own".into(),
                via: Via::Direct,
            })
            .collect();
        let plan = KnockPlan { doors: own_doors, timeout, ask: Some(ask.clone()) };
        deployment.observe(t, &format!("provider {}", t.name), plan).await.map(|knocks| (t, knocks))
    }))
    .await;
    let mut out = BTreeMap::new();
    for seen in asked {
        let (t, knocks) = seen?;
        for k in knocks {
            if let Some(answer) = k.answer {
                out.insert((t.name.clone(), k.door.addr.port()), answer);
            }
        }
    }
    Ok(out)
}

/// Whether the answer at the door is the container's own (Ok: the evidence line), or
/// someone else's (Err: the evidence line); `None` when there is nothing to compare.
pub(super) fn answered_by_container(
    refs: &BTreeMap<(String, u16), Answer>,
    k: &Knock,
) -> Option<Result<String, String>> {
    let port = k.door.container_port();
    let own: Vec<&Answer> = match k.door.via {
        // Any replica behind the VIP may have answered.
        Via::Vip => refs.iter().filter(|((_, p), _)| *p == port).map(|(_, a)| a).collect(),
        _ => refs.get(&(k.door.container.clone(), port)).into_iter().collect(),
    };
    let seen = k.answer.as_ref()?;
    let first = own.first()?;
    if own.contains(&seen) {
        Some(Ok(format!("{}: the answer is {}'s own ({seen})", k.door, k.door.container)))
    } else {
        Some(Err(format!(
            "{}: TCP opened, but the answer ({seen}) is not {}'s own ({first}): something else answered, not the provider",
            k.door, k.door.container
        )))
    }
}
