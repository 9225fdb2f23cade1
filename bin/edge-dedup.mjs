#!/usr/bin/env node
// The `edge-dedup` command (src/cli). Plain ESM so that it starts on every Node
// the package allows (>= 22.12): Node 22.18+ strips TypeScript types by default
// and imports src/cli/main.ts directly; older 22.x needs --experimental-strip-types,
// so there the command runs itself again in a child Node with that flag.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

if (process.features.typescript) {
  const { main } = await import("../src/cli/main.ts");
  const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
  // Let stdout drain (a pipe may be slow) before the exit code is set.
  process.exitCode = code;
} else {
  const child = spawnSync(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: "inherit" },
  );
  if (child.error) throw child.error;
  process.exitCode = child.status ?? 1;
}
