// What every client script shares: connect to the gateway with MCP's TypeScript SDK, and fail
// loudly. Each script prints one JSON line on success and exits 0; any failure exits 1 with why.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export async function connect(url, { token, capabilities = {} } = {}) {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  const client = new Client({ name: "toolbreaker-test-client", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  return client;
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
    console.error(error?.stack ?? String(error));
    process.exit(1);
  }
}
