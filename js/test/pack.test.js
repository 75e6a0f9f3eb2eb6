// `npm pack` gives a tarball holding the .wasm that installs offline into an empty folder
// and works there (run after `make js`, which builds runcontext.wasm).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const npm = (args, cwd) => execFileSync("npm", args, {
  cwd, encoding: "utf8", env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" },
});

test("the packed tarball installs offline and computes the digests the source tree does", async () => {
  const dir = mkdtempSync(join(tmpdir(), "runcontext-pack-"));
  try {
    const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], PACKAGE));
    const files = packed.files.map((f) => f.path).sort();
    assert.ok(files.includes("runcontext.wasm"), files.join(" "));
    assert.ok(files.includes("index.d.ts"));
    assert.ok(!files.some((f) => f.startsWith("test/") || f.startsWith("bench/")), files.join(" "));
    const app = join(dir, "app");
    execFileSync("mkdir", [app]);
    writeFileSync(join(app, "package.json"), '{"name": "app", "version": "1.0.0", "type": "module", "private": true}');
    npm(["install", "--offline", join(dir, packed.filename)], app);
    writeFileSync(join(app, "main.js"), [
      'import { RunContext, canonicalJson } from "runcontext";',
      'const rc = new RunContext({ facts: [["date", "2026-11-30"]] });',
      'console.log(JSON.stringify([rc.digest, canonicalJson({ b: 1.0, a: [1e21] })]));',
    ].join("\n"));
    const [digest, canonical] = JSON.parse(execFileSync("node", ["main.js"], { cwd: app, encoding: "utf8" }));
    const source = await import("../src/index.js");
    assert.equal(digest, new source.RunContext({ facts: [["date", "2026-11-30"]] }).digest);
    assert.equal(canonical, '{"a":[1e+21],"b":1}');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
