// The platform's n8n deploy step, run by deploy.sh with n8n's own Node inside the n8n
// container against its loopback (nothing is published). Reads a JSON spec on stdin
// (workflows.json with the bearers filled in by deploy.sh), then:
//   1. waits for /healthz/readiness, sets the owner up through n8n's setup API on first
//      boot (POST /rest/owner/setup), signs in;
//   2. makes a short-lived deploy key with every scope and, with it, deletes every
//      credential and workflow whose name starts with the prefix (an earlier deploy's)
//      and makes them again: the model credential; per provider a Bearer credential and
//      a workflow (Webhook -> AI Agent with the scripted model and an MCP Client Tool
//      node); n8n's own MCP Server Trigger workflow; activates them;
//   3. replaces the least-scope API key cordon reads with (label `cordon`, workflow and
//      execution scopes) and writes its value on stdout, the only thing written there
//      (deploy.sh stores it in a file only root can read);
//   4. deletes the deploy key. Prints one line per object on stderr, never a secret.
'use strict';

const BASE = 'http://127.0.0.1:5678';
const say = (m) => process.stderr.write(`provision.js: ${m}\n`);
let cookie = '';

async function call(method, path, body, headers = {}) {
    const r = await fetch(BASE + path, {
        method,
        headers: { 'content-type': 'application/json', cookie, ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, json, text, headers: r.headers };
}

async function ok(method, path, body, headers) {
    const r = await call(method, path, body, headers);
    if (r.status !== 200 && r.status !== 201) {
        const detail = (r.json && (r.json.message || r.json.error)) || r.text.slice(0, 200);
        throw new Error(`${method} ${path} answered ${r.status}: ${detail}`);
    }
    // n8n's editor answers any path it has no route for with its HTML page and 200.
    if (r.json === null && r.text !== '') {
        throw new Error(`${method} ${path} answered ${r.status} with no JSON (n8n has no such route yet): ${r.text.slice(0, 80)}`);
    }
    return r;
}

async function waitReady() {
    const started = Date.now();
    for (;;) {
        try {
            // /healthz/readiness and even /rest/settings answer before every REST route
            // exists (on a first boot the editor's HTML answers the rest with 200): wait for
            // the last controller this step uses to refuse us as a JSON route does.
            const settings = await call('GET', '/rest/settings');
            const scopes = await call('GET', '/rest/api-keys/scopes');
            if (settings.status === 200 && settings.json && scopes.status === 401 && scopes.json) {
                return (Date.now() - started) / 1000;
            }
        } catch { /* starting */ }
        if (Date.now() - started > 180000) throw new Error('n8n did not serve its REST API within 180 s');
        await new Promise((res) => setTimeout(res, 500));
    }
}

function clientWorkflow(prefix, w, bearerId, modelId) {
    return {
        name: `${prefix}${w.provider}`,
        settings: { executionOrder: 'v1', saveDataSuccessExecution: 'all', saveDataErrorExecution: 'all' },
        connections: {
            Webhook: { main: [[{ node: 'AI Agent', type: 'main', index: 0 }]] },
            'OpenAI Chat Model': { ai_languageModel: [[{ node: 'AI Agent', type: 'ai_languageModel', index: 0 }]] },
            'MCP Client': { ai_tool: [[{ node: 'AI Agent', type: 'ai_tool', index: 0 }]] },
        },
        nodes: [
            {
                id: 'webhook', name: 'Webhook', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0],
                webhookId: w.webhook_id,
                parameters: { httpMethod: 'POST', path: `infinito-${w.provider}`, responseMode: 'lastNode', options: {} },
            },
            {
                id: 'agent', name: 'AI Agent', type: '@n8n/n8n-nodes-langchain.agent', typeVersion: 2, position: [300, 0],
                parameters: { promptType: 'define', text: '={{ $json.body.question }}', options: {} },
            },
            {
                id: 'model', name: 'OpenAI Chat Model', type: '@n8n/n8n-nodes-langchain.lmChatOpenAi', typeVersion: 1.2,
                position: [300, 200],
                parameters: { model: { __rl: true, mode: 'id', value: 'cordon-scripted' }, options: {} },
                credentials: { openAiApi: { id: modelId, name: `${prefix}model` } },
            },
            {
                id: 'mcp', name: 'MCP Client', type: '@n8n/n8n-nodes-langchain.mcpClientTool', typeVersion: 1,
                position: [500, 200],
                parameters: {
                    sseEndpoint: w.url,
                    authentication: w.auth || 'bearerAuth',
                    include: w.include || 'selected',
                    ...(w.include === 'all' ? {} : { includeTools: w.tools }),
                },
                credentials: { httpBearerAuth: { id: bearerId, name: `${prefix}${w.provider}` } },
                ...(w.notes ? { notes: w.notes } : {}),
            },
        ],
    };
}

// A workflow a person made beside the managed ones: a Sticky Note and nothing else.
function humanWorkflow(h) {
    return {
        name: h.name,
        settings: { executionOrder: 'v1' },
        connections: {},
        nodes: [{
            id: 'note', name: 'Sticky Note', type: 'n8n-nodes-base.stickyNote', typeVersion: 1, position: [0, 0],
            parameters: { content: h.sticky },
        }],
    };
}

function serverWorkflow(prefix, s, bearerId) {
    const trigger = {
        id: 'trigger', name: 'MCP Server Trigger', type: '@n8n/n8n-nodes-langchain.mcpTrigger', typeVersion: 2,
        position: [0, 0], webhookId: s.webhook_id,
        parameters: { authentication: s.auth || 'bearerAuth', path: s.path },
    };
    if ((s.auth || 'bearerAuth') === 'bearerAuth') {
        trigger.credentials = { httpBearerAuth: { id: bearerId, name: `${prefix}${s.provider}` } };
    }
    return {
        name: `${prefix}${s.provider}`,
        settings: { executionOrder: 'v1' },
        connections: { Calculator: { ai_tool: [[{ node: 'MCP Server Trigger', type: 'ai_tool', index: 0 }]] } },
        nodes: [
            trigger,
            { id: 'calc', name: 'Calculator', type: '@n8n/n8n-nodes-langchain.toolCalculator', typeVersion: 1, position: [0, 200], parameters: {} },
        ],
    };
}

async function main() {
    const spec = JSON.parse(require('fs').readFileSync(0, 'utf8'));
    const prefix = spec.prefix;
    const waited = await waitReady();
    say(`n8n serves its REST API (waited ${waited.toFixed(1)} s)`);
    const setup = await call('POST', '/rest/owner/setup', {
        email: spec.owner.email, firstName: 'Platform', lastName: 'Owner', password: spec.owner.password,
    });
    if (setup.status === 200) {
        say('set the owner up through /rest/owner/setup');
    } else if (setup.status === 400) {
        say('the owner exists');
    } else {
        throw new Error(`POST /rest/owner/setup answered ${setup.status}: ${setup.text.slice(0, 200)}`);
    }
    const login = await ok('POST', '/rest/login', { emailOrLdapLoginId: spec.owner.email, password: spec.owner.password });
    cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');

    const scopes = (await ok('GET', '/rest/api-keys/scopes')).json.data;
    for (const k of (await ok('GET', '/rest/api-keys')).json.data) {
        if (k.label === 'deploy' || k.label === 'cordon') await ok('DELETE', `/rest/api-keys/${k.id}`);
    }
    const deploy = (await ok('POST', '/rest/api-keys', { label: 'deploy', scopes, expiresAt: null })).json.data;
    const K = { 'x-n8n-api-key': deploy.rawApiKey };
    try {
        const listAll = async (path) => {
            const out = [];
            let cursor = null;
            do {
                const r = (await ok('GET', `${path}?limit=250${cursor ? `&cursor=${cursor}` : ''}`, undefined, K)).json;
                out.push(...r.data);
                cursor = r.nextCursor;
            } while (cursor);
            return out;
        };
        // The managed workflows, and the stand-ins for a person's workflows a test variant
        // made before (named `cordon-test-person: ...`; nothing else a person made is touched).
        const ours = (w) => w.name.startsWith(prefix) || w.name.startsWith('cordon-test-person: ');
        for (const w of (await listAll('/api/v1/workflows')).filter(ours)) {
            await ok('DELETE', `/api/v1/workflows/${w.id}`, undefined, K);
        }
        // The public API cannot list credentials; the REST API can, as the owner.
        for (const c of (await ok('GET', '/rest/credentials')).json.data.filter((c) => c.name.startsWith(prefix))) {
            await ok('DELETE', `/api/v1/credentials/${c.id}`, undefined, K);
        }
        const model = (await ok('POST', '/api/v1/credentials', {
            name: `${prefix}model`, type: 'openAiApi', data: { apiKey: spec.model.key, url: spec.model.base_url },
        }, K)).json;
        say(`credential ${prefix}model (the scripted model's key and URL)`);
        const bearer = async (provider, token) => (await ok('POST', '/api/v1/credentials', {
            name: `${prefix}${provider}`, type: 'httpBearerAuth', data: { token },
        }, K)).json.id;
        const activate = async (name, body) => {
            const made = (await ok('POST', '/api/v1/workflows', body, K)).json;
            if (body.active !== false) await ok('POST', `/api/v1/workflows/${made.id}/activate`, undefined, K);
            say(`workflow ${name} (${body.active === false ? 'inactive' : 'active'})`);
        };
        for (const w of spec.workflows) {
            const id = await bearer(w.provider, w.key);
            const body = clientWorkflow(prefix, w, id, model.id);
            await activate(`${prefix}${w.provider} -> ${w.url} (include ${w.include || 'selected'} [${(w.tools || []).join(', ')}])`, body);
        }
        for (const h of spec.human || []) {
            await ok('POST', '/api/v1/workflows', humanWorkflow(h), K);
            say(`workflow ${h.name} (made by a person: a Sticky Note)`);
        }
        if (spec.server) {
            const s = spec.server;
            const id = await bearer(s.provider, s.key);
            const body = serverWorkflow(prefix, s, id);
            if (s.active === false) body.active = false;
            await activate(`${prefix}${s.provider}: MCP Server Trigger v2 at /mcp/${s.path}, auth ${s.auth || 'bearerAuth'}`, body);
        }
    } finally {
        await call('DELETE', `/rest/api-keys/${deploy.id}`);
    }
    // After the deploy key is gone: n8n's key is a JWT of (user, issuer, audience, second),
    // so two keys made in the same second are equal and the second one is refused
    // ("There is already an entry with this name").
    const least = (await ok('POST', '/rest/api-keys', {
        label: 'cordon', scopes: ['workflow:read', 'workflow:list', 'execution:read', 'execution:list', 'execution:delete'],
        expiresAt: null,
    })).json.data;
    process.stdout.write(least.rawApiKey);
    say('API key `cordon` (workflow:read, workflow:list, execution:read, execution:list, execution:delete)');
}

main().catch((e) => {
    say(`failed: ${e.message}`);
    process.exit(1);
});
