// MCP's TypeScript SDK as a client of the gateway, the same flows in either era. CLIENT:
// "v2-modern" (`@modelcontextprotocol/client` pinned to 2026-07-28), "v2-auto" (v2, its
// negotiation, which must come out 2026-07-28), "v2-legacy" (v2 in 2025-11-25) or "v1"
// (`@modelcontextprotocol/sdk` 1.x, 2025-11-25).
// - The connection: in 2026-07-28, `server/discover` and never `initialize`, every request
//   with the revision's header and no session header either way; in 2025-11-25 a session.
// - tools/list, and UP`echo` answered.
// - UP`ask`: its progress reaches `onprogress`, and its request for a sample reaches the SDK's
//   sampling handler: in 2026-07-28 as an `input_required` result, the SDK retrying the call
//   with `inputResponses` (and `requestState` when one was sent); in 2025-11-25 as a
//   server-to-client request.
// - UP`confirm`: its request for confirmation reaches the SDK's elicitation handler, the same
//   way, and the upstream answers what the handler accepted.
// - UP`wait`, held by the upstream, cancelled through an AbortSignal once its progress shows the
//   upstream has it: the call is rejected (in 2026-07-28 the SDK closes the call's stream, in
//   2025-11-25 it sends notifications/cancelled), and a later call is answered.
// - FLAKY`fail` called THRESHOLD times, each answered as a failed call, opens FLAKY's breaker:
//   the next FLAKY`echo` is answered blocked (isError, structuredContent.status "blocked"),
//   while UP`echo` is still answered.
// Usage: node flows.mjs URL CLIENT UP FLAKY THRESHOLD
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, connect, main, tap, text } from "./common.mjs";
import { MODERN, clientV2 } from "./v2.mjs";

const status = (result) => (result.isError ? result.structuredContent?.status ?? "error" : "ok");

/** The SDK's own progress for a round of `input_required` (v2), not the upstream's. */
const isRound = (p) => typeof p.message === "string" && p.message.startsWith("Fulfilling input required");

/** The one value of `inputResponses` (keyed by the upstream's name, or the gateway's). */
const only = (responses) => {
  const values = Object.values(responses ?? {});
  return values.length === 1 ? values[0] : undefined;
};

const SAMPLE = { model: "test-model", role: "assistant", content: { type: "text", text: "sampled by the client" } };
const CONFIRMED = { action: "accept", content: { ok: true } };

/**
 * A connected client of either SDK: `callTool(params, options)`, `wire`, `sent`, what it was
 * asked to sample (`sampled`) and to confirm (`elicited`), `era`.
 */
async function open(url, kind) {
  const sampled = [];
  const elicited = [];
  if (kind === "v1") {
    const { wire, sent, fetch } = tap();
    const client = await connect(url, { capabilities: { sampling: {}, elicitation: {} }, fetch });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      sampled.push(request.params.messages.length);
      return SAMPLE;
    });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(request.params.message);
      return CONFIRMED;
    });
    return {
      era: "legacy",
      negotiated: client.transport?.protocolVersion,
      callTool: (params, options) => client.callTool(params, undefined, options),
      listTools: () => client.listTools(),
      close: () => client.close(),
      wire,
      sent,
      sampled,
      elicited,
    };
  }
  const era = kind.slice("v2-".length);
  const capabilities = { sampling: {}, elicitation: { form: {} } };
  const { client, wire, sent, connect: connectV2 } = clientV2(url, { era, capabilities });
  client.setRequestHandler("sampling/createMessage", async (request) => {
    sampled.push(request.params.messages.length);
    return SAMPLE;
  });
  client.setRequestHandler("elicitation/create", async (request) => {
    elicited.push(request.params.message);
    return CONFIRMED;
  });
  await connectV2();
  const negotiated = client.getNegotiatedProtocolVersion();
  const got = client.getProtocolEra();
  if (got === "modern") {
    const discovered = client.getDiscoverResult();
    check(discovered?.supportedVersions.includes(MODERN), `discovered ${JSON.stringify(discovered)}`);
    check(discovered.capabilities.tools !== undefined, `no tools capability: ${JSON.stringify(discovered)}`);
    const again = await client.discover();
    check(again.supportedVersions.includes(MODERN), `server/discover again: ${JSON.stringify(again)}`);
  }
  return {
    era: got,
    negotiated,
    callTool: (params, options) => client.callTool(params, options),
    listTools: () => client.listTools(),
    close: () => client.close(),
    wire,
    sent,
    sampled,
    elicited,
  };
}

