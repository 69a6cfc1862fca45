import { hundredTests } from "./cases.mjs";

hundredTests("nock");
