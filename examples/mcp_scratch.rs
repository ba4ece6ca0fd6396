// SCRATCH — not to be committed.
use cordon::mcp::*;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url: url::Url = args[1].parse().unwrap();
    let transport = if url.path().ends_with("/sse") { Transport::Sse } else { Transport::StreamableHttp };
    let red = cordon::secret::Redactor::new();
    let tok = std::env::var("TOK").ok().map(|t| red.register("tok", t));
    let limits = Limits { sse_max_duration: Duration::from_secs(15), read_timeout: Duration::from_secs(3), ..Limits::default() };
    let ep = Endpoint { url: url.clone(), transport, pin: None };
    let c = McpClient::new(ep.clone(), tok.clone(), limits.clone()).unwrap();
    match c.connect().await {
        Ok(s) => {
            println!("session: {s:?}");
            match c.list_tools(&s).await {
                Ok(t) => println!("tools: {:?} hash {}", t.iter().map(|t| &t.name).collect::<Vec<_>>(), schema_hash(&t)),
                Err(e) => println!("list err: {e}"),
            }
            match c.call_tool(&s, "add", serde_json::json!({"a": 2, "b": 3})).await {
                Ok(r) => println!("call: err={} text={:?} structured={:?}", r.is_error, r.text, r.structured),
                Err(e) => println!("call err: {e}"),
            }
            match c.call_tool(&s, "nope", serde_json::json!({})).await {
                Ok(r) => println!("call nope: err={} text={:?}", r.is_error, r.text),
                Err(e) => println!("call nope err: {e}"),
            }
            let mu = s.message_url.clone();
            for (label, bearer) in [("anon", None), ("wrong", Some(red.register("w", "wrong-token-xyz".into())))] {
                let c2 = McpClient::new(ep.clone(), bearer, limits.clone()).unwrap();
                let entries: &[EntryPoint] = match transport {
                    Transport::Sse => &[EntryPoint::SseGet, EntryPoint::MessagePost],
                    _ => &[EntryPoint::Initialize, EntryPoint::Discover, EntryPoint::ToolsList, EntryPoint::SseGet],
                };
                for e in entries {
                    match c2.raw_exchange(*e, mu.as_ref()).await {
                        Ok(a) => println!("raw {label} {e}: {} ct={:?} wa={:?} sid={} rpc={} leak={} body={:?}", a.status, a.content_type, a.www_authenticate, a.session_id_present, a.jsonrpc.is_some(), a.discloses_tools, &a.body_excerpt[..a.body_excerpt.len().min(120)]),
                        Err(err) => println!("raw {label} {e}: ERR {err}"),
                    }
                }
            }
            // valid-bearer raw too
            for e in [EntryPoint::Initialize, EntryPoint::SseGet] {
                if transport == Transport::Sse && e == EntryPoint::Initialize { continue; }
                match c.raw_exchange(e, None).await {
                    Ok(a) => println!("raw good {e}: {} ct={:?} sid={} rpc={} leak={} body={:?}", a.status, a.content_type, a.session_id_present, a.jsonrpc.is_some(), a.discloses_tools, &a.body_excerpt[..a.body_excerpt.len().min(120)]),
                    Err(err) => println!("raw good {e}: ERR {err}"),
                }
            }
            c.close(s).await;
            println!("closed");
        }
        Err(e) => println!("connect err: {e} (not_ready={})", e.is_not_ready()),
    }
    // anon connect
    let c3 = McpClient::new(ep, None, limits).unwrap();
    match c3.connect().await { Ok(s) => println!("ANON CONNECTED {s:?}"), Err(e) => println!("anon connect: {e}") }
}
