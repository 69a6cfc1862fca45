// mocks.mjs's bare node:http server in a process of its own; prints its port.
import { bareServer } from "./mocks.mjs";

const server = bareServer();
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
