import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyDelta,
  applyResult,
  answerShell,
  createMarkdown,
  newAnswer,
  renderAnswerBody,
} from "../src/core/answer";
import { Debouncer } from "../src/core/debounce";
import { candidates, discover, expandHome, pathCandidates, type DiscoveryInput } from "../src/core/discovery";
import {
  locationLabel,
  parseLocationHref,
  llmLine,
  teamLine,
  teamState,
  pollInterval,
  previewLine,
  relativePath,
  searchRow,
  statusView,
  tierSummary,
} from "../src/core/format";
import type { FolderState } from "../src/core/protocol";
import {
  explicitValue,
  initializationOptions,
  interpreterChangeRestarts,
  mostSpecific,
  needsRestart,
  toServerSettings,
} from "../src/core/settings";
import { ManualClock, indexState, llmHealth } from "./fakes";

const input = (over: Partial<DiscoveryInput> = {}): DiscoveryInput => ({
  serverPath: "",
  pythonPath: "",
  envPath: "/usr/local/bin:/usr/bin",
  platform: "linux",
  ...over,
});

describe("discovery", () => {
  it("uses codeask.serverPath alone when set", () => {
    const list = candidates(input({ serverPath: "/venv/bin/codeask", pythonPath: "/venv/bin/python" }));
    assert.deepEqual(list, [{ command: "/venv/bin/codeask", args: ["serve"], source: "codeask.serverPath" }]);
  });

  it("uses codeask.pythonPath with -P -m codeask serve", () => {
    const list = candidates(input({ pythonPath: "/venv/bin/python", pythonExtensionInterpreter: "/other/python" }));
    assert.deepEqual(list, [{ command: "/venv/bin/python", args: ["-P", "-m", "codeask", "serve"], source: "codeask.pythonPath" }]);
  });

  it("falls back to the Python extension's interpreter, then PATH", () => {
    const list = candidates(input({ pythonExtensionInterpreter: "/env/bin/python" }));
    assert.deepEqual(
      list.map((c) => `${c.source} ${c.command} ${c.args.join(" ")}`),
      [
        "Python extension /env/bin/python -P -m codeask serve",
        "PATH /usr/local/bin/codeask serve",
        "PATH /usr/bin/codeask serve",
      ],
    );
  });

  it("splits PATH the Windows way on win32", () => {
    assert.deepEqual(pathCandidates("C:\\py\\Scripts;;D:\\bin\\", "win32").slice(0, 2), [
      "C:\\py\\Scripts\\codeask.exe",
      "C:\\py\\Scripts\\codeask.cmd",
    ]);
  });

  it("picks the first candidate the probe accepts and records the others", async () => {
    const found = await discover(input({ pythonExtensionInterpreter: "/env/bin/python" }), {
      check: async (c) => (c.command === "/usr/bin/codeask" ? undefined : "not found"),
    });
    assert.ok(found.ok);
    assert.equal(found.candidate.command, "/usr/bin/codeask");
    assert.equal(found.skipped.length, 2);
  });

  it("says which setting fixes a missing server", async () => {
    const none = await discover(input(), { check: async () => "not found" });
    assert.ok(!none.ok);
    assert.match(none.message, /not found/);
    assert.match(none.message, /codeask\.pythonPath/);
    assert.match(none.message, /codeask\.serverPath/);
    assert.match(none.message, /codeask: Install Server/);

    const bad = await discover(input({ pythonPath: "/venv/bin/python" }), {
      check: async () => "ModuleNotFoundError: No module named 'codeask'",
    });
    assert.ok(!bad.ok);
    assert.match(bad.message, /codeask\.pythonPath "\/venv\/bin\/python" cannot run codeask/);
    assert.match(bad.message, /No module named 'codeask'/);
    assert.match(bad.message, /-m pip install <codeask clone or wheel>/);
  });

  it("expands ~ in paths", () => {
    assert.equal(expandHome("~/venv/bin/python", "/home/u"), "/home/u/venv/bin/python");
    assert.equal(expandHome("${userHome}/x", "/home/u"), "/home/u/x");
    assert.equal(expandHome(" /abs ", "/home/u"), "/abs");
  });
});

