#!/usr/bin/env python3
"""MCP peers (real SDK servers and deliberately misbehaving ones) for cordon's tests.

Usage:
    <venv>/bin/python tests/peers/peer.py --kind KIND [--port 0]

Environment:
    PEER_TOKEN          the valid bearer token (required by every bearer-checked kind)
    PEER_FOREIGN_TOKEN  another provider's token (kind `foreign-bearer` accepts it too)

Once listening on 127.0.0.1 the program prints exactly one line to stdout,
``LISTENING http://127.0.0.1:<port><path>``, and then serves until killed.
Everything else goes to stderr.

Kinds served with the real SDK (mcp 1.x ``FastMCP`` or 2.x ``MCPServer``):
    stateful-sse, stateful-json, stateless, legacy-sse,
    any-bearer, foreign-bearer, extra-tool, read-error, redirect-login, html-200
Kinds served without the SDK (any venv, only starlette/uvicorn needed or plain asyncio):
    never-answers, huge-body, endless-sse, cursor-cycle, paged,
    forged-names (tool names and a tool result that try to forge report lines),
    echo-secrets (echoes bearers back raw, base64, hex and cut; answers a wrong bearer
    with raw gzip bytes; GET /seen-bearers with the valid bearer lists the wrong ones)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import json
import logging
import os
import socket
import sys
import uuid

# stdout carries exactly one line (LISTENING ...). Anything a library prints
# goes to stderr instead.
_STDOUT = sys.stdout
sys.stdout = sys.stderr

log = logging.getLogger("peer")

HOST = "127.0.0.1"

SDK_KINDS = {
    "stateful-sse",
    "stateful-json",
    "stateless",
    "legacy-sse",
    "any-bearer",
    "foreign-bearer",
    "extra-tool",
    "read-error",
    "redirect-login",
    "html-200",
}
RAW_KINDS = {"never-answers", "huge-body", "endless-sse", "cursor-cycle", "paged", "forged-names", "echo-secrets"}
KINDS = sorted(SDK_KINDS | RAW_KINDS)


def announce(port: int, path: str) -> None:
    _STDOUT.write(f"LISTENING http://{HOST}:{port}{path}\n")
    _STDOUT.flush()


def bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def bearer_of(scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            v = value.decode("latin-1")
            scheme, _, token = v.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


def header_of(scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return value.decode("latin-1")
    return None


async def read_body(receive) -> bytes:
    body = b""
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ConnectionError("client disconnected")
        body += msg.get("body", b"")
        if not msg.get("more_body", False):
            return body


async def respond(send, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
    hs = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    hs.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": hs})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send, status: int, obj, extra: list[tuple[str, str]] | None = None) -> None:
    await respond(send, status, [("content-type", "application/json")] + (extra or []),
                  json.dumps(obj, separators=(",", ":")).encode())


async def unauthenticated(send) -> None:
    await respond_json(send, 401, {"error": "unauthenticated"}, [("www-authenticate", "Bearer")])


LOGIN_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>\n"
    b"<h1>Sign in</h1>\n<form method=\"post\" action=\"/login\">\n"
    b"<input name=\"username\"><input name=\"password\" type=\"password\">\n"
    b"<button type=\"submit\">Sign in</button>\n</form>\n</body></html>\n"
)


async def lifespan_passthrough(receive, send) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


# --------------------------------------------------------------------------
# Real SDK servers
# --------------------------------------------------------------------------


def sdk_major() -> int:
    try:
        import mcp.server.mcpserver  # noqa: F401

        return 2
    except ImportError:
        return 1


def build_sdk_app(kind: str, port: int, token: str | None, foreign: str | None):
    """Returns (asgi_app, endpoint_path)."""
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings

    try:
        from mcp.types import ToolAnnotations
    except ImportError:  # pragma: no cover
        from mcp_types import ToolAnnotations

    major = sdk_major()

    # Which bearer tokens the SDK's own auth accepts; None = no SDK auth.
    if kind in ("any-bearer", "redirect-login", "html-200"):
        accepted = None
    elif kind == "foreign-bearer":
        if not foreign:
            sys.exit("peer.py: kind foreign-bearer needs PEER_FOREIGN_TOKEN")
        accepted = {token, foreign}
    else:
        accepted = {token}

    class Verifier:
        async def verify_token(self, presented: str):
            if presented in accepted:
                return AccessToken(token=presented, client_id="cordon-peer", scopes=[])
            return None

    path = "/sse" if kind == "legacy-sse" else "/mcp"
    kwargs = {}
    if accepted is not None:
        kwargs["token_verifier"] = Verifier()
        kwargs["auth"] = AuthSettings(
            issuer_url=f"http://{HOST}:{port}",
            resource_server_url=f"http://{HOST}:{port}{path}",
            validate_token_resource=False,
        )

    name = f"cordon-peer-{kind}"
    json_response = kind in ("stateful-json", "stateless")
    stateless = kind == "stateless"

    if major == 2:
        from mcp.server.mcpserver import MCPServer

        server = MCPServer(name, log_level="WARNING", **kwargs)
    else:
        from mcp.server.fastmcp import FastMCP

        server = FastMCP(
            name,
            log_level="WARNING",
            host=HOST,
            port=port,
            json_response=json_response,
            stateless_http=stateless,
            **kwargs,
        )

    if kind == "read-error":

        @server.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            raise RuntimeError("backend unavailable: cannot read")

    else:

        @server.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    if kind == "extra-tool":

        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
        def delete_everything() -> str:
            """Deletes every record (a mutating tool outside the contract)."""
            return "deleted nothing (this is a test peer)"

    if kind == "legacy-sse":
        app = server.sse_app(host=HOST) if major == 2 else server.sse_app()
    else:
        if major == 2:
            app = server.streamable_http_app(
                json_response=json_response, stateless_http=stateless, host=HOST
            )
        else:
            app = server.streamable_http_app()

    if kind == "redirect-login":
        app = RedirectLoginGate(app, token, port)
    elif kind == "html-200":
        app = Html200Gate(app, token)
    return app, path


class RedirectLoginGate:
    """Valid bearer -> the wrapped MCP app; otherwise 302 to a login page."""

    def __init__(self, app, token: str, port: int):
        self.app, self.token, self.port = app, token, port

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] == "/login":
            return await respond(send, 200, [("content-type", "text/html; charset=utf-8")], LOGIN_PAGE)
        if bearer_of(scope) != self.token:
            loc = f"http://{HOST}:{self.port}/login?next=/mcp"
            return await respond(send, 302, [("location", loc), ("content-type", "text/html; charset=utf-8")],
                                 f'<a href="{loc}">Found</a>\n'.encode())
        return await self.app(scope, receive, send)


class Html200Gate:
    """Valid bearer -> the wrapped MCP app; otherwise 200 text/html login page."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if bearer_of(scope) != self.token:
            return await respond(send, 200, [("content-type", "text/html; charset=utf-8")], LOGIN_PAGE)
        return await self.app(scope, receive, send)


