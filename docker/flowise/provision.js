// The platform's Flowise reconciler, run by deploy.sh with Flowise's own Node inside the
// Flowise container against its loopback (nothing is published). Reads a JSON spec on
// stdin (registry.json with the bearers filled in by deploy.sh), then:
//   1. waits for /api/v1/ping, registers the admin on first boot, signs in;
//   2. deletes every custom MCP server entry, chatflow, credential and API key whose name
//      starts with the prefix (what an earlier deploy made), and makes them again:
//      the model credential, one entry per declared provider (bearer in the encrypted
//      custom headers), authorized, and a flow per entry that calls its read tool: a
//      chatflow (a tool agent), or with `"flow": "agentflow"` an Agentflow whose Tool
//      node calls it with fixed arguments (the requirement's fixture shape);
//   3. prints one line per object, never a secret.
// Exits non-zero with the failing call and Flowise's answer.
'use strict';

const BASE = 'http://127.0.0.1:3000';
const jar = {};
const say = (m) => process.stderr.write(`provision.js: ${m}\n`);

function cookies() {
    return Object.entries(jar).map(([k, v]) => `${k}=${v}`).join('; ');
}

async function call(method, path, body, extra = {}) {
    const headers = { 'content-type': 'application/json', 'x-request-from': 'internal', cookie: cookies(), ...extra };
    const r = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    for (const c of r.headers.getSetCookie()) {
        const [kv] = c.split(';');
        const i = kv.indexOf('=');
        jar[kv.slice(0, i)] = kv.slice(i + 1);
    }
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, json, text };
}

async function ok(method, path, body) {
    const r = await call(method, path, body);
    if (r.status !== 200 && r.status !== 201) {
        const detail = (r.json && (r.json.message || r.json.error)) || r.text.slice(0, 200);
        throw new Error(`${method} ${path} answered ${r.status}: ${detail}`);
    }
    return r.json;
}

async function waitReady() {
    const started = Date.now();
    for (;;) {
        try {
            const r = await fetch(BASE + '/api/v1/ping');
            if (r.status === 200) return (Date.now() - started) / 1000;
        } catch { /* starting */ }
        if (Date.now() - started > 180000) throw new Error('Flowise did not answer /api/v1/ping within 180 s');
        await new Promise((res) => setTimeout(res, 500));
    }
}

function list(json) {
    return Array.isArray(json) ? json : (json && json.data) || [];
}

// The chatflow the platform makes per entry: a Tool Agent with the scripted model, a
// buffer memory and the entry's read tool.
function chatflow(serverId, tool, credentialId, model) {
    const node = (id, name, label, version, category, type, baseClasses, inputs) => ({
        id, position: { x: 0, y: 0 }, type: 'customNode',
        data: {
            id, name, label, version, category, type, baseClasses, inputs, outputs: {}, inputParams: [], inputAnchors: [],
            outputAnchors: [{ id: `${id}-output-${name}-${baseClasses.join('|')}`, name, label: type, type: baseClasses.join(' | ') }],
        },
    });
    const nodes = [
        node('chatOpenAI_0', 'chatOpenAI', 'ChatOpenAI', 8.2, 'Chat Models', 'ChatOpenAI',
            ['ChatOpenAI', 'BaseChatModel', 'BaseLanguageModel', 'Runnable'],
            { credential: credentialId, modelName: model.name, temperature: 0, streaming: false, basepath: model.base_url }),
        node('bufferMemory_0', 'bufferMemory', 'Buffer Memory', 2, 'Memory', 'BufferMemory',
            ['BufferMemory', 'BaseChatMemory', 'BaseMemory'], { sessionId: '', memoryKey: 'chat_history' }),
        node('customMcpServerTool_0', 'customMcpServerTool', 'Custom MCP Server', 1, 'Tools (MCP)', 'Custom MCP Server Tool',
            ['Tool'], { mcpServerId: serverId, mcpActions: JSON.stringify([tool]) }),
        node('toolAgent_0', 'toolAgent', 'Tool Agent', 2, 'Agents', 'AgentExecutor', ['AgentExecutor', 'BaseChain', 'Runnable'], {
            tools: ['{{customMcpServerTool_0.data.instance}}'],
            memory: '{{bufferMemory_0.data.instance}}',
            model: '{{chatOpenAI_0.data.instance}}',
            systemMessage: 'You are a helpful AI assistant.',
        }),
    ];
    nodes[0].data.credential = credentialId;
    const edge = (source, handle, target) => ({
        id: `${source}-${target}`, source, target, type: 'buttonedge',
        sourceHandle: nodes.find((n) => n.id === source).data.outputAnchors[0].id,
        targetHandle: `toolAgent_0-input-${handle}`,
    });
    const edges = [
        edge('customMcpServerTool_0', 'tools-Tool', 'toolAgent_0'),
        edge('bufferMemory_0', 'memory-BaseChatMemory', 'toolAgent_0'),
        edge('chatOpenAI_0', 'model-BaseChatModel', 'toolAgent_0'),
    ];
    return JSON.stringify({ nodes, edges });
}

