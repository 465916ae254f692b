/**
 * package.json contributes what the issue asks for, and its settings mirror the server's:
 * same keys, same defaults (checked against `codeask.config.Settings` when the repo's Python
 * venv is there).
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CLIENT_ONLY_KEYS, RESTRICTED_KEYS, SERVER_KEYS } from "../src/core/settings";

const root = join(__dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const props: Record<string, { scope?: string; default?: unknown; markdownDescription?: string; description?: string }> =
  pkg.contributes.configuration.properties;

describe("package.json", () => {
  it("contributes the commands, with Ask Code in the editor context menu", () => {
    const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
    for (const id of ["codeask.askCode", "codeask.semanticSearch", "codeask.restartServer", "codeask.showLogs", "codeask.cancelAsk"]) {
      assert.ok(ids.includes(id), id);
    }
    const menu = pkg.contributes.menus["editor/context"][0];
    assert.equal(menu.command, "codeask.askCode");
    assert.equal(menu.when, "editorHasSelection");
  });

  it("declares exactly the client and server settings, each documented", () => {
    const keys = Object.keys(props).map((k) => k.replace(/^codeask\./, "")).sort();
    assert.deepEqual(keys, [...CLIENT_ONLY_KEYS, ...SERVER_KEYS].sort());
    for (const [key, p] of Object.entries(props)) {
      assert.ok((p.markdownDescription ?? p.description ?? "").length > 10, `${key} has a description`);
    }
  });

  it("scopes server settings per resource", () => {
    for (const key of SERVER_KEYS) assert.equal(props[`codeask.${key}`].scope, "resource", key);
  });

  it("lets no workspace turn on installing the server without asking", () => {
    assert.equal(props["codeask.autoInstallServer"].scope, "machine");
    assert.equal(props["codeask.autoInstallServer"].default, false);
    assert.ok(pkg.contributes.commands.some((c: { command: string }) => c.command === "codeask.installServer"));
  });

  it("runs in untrusted workspaces with the restricted settings declared", () => {
    const untrusted = pkg.capabilities.untrustedWorkspaces;
    assert.equal(untrusted.supported, "limited");
    assert.deepEqual([...untrusted.restrictedConfigurations].sort(), RESTRICTED_KEYS.map((k) => `codeask.${k}`).sort());
    for (const key of untrusted.restrictedConfigurations) assert.ok(key in props, `${key} is a declared setting`);
  });

  it("offers the vector tiers as a list of static/minilm, not restricted", () => {
    const tiers = props["codeask.embed.tiers"] as { default?: unknown; items?: { enum?: string[] } };
    assert.deepEqual(tiers.default, ["static", "minilm"]);
    assert.deepEqual(tiers.items?.enum, ["static", "minilm"]);
    assert.ok(!pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.includes("codeask.embed.tiers"));
  });

  const python = join(root, "..", "..", ".venv", "bin", "python");
  const hasServer = existsSync(python) && spawnSync(python, ["-c", "import codeask.config"]).status === 0;
  it("restricts every setting the server protects", { skip: hasServer ? false : "no repo venv with codeask" }, () => {
    // Protected settings, and the limits a repository may only lower (BOUNDED_FIELDS): a
    // workspace value in an untrusted workspace could raise them, so VS Code must ignore it.
    const script = "import json\nfrom codeask.config import PROTECTED, BOUNDED_FIELDS\nprint(json.dumps(sorted(PROTECTED | BOUNDED_FIELDS)))";
    const protectedNames: string[] = JSON.parse(execFileSync(python, ["-c", script], { encoding: "utf8" }));
    const camel = (s: string) => s.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
    for (const name of protectedNames) {
      const key = camel(name);
      if ((SERVER_KEYS as readonly string[]).includes(key)) {
        assert.ok((RESTRICTED_KEYS as readonly string[]).includes(key), `${key} is restricted`);
      }
    }
  });
  it("mirrors the server's defaults", { skip: hasServer ? false : "no repo venv with codeask" }, () => {
    const script = [
      "import json, msgspec",
      "from codeask.config import Settings",
      "print(json.dumps(msgspec.to_builtins(Settings())))",
    ].join("\n");
    const server = JSON.parse(execFileSync(python, ["-c", script], { encoding: "utf8" }));
    const camel = (s: string) => s.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
    const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    for (const key of SERVER_KEYS) {
      const [section, field] = key.split(".");
      assert.ok(section in server && snake(field) in server[section], `server has ${section}.${snake(field)}`);
      assert.deepEqual(props[`codeask.${key}`].default, server[section][snake(field)], `default of ${key}`);
      assert.equal(camel(snake(field)), field);
    }
  });
});

describe("README", () => {
  it("has the generated settings table", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const block = /<!-- settings-table[^>]*-->\n([\s\S]*?)\n<!-- \/settings-table -->/.exec(readme);
    assert.ok(block, "README has the settings-table markers");
    const table = execFileSync(process.execPath, [join(root, "tools", "settings-table.mjs")], { encoding: "utf8" }).trim();
    assert.equal(block[1].trim(), table, "README settings table is stale: run node tools/settings-table.mjs");
  });
});
