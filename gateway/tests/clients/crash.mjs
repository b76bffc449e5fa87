// A stdio upstream that crashes and comes back: a call that crashes it fails, the next ones are
// answered `isError` (failed or blocked) while it is down, and calls succeed again once the
// gateway has restarted it and its breaker has closed.
// Usage: node crash.mjs URL ECHO_TOOL CRASH_TOOL
import { check, connect, main, text } from "./common.mjs";

main(async ([url, echo, crash]) => {
  const client = await connect(url);
  const first = await client.callTool({ name: echo, arguments: { text: "before" } });
  check(text(first) === "before", `before the crash: ${JSON.stringify(first)}`);
  const crashed = await client.callTool({ name: crash, arguments: {} });
  check(crashed.isError === true, `the crashing call: ${JSON.stringify(crashed)}`);
  const seen = [];
  for (let i = 0; i < 400; i++) {
    const r = await client.callTool({ name: echo, arguments: { text: "after" } });
    const status = r.isError ? r.structuredContent?.status ?? "error" : "ok";
    if (seen[seen.length - 1] !== status) seen.push(status);
    if (!r.isError) {
      check(text(r) === "after", `after the restart: ${JSON.stringify(r)}`);
      await client.close();
      return { statuses: seen, calls: i + 1 };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the upstream never came back: ${seen}`);
});
