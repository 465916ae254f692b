/**
 * The codeask wire protocol as the client sees it (docs/protocol.md). Types and method names
 * only: no logic, no vscode. They are generated from the server's msgspec Structs
 * (server/codeask/lsp/messages.py) into protocol.generated.ts; change them there and run
 * `python -m codeask.lsp.protocol_gen --write`.
 */

export * from "./protocol.generated";
