// The mode: the argument, else ATTEST_REPLAY, else strict when CI is set and auto locally.
import { afterEach, describe, expect, it } from "vitest";

import { defaultMode, resolveMode, useReplay } from "@attest-ai/vitest";

describe("the replay mode", () => {
  const saved = process.env.ATTEST_REPLAY;
  afterEach(() => {
    if (saved === undefined) delete process.env.ATTEST_REPLAY;
    else process.env.ATTEST_REPLAY = saved;
  });

  it("defaults to strict when CI is set, else auto", () => {
    expect(defaultMode({ CI: "true" })).toBe("strict");
    expect(defaultMode({ CI: "1" })).toBe("strict");
    expect(defaultMode({})).toBe("auto");
    expect(defaultMode({ CI: "false" })).toBe("auto");
    expect(defaultMode({ CI: "" })).toBe("auto");
  });

  it("reads the argument first, then ATTEST_REPLAY, and nothing else", () => {
    expect(resolveMode(undefined, { ATTEST_REPLAY: "off", CI: "true" })).toBe("off");
    expect(resolveMode("auto", { ATTEST_REPLAY: "off", CI: "true" })).toBe("auto");
    expect(() => resolveMode(undefined, { ATTEST_REPLAY: "loose" })).toThrow(
      'attest replay: ATTEST_REPLAY must be strict, auto or off, not "loose"',
    );
  });

  it("starts nothing when ATTEST_REPLAY=off", async () => {
    process.env.ATTEST_REPLAY = "off";
    const replay = await useReplay("no-such-fixture", { enginePath: "/nonexistent/attest-engine" });
    expect(replay.mode).toBe("off");
    expect(replay.env).toEqual({});
  });
});
