// The official MCP TypeScript SDK (the client most agents embed) against the stdio bridge
// and the hub's /mcp: a tool that declares an outputSchema and fails (BINDING_REJECTED,
// SESSION_CLOSED, SESSION_NOT_FOUND) reaches the agent as a normal tool result with
// isError and the instruction in its text — never as McpError -32602 "Structured content
// does not match the tool's output schema", which the SDK throws when an error result's
// structuredContent does not match the schema, and which loses the instruction.
//
// Needs HOLDLINE_HUB_BIN, HOLDLINE_MCP_BIN and HOLDLINE_SDK_DIR (where scripts/test-sdk.sh
// installed package.json's SDK); run through scripts/test-sdk.sh.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run scripts/test-sdk.sh`);
  return v;
};
const sdkDir = join(need("HOLDLINE_SDK_DIR"), "node_modules/@modelcontextprotocol/sdk/dist/esm");
const sdk = async (path) => import(pathToFileURL(join(sdkDir, path)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const home = mkdtempSync(join(tmpdir(), "holdline-sdk-"));
let hub;
let url;
let secret;

before(async () => {
  hub = spawn(need("HOLDLINE_HUB_BIN"), ["--home", home, "serve", "--listen", "127.0.0.1:0"], {
    stdio: "ignore",
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "HOLDLINE_MONGO_URI")),
  });
  const addrFile = join(home, "hub.addr");
  for (let i = 0; i < 400 && !(existsSync(addrFile) && readFileSync(addrFile, "utf8").trim()); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  url = `http://${readFileSync(addrFile, "utf8").trim()}`;
  secret = readFileSync(join(home, "secret"), "utf8").trim();
});

after(() => {
  hub?.kill("SIGKILL");
  rmSync(home, { recursive: true, force: true });
});

async function stdioClient() {
  const client = new Client({ name: "holdline-sdk-test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: need("HOLDLINE_MCP_BIN"),
      env: {
        PATH: process.env.PATH,
        HOME: home,
        HOLDLINE_HOME: home,
        HOLDLINE_HUB: url,
        HOLDLINE_SECRET: secret,
        HOLDLINE_NO_AUTOSTART: "1",
      },
      stderr: "ignore",
    }),
  );
  return client;
}

async function remoteClient() {
  const client = new Client({ name: "holdline-sdk-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${secret}` } },
    }),
  );
  return client;
}

const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

/** Calls `name`; the answer must be a tool result (the SDK validated it), not a throw. */
async function call(client, name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (e) {
    assert.fail(`${name} threw instead of answering a tool result: ${e.code ?? ""} ${e.message}`);
  }
}

async function failsWith(client, name, args, code) {
  const r = await call(client, name, args);
  assert.equal(r.isError, true, `${name} should fail with ${code}: ${textOf(r)}`);
  const text = textOf(r);
  assert.match(text, new RegExp(code), text);
  assert.match(text, /call init_conversation/, `the instruction is in the text: ${text}`);
}

async function started(client, title) {
  const r = await call(client, "init_conversation", { cursorTitle: title, workspace: "/sdk/ws" });
  assert.notEqual(r.isError, true, textOf(r));
  assert.match(r.structuredContent.token, /^ct_/);
  return r.structuredContent.token;
}

for (const [transport, connect] of [
  ["the stdio bridge", stdioClient],
  ["the hub's /mcp", remoteClient],
]) {
  test(`${transport}: failing tools with an outputSchema answer results the SDK accepts`, async () => {
    const client = await connect();
    try {
      // The SDK validates results against the schemas listTools cached.
      const { tools } = await client.listTools();
      for (const name of ["init_conversation", "select_conversation", "merge_conversation"]) {
        assert.ok(tools.find((t) => t.name === name)?.outputSchema, `${name} declares an outputSchema`);
      }
      const a = await started(client, `${transport} chat A`);
      const b = await started(client, `${transport} chat B`);

      await failsWith(
        client,
        "select_conversation",
        { token: a, cursorTitle: `${transport} chat B`, workspace: "/sdk/ws" },
        "BINDING_REJECTED",
      );
      await failsWith(
        client,
        "select_conversation",
        { token: "ct_0123456789abcdef0123456789abcdef", cursorTitle: `${transport} chat A`, workspace: "/sdk/ws" },
        "SESSION_NOT_FOUND",
      );

      const merged = await call(client, "merge_conversation", {
        fromToken: a,
        toToken: b,
        cursorTitle: `${transport} chat B`,
      });
      assert.notEqual(merged.isError, true, textOf(merged));
      await failsWith(
        client,
        "merge_conversation",
        { fromToken: a, toToken: b, cursorTitle: `${transport} chat B` },
        "SESSION_CLOSED",
      );
    } finally {
      await client.close();
    }
  });
}
