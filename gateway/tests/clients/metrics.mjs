// Calls a tool, then scrapes /metrics and parses Prometheus's text format: the gateway's request
// counter and latency histogram for the upstream, and its breaker's state, every series naming the
// upstream with the one label `dependency`.
// Usage: node metrics.mjs URL TOOL METRICS_URL UPSTREAM [TOKEN]
import { check, connect, main } from "./common.mjs";

function parse(body) {
  const samples = [];
  for (const line of body.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$/);
    check(m, `not Prometheus text: ${line}`);
    const labels = {};
    for (const pair of (m[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]] = pair[2];
    }
    samples.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return samples;
}

main(async ([url, tool, metricsUrl, upstream, token]) => {
  const client = await connect(url, { token });
  const r = await client.callTool({ name: tool, arguments: { text: "m" } });
  check(!r.isError, `the call: ${JSON.stringify(r)}`);
  await client.close();
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const response = await fetch(metricsUrl, { headers });
  check(response.status === 200, `/metrics answered ${response.status}`);
  check((response.headers.get("content-type") ?? "").startsWith("text/plain"), "content type");
  const samples = parse(await response.text());
  const of = (name, labels) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  const calls = of("toolbreaker_gateway_requests_total", { dependency: upstream, method: "tools/call", result: "ok" });
  check(calls.length === 1 && calls[0].value >= 1, `requests counted: ${JSON.stringify(calls)}`);
  const count = of("toolbreaker_gateway_request_duration_seconds_count", { dependency: upstream, method: "tools/call" });
  check(count.length === 1 && count[0].value >= 1, `latency histogram: ${JSON.stringify(count)}`);
  const admitted = of("toolbreaker_calls_admitted_total", { dependency: upstream });
  check(admitted.length === 1 && admitted[0].value >= 1, `breaker counters: ${JSON.stringify(admitted)}`);
  const state = of("toolbreaker_state", { dependency: upstream });
  check(state.length >= 1, `breaker state: ${JSON.stringify(state)}`);
  const other = samples.filter((s) => "upstream" in s.labels);
  check(other.length === 0, `series labelled upstream: ${JSON.stringify(other)}`);
  return { samples: samples.length, calls: calls[0].value };
});