main(async ([url, kind, up, flaky, threshold]) => {
  const client = await open(url, kind);
  const { wire, sampled, elicited } = client;
  const modern = client.era === "modern";
  check(modern === (kind === "v2-modern" || kind === "v2-auto"), `${kind} connected in era ${client.era}`);
  if (modern) check(client.negotiated === MODERN, `negotiated ${client.negotiated}`);

  const tools = (await client.listTools()).tools.map((t) => t.name);
  for (const name of [`${up}echo`, `${up}ask`, `${up}wait`, `${flaky}fail`]) {
    check(tools.includes(name), `${name} is not listed: ${tools}`);
  }
  const echoed = await client.callTool({ name: `${up}echo`, arguments: { text: "hello" } });
  check(!echoed.isError && text(echoed) === "hello", `echo: ${JSON.stringify(echoed)}`);

  const progress = [];
  const asked = await client.callTool({ name: `${up}ask`, arguments: {} }, { onprogress: (p) => progress.push(p) });
  check(!asked.isError && text(asked) === "sampled by the client", `ask: ${JSON.stringify(asked)}`);
  check(sampled.length === 1, `sampling requests: ${sampled.length}`);
  const relayed = progress.filter((p) => !isRound(p));
  const rounds = progress.filter(isRound);
  check(relayed.length >= 1, `the upstream's progress: ${JSON.stringify(progress)}`);
  const legs = wire.filter((w) => w.method === "tools/call" && w.params?.name === `${up}ask`);
  let requestState = false;
  if (modern) {
    // The first leg without answers; the SDK's retry with the sample.
    check(legs.length === 2, `ask's legs: ${JSON.stringify(legs)}`);
    check(legs[0].params.inputResponses === undefined, `the first leg: ${JSON.stringify(legs[0])}`);
    const answer = only(legs[1].params.inputResponses);
    check(answer?.content?.text === "sampled by the client", `the retry: ${JSON.stringify(legs[1])}`);
    check(rounds.length === 1, `the SDK's rounds: ${JSON.stringify(progress)}`);
    requestState = typeof legs[1].params.requestState === "string";
  } else {
    check(legs.length === 1, `ask's legs: ${JSON.stringify(legs)}`);
    // The sample's answer goes back as a JSON-RPC response (a POST without a method).
    check(wire.some((w) => w.http === "POST" && w.method === undefined), "no answer to the sampling request");
  }

  const confirmed = await client.callTool({ name: `${up}confirm`, arguments: {} });
  check(!confirmed.isError && text(confirmed) === "accept ok=true", `confirm: ${JSON.stringify(confirmed)}`);
  check(elicited.length === 1 && elicited[0] === "Proceed?", `elicitation requests: ${elicited}`);
  const confirmLegs = wire.filter((w) => w.method === "tools/call" && w.params?.name === `${up}confirm`);
  if (modern) {
    check(confirmLegs.length === 2, `confirm's legs: ${JSON.stringify(confirmLegs)}`);
    const answer = only(confirmLegs[1].params.inputResponses);
    check(answer?.action === "accept" && answer.content?.ok === true, `the retry: ${JSON.stringify(confirmLegs[1])}`);
  } else {
    check(confirmLegs.length === 1, `confirm's legs: ${JSON.stringify(confirmLegs)}`);
  }

  const controller = new AbortController();
  let held = false;
  const cancelled = await client
    .callTool(
      { name: `${up}wait`, arguments: {} },
      {
        signal: controller.signal,
        onprogress: () => {
          held = true;
          controller.abort(new Error("cancelled by the test"));
        },
      },
    )
    .then(
      (result) => ({ answered: result }),
      (error) => ({ rejected: String(error?.message ?? error) }),
    );
  check(held, "the upstream never showed that it held the call");
  check(cancelled.rejected !== undefined, `the cancelled call was answered: ${JSON.stringify(cancelled)}`);
  if (!modern) {
    // 2025-11-25: the SDK tells the gateway, which accepts the notification.
    const cancel = await client.sent((w) => w.method === "notifications/cancelled");
    const accepted = await cancel.answered;
    check(accepted === 202, `notifications/cancelled answered ${accepted}: ${JSON.stringify(cancel)}`);
  }
  const after = await client.callTool({ name: `${up}echo`, arguments: { text: "after the cancel" } });
  check(text(after) === "after the cancel", `a call after the cancel: ${JSON.stringify(after)}`);

  const failures = [];
  for (let i = 0; i < Number(threshold); i++) {
    failures.push(status(await client.callTool({ name: `${flaky}fail`, arguments: {} })));
  }
  check(failures.every((s) => s === "failed"), `the failures: ${failures}`);
  const blocked = await client.callTool({ name: `${flaky}echo`, arguments: { text: "blocked?" } });
  check(blocked.isError === true && status(blocked) === "blocked", `after the trip: ${JSON.stringify(blocked)}`);
  const still = await client.callTool({ name: `${up}echo`, arguments: { text: "still" } });
  check(text(still) === "still", `the other upstream after the trip: ${JSON.stringify(still)}`);

  const posts = wire.filter((w) => w.http === "POST");
  const methods = [...new Set(posts.map((w) => w.method ?? "(response)"))];
  const sessions = wire.filter((w) => w.sentSession !== null || w.gotSession !== null);
  const versions = [...new Set(posts.map((w) => w.protocolVersion))];
  if (modern) {
    // 2026-07-28: the SDK cancelled by closing the call's stream, with no notification.
    check(!methods.includes("notifications/cancelled"), `notifications/cancelled: ${methods}`);
    check(!methods.includes("initialize"), `initialize was sent: ${methods}`);
    check(methods[0] === "server/discover", `the first request: ${methods[0]}`);
    check(sessions.length === 0, `a session header: ${JSON.stringify(sessions)}`);
    check(versions.length === 1 && versions[0] === MODERN, `protocol version headers: ${versions}`);
  } else {
    check(methods[0] === "initialize", `the first request: ${methods[0]}`);
    check(sessions.length > 0, "no session in 2025-11-25");
    check(!methods.includes("server/discover") || kind === "v2-auto", `server/discover: ${methods}`);
  }
  await client.close();
  return {
    era: client.era,
    negotiated: client.negotiated,
    tools: tools.length,
    sampled: sampled.length,
    elicited: elicited.length,
    confirmed: text(confirmed),
    progress,
    requestState,
    cancelled: cancelled.rejected,
    failures,
    blocked: status(blocked),
    dependency: blocked.structuredContent.dependency,
    methods,
    requests: posts.length,
  };
});
