-- :checkhealth codeask — server found, its version, index state, LLM endpoint reachable.

local protocol = require('codeask.protocol')

local M = {}

local health = vim.health

---The server command in effect: a running client's, else the configured one.
---@return string[]|fun(...): any
function M.server_cmd()
  local client = require('codeask').client()
  if client and client.config.cmd then
    return client.config.cmd
  end
  local options = require('codeask.config').options
  if options.cmd then
    return options.cmd
  end
  if vim.lsp.config then
    local resolved = vim.lsp.config[require('codeask').NAME]
    if resolved and resolved.cmd then
      return resolved.cmd
    end
  end
  return require('codeask').base_config().cmd
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

---The server's default base URL of each provider (its provider modules, codeask.core.llm;
---tests/test_provider_registry.py checks that the two agree).
M.DEFAULT_BASE_URLS = {
  ollama = 'http://127.0.0.1:11434',
  openai = 'http://127.0.0.1:11434',
}

---The LLM settings the client sends (the server may add a project file and environment).
---@return { provider: string, base_url: string }
function M.llm_settings()
  local client = require('codeask').client()
  local settings = client and client.settings and client.settings.codeask
  settings = settings or require('codeask.config').options.settings or {}
  local llm = settings.llm or {}
  local provider = llm.provider or vim.env.CODEASK_LLM__PROVIDER or 'ollama'
  local default = M.DEFAULT_BASE_URLS[provider] or M.DEFAULT_BASE_URLS.ollama
  local base = llm.baseUrl or llm.base_url or vim.env.CODEASK_LLM__BASE_URL or default
  return { provider = provider, base_url = base }
end

---The model-list URL of an endpoint (`/api/tags` for Ollama, `/v1/models` otherwise).
---@param llm { provider: string, base_url: string }
---@return string
function M.models_url(llm)
  local base = llm.base_url:gsub('/+$', ''):gsub('/v1$', ''):gsub('/api$', '')
  return base .. (llm.provider == 'ollama' and '/api/tags' or '/v1/models')
end

---Whether `url` answers: an HTTP status via curl, else a TCP connection to its host:port.
---@param url string
---@return boolean ok, string detail
function M.probe(url)
  if vim.fn.executable('curl') == 1 then
    local res = vim
      .system(
        { 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '3', url },
        { text = true }
      )
      :wait(5000)
    local status = tonumber(vim.trim(res.stdout or '')) or 0
    if status == 0 then
      return false, 'no answer (curl exit ' .. tostring(res.code) .. ')'
    end
    return status < 500, 'HTTP ' .. status
  end
  local host, port = url:match('^%a+://%[?([^/%]]-)%]?:(%d+)')
  if not host then
    host = url:match('^%a+://([^/:]+)')
    port = url:match('^https') and 443 or 80
  end
  local tcp = vim.uv.new_tcp()
  local done, ok, detail = false, false, ''
  local addr = vim.uv.getaddrinfo(host, nil, { socktype = 'stream' })
  local ip = addr and addr[1] and addr[1].addr
  if not ip then
    return false, 'cannot resolve ' .. host
  end
  tcp:connect(ip, tonumber(port), function(err)
    ok, detail, done = err == nil, err or ('TCP connect to ' .. host .. ':' .. port), true
  end)
  vim.wait(3000, function()
    return done
  end, 20)
  tcp:close()
  return ok, done and detail or 'timed out'
end

---Report the server binary and its version.
---@return boolean found
local function check_server()
  health.start('codeask: server')
  local cmd = M.server_cmd()
  if type(cmd) ~= 'table' then
    health.info('cmd is a function (custom transport); not checked')
    return false
  end
  local exe = cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    health.error(('server not found: `%s` is not executable'):format(exe), {
      'install it from a clone of codeask (not on PyPI yet): `pipx install .`, or'
        .. ' `python3 -m venv .venv && .venv/bin/pip install -e .`',
      "not on PATH (a venv's bin is not, unless activated)? give its full path:"
        .. " require('codeask').setup({ cmd = { '/path/to/venv/bin/codeask', 'serve' } })",
    })
    return false
  end
  health.ok(('server found: %s (cmd: %s)'):format(vim.fn.exepath(exe), table.concat(cmd, ' ')))
  local ok, res = pcall(function()
    return vim.system(M.version_cmd(cmd), { text = true }):wait(20000)
  end)
  if ok and res.code == 0 then
    health.ok('version: ' .. vim.trim(res.stdout ~= '' and res.stdout or res.stderr))
  else
    health.warn('`--version` failed: ' .. vim.trim(ok and (res.stderr or '') or tostring(res)))
  end
  return true
end

---Request the index state synchronously (0.10 and 0.11 client APIs).
---@param client vim.lsp.Client
---@return table? response, string? err
local function index_state(client)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request_sync(protocol.INDEX_STATUS, vim.empty_dict(), 5000)
  end
  return client.request_sync(protocol.INDEX_STATUS, vim.empty_dict(), 5000)
end

---The index line: `ready: 4 files, 20 chunks · static 20/20 ✓ · MiniLM 12/20 (60%)`, or
---`… 20 chunks, 12 embedded (60%)` from a server that does not report its tiers.
---@param s codeask.IndexState
---@return string
function M.index_line(s)
  local tiers = require('codeask.ui').tier_summary(s.folders or {})
  local counts = tiers ~= '' and (' · ' .. tiers) or (', %d embedded'):format(s.embedded)
  return ('%s: %d files, %d chunks%s (%d%%)'):format(
    s.state,
    s.files,
    s.chunks,
    counts,
    s.percent or 0
  )
end

---Why a warming index is not done yet, appended to its line.
---@param s codeask.IndexState
---@return string
local function warming_note(s)
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
  end
end

---Report each running client's index.
local function check_index()
  health.start('codeask: index')
  local clients = require('codeask').clients()
  if #clients == 0 then
    health.warn('no codeask client is running', {
      "open a file inside a project after vim.lsp.enable('codeask') or require('codeask').setup()",
    })
    return
  end
  for _, client in ipairs(clients) do
    local response, err = index_state(client)
    if not response or response.err then
      health.error('codeask/indexStatus failed: ' .. tostring(err or response.err.message))
    else
      report_index(response.result)
    end
  end
end

---Report whether the LLM endpoint answers.
local function check_llm()
  health.start('codeask: LLM endpoint')
  local llm = M.llm_settings()
  local url = M.models_url(llm)
  local ok, detail = M.probe(url)
  if ok then
    health.ok(('LLM endpoint reachable: %s (%s, %s)'):format(url, llm.provider, detail))
  else
    health.warn(('LLM endpoint not reachable: %s (%s)'):format(url, detail), {
      'start Ollama (`ollama serve`) or your OpenAI-compatible server',
      "or set settings.llm.baseUrl in require('codeask').setup({ settings = { llm = {...} } })",
      'search and hover work without it; only :AskCode needs it',
    })
  end
end

---Entry point of `:checkhealth codeask`.
function M.check()
  check_server()
  check_index()
  check_llm()
end

return M
