import { defineConfig } from "vitest/config";

// `npm run soak`: minutes of sustained load on a real local server; not part of `npm test`.
export default defineConfig({
  test: {
    include: ["test/soak/**/*.test.ts"],
    environment: "node",
    testTimeout: 15 * 60_000,
    hookTimeout: 120_000,
  },
});
