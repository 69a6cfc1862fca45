import { hundredTests } from "./cases.mjs";

hundredTests("aimock");