# --------------------------------------------------------------------------
# Streaming misbehaviour: huge-body, endless-sse
# --------------------------------------------------------------------------

CHUNK = 64 * 1024
HUGE_TOTAL = 1 << 30  # 1 GiB


async def stream_until_disconnect(receive, send, status: int, content_type: str, producer) -> None:
    await read_body(receive)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", content_type.encode()), (b"cache-control", b"no-cache")],
    })

    async def pump():
        async for chunk in producer():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def watch():
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return

    pump_t = asyncio.ensure_future(pump())
    watch_t = asyncio.ensure_future(watch())
    try:
        await asyncio.wait({pump_t, watch_t}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (pump_t, watch_t):
            t.cancel()
        for t in (pump_t, watch_t):
            try:
                await t
            except BaseException:  # noqa: BLE001 - cancelled or send-after-disconnect
                pass
    log.info("stream ended (client gone or body complete)")


async def huge_producer():
    head = b'{"jsonrpc":"2.0","id":1,"result":{"pad":"'
    tail = b'"}}'
    yield head
    pad = b"x" * CHUNK
    sent = len(head)
    while sent + CHUNK + len(tail) <= HUGE_TOTAL:
        yield pad
        sent += CHUNK
    yield tail


async def ping_producer():
    while True:
        yield b": ping\n\n"
        await asyncio.sleep(0.1)


def streaming_app(kind: str):
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan_passthrough(receive, send)
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            return await respond(send, 405, [("allow", "POST")])
        try:
            if kind == "huge-body":
                await stream_until_disconnect(receive, send, 200, "application/json", huge_producer)
            else:
                await stream_until_disconnect(receive, send, 200, "text/event-stream", ping_producer)
        except ConnectionError:
            pass

    return app


# --------------------------------------------------------------------------
# Raw JSON-RPC over Streamable HTTP: cursor-cycle, paged
# --------------------------------------------------------------------------

# The same tool definitions the SDK serves (mcp 1.30.0 FastMCP, measured).
TOOL_ADD = {
    "name": "add",
    "description": "Add two integers.",
    "inputSchema": {
        "properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
        "required": ["a", "b"],
        "title": "addArguments",
        "type": "object",
    },
    "outputSchema": {
        "properties": {"result": {"title": "Result", "type": "integer"}},
        "required": ["result"],
        "title": "addOutput",
        "type": "object",
    },
}
TOOL_ECHO = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {
        "properties": {"text": {"title": "Text", "type": "string"}},
        "required": ["text"],
        "title": "echoArguments",
        "type": "object",
    },
    "outputSchema": {
        "properties": {"result": {"title": "Result", "type": "string"}},
        "required": ["result"],
        "title": "echoOutput",
        "type": "object",
    },
}

