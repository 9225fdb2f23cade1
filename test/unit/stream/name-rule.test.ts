/**
 * One rule for stream, source and destination names, and one wording of it
 * (issue 28): every place that refuses a name quotes NAME_RULE, and a name
 * the rule refuses ("_x": it must start with a letter or digit) is refused
 * wherever a caller may give one, never told fine first.
 */
import { describe, expect, test } from "vitest";
import { parseCli } from "../../../src/cli/args";
import { NAME_PATTERN, NAME_RULE } from "../../../src/stream/name-rule";
import { configErrors } from "../stream-config";

describe("the name rule", () => {
  test("is NAME_PATTERN, in NAME_RULE's words", () => {
    for (const ok of ["a", "A1", "stripe.prod", "x_y-z", "9".repeat(64)]) expect(NAME_PATTERN.test(ok)).toBe(true);
    for (const bad of ["", "_x", ".x", "-x", "a b", "a/b", "é", "9".repeat(65)]) expect(NAME_PATTERN.test(bad)).toBe(false);
    expect(NAME_RULE).toBe("1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit");
  });

  test("a source the rule refuses is refused with its words by the config and by the CLI", () => {
    expect(configErrors({ key: ["id"], mode: "global", sources: { _x: {} } })).toEqual([expect.objectContaining({ path: "sources._x", message: NAME_RULE })]);
    expect(parseCli(["send", "dir", "--url", "http://127.0.0.1:1", "--stream", "s", "--source", "_x"], {})).toEqual({
      kind: "error",
      message: expect.stringContaining(`--source must be a source name: ${NAME_RULE}`),
    });
  });
});
