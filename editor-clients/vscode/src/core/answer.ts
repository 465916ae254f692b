/**
 * The answer panel's model and its HTML: the streamed text, the final result, the sources.
 * Markdown is rendered with markdown-it with raw HTML disabled, so nothing the model (or a
 * file it quotes) writes can inject markup or script into the webview.
 */

import MarkdownIt from "markdown-it";
import { locationHref, locationLabel } from "./format";
import type { AskCodeResult, AskSource } from "./protocol";

/** `incomplete`: the model or a cap stopped the answer early; what arrived is kept. */
export type AnswerStatus = "waiting" | "streaming" | "done" | "incomplete" | "cancelled" | "error";

export interface SourceLink {
  label: string;
  symbol: string;
  href: string;
}

export interface AnswerModel {
  question: string;
  /** What the question was asked about, e.g. `app.py:3-9` (selection) or `app.py` (file). */
  context?: string;
  text: string;
  /** How many `codeask/answerDelta` notifications arrived: > 1 means the answer streamed. */
  deltas: number;
  status: AnswerStatus;
  sources: SourceLink[];
  error?: string;
  model?: string;
  promptTokens?: number;
  truncated?: boolean;
}

export function newAnswer(question: string, context?: string): AnswerModel {
  return { question, context, text: "", deltas: 0, status: "waiting", sources: [] };
}

/** Append a streamed piece (ignored once the answer is final). */
export function applyDelta(model: AnswerModel, delta: string): void {
  if (model.status !== "waiting" && model.status !== "streaming") return;
  model.text += delta;
  model.deltas += 1;
  model.status = "streaming";
}

/** Take the server's final result: its answer is authoritative, sources become links. */
export function applyResult(model: AnswerModel, result: AskCodeResult, folders: string[]): void {
  model.sources = result.sources.map((s) => sourceLink(s, folders));
  model.model = result.model;
  model.promptTokens = result.promptTokens;
  model.truncated = result.truncated;
  if (result.error) {
    model.status = result.incomplete ? "incomplete" : "error";
    // A partial answer (a cap or the deadline stopped it) stays visible, marked incomplete.
    model.error = result.incomplete ? `incomplete: ${result.error}` : result.error;
    if (result.incomplete && result.answer) model.text = result.answer;
    return;
  }
  if (result.answer) model.text = result.answer;
  model.status = "done";
}

export function applyCancel(model: AnswerModel): void {
  model.status = "cancelled";
}

export function applyFailure(model: AnswerModel, message: string): void {
  model.status = "error";
  model.error = message;
}

export function sourceLink(source: AskSource, folders: string[]): SourceLink {
  return {
    label: locationLabel(source.uri, source.range, folders),
    symbol: source.symbol,
    href: locationHref(source.uri, source.range),
  };
}

/** markdown-it configured for untrusted text: no raw HTML, links only to safe schemes. */
export function createMarkdown(): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });
  md.validateLink = (url: string) => /^(https?:|file:|#)/i.test(url.trim());
  return md;
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

const STATUS_TEXT: Record<AnswerStatus, string> = {
  waiting: "Retrieving context and waiting for the model…",
  streaming: "Streaming…",
  done: "Done",
  incomplete: "Incomplete: stopped early",
  cancelled: "Cancelled",
  error: "Failed",
};

/** The panel body for the current model (the webview swaps it in with innerHTML). */
export function renderAnswerBody(model: AnswerModel, md: MarkdownIt): string {
  const busy = model.status === "waiting" || model.status === "streaming";
  const parts: string[] = [];
  parts.push(`<header><h2 id="question">${escapeHtml(model.question)}</h2>`);
  if (model.context) parts.push(`<div class="context">about <code>${escapeHtml(model.context)}</code></div>`);
  parts.push(`</header>`);
  const facts = [STATUS_TEXT[model.status]];
  if (model.model) facts.push(`model ${model.model}`);
  if (model.promptTokens) facts.push(`${model.promptTokens} prompt tokens`);
  if (model.truncated) facts.push("context truncated");
  parts.push(
    `<div id="status" data-status="${model.status}" data-deltas="${model.deltas}">${escapeHtml(facts.join(" · "))}` +
      (busy ? ` <button id="cancel" type="button">Cancel</button>` : "") +
      `</div>`,
  );
  if (model.error) parts.push(`<div id="error" class="error">${escapeHtml(model.error)}</div>`);
  parts.push(`<article id="answer">${md.render(model.text)}</article>`);
  if (model.sources.length > 0) {
    const items = model.sources.map(
      (s) =>
        `<li><a class="source" href="${escapeHtml(s.href)}">${escapeHtml(s.label)}</a>` +
        (s.symbol ? ` <code>${escapeHtml(s.symbol)}</code>` : "") +
        `</li>`,
    );
    parts.push(`<section id="sources"><h3>Sources</h3><ol>${items.join("")}</ol></section>`);
  }
  return parts.join("\n");
}

/** The webview document: strict CSP, one nonce'd script that swaps bodies and forwards clicks. */
export function answerShell(nonce: string, cspSource: string): string {
  const csp = [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${cspSource} https: data:`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 16px 24px; line-height: 1.5; }
h2 { font-size: 1.2em; margin-bottom: 2px; }
.context, #status { color: var(--vscode-descriptionForeground); font-size: 0.92em; }
#status { margin: 6px 0 10px; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 2px 10px; margin-left: 8px; cursor: pointer; }
.error { color: var(--vscode-errorForeground); border-left: 3px solid var(--vscode-errorForeground); padding-left: 8px; }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px; overflow-x: auto; }
code { font-family: var(--vscode-editor-font-family); }
a { color: var(--vscode-textLink-foreground); cursor: pointer; }
#sources { border-top: 1px solid var(--vscode-panel-border); margin-top: 16px; }
#sources h3 { font-size: 1em; }
</style></head>
<body><div id="root"></div>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const root = document.getElementById("root");
window.addEventListener("message", (event) => {
  const msg = event.data;
  if (!msg || msg.type !== "render") return;
  // Keep the same Cancel button node across renders: a click whose press and release straddle
  // a streamed update must still land on it.
  const cancel = document.getElementById("cancel");
  root.innerHTML = msg.html;
  const fresh = document.getElementById("cancel");
  if (cancel && fresh) fresh.replaceWith(cancel);
});
document.addEventListener("click", (event) => {
  const target = event.target;
  if (!(target instanceof Element)) return;
  if (target.closest("#cancel")) { vscode.postMessage({ type: "cancel" }); return; }
  const link = target.closest("a");
  if (link) { event.preventDefault(); vscode.postMessage({ type: "open", href: link.getAttribute("href") || "" }); }
});
vscode.postMessage({ type: "ready" });
</script></body></html>`;
}
