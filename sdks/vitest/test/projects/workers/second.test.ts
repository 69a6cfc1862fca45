import { replayingTests } from "./replays.js";

replayingTests("second");
