import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    reporters: ["default", "./test/support/summary-reporter.ts"],
    // The JSON line each commit logs (src/instrument/observe.ts; its shape is unit-tested) would be most of the workers' output.
    onConsoleLog: (log) => !log.startsWith('{"stream":'),
    projects: [
      {
        // Pure logic in src/stream: fast, in Node.
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" },
      },
      {
        // Durable Objects, R2 and the Worker inside workerd.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                ADMIN_TOKEN: "test-admin-token",
                ADMIN_TOKEN_PREVIOUS: "",
                CREDENTIALS_KEY: "test-credentials-key-of-32-characters-or-more",
                CORS_ORIGINS: "",
                ALLOW_LOOPBACK_DESTINATIONS: "true",
              },
              // The delivery tests' second Worker (test/support/delivery-helper-worker.js): a queue consumer and an RPC caller.
              serviceBindings: { DELIVERY_HELPER: "delivery-helper" },
              workers: [
                {
                  name: "delivery-helper",
                  modules: true,
                  scriptPath: "./test/support/delivery-helper-worker.js",
                  compatibilityDate: "2026-11-01",
                  kvNamespaces: ["RECEIVED"],
                  queueConsumers: { "edge-dedup-deliveries": { maxBatchSize: 100, maxBatchTimeout: 0.05 } },
                  // The Worker under test runs as the pool's runner (named after the project).
                  serviceBindings: { DEDUP: { name: "vitest-plugin-runner-workers", entrypoint: "EdgeDedup" } },
                },
              ],
            },
          }),
        ],
        // icebird (the tests' independent table reader) imports hyparquet-compressors, whose WebAssembly workerd refuses to compile.
        resolve: { alias: { "hyparquet-compressors": fileURLToPath(new URL("./test/support/no-compressors.ts", import.meta.url)) } },
        // Test builds: fault points on; the open segment sealed at 16 KiB (src/partition/open-segment.ts), so model runs seal often.
        define: { __FAULTS__: "true", __OPEN_MAX_BYTES__: "16384" },
        test: { name: "workers", include: ["test/integration/**/*.test.ts"], testTimeout: 30_000 },
      },
      {
        // A real `wrangler dev` server on 127.0.0.1 with state persisted on disk.
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
