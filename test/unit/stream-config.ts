import { parseStreamConfig, type StreamConfig } from "../../src/stream/config";

/** A stream config from a PUT body, for tests that need a valid one (an invalid body is the test's bug: it throws). */
export function validConfig(body: unknown): StreamConfig {
  const r = parseStreamConfig(body);
  if (!r.ok) throw new Error(`invalid stream config: ${JSON.stringify(r.errors)}`);
  return r.config;
}

/** The errors of a PUT body that must be invalid (a valid one is the test's bug: it throws). */
export function configErrors(body: unknown): { path: string; message: string }[] {
  const r = parseStreamConfig(body);
  if (r.ok) throw new Error(`expected an invalid config, got ${JSON.stringify(r.config).slice(0, 200)}`);
  return r.errors;
}
