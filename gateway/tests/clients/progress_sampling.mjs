// A tool call whose upstream reports progress and asks the client for a sample: both reach
// this client through the gateway, and the sample's answer reaches the upstream.
// Usage: node progress_sampling.mjs URL TOOL
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, connect, main, text } from "./common.mjs";

main(async ([url, tool]) => {
  const client = await connect(url, { capabilities: { sampling: {} } });
  const sampled = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    sampled.push(request.params.messages.length);
    return { model: "test-model", role: "assistant", content: { type: "text", text: "sampled by the client" } };
  });
  const progress = [];
  const result = await client.callTool({ name: tool, arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  check(text(result) === "sampled by the client", `the tool's answer: ${JSON.stringify(result)}`);
  check(sampled.length === 1, `sampling requests: ${sampled.length}`);
  check(progress.length >= 1, `progress notifications: ${progress.length}`);
  await client.close();
  return { sampled: sampled.length, progress };
});
