// Drives a cuerag MCP server with the TypeScript SDK's client, as a JavaScript host would: one
// session over stdio or streamable HTTP, every step of a plan the pytest side writes
// (tests/mcp_plan.py), one JSON report on stdout for it to check. The checks stay in Python; this
// script only calls and records, so a step that fails is recorded, not fatal.
//
//   node drive.mjs PLAN.json
//
// PLAN: {"transport": {"type": "stdio", "command", "args", "env"} | {"type": "http", "url", "token"},
//        "steps": [{"method": "tools/call", "params": {...}}, ...]}
// A parameter value {"$ref": "N.path.to.value"} is replaced by that value of step N's result
// (a job id that index_corpus returned, for cancel_job).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));

function transportOf(spec) {
  if (spec.type === "stdio") {
    return new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, stderr: "inherit" });
  }
  return new StreamableHTTPClientTransport(new URL(spec.url), {
    requestInit: { headers: { Authorization: `Bearer ${spec.token}` } },
  });
}

function resolve(value, results) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, results));
  if (value && typeof value === "object") {
    if (typeof value.$ref === "string") {
      const [index, ...path] = value.$ref.split(".");
      return path.reduce((node, key) => node?.[key], results[Number(index)]?.result);
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results)]));
  }
  return value;
}

// The SDK's typed call for each method: its own result schema validates what the server sends.
// The SDK gives up on a request after 60 s; a first call that loads the models on a busy 2-core
// machine can take longer, and a time-out here would say nothing about the server.
const OPTIONS = { timeout: 600_000 };
const CALLS = {
  "tools/list": (c) => c.listTools(undefined, OPTIONS),
  "tools/call": (c, p) => c.callTool(p, undefined, OPTIONS),
  "resources/list": (c) => c.listResources(undefined, OPTIONS),
  "resources/templates/list": (c) => c.listResourceTemplates(undefined, OPTIONS),
  "resources/read": (c, p) => c.readResource(p, OPTIONS),
  "prompts/list": (c) => c.listPrompts(undefined, OPTIONS),
  "prompts/get": (c, p) => c.getPrompt(p, OPTIONS),
  "completion/complete": (c, p) => c.complete(p, OPTIONS),
  ping: (c) => c.ping(OPTIONS),
};

const client = new Client({ name: "cuerag-ts-test", version: "1.0.0" });
const report = { steps: [] };
try {
  await client.connect(transportOf(plan.transport));
  report.server = client.getServerVersion();
  report.capabilities = client.getServerCapabilities();
  report.instructions = client.getInstructions();
  for (const step of plan.steps) {
    const params = resolve(step.params ?? {}, report.steps);
    try {
      report.steps.push({ method: step.method, params, result: await CALLS[step.method](client, params) });
    } catch (error) {
      report.steps.push({ method: step.method, params, error: { code: error.code, message: String(error.message) } });
    }
  }
} catch (error) {
  report.fatal = String(error?.stack ?? error);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(report));
