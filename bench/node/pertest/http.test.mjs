import { hundredTests } from "./cases.mjs";

hundredTests("node:http");
