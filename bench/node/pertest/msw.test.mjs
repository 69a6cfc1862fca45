import { hundredTests } from "./cases.mjs";

hundredTests("msw");
