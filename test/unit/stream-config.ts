import { parseStreamConfig, type StreamConfig } from "../../src/stream/config";

/** A stream config from a PUT body, for tests that need a valid one (an invalid body is the test's bug: it throws). */
export function validConfig(body: Record<string, unknown>): StreamConfig {
  const r = parseStreamConfig(body);
  if (!r.ok) throw new Error(`invalid stream config: ${JSON.stringify(r.errors)}`);
  return r.config;
}