describe("settings", () => {
  it("sends only explicitly set values, nested by section", () => {
    const set: Record<string, unknown> = { "llm.provider": "openai", "llm.baseUrl": "http://127.0.0.1:9", "server.hover": false };
    assert.deepEqual(toServerSettings((k) => set[k]), {
      llm: { provider: "openai", baseUrl: "http://127.0.0.1:9" },
      server: { hover: false },
    });
    assert.deepEqual(toServerSettings(() => undefined), {});
    assert.deepEqual(toServerSettings((k) => (k === "embed.tiers" ? ["static"] : undefined)), { embed: { tiers: ["static"] } });
  });

  it("never sends client-only settings", () => {
    const tree = toServerSettings((k) => (k === "serverPath" || k === "pythonPath" ? "/x" : undefined));
    assert.deepEqual(tree, {});
  });

  it("uses a dict for one folder and the per-folder list for several", () => {
    const settingsFor = (uri: string | undefined) => ({ llm: { model: uri ?? "none" } });
    assert.deepEqual(initializationOptions([], settingsFor), { llm: { model: "none" } });
    assert.deepEqual(initializationOptions(["file:///a"], settingsFor), { llm: { model: "file:///a" } });
    assert.deepEqual(initializationOptions(["file:///a", "file:///b"], settingsFor), [
      { scopeUri: "file:///a", settings: { llm: { model: "file:///a" } } },
      { scopeUri: "file:///b", settings: { llm: { model: "file:///b" } } },
    ]);
  });

  it("restarts only for server discovery settings", () => {
    assert.equal(needsRestart((k) => k === "pythonPath"), true);
    assert.equal(needsRestart((k) => k === "serverPath"), true);
    assert.equal(needsRestart((k) => k === "llm.model" || k === ""), false);
  });

  it("restarts on another active interpreter only when codeask runs on it", () => {
    const unset = { serverPath: "", pythonPath: "" };
    const change = { previous: "/usr/bin/python3", current: "/venv/bin/python" };
    assert.equal(interpreterChangeRestarts({ ...unset, ...change }), true);
    assert.equal(interpreterChangeRestarts({ ...unset, previous: undefined, current: "/venv/bin/python" }), true);
    assert.equal(interpreterChangeRestarts({ ...unset, previous: "/venv/bin/python", current: undefined }), true);
    // The same interpreter (the event also fires for a re-selection): nothing to do.
    assert.equal(interpreterChangeRestarts({ ...unset, previous: "/venv/bin/python", current: "/venv/bin/python" }), false);
    // An explicit setting wins over the Python extension: its interpreter is not codeask's.
    assert.equal(interpreterChangeRestarts({ ...unset, ...change, pythonPath: "/opt/py/bin/python" }), false);
    assert.equal(interpreterChangeRestarts({ ...unset, ...change, serverPath: "/opt/codeask" }), false);
  });

  it("sends the workspace trust with every tree, never a setting's value for it", () => {
    const set: Record<string, unknown> = { trustWorkspace: true, "llm.model": "m" };
    assert.deepEqual(toServerSettings((k) => set[k], false), { llm: { model: "m" }, trustWorkspace: false });
    assert.deepEqual(toServerSettings(() => undefined, true), { trustWorkspace: true });
  });

  it("ignores workspace values of restricted settings in an untrusted workspace", () => {
    const inspected = { globalValue: "http://127.0.0.1:11434", workspaceValue: "http://evil:1" };
    assert.equal(explicitValue("llm.baseUrl", inspected, false), "http://127.0.0.1:11434");
    assert.equal(explicitValue("llm.baseUrl", inspected, true), "http://evil:1");
    assert.equal(explicitValue("pythonPath", { workspaceFolderValue: "/repo/evil" }, false), undefined);
    assert.equal(explicitValue("llm.model", { globalValue: "a", workspaceValue: "b" }, false), "b");
  });

  it("takes the most specific set value", () => {
    assert.equal(mostSpecific({ globalValue: 1, workspaceValue: 2, workspaceFolderValue: 3 }), 3);
    assert.equal(mostSpecific({ globalValue: 1, workspaceValue: 2 }), 2);
    assert.equal(mostSpecific({ globalValue: false }), false);
    assert.equal(mostSpecific({}), undefined);
    assert.equal(mostSpecific(undefined), undefined);
  });
});

