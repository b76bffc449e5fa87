// Tallies one run of the MCP conformance suite's server scenarios (run.sh): reads each
// scenario's checks.json under RAW (written by `conformance server -o RAW`) and writes
// tally.json and tally.tsv to OUTDIR; prints a table.
//
//   node tally.mjs OUTDIR URL SCENARIO...
//
// A scenario passes when it left a checks.json and none of its checks is a FAILURE; its
// WARNINGs are counted but do not fail it. A scenario without checks.json (the suite crashed,
// or it ran past its time limit) fails.
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [outdir, url, ...scenarios] = process.argv.slice(2);
if (!outdir || !url) {
  console.error('usage: node tally.mjs OUTDIR URL SCENARIO...');
  process.exit(2);
}
const raw = join(outdir, 'raw');
const dirs = existsSync(raw) ? readdirSync(raw) : [];

// The newest result directory of a scenario: `server-NAME-TIMESTAMP`, the timestamp ISO-like,
// so the names sort by time. A name that is a prefix of another (`ping`) must not match the
// longer one's directories, hence the timestamp's shape right after the name.
function resultDir(name) {
  const prefix = `server-${name}-`;
  const ours = dirs
    .filter((d) => d.startsWith(prefix) && /^\d{4}-\d\d-\d\dT/.test(d.slice(prefix.length)))
    .sort();
  return ours.length ? join(raw, ours[ours.length - 1]) : null;
}

function exitCode(name) {
  const file = join(outdir, 'logs', `${name}.rc`);
  return existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : null;
}

const results = {};
for (const name of scenarios) {
  const dir = resultDir(name);
  const file = dir && join(dir, 'checks.json');
  const entry = { result: 'fail', failures: 0, warnings: 0, exit: exitCode(name) };
  if (!file || !existsSync(file)) {
    entry.reason = entry.exit === 124 ? 'timed out' : 'no checks.json';
  } else {
    const checks = JSON.parse(readFileSync(file, 'utf8'));
    const failed = checks.filter((c) => c.status === 'FAILURE');
    entry.failures = failed.length;
    entry.warnings = checks.filter((c) => c.status === 'WARNING').length;
    entry.result = failed.length === 0 ? 'pass' : 'fail';
    if (failed.length) {
      entry.reason = failed.map((c) => `${c.id}: ${c.errorMessage ?? c.description}`).join('; ');
    }
  }
  results[name] = entry;
}

const names = Object.keys(results);
const passed = names.filter((n) => results[n].result === 'pass');
const tally = {
  url,
  suite: '@modelcontextprotocol/conformance',
  version: process.env.SUITE_VERSION ?? null,
  total: names.length,
  passed: passed.length,
  failed: names.length - passed.length,
  scenarios: results,
};
writeFileSync(join(outdir, 'tally.json'), JSON.stringify(tally, null, 2) + '\n');
writeFileSync(
  join(outdir, 'tally.tsv'),
  names.map((n) => `${n}\t${results[n].result}`).join('\n') + '\n',
);

const width = Math.max(...names.map((n) => n.length), 8);
for (const n of names) {
  const r = results[n];
  const note = r.warnings ? ` (${r.warnings} warning${r.warnings > 1 ? 's' : ''})` : '';
  const why = r.reason ? `  ${r.reason}` : '';
  console.log(`${n.padEnd(width)}  ${r.result.toUpperCase()}${note}${why}`);
}
console.log(`${passed.length}/${names.length} server scenarios pass against ${url}`);
