// Node clients of picoora's OpenAI-compatible endpoint, each in its default mode:
//   node clients.mjs <scenario>   (PICOORA_URL: the gateway's base URL; PICOORA_TOKEN: its token)
// Prints one JSON line: what the client got. tests/test_node_clients.py runs each scenario and checks it,
// and what the scripted model server received.
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, stepCountIs, tool } from "ai";
import OpenAI from "openai";
import { z } from "zod";

const baseURL = `${process.env.PICOORA_URL}/v1`;
const apiKey = process.env.PICOORA_TOKEN;
const openai = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const provider = createOpenAI({ baseURL, apiKey });
const weatherParameters = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
};
const sunny = ({ city }) => `sunny in ${city}`;

const scenarios = {
  async chat() {
    const completion = await openai.chat.completions.create({
      model: "picoora",
      messages: [{ role: "user", content: "hello from node" }],
    });
    return { text: completion.choices[0].message.content, usage: completion.usage.total_tokens };
  },

  async stream() {
    const stream = await openai.chat.completions.create({
      model: "picoora",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "stream to node" }],
    });
    const pieces = [];
    let usage = 0;
    for await (const chunk of stream) {
      pieces.push(chunk.choices[0]?.delta?.content ?? "");
      usage = chunk.usage?.total_tokens ?? usage;
    }
    return { text: pieces.join(""), pieces: pieces.filter(Boolean).length, usage };
  },

  async tools() {
    const completion = await openai.chat.completions.create({
      model: "picoora",
      messages: [{ role: "user", content: "weather in Oslo" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: weatherParameters } }],
    });
    const call = completion.choices[0].message.tool_calls[0];
    return { name: call.function.name, arguments: JSON.parse(call.function.arguments) };
  },

  async runTools() {
    const runner = openai.chat.completions.runTools({
      model: "picoora",
      messages: [{ role: "user", content: "weather in Oslo" }],
      tools: [{
        type: "function",
        function: { name: "get_weather", function: sunny, parse: JSON.parse, parameters: weatherParameters },
      }],
    });
    return { text: await runner.finalContent() };
  },

  // The AI SDK's default OpenAI model speaks the Responses API.
  async generateTextRequired() {
    const result = await generateText({
      model: provider("picoora"),
      prompt: "weather in Oslo",
      tools: { get_weather: tool({ inputSchema: z.object({ city: z.string() }), execute: sunny }) },
      toolChoice: "required",
      stopWhen: stepCountIs(1),
    });
    return { calls: result.toolCalls.map((c) => [c.toolName, c.input]), results: result.toolResults.map((r) => r.output) };
  },

  async generateTextTools() {
    const result = await generateText({
      model: provider("picoora"),
      prompt: "weather in Oslo",
      tools: { get_weather: tool({ inputSchema: z.object({ city: z.string() }), execute: sunny }) },
      stopWhen: stepCountIs(3),
    });
    return { text: result.text };
  },

  async generateObject() {
    const result = await generateObject({
      model: provider("picoora"),
      prompt: "who wrote the first program?",
      schema: z.object({ name: z.string(), born: z.number().int() }),
    });
    return { object: result.object };
  },

  async generateObjectChat() {
    const result = await generateObject({
      model: provider.chat("picoora"),
      prompt: "who wrote the first program?",
      schema: z.object({ name: z.string(), born: z.number().int() }),
    });
    return { object: result.object };
  },
};

const scenario = scenarios[process.argv[2]];
if (!scenario) {
  console.error(`no scenario ${process.argv[2]}: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenario()));
