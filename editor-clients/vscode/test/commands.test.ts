import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Commands, SEARCH_DEBOUNCE_MS, SEARCH_REFRESH_MS, askParams, searchAgainLater, searchTitle } from "../src/commands";
import type { AskCodeResult, IndexState, SearchItem, SemanticSearchResult } from "../src/core/protocol";
import { AnswerView, IndexStatusBar } from "../src/views";
import { FakeHost, FakeServer, ManualClock, flush, indexState } from "./fakes";

function setup(withServer = true) {
  const server = withServer ? new FakeServer() : undefined;
  const host = new FakeHost();
  const clock = new ManualClock();
  const status = new IndexStatusBar(host, () => undefined, clock);
  const answers = new AnswerView(host, clock, 50);
  const commands = new Commands(host, () => server, answers, status, clock);
  return { host, clock, status, answers, commands, server: server as FakeServer };
}

const sel = { start: { line: 2, character: 0 }, end: { line: 8, character: 4 } };

function askResult(over: Partial<AskCodeResult> = {}): AskCodeResult {
  return {
    answer: "Discounts are computed by compute_discount.",
    sources: [{ uri: "file:///ws/shop.py", range: { start: { line: 9, character: 0 }, end: { line: 14, character: 0 } }, symbol: "compute_discount", score: 0.9 }],
    model: "smollm2",
    promptTokens: 500,
    truncated: false,
    indexState: indexState(),
    ...over,
  };
}

function item(symbol: string, line = 0): SearchItem {
  return {
    uri: `file:///ws/${symbol}.py`,
    range: { start: { line, character: 0 }, end: { line: line + 3, character: 0 } },
    symbol,
    kind: "function",
    score: 1,
    preview: `def ${symbol}():`,
    retrievers: ["lexical"],
  };
}

function searchResult(items: SearchItem[]): SemanticSearchResult {
  return { results: items, indexState: indexState() };
}

describe("askParams", () => {
  it("carries the current file and the selection", () => {
    assert.deepEqual(askParams("q", { uri: "file:///ws/a.py", selection: sel }, "t1"), {
      question: "q",
      streamToken: "t1",
      uri: "file:///ws/a.py",
      range: sel,
    });
    assert.deepEqual(askParams("q", { uri: "file:///ws/a.py" }, "t1"), { question: "q", streamToken: "t1", uri: "file:///ws/a.py" });
    assert.deepEqual(askParams("q", undefined, "t1"), { question: "q", streamToken: "t1" });
  });
});

describe("Ask Code", () => {
  it("streams deltas of its own stream into the panel, then shows the result", async () => {
    const { host, commands, server, clock } = setup();
    host.editor = { uri: "file:///ws/shop.py", selection: sel };
    const done = commands.askCode();
    await flush();
    assert.match(host.inputPrompts[0], /shop\.py:3-9/);
    const [call] = server.asks;
    const params = call.params as { streamToken: string; uri: string; range: unknown; question: string };
    assert.equal(params.question, "How are discounts computed?");
    assert.equal(params.uri, "file:///ws/shop.py");
    assert.deepEqual(params.range, sel);
    assert.equal(host.context["codeask.answering"], true);

    server.emitDelta(params.streamToken, "Discounts ");
    server.emitDelta("someone-else", "NOT MINE");
    server.emitDelta(params.streamToken, "are computed");
    clock.advance(60);
    const panel = host.panels[0];
    assert.match(panel.lastHtml(), /Discounts are computed/);
    assert.ok(!panel.lastHtml().includes("NOT MINE"));
    assert.match(panel.lastHtml(), /data-deltas="2"/);

    call.resolve(askResult());
    await done;
    assert.match(panel.lastHtml(), /data-status="done"/);
    assert.match(panel.lastHtml(), /class="source" href="file:\/\/\/ws\/shop.py#L10">shop.py:10-14/);
    assert.equal(server.listeners, 0);
    assert.equal(host.context["codeask.answering"], false);

    panel.send({ type: "open", href: "file:///ws/shop.py#L10" });
    await flush();
    assert.deepEqual(host.opened, [{ uri: "file:///ws/shop.py", range: { start: { line: 9, character: 0 }, end: { line: 9, character: 0 } } }]);
  });

  it("cancels generation from the panel's Cancel button", async () => {
    const { host, commands, server } = setup();
    const done = commands.askCode();
    await flush();
    const panel = host.panels[0];
    panel.send({ type: "cancel" });
    assert.equal(server.asks[0].token.cancelled, true);
    server.asks[0].reject(Object.assign(new Error("Request cancelled"), { code: -32800 }));
    await done;
    assert.match(panel.lastHtml(), /data-status="cancelled"/);
  });

  it("cancels from the Cancel Answer command and when the panel is closed", async () => {
    const { host, commands, server } = setup();
    const first = commands.askCode();
    await flush();
    commands.cancelAsk();
    assert.equal(server.asks[0].token.cancelled, true);
    server.asks[0].reject({ code: -32800, message: "cancelled" });
    await first;

    const second = commands.askCode();
    await flush();
    assert.equal(host.panels.length, 1, "the panel is reused");
    host.panels[0].dispose();
    assert.equal(server.asks[1].token.cancelled, true);
    server.asks[1].reject({ code: -32800, message: "cancelled" });
    await second;
  });

  it("a new question supersedes the old one without marking itself cancelled", async () => {
    const { host, commands, server } = setup();
    const first = commands.askCode();
    await flush();
    host.inputAnswer = "Second question?";
    const second = commands.askCode();
    await flush();
    assert.equal(server.asks[0].token.cancelled, true, "the older generation is stopped");
    server.asks[0].reject({ code: -32800, message: "cancelled" });
    await first;
    const panel = host.panels[0];
    assert.match(panel.lastHtml(), /Second question\?/);
    assert.match(panel.lastHtml(), /data-status="waiting"/);
    assert.equal(host.context["codeask.answering"], true);
    server.asks[1].resolve(askResult());
    await second;
    assert.match(panel.lastHtml(), /data-status="done"/);
    assert.equal(host.context["codeask.answering"], false);
  });

  it("shows request errors in the panel", async () => {
    const { host, commands, server } = setup();
    const done = commands.askCode();
    await flush();
    server.asks[0].reject(new Error("Internal error: boom"));
    await done;
    assert.match(host.panels[0].lastHtml(), /class="error">Internal error: boom/);
  });

  it("does nothing when the input box is dismissed", async () => {
    const { host, commands, server } = setup();
    host.inputAnswer = undefined;
    await commands.askCode();
    assert.equal(server.asks.length, 0);
    assert.equal(host.panels.length, 0);
  });

  it("tells the user when the server is not running", async () => {
    const { host, commands } = setup(false);
    host.errorChoice = "Show Logs";
    await commands.askCode();
    assert.match(host.errors[0], /not running/);
    assert.equal(host.logShown, 1);
  });
});

