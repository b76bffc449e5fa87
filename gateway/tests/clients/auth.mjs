// Without the bearer token the gateway refuses (401), with a wrong one too, and with the right
// one the client connects and lists tools.
// Usage: node auth.mjs URL TOKEN
import { check, connect, main } from "./common.mjs";

main(async ([url, token]) => {
  const refused = [];
  for (const tried of [undefined, `${token}-wrong`]) {
    try {
      const client = await connect(url, { token: tried });
      await client.close();
    } catch (error) {
      refused.push(String(error.message ?? error));
      continue;
    }
    throw new Error(`connected with token ${tried === undefined ? "none" : "wrong"}`);
  }
  const raw = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  check(raw.status === 401, `a request without the token answered ${raw.status}`);
  const client = await connect(url, { token });
  const tools = (await client.listTools()).tools.length;
  await client.close();
  return { refused: refused.length, status: raw.status, tools };
});
