-- :checkhealth codeask — what the running server answers to `codeask/health` (its version, the
-- LLM endpoint it would call and whether it offers the model, the embedding tiers, the index),
-- plus what only the client can tell: the Neovim version and whether the server command exists.
-- The endpoint is never probed from here: the server resolves the settings and probes it.

local protocol = require('codeask.protocol')

local M = {}

local health = vim.health

---The server command in effect (see codeask.diagnose).
---@return string[]|fun(...): any
function M.server_cmd()
  return require('codeask.diagnose').server_cmd()
end

---`codeask serve` → `codeask --version` (also for `python -m codeask serve`).
---@param cmd string[]
---@return string[]
function M.version_cmd(cmd)
  local out = {}
  for _, part in ipairs(cmd) do
    if part == 'serve' then
      break
    end
    table.insert(out, part)
  end
  table.insert(out, '--version')
  return out
end

---The server command's executable, or nil with an error reported (the same words the
---commands use when they find no server: codeask.diagnose).
---@return string[]?
local function found_cmd()
  local cmd = M.server_cmd()
  if type(cmd) ~= 'table' then
    health.info('cmd is a function (custom transport); not checked')
    return nil
  end
  local problem = require('codeask.diagnose').cmd_problem(cmd)
  if problem then
    health.error(problem.summary, problem.advice)
    return nil
  end
  health.ok(('server found: %s (cmd: %s)'):format(vim.fn.exepath(cmd[1]), table.concat(cmd, ' ')))
  return cmd
end

---What only the client can check: Neovim itself and the server command.
local function check_client()
  health.start('codeask: client')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. version)
  else
    health.error('Neovim ' .. version .. ' is too old', { 'codeask needs Neovim 0.10 or later' })
  end
  local cmd = found_cmd()
  if cmd and #require('codeask').clients() == 0 then
    -- No server to ask: at least say which version the command would start.
    local ok, res = pcall(function()
      return vim.system(M.version_cmd(cmd), { text = true }):wait(20000)
    end)
    if ok and res.code == 0 then
      health.ok('version: ' .. vim.trim(res.stdout ~= '' and res.stdout or res.stderr))
    else
      health.warn('`--version` failed: ' .. vim.trim(ok and (res.stderr or '') or tostring(res)))
    end
  end
end

---Ask a running server for its health report (0.10 and 0.11 client APIs); the server bounds
---its endpoint probe by 2 s.
---@param client vim.lsp.Client
---@return table? response, string? err
local function request_health(client)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request_sync(protocol.HEALTH, vim.empty_dict(), 10000)
  end
  return client.request_sync(protocol.HEALTH, vim.empty_dict(), 10000)
end

---The index line: `ready: 4 files, 20 chunks · static 20/20 ✓ · MiniLM 12/20 (60%)`, each
---tier with its own share; while indexing, the running job's progress is labelled as such
---(`· indexing job 39%`): it is not a tier's share. From a server that does not report its
---tiers: `… 20 chunks, 12 embedded (60%)`.
---@param s codeask.IndexState
---@return string
function M.index_line(s)
  local tiers = require('codeask.ui').tier_summary(s.folders or {})
  local counts
  if tiers ~= '' then
    counts = ' · ' .. tiers
  else
    local share = s.chunks > 0 and math.floor(100 * s.embedded / s.chunks) or 0
    counts = (', %d embedded (%d%%)'):format(s.embedded, share)
  end
  local job = s.state == 'indexing' and (' · indexing job %d%%'):format(s.percent or 0) or ''
  return ('%s: %d files, %d chunks%s%s'):format(s.state, s.files, s.chunks, counts, job)
end

---Why a warming index is not done yet, appended to its line.
---@param s codeask.IndexState
---@return string
local function warming_note(s)
  if (s.tiersNote or '') ~= '' then
    return ' (' .. s.tiersNote .. ')'
  end
  if not s.warming then
    return ''
  end
  local folders = s.folders or {}
  if require('codeask.ui').static_complete(folders) then
    local minilm = vim.iter(folders):any(function(f)
      return vim.tbl_contains(f.tiers or {}, 'minilm')
    end)
    return minilm and ' (dense search works from the static tier; MiniLM still filling in)'
      or ' (dense search works from the static tier)'
  end
  return ' (dense results still filling in)'
end

---One folder's line; with several folders, each also gets its own tier counts.
---@param folder codeask.FolderState
---@param several boolean
---@return string
local function folder_line(folder, several)
  local line = ('%s: %s, model %s, index %s'):format(
    folder.root,
    folder.state,
    folder.model,
    folder.indexDir
  )
  local tiers = several and require('codeask.ui').tier_summary({ folder }) or ''
  return tiers ~= '' and (line .. ' · ' .. tiers) or line
end

