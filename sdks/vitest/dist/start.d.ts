/**
 * The setup file `attestReplay()` (./plugin.js) adds: it starts the worker's default engine as the
 * worker starts, before the test file and what it imports (the agent, the SDKs) are loaded, so the
 * engine's start overlaps them. It imports nothing of Vitest.
 */
import "./lane.js";
