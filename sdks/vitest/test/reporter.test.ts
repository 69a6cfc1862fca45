// The reporter when attest-toolkit is not installed: one line saying where to install it from, and a
// failed run, never an unhandled error with a stack trace.
import { afterEach, describe, expect, it, vi } from "vitest";

import AttestReporter from "@attest-ai/vitest/reporter";

describe("reporter", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it("says on one line that the engine is missing and where attest-toolkit comes from", () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const reporter = new AttestReporter({ enginePath: "/nonexistent/attest-engine", outputFile: "report.json" });
    expect(() => reporter.onTestRunEnd([])).not.toThrow();
    expect(written).toEqual([
      `attest reporter: cannot write ${process.cwd()}/report.json: /nonexistent/attest-engine: not found; install ` +
        'attest-toolkit (pip install "attest-toolkit @ git+https://github.com/attest-toolkit/attest-toolkit") or pass enginePath\n',
    ]);
    expect(process.exitCode).toBe(1);
  });
});
