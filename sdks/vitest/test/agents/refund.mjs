// The bundled example agent (examples/agent.py) in TypeScript's ecosystem: one tool-call round trip,
// then a streamed answer, with the official openai package. `change` alters one part of a request,
// to make each kind of replay miss (or, `firstCallOnly`, stops after the first call); `maxRetries` is
// the client's (0 unless given), `onText` sees each streamed piece as it arrives.
import OpenAI from "openai";

export const MODEL = "gpt-4o-mini";
export const SYSTEM =
  "You are a refund agent. Use the tools to check an order before you answer, then answer in one sentence.";
export const QUESTION = "Was order O-1042 refunded twice?";

function tools(description) {
  return [
    {
      type: "function",
      function: {
        name: "lookup_order",
        description,
        parameters: {
          type: "object",
          properties: { order_id: { type: "string", description: "The order number, e.g. O-1042" } },
          required: ["order_id"],
          additionalProperties: false,
        },
      },
    },
  ];
}

// The text the example's orders MCP server (examples/orders_server.py) answers, byte for byte, so the
// tool result matches the fixture. This agent answers the tool call itself, so the fixture's tool
// recordings stay unused.
const ORDERS = { "O-1042": '{\n  "order_id": "O-1042",\n  "amount": 42.0,\n  "refunds": [\n    42.0,\n    42.0\n  ]\n}' };

/** Ask the agent; the client is built here, after useReplay, so it reads OPENAI_BASE_URL now. */
export async function runRefundAgent(question = QUESTION, change = {}) {
  const client = new OpenAI({ maxRetries: change.maxRetries ?? 0 });
  const request = {
    model: change.model ?? MODEL,
    tools: tools(change.toolDescription ?? "Look up an order's refunds by its number."),
    temperature: change.temperature ?? 0,
  };
  const messages = [
    { role: "system", content: change.system ?? SYSTEM },
    { role: "user", content: question },
  ];
  const first = await client.chat.completions.create({ ...request, messages });
  const reply = first.choices[0].message;
  if (change.firstCallOnly) return { answer: "", toolCalls: reply.tool_calls ?? [], firstId: first.id };
  messages.push({ role: "assistant", tool_calls: reply.tool_calls });
  for (const call of reply.tool_calls ?? []) {
    const { order_id } = JSON.parse(call.function.arguments);
    messages.push({ role: "tool", tool_call_id: call.id, content: ORDERS[order_id] ?? "{}" });
  }
  const stream = await client.chat.completions.create({ ...request, messages, stream: true });
  let answer = "";
  for await (const chunk of stream) {
    const text = chunk.choices[0]?.delta?.content ?? "";
    change.onText?.(text);
    answer += text;
  }
  return { answer, toolCalls: reply.tool_calls ?? [], firstId: first.id };
}
