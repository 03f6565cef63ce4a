// Where a process spent its busy time within chosen moments, from a V8 CPU profile
// (BENCH_PROFILE_DIR): self and inclusive time per function, idle left out.
//
//   node bench/lib/profile-window.mjs <file.cpuprofile> [<from_ms>:<to_ms> ...]
//
// The moments are on the machine's monotonic clock in milliseconds (process.hrtime, which is
// what V8 stamps its samples with): bigchannel prints each round's `sent at`. Without moments,
// the whole profile.
import fs from 'node:fs';

const [file, ...windowArgs] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/lib/profile-window.mjs <file.cpuprofile> [<from_ms>:<to_ms> ...]');
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const windows = windowArgs.map((arg) => arg.split(':').map(Number));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

const label = ({ callFrame }) =>
  `${callFrame.functionName || '(anonymous)'} ${callFrame.url.split('/').slice(-2).join('/')}:${callFrame.lineNumber + 1}`;

const self = new Map();
const inclusive = new Map();
let busyMs = 0;
let idleMs = 0;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i];
  const ms = at / 1000;
  if (windows.length && !windows.some(([from, to]) => ms >= from && ms <= to)) continue;
  // A sample stands for the time until the next one.
  const spent = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i]) / 1000;
  const node = nodes.get(profile.samples[i]);
  if (node.callFrame.functionName === '(idle)') {
    idleMs += spent;
    continue;
  }
  busyMs += spent;
  self.set(label(node), (self.get(label(node)) ?? 0) + spent);
  // Each function once per sample, however deep it recurses.
  const seen = new Set();
  for (let id = node.id; id !== undefined; id = parents.get(id)) {
    const name = label(nodes.get(id));
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + spent);
  }
}

const top = (times, count) =>
  [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => `${((100 * ms) / busyMs).toFixed(1).padStart(5)} % ${ms.toFixed(0).padStart(7)} ms  ${name}`)
    .join('\n');
console.log(`busy ${busyMs.toFixed(0)} ms, idle ${idleMs.toFixed(0)} ms`);
console.log(`--- self\n${top(self, 40)}`);
console.log(`--- inclusive\n${top(inclusive, 60)}`);
