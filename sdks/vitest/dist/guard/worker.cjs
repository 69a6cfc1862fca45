"use strict";
/**
 * Preloaded (`--require`) into each worker thread started while the guard is on: a Worker has its own
 * copy of every module, so the hook in the thread that started it does not reach it. Node only
 * preloads CommonJS into a worker; hooks.js is ESM, loaded here by require (Node 20.19 and later).
 */
Object.defineProperty(exports, "__esModule", { value: true });
const hooks = require("./hooks.js");
hooks.install();
//# sourceMappingURL=worker.cjs.map