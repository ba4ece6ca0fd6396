//! End to end against a real Flowise 3.1.4 from npm: the Flowise reference stack
//! (docker/flowise/) passes every `flowise::` check, and each broken variant in
//! docker/flowise/broken/ fails exactly the checks its expect.yaml names, for the stated
//! reason, with every other check green. Afterwards no API key, entry or chat cordon made
//! is left in Flowise, no container, network or volume in the engine, and no secret of
//! the stack in any output.
//!
//! One stack serves every case (Flowise boots in 20-60 s): each variant is deployed over
//! it with docker/flowise/deploy.sh, as the platform's reconciler would.

mod support;

use std::time::Instant;

use support::clients::{ClientStack, Kind, Leftovers, Outcome, every_variant_is_listed, nodeapp_image};

const FLOWISE: Kind = Kind {
    name: "flowise",
    setup: ("tests/clients/setup.sh", "Node 24, Flowise and n8n from npm"),
    image: ("CORDON_NODEAPP_IMAGE", nodeapp_image),
    secrets: &[
        "NATIVE_TOKEN",
        "FILES_TOKEN",
        "LEGACY_TOKEN",
        "WIKI_TOKEN",
        "MODEL_KEY",
        "FLOWISE_ADMIN_PASSWORD",
        "FLOWISE_SECRET_KEY",
    ],
    password_suffix: "-Aa1!",
    never_printed: &[],
    leftovers: Leftovers::Node(
        r#"
const B = 'http://127.0.0.1:3000';
let cookie = '';
const call = async (m, p, b) => {
  const r = await fetch(B + p, { method: m, headers: { 'content-type': 'application/json', 'x-request-from': 'internal', cookie }, body: b ? JSON.stringify(b) : undefined });
  const set = r.headers.getSetCookie();
  if (set.length) cookie = set.map((c) => c.split(';')[0]).join('; ');
  return r.json();
};
const list = (v) => (Array.isArray(v) ? v : (v && v.data) || []);
(async () => {
  await call('POST', '/api/v1/auth/login', { email: 'admin@cordon.test', password: process.env.PW });
  for (const k of list(await call('GET', '/api/v1/apikey'))) if (k.keyName.startsWith('cordon-eph-')) console.log('API key', k.keyName);
  for (const e of list(await call('GET', '/api/v1/custom-mcp-servers'))) if (e.name.startsWith('cordon-eph-')) console.log('entry', e.name);
  for (const f of list(await call('GET', '/api/v1/chatflows'))) {
    const messages = list(await call('GET', `/api/v1/chatmessage/${f.id}`));
    if (messages.length) console.log('chat messages of', f.name, messages.length);
  }
})().catch((e) => { console.error(e); process.exit(1); });
"#,
    ),
};

/// The variants in the order they are deployed: the registry's first (no recreate),
/// then the provider that hangs, then Flowise recreated with its SSRF guard off.
const BROKEN: [&str; 8] = [
    "plain-bearer",
    "bearer-in-variable",
    "impostor-entry",
    "sse-entry",
    "duplicate-entry",
    "author-key",
    "tool-never-returns",
    "security-check-off",
];

#[test]
fn flowise_reference_stack_and_every_broken_variant() {
    let started = Instant::now();
    let stack = ClientStack::up(&FLOWISE, "e2e", "198.18");
    let mut o = Outcome::default();
    o.timings.push(format!("first deploy: {:.1}s", stack.deployed_in.as_secs_f64()));
    o.reference(&stack, 4);
    for name in BROKEN {
        o.variant(&stack, name);
    }
    o.finish(stack, started);
}

#[test]
fn every_flowise_variant_is_run_and_states_its_expectations() {
    every_variant_is_listed(&FLOWISE, &BROKEN);
}
