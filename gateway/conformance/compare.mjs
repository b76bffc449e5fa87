// Compares two tallies of run.sh: every scenario that passed against the first server (the
// upstream, directly) must pass against the second (the gateway in front of it).
//
//   node compare.mjs DIRECT/tally.json GATEWAY/tally.json OUT.json
//
// Writes OUT.json {"direct": {passed, total}, "gateway": {passed, total}, "regressions": [NAME]}
// and prints the regressions with the gateway run's reasons. Exit status 1 when there is one.
import { readFileSync, writeFileSync } from 'node:fs';

const [directFile, gatewayFile, outFile] = process.argv.slice(2);
if (!directFile || !gatewayFile || !outFile) {
  console.error('usage: node compare.mjs DIRECT.json GATEWAY.json OUT.json');
  process.exit(2);
}
const direct = JSON.parse(readFileSync(directFile, 'utf8'));
const gateway = JSON.parse(readFileSync(gatewayFile, 'utf8'));

const regressions = Object.entries(direct.scenarios)
  .filter(([name, r]) => r.result === 'pass' && gateway.scenarios[name]?.result !== 'pass')
  .map(([name]) => name);

writeFileSync(
  outFile,
  JSON.stringify(
    {
      direct: { url: direct.url, passed: direct.passed, total: direct.total },
      gateway: { url: gateway.url, passed: gateway.passed, total: gateway.total },
      regressions,
    },
    null,
    2,
  ) + '\n',
);

console.log(`directly: ${direct.passed}/${direct.total}; through the gateway: ${gateway.passed}/${gateway.total}`);
if (regressions.length) {
  console.log(`${regressions.length} scenario(s) pass directly but fail through the gateway:`);
  for (const name of regressions) {
    const r = gateway.scenarios[name];
    console.log(`  ${name}: ${r ? r.reason ?? 'failed' : 'not run'}`);
  }
  process.exit(1);
}
console.log('every scenario that passes directly passes through the gateway');
