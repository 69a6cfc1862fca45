/**
 * `@attest-ai/vitest/reporter`: writes report-v2, the pytest helper's report, for a Vitest run, so
 * `attest policy evaluate`, `attest report summary`, `attest select` and the action read it unchanged.
 *
 *     // vitest.config.ts
 *     export default defineConfig({ test: { reporters: ["default", "@attest-ai/vitest/reporter"] } });
 *
 * The report goes to ATTEST_REPORT if set (the action sets it), else the reporter's `outputFile`
 * option, else attest-report.json, relative to the Vitest root. The reporter turns each test into a
 * row; `attest-engine report` adds the run's egress (probed in this network namespace), redacts
 * secrets, validates and writes the file.
 */
import type { Reporter, TestModule, Vitest } from "vitest/node";
export interface AttestReporterOptions {
    /** Where to write the report (ATTEST_REPORT wins); default attest-report.json. */
    outputFile?: string;
    /** The engine that writes it; default `attest-engine` on PATH. */
    enginePath?: string;
}
export default class AttestReporter implements Reporter {
    private readonly options;
    private root;
    private repo;
    private started;
    constructor(options?: AttestReporterOptions);
    onInit(vitest: Vitest): void;
    onTestRunEnd(testModules: ReadonlyArray<TestModule>): void;
    private moduleRows;
    private row;
    private relative;
}
