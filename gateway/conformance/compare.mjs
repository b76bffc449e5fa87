// Compares two tallies of run.sh for one requirement set: every scenario that passed against
// the first server (the upstream, directly) must pass against the second (the gateway in front
// of it), the scenarios the set does not score included.
//
//   node compare.mjs DIRECT/tally.json GATEWAY/tally.json OUT.json
//
// Writes OUT.json {"requirements", "direct": {url, passed, total, notScored: {passed, total}},
// "gateway": {...}, "regressions": [NAME]} and prints the tallies and the regressions with the
// gateway run's reasons. Exit status 1 when there is a regression.
import { readFileSync, writeFileSync } from 'node:fs';

const [directFile, gatewayFile, outFile] = process.argv.slice(2);
if (!directFile || !gatewayFile || !outFile) {
  console.error('usage: node compare.mjs DIRECT.json GATEWAY.json OUT.json');
  process.exit(2);
}
const direct = JSON.parse(readFileSync(directFile, 'utf8'));
const gateway = JSON.parse(readFileSync(gatewayFile, 'utf8'));

// Every scenario a tally holds, scored or not.
const all = (tally) => ({ ...(tally.notScored ?? {}), ...tally.scenarios });
const directAll = all(direct);
const gatewayAll = all(gateway);

const regressions = Object.entries(directAll)
  .filter(([name, r]) => r.result === 'pass' && gatewayAll[name]?.result !== 'pass')
  .map(([name]) => name);

const counts = (tally) => {
  const others = Object.values(tally.notScored ?? {});
  return {
    url: tally.url,
    passed: tally.passed,
    total: tally.total,
    notScored: { passed: others.filter((r) => r.result === 'pass').length, total: others.length },
  };
};
const summary = {
  requirements: direct.requirements ?? null,
  direct: counts(direct),
  gateway: counts(gateway),
  regressions,
};
writeFileSync(outFile, JSON.stringify(summary, null, 2) + '\n');

const set = summary.requirements ? `requirement set ${summary.requirements}: ` : '';
const line = (c) => `${c.passed}/${c.total} (not scored: ${c.notScored.passed}/${c.notScored.total})`;
console.log(`${set}directly ${line(summary.direct)}; through the gateway ${line(summary.gateway)}`);
if (regressions.length) {
  console.log(`${regressions.length} scenario(s) pass directly but fail through the gateway:`);
  for (const name of regressions) {
    const r = gatewayAll[name];
    console.log(`  ${name}: ${r ? (r.reason ?? 'failed') : 'not run'}`);
  }
  process.exit(1);
}
console.log('every scenario that passes directly passes through the gateway');
