// Tallies one run of the MCP conformance suite's server scenarios (run.sh): reads each
// scenario's checks.json under OUTDIR/raw (written by `conformance server -o RAW`) and writes
// tally.json and tally.tsv to OUTDIR; prints a table.
//
//   node tally.mjs OUTDIR URL SCENARIOS.tsv
//
// SCENARIOS.tsv: one line per scenario run, NAME<TAB>scored, or NAME<TAB>WHY for one the
// requirement set (REQUIREMENTS in the environment) runs but does not score. `total`, `passed`
// and `failed` count the scored ones; the others are tallied under `notScored`.
//
// A scenario passes when it left a checks.json and none of its checks is a FAILURE; its
// WARNINGs are counted but do not fail it. A scenario without checks.json (the suite crashed,
// or it ran past its time limit) fails.
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [outdir, url, list] = process.argv.slice(2);
if (!outdir || !url || !list) {
  console.error('usage: node tally.mjs OUTDIR URL SCENARIOS.tsv');
  process.exit(2);
}
const scenarios = readFileSync(list, 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => {
    const [name, why = 'scored'] = line.split('\t');
    return { name, why };
  });
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
const notScored = {};
for (const { name, why } of scenarios) {
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
  if (why === 'scored') {
    results[name] = entry;
  } else {
    notScored[name] = { ...entry, why };
  }
}

const names = Object.keys(results);
const passed = names.filter((n) => results[n].result === 'pass');
const tally = {
  url,
  suite: '@modelcontextprotocol/conformance',
  version: process.env.SUITE_VERSION ?? null,
  requirements: process.env.REQUIREMENTS ?? null,
  total: names.length,
  passed: passed.length,
  failed: names.length - passed.length,
  scenarios: results,
  notScored,
};
writeFileSync(join(outdir, 'tally.json'), JSON.stringify(tally, null, 2) + '\n');
writeFileSync(
  join(outdir, 'tally.tsv'),
  names.map((n) => `${n}\t${results[n].result}`).join('\n') + '\n',
);

const others = Object.keys(notScored);
const width = Math.max(...names.map((n) => n.length), ...others.map((n) => n.length), 8);
const line = (n, r) => {
  const note = r.warnings ? ` (${r.warnings} warning${r.warnings > 1 ? 's' : ''})` : '';
  const why = r.reason ? `  ${r.reason}` : '';
  console.log(`${n.padEnd(width)}  ${r.result.toUpperCase()}${note}${why}`);
};
for (const n of names) line(n, results[n]);
const set = tally.requirements ? ` of requirement set ${tally.requirements}` : '';
console.log(`${passed.length}/${names.length} scored server scenarios${set} pass against ${url}`);
if (others.length) {
  console.log(`run but not scored by the set:`);
  for (const n of others) line(`${n} (${notScored[n].why})`, notScored[n]);
  const ok = others.filter((n) => notScored[n].result === 'pass').length;
  console.log(`${ok}/${others.length} unscored server scenarios pass`);
}
