/**
 * The setup file `attestReplay()` (./plugin.js) adds: it starts the worker's default engine as the
 * worker starts, before the test file and what it imports (the agent, the SDKs) are loaded, so the
 * engine's start overlaps them. It imports nothing of Vitest.
 */

import { startDefault } from "./engine.js";
import "./lane.js"; // notes the process's own fetch before any setup file of the user's can replace it

startDefault();