// The requirement's own fixture shape: an Agentflow whose Tool node calls one named tool of
// the entry with fixed arguments (no model in the way): Start -> Tool.
function agentflow(serverId, tool) {
    const node = (id, name, label, inputs) => ({
        id, type: 'agentFlow', position: { x: 0, y: 0 },
        data: { id, name, label, inputs, outputs: {}, inputParams: [], inputAnchors: [], outputAnchors: [{ id: `${id}-output-${id}`, label, name: label }] },
    });
    const nodes = [
        node('startAgentflow_0', 'startAgentflow', 'Start', { startInputType: 'chatInput', startState: '' }),
        node('toolAgentflow_0', 'toolAgentflow', 'Tool', {
            toolAgentflowSelectedTool: 'customMcpServerTool',
            toolAgentflowSelectedToolConfig: { mcpServerId: serverId, mcpActions: JSON.stringify([tool]), toolAgentflowSelectedTool: 'customMcpServerTool' },
            toolInputArgs: [], toolUpdateState: '',
        }),
    ];
    const edges = [{
        id: 'startAgentflow_0-toolAgentflow_0', type: 'agentFlow', source: 'startAgentflow_0', target: 'toolAgentflow_0',
        sourceHandle: 'startAgentflow_0-output-startAgentflow', targetHandle: 'toolAgentflow_0',
    }];
    return JSON.stringify({ nodes, edges });
}

async function main() {
    const spec = JSON.parse(require('fs').readFileSync(0, 'utf8'));
    const prefix = spec.prefix;
    const waited = await waitReady();
    say(`Flowise answers /api/v1/ping (waited ${waited.toFixed(1)} s)`);
    const reg = await call('POST', '/api/v1/account/register', {
        user: { name: 'admin', email: spec.admin.email, credential: spec.admin.password },
    });
    const said = (reg.json && reg.json.message) || reg.text.slice(0, 200);
    if (reg.status === 201) {
        say('registered the admin account');
    } else if (said.includes('only have one organization')) {
        say('the admin account exists');
    } else {
        // e.g. Flowise's password rule: 8+ characters with upper and lower case, a digit
        // and a special character.
        throw new Error(`POST /api/v1/account/register answered ${reg.status}: ${said}`);
    }
    await ok('POST', '/api/v1/auth/login', { email: spec.admin.email, password: spec.admin.password });

    // What a test made in a person's name (an entry `cordon-test-person: …`, a variable
    // `cordon_test_…`) goes on every deploy too, so one variant's never outlives it.
    const mine = (x) => typeof x.name === 'string' && (x.name.startsWith(prefix) || x.name.startsWith('cordon-test-person: '));
    const mineKey = (x) => typeof x.keyName === 'string' && x.keyName.startsWith(prefix);
    for (const e of list(await ok('GET', '/api/v1/custom-mcp-servers')).filter(mine)) {
        await ok('DELETE', `/api/v1/custom-mcp-servers/${e.id}`);
    }
    for (const f of list(await ok('GET', '/api/v1/chatflows')).filter(mine)) {
        await ok('DELETE', `/api/v1/chatflows/${f.id}`);
    }
    for (const c of list(await ok('GET', '/api/v1/credentials')).filter(mine)) {
        await ok('DELETE', `/api/v1/credentials/${c.id}`);
    }
    for (const k of list(await ok('GET', '/api/v1/apikey')).filter(mineKey)) {
        await ok('DELETE', `/api/v1/apikey/${k.id}`);
    }
    for (const v of list(await ok('GET', '/api/v1/variables')).filter((v) => v.name.startsWith('cordon_test_'))) {
        await ok('DELETE', `/api/v1/variables/${v.id}`);
    }

    const credential = await ok('POST', '/api/v1/credentials', {
        name: `${prefix}model`, credentialName: 'openAIApi', plainDataObj: { openAIApiKey: spec.model.key },
    });
    say(`credential ${prefix}model (the scripted model's key)`);
    for (const entry of spec.entries) {
        const name = entry.name || `${prefix}${entry.provider}`;
        const authConfig = { headers: { Authorization: `Bearer ${entry.key}` }, ...(entry.extra_auth_config || {}) };
        const created = await ok('POST', '/api/v1/custom-mcp-servers', {
            name, serverUrl: entry.url, authType: 'CUSTOM_HEADERS', authConfig,
        });
        const authorized = await call('POST', `/api/v1/custom-mcp-servers/${created.id}/authorize`);
        const status = authorized.status === 200 ? authorized.json.status : `not authorized (${authorized.status}: ${(authorized.json && authorized.json.message) || ''})`;
        say(`entry ${name} -> ${entry.url.replace(/\/[^/]*$/, '/…')}: ${status}`);
        if (entry.chatflow === false) continue;
        if (entry.flow === 'agentflow') {
            await ok('POST', '/api/v1/chatflows', {
                name, type: 'AGENTFLOW', deployed: false, isPublic: false, category: prefix.replace(/:$/, ''),
                flowData: agentflow(created.id, entry.tool),
            });
            say(`agentflow ${name} (Start -> Tool ${entry.tool})`);
            continue;
        }
        await ok('POST', '/api/v1/chatflows', {
            name, type: 'CHATFLOW', deployed: false, isPublic: false, category: prefix.replace(/:$/, ''),
            flowData: chatflow(created.id, entry.tool, credential.id, spec.model),
        });
        say(`chatflow ${name} (tool ${entry.tool})`);
    }
    for (const v of spec.variables || []) {
        await ok('POST', '/api/v1/variables', { name: v.name, value: v.value, type: 'static' });
        say(`variable ${v.name} (static)`);
    }
    for (const key of spec.keys || []) {
        await ok('POST', '/api/v1/apikey', { keyName: key.name, permissions: key.permissions });
        say(`API key ${key.name} (${key.permissions.join(', ')})`);
    }
}

main().catch((e) => {
    say(`failed: ${e.message}`);
    process.exit(1);
});
