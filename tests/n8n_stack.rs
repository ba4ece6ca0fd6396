//! End to end against a real n8n 1.100.1 from npm: the n8n reference stack (docker/n8n/)
//! passes every `n8n::` check and the contract family on every provider — n8n's own MCP
//! Server Trigger included — and each broken variant in docker/n8n/broken/ fails exactly
//! the checks its expect.yaml names, for the stated reason, with every other check green.
//! Afterwards no execution record cordon's runs made is left in n8n, no container,
//! network or volume in the engine, and no secret of the stack in any output.
//!
//! One stack serves every case: each variant is deployed over it with
//! docker/n8n/deploy.sh, as the platform's deploy would.

mod support;

use std::time::Instant;

use support::clients::{ClientStack, Kind, Leftovers, Outcome, every_variant_is_listed, nodeapp_image};

const N8N: Kind = Kind {
    name: "n8n",
    setup: ("tests/clients/setup.sh", "Node 24, Flowise and n8n from npm"),
    image: ("CORDON_NODEAPP_IMAGE", nodeapp_image),
    secrets: &[
        "LEGACY_TOKEN",
        "NOTES_TOKEN",
        "N8N_MCP_TOKEN",
        "WIKI_TOKEN",
        "MODEL_KEY",
        "N8N_OWNER_PASSWORD",
        "N8N_ENCRYPTION_KEY",
    ],
    // The runs of the n8n family go through the managed workflows' webhooks: their
    // records must be gone. The MCP Server Trigger's workflow keeps a record of every
    // call it serves (the contract family's reads included): that is the provider's own
    // log, not something cordon made in n8n.
    password_suffix: "-Aa1!",
    never_printed: &[],
    leftovers: Leftovers::Node(
        r#"
const get = async (path) => {
  const r = await fetch('http://127.0.0.1:5678' + path, { headers: { 'x-n8n-api-key': process.env.KEY } });
  if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
  return (await r.json()).data;
};
(async () => {
  const runs = new Set((await get('/api/v1/workflows?limit=250'))
    .filter((w) => w.nodes.some((n) => n.type === 'n8n-nodes-base.webhook')).map((w) => w.id));
  for (const e of await get('/api/v1/executions?limit=250')) {
    if (runs.has(e.workflowId)) console.log('execution', e.id, 'of workflow', e.workflowId);
  }
})().catch((e) => { console.error(e); process.exit(1); });
"#,
    ),
};

/// In deploy order: the provider that refuses n8n's key last (its recreate of `legacy`
/// is the only one).
const BROKEN: [&str; 5] = ["include-all", "stale-workflow", "trigger-auth-none", "refused-key", "bearer-in-notes"];

#[test]
fn n8n_reference_stack_and_every_broken_variant() {
    let started = Instant::now();
    let stack = ClientStack::up(&N8N, "e2e", "198.19");
    let mut o = Outcome::default();
    o.timings.push(format!("first deploy: {:.1}s", stack.deployed_in.as_secs_f64()));
    o.reference(&stack, 19);
    for name in BROKEN {
        o.variant(&stack, name);
    }
    o.finish(stack, started);
}

#[test]
fn every_n8n_variant_is_run_and_states_its_expectations() {
    every_variant_is_listed(&N8N, &BROKEN);
}
