// Lists the tools, says so on stderr ("listed"), then waits for notifications/tools/list_changed
// until TOOL is listed: a reload that adds an upstream while this client stays connected.
// Usage: node reload.mjs URL TOOL
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, connect, main } from "./common.mjs";

main(async ([url, tool]) => {
  const client = await connect(url);
  let changed = 0;
  let wake = () => {};
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changed += 1;
    wake();
  });
  const before = (await client.listTools()).tools.map((t) => t.name);
  check(!before.includes(tool), `${tool} is listed before the reload: ${before}`);
  console.error(`listed ${before.join(",")}`);
  for (;;) {
    await new Promise((resolve) => (wake = resolve));
    const after = (await client.listTools()).tools.map((t) => t.name);
    if (after.includes(tool)) {
      const called = await client.callTool({ name: tool, arguments: { text: "after reload" } });
      check(!called.isError, `the new upstream's tool answers: ${JSON.stringify(called)}`);
      await client.close();
      return { before, after, changed };
    }
  }
});
