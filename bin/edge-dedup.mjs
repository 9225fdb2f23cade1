#!/usr/bin/env node
// The `edge-dedup` command (src/cli). Plain ESM so that it starts on whatever
// Node ran `npm install` (Node 20 included):
// - Node 22.18+ strips TypeScript types by default and imports src/cli/main.ts;
// - Node 22.6–22.17 runs this file again in a child Node with --experimental-strip-types;
// - older Node (20, 22.0–22.5) goes through scripts/node22.mjs, the bootstrap
//   `npm start` and `npm test` use: a Node 22 from the npm registry, installed
//   once into a cache folder, runs this file.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const self = fileURLToPath(import.meta.url);
const [major, minor] = process.versions.node.split(".").map(Number);
const canStrip = major > 22 || (major === 22 && minor >= 6);

if (process.features.typescript) {
  const { main } = await import("../src/cli/main.ts");
  const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
  // Let stdout drain (a pipe may be slow) before the exit code is set.
  process.exitCode = code;
} else {
  const args = canStrip
    ? ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", self]
    : [fileURLToPath(new URL("../scripts/node22.mjs", import.meta.url)), self];
  const child = spawnSync(process.execPath, [...args, ...process.argv.slice(2)], { stdio: "inherit" });
  if (child.error) throw child.error;
  process.exitCode = child.status ?? 1;
}