describe("format", () => {
  const folders = ["file:///ws", "file:///ws/sub"];

  it("makes paths relative to the deepest folder", () => {
    assert.equal(relativePath("file:///ws/sub/a.py", folders), "a.py");
    assert.equal(relativePath("file:///ws/pkg/my%20file.py", folders), "pkg/my file.py");
    assert.equal(relativePath("file:///elsewhere/b.py", folders), "/elsewhere/b.py");
  });

  it("labels locations 1-based with an end-exclusive range", () => {
    const r = (a: number, b: number, c = 0) => ({ start: { line: a, character: 0 }, end: { line: b, character: c } });
    assert.equal(locationLabel("file:///ws/a.py", r(4, 4, 10), folders), "a.py:5");
    assert.equal(locationLabel("file:///ws/a.py", r(4, 9, 3), folders), "a.py:5-10");
    assert.equal(locationLabel("file:///ws/a.py", r(4, 9, 0), folders), "a.py:5-9");
    assert.equal(locationLabel("file:///ws/a.py", undefined, folders), "a.py");
  });

  it("shows the index state in the status bar", () => {
    assert.match(statusView("starting", undefined).text, /starting/);
    assert.equal(statusView("running", indexState({ state: "indexing", percent: 42.4 })).text, "$(sync~spin) codeask: warming up 42%");
    assert.equal(statusView("running", indexState({ warming: true, percent: 80 })).text, "$(sync~spin) codeask: warming up 80%");
    assert.equal(statusView("running", indexState()).text, "$(check) codeask: ready");
    const err = statusView("running", indexState({ state: "error", folders: [{ root: "/ws", state: "error", files: 0, chunks: 0, embedded: 0, model: "m", indexDir: "/ws/.codeask", message: "disk full" }] }));
    assert.equal(err.text, "$(error) codeask: index error");
    assert.equal(err.severity, "error");
    assert.match(err.tooltip, /disk full/);
    const failed = statusView("failed", undefined, "no server");
    assert.equal(failed.text, "$(error) codeask: error");
    assert.match(failed.tooltip, /no server/);
  });

  it("shows the LLM endpoint the server reported (codeask/health) in the tooltip", () => {
    const ok = statusView("running", indexState(), "", llmHealth());
    assert.equal(ok.text, "$(check) codeask: ready");
    assert.match(ok.tooltip, /^LLM ollama at http:\/\/127\.0\.0\.1:11434, model qwen2\.5-coder:7b ✓$/m);
    const down = llmHealth({ reachable: false, modelPresent: false, models: 0, error: "cannot connect to http://127.0.0.1:11434/api/tags: connection refused" });
    assert.equal(llmLine(down), "LLM not reachable (ollama at http://127.0.0.1:11434, model qwen2.5-coder:7b): cannot connect to http://127.0.0.1:11434/api/tags: connection refused. Search works; Ask Code needs it.");
    assert.match(llmLine(llmHealth({ modelPresent: false })), /not among the endpoint's 3 models/);
    assert.equal(statusView("running", indexState(), "", down).severity, "normal", "search still works");
    assert.doesNotMatch(statusView("running", indexState()).tooltip, /LLM/, "nothing until the server answered");
  });

  it("shows the team database the server probed (index.backend = postgres), never the DSN", () => {
    const team = { dsnEnv: "CODEASK_PG_DSN", where: "editor@db:5432/codeask", reachable: true, schemaVersion: 1, schemaKnown: 1, modelDim: 384, writable: false, millis: 9 };
    assert.equal(teamLine(team), "Team database editor@db:5432/codeask: schema 1, 384-dim vectors, read-only ✓");
    const down = { ...team, reachable: false, error: "cannot connect to the team database editor@db:5432/codeask: timeout" };
    assert.equal(teamLine(down), "Team database editor@db:5432/codeask (DSN from $CODEASK_PG_DSN): cannot connect to the team database editor@db:5432/codeask: timeout. Local search works.");
    assert.match(statusView("running", indexState(), "", llmHealth(), down).tooltip, /^Team database .*Local search works\.$/m);
    assert.doesNotMatch(statusView("running", indexState(), "", llmHealth()).tooltip, /Team database/, "local backend: no line");
  });

  const folder = (over: Partial<FolderState> = {}): FolderState => ({
    root: "/ws", state: "ready", files: 120, chunks: 1500, embedded: 300, model: "m", indexDir: "/ws/.codeask", ...over,
  });

  it("shows which vector tier is complete, per folder, in the tooltip", () => {
    const both = folder({ staticEmbedded: 1500, tiers: ["static", "minilm"] });
    const view = statusView("running", indexState({ warming: true, percent: 20, chunks: 1500, embedded: 300, folders: [both] }));
    assert.match(view.tooltip, /^\/ws: ready, 120 files · static 1500\/1500 ✓ · MiniLM 300\/1500$/m);
    assert.match(view.tooltip, /Dense search works already from the static tier\. MiniLM vectors fill in behind\./);
    const staticOnly = folder({ embedded: 0, staticEmbedded: 1500, tiers: ["static"] });
    assert.equal(tierSummary(staticOnly), "static 1500/1500 ✓");
    assert.match(statusView("running", indexState({ folders: [staticOnly] })).tooltip, /^\/ws: ready, 120 files · static 1500\/1500 ✓$/m);
    assert.equal(tierSummary(folder({ embedded: 1500, tiers: ["minilm"] })), "MiniLM 1500/1500 ✓");
    assert.equal(tierSummary(folder({ staticEmbedded: 700, tiers: ["static", "minilm", "future"] })), "static 700/1500 · MiniLM 300/1500");
    assert.equal(tierSummary(folder({ staticEmbedded: 700, tiers: ["minilm", "static"] })), "static 700/1500 · MiniLM 300/1500");
  });

  it("says which tiers answer, in the server's words, when it sends them (item 19)", () => {
    const both = folder({ staticEmbedded: 1500, tiers: ["static", "minilm"] });
    const said = "answered by lexical + static (static: all 1500 chunks; MiniLM: 300 of 1500 chunks (20%), filling in)";
    const view = statusView("running", indexState({ warming: true, percent: 20, folders: [both], tiersNote: said }));
    assert.ok(view.tooltip.includes(`Search ${said}.`), view.tooltip);
    assert.doesNotMatch(view.tooltip, /mostly/);
  });

  it("shows each folder's team base, or why there is none, under its line", () => {
    const base = folder({ team: { backend: "postgres", kind: "base", base: "github.com/acme/shop@0123456789ab", behind: 2, overlayFiles: 3 } });
    const view = statusView("running", indexState({ folders: [base] }));
    assert.match(view.tooltip, /^\/ws: ready, 120 files, 300\/1500 chunks embedded\n {2}team base github\.com\/acme\/shop@0123456789ab, 2 behind HEAD, 3 files local$/m);
    const down = { backend: "postgres" as const, kind: "unreachable" as const, reason: "team index unusable (...)", retryIn: 30 };
    assert.equal(teamState(down), "no team base (database unreachable, retrying in 30 s): indexed locally");
    assert.equal(teamState({ backend: "postgres", kind: "unpublished" }), "no team base (nothing published near HEAD): indexed locally");
    const failing = { backend: "postgres" as const, kind: "base" as const, base: "shop@0123456789ab", queryError: "lost the connection", cache: "unavailable: timeout" };
    assert.equal(teamState(failing), "team base shop@0123456789ab, 0 behind HEAD, 0 files local · last team query failed: lost the connection · team embedding cache unavailable");
    assert.equal(teamState({ backend: "local", kind: "off" }), "", "local backend: nothing");
    assert.doesNotMatch(statusView("running", indexState({ folders: [folder({ team: { backend: "local" } })] })).tooltip, /team/);
  });

  it("says search improves as embeddings fill in until the static tier is complete", () => {
    const partial = folder({ staticEmbedded: 700, tiers: ["static", "minilm"] });
    const view = statusView("running", indexState({ state: "indexing", percent: 40, folders: [partial] }));
    assert.match(view.tooltip, /results improve as embeddings fill in/);
    assert.doesNotMatch(view.tooltip, /static tier/);
  });

  it("keeps the one-count tooltip for a server that reports no tiers", () => {
    const view = statusView("running", indexState({ warming: true, percent: 20, folders: [folder()] }));
    assert.match(view.tooltip, /^\/ws: ready, 120 files, 300\/1500 chunks embedded$/m);
    assert.match(view.tooltip, /results improve as embeddings fill in/);
    assert.equal(tierSummary(folder()), "");
  });

  it("polls fast while warming, slowly when ready", () => {
    assert.equal(pollInterval(indexState({ state: "indexing" })), 1000);
    assert.equal(pollInterval(indexState()), 10000);
  });

  it("builds a QuickPick row with symbol, path:line and preview", () => {
    const row = searchRow(
      {
        uri: "file:///ws/shop/pricing.py",
        range: { start: { line: 9, character: 0 }, end: { line: 20, character: 0 } },
        symbol: "compute_discount",
        kind: "function",
        score: 0.8,
        preview: "\n  def compute_discount(price, rate):\n    ...",
        retrievers: ["dense"],
      },
      folders,
    );
    assert.equal(row.label, "$(symbol-function) compute_discount");
    assert.equal(row.description, "shop/pricing.py:10");
    assert.equal(row.detail, "def compute_discount(price, rate):");
  });

  it("shortens long previews", () => {
    assert.equal(previewLine("x".repeat(200), 10), "xxxxxxxxx…");
  });

  it("parses the hover's file links into a location", () => {
    assert.deepEqual(parseLocationHref("file:///ws/a.py#L12"), {
      uri: "file:///ws/a.py",
      range: { start: { line: 11, character: 0 }, end: { line: 11, character: 0 } },
    });
    assert.deepEqual(parseLocationHref("file:///ws/a.py#L3-L7")?.range?.end.line, 6);
    assert.deepEqual(parseLocationHref("file:///ws/a.py"), { uri: "file:///ws/a.py" });
    assert.equal(parseLocationHref("https://example.org"), undefined);
  });
});

describe("debouncer", () => {
  it("runs only the last call after the quiet time", () => {
    const clock = new ManualClock();
    const d = new Debouncer(250, clock);
    const runs: string[] = [];
    d.schedule(() => runs.push("a"));
    clock.advance(100);
    d.schedule(() => runs.push("ab"));
    clock.advance(249);
    assert.equal(runs.length, 0);
    clock.advance(1);
    assert.deepEqual(runs, ["ab"]);
    d.schedule(() => runs.push("x"));
    d.cancel();
    clock.advance(1000);
    assert.deepEqual(runs, ["ab"]);
    assert.equal(d.pending, false);
  });
});

describe("answer rendering", () => {
  const md = createMarkdown();

  it("escapes raw HTML and drops script links", () => {
    const model = newAnswer("<img src=x onerror=alert(1)>?");
    applyDelta(model, "<script>alert(1)</script> [x](javascript:alert(1)) **bold** `code`");
    const html = renderAnswerBody(model, md);
    assert.ok(!html.includes("<script>"));
    assert.ok(!html.includes("<img"));
    assert.ok(!html.includes('href="javascript:'));
    assert.match(html, /&lt;script&gt;/);
    assert.match(html, /<strong>bold<\/strong>/);
    assert.match(html, /<code>code<\/code>/);
  });

  it("keeps file and https links from the answer", () => {
    const model = newAnswer("q");
    applyDelta(model, "see [a.py:3](file:///ws/a.py#L3) and [docs](https://example.org)");
    const html = renderAnswerBody(model, md);
    assert.match(html, /href="file:\/\/\/ws\/a.py#L3"/);
    assert.match(html, /href="https:\/\/example.org"/);
  });

  it("counts streamed deltas, then shows the final answer and its sources", () => {
    const model = newAnswer("how?", "a.py:1-3");
    applyDelta(model, "It ");
    applyDelta(model, "adds.");
    let html = renderAnswerBody(model, md);
    assert.match(html, /data-status="streaming" data-deltas="2"/);
    assert.match(html, /id="cancel"/);
    applyResult(
      model,
      {
        answer: "It adds.",
        sources: [{ uri: "file:///ws/a.py", range: { start: { line: 2, character: 0 }, end: { line: 5, character: 0 } }, symbol: "add", score: 1 }],
        model: "smollm2",
        promptTokens: 321,
        truncated: false,
        indexState: indexState(),
      },
      ["file:///ws"],
    );
    html = renderAnswerBody(model, md);
    assert.match(html, /data-status="done"/);
    assert.ok(!html.includes('id="cancel"'));
    assert.match(html, /<a class="source" href="file:\/\/\/ws\/a.py#L3">a.py:3-5<\/a> <code>add<\/code>/);
    assert.match(html, /model smollm2 · 321 prompt tokens/);
    applyDelta(model, " late");
    assert.equal(model.text, "It adds.");
  });

  it("shows an LLM error from the result and keeps the sources", () => {
    const model = newAnswer("q");
    applyResult(
      model,
      {
        answer: "",
        error: "cannot reach http://127.0.0.1:1: connection refused",
        sources: [{ uri: "file:///ws/a.py", range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, symbol: "f", score: 1 }],
        model: "m",
        promptTokens: 0,
        truncated: false,
        indexState: indexState(),
      },
      ["file:///ws"],
    );
    const html = renderAnswerBody(model, md);
    assert.match(html, /data-status="error"/);
    assert.match(html, /class="error">cannot reach/);
    assert.match(html, /class="source"/);
  });

  it("keeps a partial answer and marks it incomplete", () => {
    const model = newAnswer("q");
    applyDelta(model, "It starts");
    applyResult(
      model,
      {
        answer: "It starts",
        error: "the answer exceeded llm.max_answer_chars=9; stopped",
        incomplete: true,
        sources: [],
        model: "m",
        promptTokens: 0,
        truncated: false,
        indexState: indexState(),
      },
      ["file:///ws"],
    );
    const html = renderAnswerBody(model, md);
    assert.match(html, /class="error">incomplete: the answer exceeded llm.max_answer_chars=9; stopped/);
    assert.match(html, /data-status="incomplete"[^>]*>Incomplete: stopped early/, "not \"Failed\"");
    assert.match(html, /<article id="answer"><p>It starts<\/p>/);
  });

  it("locks the webview down with a nonce'd CSP", () => {
    const shell = answerShell("N0NCE", "vscode-resource:");
    assert.match(shell, /default-src 'none'/);
    assert.match(shell, /script-src 'nonce-N0NCE'/);
    assert.ok(!shell.includes("unsafe-inline"));
    assert.ok(!shell.includes("unsafe-eval"));
  });
});
