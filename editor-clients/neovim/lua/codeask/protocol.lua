-- Generated from server/codeask/lsp/messages.py by `python -m codeask.lsp.protocol_gen --write`: do not edit.
-- The codeask wire protocol (docs/protocol.md): method names and types.

---@class codeask.SemanticSearchParams
---@field query string
---@field k? integer
---@field filters? codeask.SearchFilters

---@class codeask.SearchFilters
---@field language? string
---@field pathGlob? string
---@field kind? 'class'|'commit'|'function'|'hunk'|'method'|'module'|'section'|'window'
---@field scope? 'all'|'code'|'history'
---@field author? string
---@field since? string
---@field until? string

---@class codeask.SemanticSearchResult
---@field results codeask.SearchItem[]
---@field indexState codeask.IndexState

---@class codeask.SearchItem
---@field uri string
---@field range codeask.Range
---@field symbol string
---@field kind string
---@field score number
---@field preview string
---@field retrievers string[]
---@field meta? table<string, string> History hits only: sha, author, email, date, subject.

---@class codeask.Range
---@field start codeask.Position
---@field end codeask.Position

---@class codeask.Position
---@field line integer
---@field character integer

---@class codeask.IndexState
---@field state 'empty'|'error'|'indexing'|'ready' `indexing` while any folder loads or indexes.
---@field warming boolean A configured vector tier does not cover every chunk yet, a folder is being indexed, or the MiniLM query model is loading: `tiersAnswered` says what answers.
---@field percent integer While `indexing`: the running job's progress (not a tier's share); else the share of chunks the slowest configured tier covers.
---@field files integer
---@field chunks integer
---@field embedded integer Chunks done by the slowest configured tier.
---@field folders codeask.FolderState[]
---@field tiersAnswered? string[] The retrievers a search answers with now (in a search result: those that answered it): `lexical`, then `static` and `minilm` when their vectors take part.
---@field tiersNote? string One line: which tiers answered and each configured vector tier's count, e.g. `answered by lexical + static (static: all 9051 chunks; MiniLM: 1200 of 9051 chunks (13%), filling in)`; empty when every configured tier is complete and answers.

---@class codeask.FolderState
---@field root string
---@field state string
---@field files integer
---@field chunks integer
---@field embedded integer
---@field model string
---@field indexDir string
---@field message? string Why the folder is in state `error` (or what it is doing).
---@field updates? integer Single-file reindex runs (saves, watcher events) since the server started.
---@field staticEmbedded? integer Chunks with a static-tier vector (servers before the tiers omit it).
---@field tiers? string[] The vector tiers this folder builds (`embed.tiers`).
---@field team? codeask.TeamState The team base (absent while loading, and from older servers).
---@field ignoreNote? string Set when the ignore rules leave (nearly) nothing of the folder: which file and line, and how to override it (`index.gitignore = false`, a `!` line).
---@field modelTier? string What the model tier covers: `full`, or `on demand: N chunks cached, M of opened or changed files` (a folder past `embed.modelFullPassChunks`); empty without one.

---@class codeask.TeamState
---@field backend 'local'|'postgres' `index.backend`.
---@field kind? 'base'|'off'|'unpublished'|'unreachable'|'unusable' `base` when it reads one; else why not: `unreachable` (the database did not answer: retried), `unpublished` (nothing near HEAD), `unusable`; `off`: local.
---@field base? string `repository@sha[:12]` of the revision read; empty without.
---@field behind? integer Commits from that revision to HEAD.
---@field overlayFiles? integer Files that differ from the base (edited, new, deleted): the local overlay.
---@field reason? string Why there is no base, one line, no password.
---@field retryIn? integer Seconds until the unreachable database is tried again.
---@field queryError? string Why the last query to the base failed; empty once one succeeded.
---@field cache? string The team embedding cache: `connected`, `not tried yet` or `unavailable: ...` (empty before the model loads).

---@class codeask.AskCodeParams
---@field question string
---@field uri? string
---@field range? codeask.Range
---@field k? integer
---@field filters? codeask.SearchFilters
---@field streamToken? string|integer

---@class codeask.AskCodeResult
---@field answer string
---@field sources codeask.AskSource[]
---@field model string
---@field promptTokens integer
---@field truncated boolean
---@field indexState codeask.IndexState
---@field error? string Set when the LLM call failed or was stopped; sources are still there.
---@field incomplete? boolean `answer` is what arrived before `error` stopped it (a cap, a deadline, or the server's own ending: its token cap or a content filter).

---@class codeask.AskSource
---@field uri string
---@field range codeask.Range
---@field symbol string
---@field score number

---@class codeask.IndexStatusParams

---@class codeask.HealthParams

---@class codeask.HealthResult
---@field version string codeask's version.
---@field python string The server's Python, e.g. `3.11.9 (CPython)`.
---@field llm codeask.LlmHealth
---@field embedding codeask.EmbeddingHealth
---@field indexState codeask.IndexState What `codeask/indexStatus` answers.
---@field team? codeask.TeamHealth The team database; absent unless `index.backend = "postgres"`.

---@class codeask.LlmHealth
---@field provider string `llm.provider`.
---@field endpoint string `llm.baseUrl` without credentials (`user:pass@` → `***@`).
---@field modelsUrl string The address probed: the provider's model list.
---@field model string `llm.model`.
---@field reachable boolean The model list came back within the probe's 2 s.
---@field modelPresent boolean `model` is in that list (false when unreachable).
---@field models integer How many models the endpoint offers.
---@field loopback boolean The endpoint is this machine (localhost, 127/8, ::1).
---@field error? string Why it is unreachable, one line; empty when it answered.

---@class codeask.EmbeddingHealth
---@field model string
---@field tiers codeask.EmbeddingTier[]

---@class codeask.EmbeddingTier
---@field name string `static` or `minilm`.
---@field model string
---@field available boolean The model can be loaded without a download.
---@field detail string

---@class codeask.TeamHealth
---@field dsnEnv string The environment variable holding the DSN (never the DSN).
---@field where string `user@host:port/db`, no password; empty without a DSN.
---@field reachable boolean
---@field schemaVersion integer The database's codeask schema (0: never migrated).
---@field schemaKnown integer The newest schema this server knows.
---@field modelDim integer The team's dimension for `embed.model` (0: none yet).
---@field writable boolean This role may add vectors (publishers need it).
---@field millis integer How long the probe took.
---@field error? string Why it is unusable, one line, redacted; empty when fine.

---@class codeask.AnswerDelta
---@field streamToken string|integer The `streamToken` the askCode request carried.
---@field delta string

local M = {}

M.SEMANTIC_SEARCH = 'workspace/semanticSearch'
M.ASK_CODE = 'workspace/askCode'
M.INDEX_STATUS = 'codeask/indexStatus'
M.HEALTH = 'codeask/health'
M.ANSWER_DELTA = 'codeask/answerDelta'

return M