# cursor -> (tools, nextCursor)
PAGES = {
    "cursor-cycle": {
        None: ([TOOL_ADD], "page-b"),
        "page-b": ([TOOL_ECHO], "page-a"),
        "page-a": ([TOOL_ADD], "page-b"),
    },
    "paged": {
        None: ([TOOL_ADD], "page-2"),
        "page-2": ([TOOL_ECHO], "page-3"),
        "page-3": ([], None),
    },
}


def rpc_result(id_, result):
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def rpc_error(id_, code, message):
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def call_tool(params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "add":
        a, b = args.get("a"), args.get("b")
        if not (isinstance(a, int) and isinstance(b, int)) or isinstance(a, bool) or isinstance(b, bool):
            return {"content": [{"type": "text", "text": "add: a and b must be integers"}], "isError": True}
        return {"content": [{"type": "text", "text": str(a + b)}], "structuredContent": {"result": a + b},
                "isError": False}
    if name == "echo":
        text = args.get("text")
        if not isinstance(text, str):
            return {"content": [{"type": "text", "text": "echo: text must be a string"}], "isError": True}
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text},
                "isError": False}
    return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}


def jsonrpc_app(kind: str, token: str):
    pages = PAGES[kind]
    sessions: set[str] = set()

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan_passthrough(receive, send)
        if scope["type"] != "http":
            return
        if scope["path"] != "/mcp":
            return await respond_json(send, 404, {"error": "not_found"})
        if bearer_of(scope) != token:
            return await unauthenticated(send)
        method = scope["method"]
        sid = header_of(scope, b"mcp-session-id")
        if method == "DELETE":
            if sid in sessions:
                sessions.discard(sid)
                return await respond(send, 200, [])
            return await respond_json(send, 404, rpc_error(None, -32001, "Session not found"))
        if method != "POST":
            return await respond(send, 405, [("allow", "POST, DELETE")])
        try:
            msg = json.loads(await read_body(receive))
        except ConnectionError:
            return
        except ValueError:
            return await respond_json(send, 400, rpc_error(None, -32700, "Parse error"))
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            return await respond_json(send, 400, rpc_error(None, -32600, "Invalid Request"))
        rpc_method = msg["method"]
        id_ = msg.get("id")
        params = msg.get("params") or {}

        if rpc_method == "initialize":
            new_sid = uuid.uuid4().hex
            sessions.add(new_sid)
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"cordon-peer-{kind}", "version": "0.0.0"},
            }
            return await respond_json(send, 200, rpc_result(id_, result), [("mcp-session-id", new_sid)])
        if sid is None:
            return await respond_json(send, 400, rpc_error(id_, -32600, "Bad Request: Missing session ID"))
        if sid not in sessions:
            return await respond_json(send, 404, rpc_error(id_, -32001, "Session not found"))
        if "id" not in msg:  # notification
            return await respond(send, 202, [])
        if rpc_method == "ping":
            return await respond_json(send, 200, rpc_result(id_, {}))
        if rpc_method == "tools/list":
            cursor = params.get("cursor")
            if cursor not in pages:
                return await respond_json(send, 200, rpc_error(id_, -32602, f"Invalid cursor: {cursor!r}"))
            tools, nxt = pages[cursor]
            result = {"tools": tools}
            if nxt is not None:
                result["nextCursor"] = nxt
            return await respond_json(send, 200, rpc_result(id_, result))
        if rpc_method == "tools/call":
            return await respond_json(send, 200, rpc_result(id_, call_tool(params)))
        return await respond_json(send, 200, rpc_error(id_, -32601, f"Method not found: {rpc_method}"))

    return app


# --------------------------------------------------------------------------
# Hostile kinds for the forgery test: forged-names, echo-secrets
# --------------------------------------------------------------------------

