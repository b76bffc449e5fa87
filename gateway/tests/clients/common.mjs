// What every client script shares: connect to the gateway with MCP's TypeScript SDK, and fail
// loudly. Each script prints one JSON line on success and exits 0; any failure exits 1 with why.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export async function connect(url, { token, capabilities = {}, fetch } = {}) {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit, fetch });
  const client = new Client({ name: "toolbreaker-test-client", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  return client;
}

/**
 * A tap on an SDK transport's HTTP traffic (pass `fetch` to its transport): `wire` lists each
 * request it made as it is sent, with its JSON-RPC method and params and its MCP headers, and
 * once answered its status and the answer's session header (`answered` resolves then), so a
 * script checks what went over the wire and not only what the SDK made of it. `sent(p)`
 * resolves with the first request that `p` accepts, once it is sent.
 */
export function tap() {
  const wire = [];
  const waiting = [];
  const fetchTapped = (input, init = {}) => {
    const headers = new Headers(init.headers);
    let body;
    if (typeof init.body === "string") {
      try {
        body = JSON.parse(init.body);
      } catch {
        body = init.body;
      }
    }
    const entry = {
      http: init.method ?? "GET",
      method: body?.method,
      params: body?.params,
      protocolVersion: headers.get("mcp-protocol-version"),
      sentSession: headers.get("mcp-session-id"),
      status: undefined,
      gotSession: null,
    };
    const response = fetch(input, init);
    entry.answered = response.then(
      (r) => {
        entry.status = r.status;
        entry.gotSession = r.headers.get("mcp-session-id");
        return r.status;
      },
      () => undefined,
    );
    wire.push(entry);
    for (const w of waiting.splice(0)) {
      if (w.accepts(entry)) w.resolve(entry);
      else waiting.push(w);
    }
    return response;
  };
  const sent = (accepts) =>
    new Promise((resolve) => {
      const seen = wire.find(accepts);
      if (seen) resolve(seen);
      else waiting.push({ accepts, resolve });
    });
  return { wire, sent, fetch: fetchTapped };
}

export function check(ok, what) {
  if (!ok) {
    throw new Error(what);
  }
}

export function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

export async function main(body) {
  const limit = setTimeout(() => {
    console.error("timed out after 60 s");
    process.exit(1);
  }, 60_000);
  try {
    const out = await body(process.argv.slice(2));
    console.log(JSON.stringify(out ?? {}));
    clearTimeout(limit);
    process.exit(0);
  } catch (error) {
    // With its causes (undici's `fetch failed` says why only in its cause).
    for (let e = error, depth = 0; e !== undefined && depth < 5; e = e?.cause, depth++) {
      console.error(depth === 0 ? e?.stack ?? String(e) : `caused by: ${e?.stack ?? String(e)}`);
    }
    process.exit(1);
  }
}
