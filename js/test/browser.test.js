// The same runcontext.wasm, loaded by the same loader in headless Chromium (fetch, not fs):
// a page served over HTTP from js/ builds a context and canonicalises a value.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { RunContext } from "../src/index.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TYPES = { ".js": "text/javascript", ".html": "text/html", ".wasm": "application/wasm" };
const CHROMIUM = process.env.CHROMIUM ?? "chromium";

test("headless Chromium loads runcontext.wasm and agrees with Node", async () => {
  const server = createServer(async (request, response) => {
    const path = new URL(request.url, "http://localhost").pathname;
    try {
      const body = await readFile(ROOT + path.slice(1));
      response.writeHead(200, { "content-type": TYPES[path.slice(path.lastIndexOf("."))] ?? "application/octet-stream" });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/test/browser.html`;
  let dom;
  try {
    // A missing browser fails the test, naming the install command (CI installs it).
    ({ stdout: dom } = await promisify(execFile)(CHROMIUM, [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--virtual-time-budget=20000", "--dump-dom", url,
    ], { timeout: 120000, maxBuffer: 1 << 24 }).catch((error) => {
      if (error.code === "ENOENT") throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
      throw error;
    }));
  } finally {
    server.close();
  }
  const match = dom.match(/<pre id="result">([^<]*)<\/pre>/);
  assert.ok(match, dom);
  const text = match[1].replaceAll("&quot;", '"').replaceAll("&amp;", "&").replaceAll("&lt;", "<").replaceAll("&gt;", ">");
  assert.ok(text.startsWith("{"), text);
  const result = JSON.parse(text);
  const context = new RunContext({ headSections: [["identity", "You are careful."]], facts: [["date", "2026-11-30"]] });
  assert.deepEqual(result, {
    canonical: '{"a":[1e+21,"é"],"b":1}',
    digest: context.digest,
    tail: context.tailText,
    refused: ["InvalidNumberError", "non-finite", "$.b"],
  });
});
