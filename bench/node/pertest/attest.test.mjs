import { hundredTests } from "./cases.mjs";

hundredTests("attest");
