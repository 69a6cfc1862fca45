// An Anthropic agent with the official @anthropic-ai/sdk package: a tool_use turn, then a streamed
// answer. Run directly (`node weather.mjs`) it prints the answer, which is how `attest capture`
// records it.
import Anthropic from "@anthropic-ai/sdk";
import { pathToFileURL } from "node:url";

export const MODEL = "claude-sonnet-4-6";
const SYSTEM = "You answer questions about the weather. Use the tool.";
const TOOLS = [
  {
    name: "get_weather",
    description: "The current weather in a city.",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];

export async function runWeatherAgent(city = "Paris") {
  const client = new Anthropic({ maxRetries: 0 });
  const messages = [{ role: "user", content: `What is the weather in ${city}?` }];
  const base = { model: MODEL, max_tokens: 256, system: SYSTEM, tools: TOOLS };
  const first = await client.messages.create({ ...base, messages });
  const use = first.content.find((block) => block.type === "tool_use");
  messages.push({ role: "assistant", content: first.content });
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: use.id, content: `Sunny, 21°C in ${use.input.city}` }],
  });
  const stream = client.messages.stream({ ...base, messages });
  let answer = "";
  stream.on("text", (text) => {
    answer += text;
  });
  await stream.finalMessage();
  return { answer, toolUse: use };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { answer } = await runWeatherAgent();
  console.log(answer);
}
