// Prints the README's settings table from package.json's contributes.configuration, so the
// two cannot drift (a unit test compares them). Usage: node tools/settings-table.mjs
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

export function settingsTable() {
  const rows = ["| setting | default | description |", "|---|---|---|"];
  for (const [key, p] of Object.entries(pkg.contributes.configuration.properties)) {
    const text = (p.markdownDescription ?? p.description ?? "").replace(/`?#(codeask\.[\w.]+)#`?/g, "`$1`").replace(/\|/g, "\\|");
    rows.push(`| \`${key}\` | \`${JSON.stringify(p.default)}\` | ${text} |`);
  }
  return rows.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(settingsTable());