describe("Semantic Search", () => {
  it("queries once per pause in typing and shows symbol, path:line, preview", async () => {
    const { host, commands, server, clock } = setup();
    await commands.semanticSearch();
    const pick = host.picks[0];
    assert.ok(pick.shown);
    pick.type("dis");
    clock.advance(100);
    pick.type("discount");
    clock.advance(SEARCH_DEBOUNCE_MS - 1);
    assert.equal(server.searches.length, 0);
    clock.advance(1);
    assert.equal(server.searches.length, 1);
    assert.deepEqual(server.searches[0].params, { query: "discount", k: 20 });
    assert.equal(pick.busy, true);
    server.searches[0].resolve(searchResult([item("compute_discount", 9)]));
    await flush();
    assert.equal(pick.busy, false);
    assert.deepEqual(
      pick.items.map((i) => [i.label, i.description, i.detail]),
      [["$(symbol-function) compute_discount", "compute_discount.py:10", "def compute_discount():"]],
    );
  });

  it("drops stale results and cancels the older request", async () => {
    const { host, commands, server, clock } = setup();
    await commands.semanticSearch();
    const pick = host.picks[0];
    pick.type("first");
    clock.advance(SEARCH_DEBOUNCE_MS);
    pick.type("second");
    clock.advance(SEARCH_DEBOUNCE_MS);
    assert.equal(server.searches.length, 2);
    assert.equal(server.searches[0].token.cancelled, true);
    server.searches[1].resolve(searchResult([item("second_fn")]));
    server.searches[0].resolve(searchResult([item("first_fn")]));
    await flush();
    assert.deepEqual(pick.items.map((i) => (i.data as SearchItem | undefined)?.symbol), ["second_fn"]);
  });

  it("opens the accepted result and says so when nothing matched", async () => {
    const { host, commands, server, clock } = setup();
    await commands.semanticSearch();
    const pick = host.picks[0];
    pick.type("nothing");
    clock.advance(SEARCH_DEBOUNCE_MS);
    server.searches[0].resolve(searchResult([]));
    await flush();
    assert.equal(pick.items[0].label, "No results");
    pick.accept();
    assert.equal(host.opened.length, 0);

    pick.type("discount");
    clock.advance(SEARCH_DEBOUNCE_MS);
    server.searches[1].resolve(searchResult([item("a"), item("compute_discount", 9)]));
    await flush();
    pick.activeIndex = 1;
    pick.accept();
    await flush();
    assert.equal(host.opened[0].uri, "file:///ws/compute_discount.py");
    assert.equal(host.opened[0].range?.start.line, 9);
    assert.ok(pick.disposed);
  });

  it("clears the list for an empty query and shows search errors in the title", async () => {
    const { host, commands, server, clock } = setup();
    await commands.semanticSearch();
    const pick = host.picks[0];
    pick.type("   ");
    clock.advance(SEARCH_DEBOUNCE_MS);
    assert.equal(server.searches.length, 0);
    pick.type("boom");
    clock.advance(SEARCH_DEBOUNCE_MS);
    server.searches[0].reject(new Error("index is corrupt"));
    await flush();
    assert.match(pick.title ?? "", /search failed: index is corrupt/);
  });

  it("stays open when the focus moves away (the answer webview takes it back late)", async () => {
    const { host, commands } = setup();
    await commands.semanticSearch();
    assert.equal(host.picks[0].ignoreFocusOut, true);
  });

  it("opens while the server starts, says so, and searches once it runs", async () => {
    const { host, commands, server, clock } = setup();
    server.ready = false;
    server.starting = true;
    await commands.semanticSearch();
    const pick = host.picks[0];
    assert.ok(pick.shown, "no error toast: the pick opens at once");
    assert.deepEqual(host.errors, []);
    assert.match(pick.title ?? "", /waiting for the server/);
    pick.type("discount");
    clock.advance(SEARCH_DEBOUNCE_MS);
    await flush();
    assert.equal(server.searches.length, 0, "nothing is sent before the server runs");
    server.finishStart(true);
    await flush();
    assert.equal(server.searches.length, 1);
    assert.deepEqual(server.searches[0].params, { query: "discount", k: 20 });
    server.searches[0].resolve(searchResult([item("compute_discount")]));
    await flush();
    assert.equal(pick.title, "codeask: Semantic Search");
    assert.equal((pick.items[0].data as SearchItem | undefined)?.symbol, "compute_discount");
  });

  it("says in the open pick when the starting server did not come up", async () => {
    const { host, commands, server } = setup();
    server.ready = false;
    server.starting = true;
    await commands.semanticSearch();
    server.finishStart(false);
    await flush();
    assert.match(host.picks[0].title ?? "", /not running/);
    assert.equal(host.picks[0].busy, false);
  });

  it("asks again while the index is being built, until results from a built index arrive", async () => {
    const { host, commands, server, clock } = setup();
    await commands.semanticSearch();
    const pick = host.picks[0];
    pick.type("parse the configuration file");
    clock.advance(SEARCH_DEBOUNCE_MS);
    server.searches[0].resolve({ results: [], indexState: indexState({ state: "indexing", percent: 10 }) });
    await flush();
    assert.equal(pick.items[0].label, "No results");
    clock.advance(SEARCH_REFRESH_MS);
    assert.equal(server.searches.length, 2, "the same query again");
    assert.deepEqual(server.searches[1].params, { query: "parse the configuration file", k: 20 });
    server.searches[1].resolve(searchResult([item("load_config", 5)]));
    await flush();
    assert.equal((pick.items[0].data as SearchItem | undefined)?.symbol, "load_config");
    clock.advance(SEARCH_REFRESH_MS * 5);
    assert.equal(server.searches.length, 2, "a built index is not asked again");
  });

  it("stops asking again once the pick is closed or the query changed", async () => {
    const { host, commands, server, clock } = setup();
    await commands.semanticSearch();
    const pick = host.picks[0];
    pick.type("config");
    clock.advance(SEARCH_DEBOUNCE_MS);
    server.searches[0].resolve({ results: [], indexState: indexState({ state: "empty", percent: 0 }) });
    await flush();
    pick.type("retry");
    clock.advance(SEARCH_DEBOUNCE_MS);
    assert.equal(server.searches.length, 2);
    server.searches[1].resolve({ results: [], indexState: indexState({ state: "indexing", percent: 50 }) });
    await flush();
    pick.hide();
    clock.advance(SEARCH_REFRESH_MS * 5);
    assert.equal(server.searches.length, 2);
  });

  it("asks again only when it matters: building, or no match while vectors fill in", () => {
    const result = (state: Partial<IndexState>, n: number) => ({ results: Array.from({ length: n }, (_, i) => item(`f${i}`)), indexState: indexState(state) });
    assert.equal(searchAgainLater(result({ state: "indexing" }, 3)), true);
    assert.equal(searchAgainLater(result({ state: "empty" }, 0)), true);
    assert.equal(searchAgainLater(result({ state: "ready", warming: true }, 0)), true);
    assert.equal(searchAgainLater(result({ state: "ready", warming: true }, 2)), false, "the MiniLM tier may take minutes");
    assert.equal(searchAgainLater(result({ state: "ready" }, 0)), false);
    assert.equal(searchAgainLater(result({ state: "error" }, 0)), false);
  });

  it("warns in the title while the index warms up", () => {
    assert.equal(searchTitle(indexState()), "codeask: Semantic Search");
    assert.match(searchTitle(indexState({ state: "indexing", percent: 30 })), /warming up 30%/);
  });
});
