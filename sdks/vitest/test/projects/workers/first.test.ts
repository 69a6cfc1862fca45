import { replayingTests } from "./replays.js";

replayingTests("first");