---Report one client's index state and its folders.
---@param s codeask.IndexState
local function report_index(s)
  local line = M.index_line(s)
  if s.state == 'ready' and not s.warming then
    health.ok('index ' .. line)
  elseif s.state == 'error' then
    health.error('index ' .. line)
  else
    health.warn('index ' .. line .. warming_note(s))
  end
  local folders = s.folders or {}
  for _, folder in ipairs(folders) do
    health.info(folder_line(folder, #folders > 1))
    local team = require('codeask.ui').team_summary(folder.team)
    if team ~= '' then
      local fine = (folder.team.base or '') ~= '' and (folder.team.queryError or '') == ''
      local reason = folder.team.reason and folder.team.reason ~= '' and { folder.team.reason }
        or nil
      if fine then
        health.ok(team)
      else
        health.warn(team, reason)
      end
    end
  end
end

---The LLM endpoint as the server found it.
---@param llm codeask.LlmHealth
function M.report_llm(llm)
  local where = ('%s (%s, model %s)'):format(llm.modelsUrl, llm.provider, llm.model)
  if not llm.reachable then
    health.warn(('LLM endpoint not reachable: %s: %s'):format(where, llm.error or ''), {
      'start Ollama (`ollama serve`) or your OpenAI-compatible server',
      "or set settings.llm.baseUrl in require('codeask').setup({ settings = { llm = {...} } })",
      'search and hover work without it; only :AskCode needs it',
    })
  elseif not llm.modelPresent then
    health.warn(
      ('LLM endpoint reachable: %s, but model %s is not among its %d models'):format(
        where,
        llm.model,
        llm.models
      ),
      {
        ('list them: GET %s; set settings.llm.model to one, or pull %s'):format(
          llm.modelsUrl,
          llm.model
        ),
      }
    )
  else
    health.ok(('LLM endpoint reachable: %s, %d models'):format(where, llm.models))
  end
end

---The embedding tiers as the server found them.
---@param embedding codeask.EmbeddingHealth
local function report_embedding(embedding)
  for _, tier in ipairs(embedding.tiers or {}) do
    local line = ('%s tier (%s): %s'):format(tier.name, tier.model, tier.detail)
    if tier.available then
      health.ok(line)
    else
      health.error(line)
    end
  end
end

---The team database line (`index.backend = "postgres"`) as the server's probe found it.
---@param team codeask.TeamHealth
---@return 'ok'|'error' level
---@return string text
function M.team_line(team)
  local where = (team.where or '') ~= '' and team.where or '(no DSN)'
  local err = team.error or ''
  if not team.reachable or err ~= '' then
    local why = err ~= '' and err or 'not reachable'
    return 'error', ('team database %s (DSN from $%s): %s'):format(where, team.dsnEnv, why)
  end
  local vectors = team.modelDim > 0 and ('%d-dim vectors of embed.model'):format(team.modelDim)
    or 'no vectors of embed.model yet'
  local role = team.writable and 'read-write' or 'read-only (enough for an editor)'
  return 'ok',
    ('team database %s: schema %d (this codeask knows up to %d), %s, %s, %d ms'):format(
      where,
      team.schemaVersion,
      team.schemaKnown,
      vectors,
      role,
      team.millis
    )
end

---Render one server's `codeask/health` answer.
---@param h codeask.HealthResult
function M.report(h)
  health.start('codeask: server')
  health.ok(('version: codeask %s (Python %s)'):format(h.version, h.python))
  health.start('codeask: index')
  report_index(h.indexState)
  health.start('codeask: LLM endpoint')
  M.report_llm(h.llm)
  health.start('codeask: embedding')
  report_embedding(h.embedding)
  if h.team then
    health.start('codeask: team database')
    local level, line = M.team_line(h.team)
    health[level](line)
  end
end

---Ask each running server; without one, say so (the checks below need it).
local function check_servers()
  local clients = require('codeask').clients()
  if #clients == 0 then
    health.start('codeask: server')
    -- The buffer :checkhealth was called from (its own buffer is current by now).
    local diagnose = require('codeask.diagnose')
    local problem = diagnose.cmd_problem()
        and { summary = 'the server command was not found (above)' }
      or diagnose.no_server(vim.fn.bufnr('#'))
    health.warn(
      'no codeask client is running (the index, LLM endpoint and embedding checks ask it): '
        .. problem.summary,
      problem.advice
    )
    return
  end
  for _, client in ipairs(clients) do
    local response, err = request_health(client)
    if not response or response.err then
      health.start('codeask: server')
      health.error('codeask/health failed: ' .. tostring(err or response.err.message), {
        'a server older than this plugin? update both from the same clone',
      })
    else
      M.report(response.result)
    end
  end
end

---Entry point of `:checkhealth codeask`.
function M.check()
  check_client()
  check_servers()
end

return M
