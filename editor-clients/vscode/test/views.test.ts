import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AnswerView, IndexStatusBar } from "../src/views";
import { FakeHost, FakeServer, ManualClock, flush, indexState, llmHealth } from "./fakes";

describe("IndexStatusBar", () => {
  it("polls codeask/indexStatus while running: fast while warming, slow once ready", async () => {
    const host = new FakeHost();
    const clock = new ManualClock();
    const server = new FakeServer();
    server.state = indexState({ state: "indexing", percent: 10 });
    const bar = new IndexStatusBar(host, () => server.indexStatus(), clock);
    assert.match(host.lastStatus(), /starting/);
    bar.setPhase("running");
    clock.advance(0);
    await flush();
    assert.equal(host.lastStatus(), "$(sync~spin) codeask: warming up 10%");
    server.state = indexState();
    clock.advance(999);
    await flush();
    assert.equal(server.statusCalls, 1);
    clock.advance(1);
    await flush();
    assert.equal(host.lastStatus(), "$(check) codeask: ready");
    clock.advance(9999);
    await flush();
    assert.equal(server.statusCalls, 2);
    clock.advance(1);
    await flush();
    assert.equal(server.statusCalls, 3);
    bar.setPhase("stopped");
    assert.equal(clock.size, 0, "no polling while stopped");
    assert.match(host.lastStatus(), /stopped/);
    bar.dispose();
  });

  it("keeps polling through a failed status request", async () => {
    const host = new FakeHost();
    const clock = new ManualClock();
    let calls = 0;
    const bar = new IndexStatusBar(host, () => (calls++ === 0 ? Promise.reject(new Error("restarting")) : Promise.resolve(indexState())), clock);
    bar.setPhase("running");
    clock.advance(0);
    await flush();
    clock.advance(1000);
    await flush();
    assert.equal(host.lastStatus(), "$(check) codeask: ready");
    bar.dispose();
  });

  it("asks codeask/health at start, after a settings change and every minute; shows its LLM line", async () => {
    const host = new FakeHost();
    const clock = new ManualClock();
    const server = new FakeServer();
    const bar = new IndexStatusBar(host, () => server.indexStatus(), clock, () => server.health());
    bar.setPhase("running");
    clock.advance(0);
    await flush();
    assert.equal(server.healthCalls, 1);
    assert.match(host.status[host.status.length - 1].tooltip, /^LLM ollama at .* ✓$/m);
    server.llm = llmHealth({ reachable: false, modelPresent: false, error: "connection refused" });
    bar.refreshHealth();
    clock.advance(999);
    await flush();
    assert.equal(server.healthCalls, 1, "a settings change is asked about after the server applied it");
    clock.advance(1);
    await flush();
    assert.equal(server.healthCalls, 2);
    assert.match(host.status[host.status.length - 1].tooltip, /LLM not reachable .*connection refused/);
    clock.advance(59999);
    await flush();
    assert.equal(server.healthCalls, 2);
    clock.advance(1);
    await flush();
    assert.equal(server.healthCalls, 3);
    bar.setPhase("stopped");
    assert.equal(clock.size, 0, "no polling while stopped");
    assert.equal(bar.llmHealth, undefined);
    bar.dispose();
  });

  it("keeps working with a server that does not know codeask/health", async () => {
    const host = new FakeHost();
    const clock = new ManualClock();
    const bar = new IndexStatusBar(host, () => Promise.resolve(indexState()), clock, () => Promise.reject(new Error("-32601")));
    bar.setPhase("running");
    clock.advance(0);
    await flush();
    assert.equal(host.lastStatus(), "$(check) codeask: ready");
    assert.doesNotMatch(host.status[host.status.length - 1].tooltip, /LLM/);
    bar.dispose();
  });

  it("shows a start failure with its reason", () => {
    const host = new FakeHost();
    const bar = new IndexStatusBar(host, () => undefined, new ManualClock());
    bar.setPhase("failed", "language server not found");
    const last = host.status[host.status.length - 1];
    assert.equal(last.severity, "error");
    assert.match(last.tooltip, /language server not found/);
  });
});

describe("AnswerView", () => {
  it("renders at most once per throttle window while streaming", () => {
    const host = new FakeHost();
    const clock = new ManualClock();
    const view = new AnswerView(host, clock, 50);
    const answer = view.start("q", undefined, () => undefined);
    const panel = host.panels[0];
    assert.match(panel.html, /Content-Security-Policy/);
    const before = panel.posts.length;
    for (let i = 0; i < 20; i++) answer.delta(`w${i} `);
    assert.equal(panel.posts.length, before);
    clock.advance(50);
    assert.equal(panel.posts.length, before + 1);
    assert.match(panel.lastHtml(), /w19/);
    panel.send({ type: "ready" });
    assert.equal(panel.posts.length, before + 2, "a (re)loaded webview gets the current body");
  });

  it("opens https links outside and ignores other schemes", async () => {
    const host = new FakeHost();
    const view = new AnswerView(host, new ManualClock(), 50);
    view.start("q", undefined, () => undefined);
    host.panels[0].send({ type: "open", href: "https://example.org/x" });
    host.panels[0].send({ type: "open", href: "command:workbench.action.quit" });
    await flush();
    assert.deepEqual(host.external, ["https://example.org/x"]);
    assert.deepEqual(host.opened, []);
  });
});
