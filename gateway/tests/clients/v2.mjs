// MCP's TypeScript SDK v2 (`@modelcontextprotocol/client`, the 2026-07-28 line) as the
// gateway's client, its HTTP traffic tapped (see `tap` in common.mjs).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { tap } from "./common.mjs";

/** The protocol revision of the v2 SDK's modern era. */
export const MODERN = "2026-07-28";

/**
 * A v2 client, not yet connected (register handlers, then `connect()`). `era`: "modern" pins
 * 2026-07-28 (`server/discover`, no fallback); "auto" probes with `server/discover` and falls
 * back to `initialize`; "legacy" is the plain 2025 handshake. `wire` and `sent`: its HTTP
 * requests (see `tap` in common.mjs).
 */
export function clientV2(url, { era = "modern", capabilities = {}, token } = {}) {
  const { wire, sent, fetch } = tap();
  const versionNegotiation = era === "modern" ? { mode: { pin: MODERN } } : { mode: era };
  const client = new Client({ name: "toolbreaker-test-client-v2", version: "1.0.0" }, { capabilities, versionNegotiation });
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch, requestInit });
  return { client, wire, sent, connect: () => client.connect(transport) };
}