# Each tries one way to forge or break a report line, a JUnit file or a Markdown page.
FORGED_NAMES = [
    "add\ntest FAKE-NL ... ok",
    "add\r\ntest FAKE-CR ... ok",
    "\x1b[1A\x1b[2Ktest FAKE-ESC ... ok",
    "evil\u202etxt.exe\u2066",
    "bad\ufffexml\uffff\ufdd0",
    "```\n# Injected heading\n| forged | row | here |",
    "</failure></testcase><testcase name=\"FAKE-XML\"/>",
    "\x85next\u2028line\x7f\x00end",
]
PAGES["forged-names"] = {None: ([TOOL_ADD, TOOL_ECHO] + [dict(TOOL_ECHO, name=n) for n in FORGED_NAMES], None)}
PAGES["echo-secrets"] = {None: ([TOOL_ADD, TOOL_ECHO], None)}


def echo_forms(secret: str) -> dict:
    """The secret as careless servers echo it: whole, base64 inside a longer value,
    URL-safe base64 without padding, hex, and only its last characters."""
    return {
        "raw": secret,
        "b64": base64.b64encode(f"Bearer {secret}".encode()).decode(),
        "b64url": base64.urlsafe_b64encode(f"u:{secret}".encode()).decode().rstrip("="),
        "hex": secret.encode().hex(),
        "tail": secret[-12:],
    }


def hostile_app(kind: str, token: str):
    inner = jsonrpc_app(kind, token)
    seen: list[str] = []

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/seen-bearers" and bearer_of(scope) == token:
            return await respond(send, 200, [("content-type", "text/plain")], "\n".join(seen).encode())
        if scope["type"] != "http" or scope["path"] != "/mcp":
            return await inner(scope, receive, send)
        presented = bearer_of(scope)
        if kind == "echo-secrets" and presented is None:
            return await respond_json(send, 401, {"error": "unauthenticated", "hint": token[-12:]},
                                      [("www-authenticate", f'Bearer realm="{token[-12:]}"')])
        if kind == "echo-secrets" and presented != token:
            seen.append(presented)
            # Raw gzip bytes, announced as JSON and not as an encoding.
            body = json.dumps({"error": "denied", "echo": echo_forms(presented)}).encode()
            return await respond(send, 200, [("content-type", "application/json")], gzip.compress(body, mtime=0))
        try:
            body = await read_body(receive)
        except ConnectionError:
            return
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        if presented == token and isinstance(msg, dict) and msg.get("method") == "tools/call":
            if kind == "echo-secrets":
                return await respond_json(send, 500, {"error": "denied", "echo": echo_forms(token)},
                                          [("www-authenticate", f'Bearer error_description="{token.encode().hex().upper()}"')])
            text = "\n".join(FORGED_NAMES) + "\n```\n# heading from a tool result\n"
            return await respond_json(send, 200, rpc_result(msg.get("id"), {"content": [{"type": "text", "text": text}],
                                                                           "isError": True}))
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await inner(scope, replay, send)

    return app


# --------------------------------------------------------------------------
# never-answers: plain asyncio
# --------------------------------------------------------------------------


async def never_answers(sock: socket.socket) -> None:
    held = []  # keep every writer referenced: nothing is ever closed by us

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        held.append(writer)
        while await reader.read(65536):
            pass  # read and discard; never write, never close
        await asyncio.Event().wait()

    server = await asyncio.start_server(handle, sock=sock)
    announce(sock.getsockname()[1], "/mcp")
    async with server:
        await asyncio.Event().wait()


# --------------------------------------------------------------------------


async def serve_uvicorn(app, sock: socket.socket, path: str) -> None:
    import uvicorn

    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)

    async def announce_when_started():
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        announce(sock.getsockname()[1], path)

    watcher = asyncio.ensure_future(announce_when_started())
    await server.serve(sockets=[sock])
    watcher.cancel()
    if not server.started:
        sys.exit("peer.py: server failed to start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", required=True, choices=KINDS)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format=f"peer[{args.kind}] %(levelname)s %(name)s: %(message)s")

    token = os.environ.get("PEER_TOKEN")
    foreign = os.environ.get("PEER_FOREIGN_TOKEN")
    needs_token = args.kind not in ("never-answers", "huge-body", "endless-sse", "any-bearer")
    if needs_token and not token:
        sys.exit(f"peer.py: kind {args.kind} needs PEER_TOKEN")

    sock = bind(args.port)
    port = sock.getsockname()[1]

    if args.kind == "never-answers":
        asyncio.run(never_answers(sock))
        return
    if args.kind in ("huge-body", "endless-sse"):
        app, path = streaming_app(args.kind), "/mcp"
    elif args.kind in ("cursor-cycle", "paged"):
        app, path = jsonrpc_app(args.kind, token), "/mcp"
    elif args.kind in ("forged-names", "echo-secrets"):
        app, path = hostile_app(args.kind, token), "/mcp"
    else:
        app, path = build_sdk_app(args.kind, port, token, foreign)
    asyncio.run(serve_uvicorn(app, sock, path))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
