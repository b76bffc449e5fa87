// The v2 SDK as a 2026-07-28 client: opens `subscriptions/listen` for tool list changes (the
// gateway acknowledges it), lists the tools, says so on stderr ("listed"), then waits for
// notifications/tools/list_changed on the listen stream until TOOL is listed, and calls it: a
// reload that adds an upstream while this client listens. Closing the subscription ends it.
// Usage: node listen.mjs URL TOOL
import { check, main } from "./common.mjs";
import { clientV2 } from "./v2.mjs";

main(async ([url, tool]) => {
  const { client, wire, connect } = clientV2(url);
  let changed = 0;
  let wake = () => {};
  client.setNotificationHandler("notifications/tools/list_changed", () => {
    changed += 1;
    wake();
  });
  await connect();
  const subscription = await client.listen({ toolsListChanged: true });
  check(subscription.honoredFilter.toolsListChanged === true, `honored: ${JSON.stringify(subscription.honoredFilter)}`);
  const before = (await client.listTools()).tools.map((t) => t.name);
  check(!before.includes(tool), `${tool} is listed before the reload: ${before}`);
  console.error(`listed ${before.join(",")}`);
  let seen = 0;
  for (;;) {
    if (changed === seen) {
      await new Promise((resolve) => (wake = resolve));
    }
    seen = changed;
    const after = (await client.listTools()).tools.map((t) => t.name);
    if (after.includes(tool)) {
      const called = await client.callTool({ name: tool, arguments: { text: "after reload" } });
      check(!called.isError, `the new upstream's tool answers: ${JSON.stringify(called)}`);
      await subscription.close();
      const closed = await subscription.closed;
      check(closed === "local", `the subscription ended ${closed}`);
      const listens = wire.filter((w) => w.method === "subscriptions/listen");
      check(listens.length === 1, `the listen requests: ${JSON.stringify(listens)}`);
      const opened = await listens[0].answered;
      check(opened === 200, `the listen request answered ${opened}`);
      await client.close();
      return { before, after, changed, closed };
    }
  }
});
