-- Why no codeask server runs for a buffer: the one place that knows, so `:AskCode`,
-- `:AskCodeSearch`, `index_status()` and `:checkhealth codeask` all name the same real cause
-- (the server command not found, with the path tried; codeask not enabled; a buffer outside a
-- project; a server that exited) instead of guessing. Neovim 0.11's `vim.lsp.enable` skips a
-- config whose command is not executable without a word (only the LSP log says so).

local M = {}

---@class codeask.Problem
---@field summary string One line: what is wrong, with the command or path tried.
---@field advice string[] What to do about it.

---@class codeask.ServerExit
---@field code integer
---@field signal integer

---The last exit of a codeask server, by root folder ('' when the root is unknown).
---@type table<string, codeask.ServerExit>
M.exits = {}

---The server command in effect: a running client's, else the configured one.
---@return string[]|fun(...): any
function M.server_cmd()
  local codeask = require('codeask')
  local client = codeask.client()
  if client and client.config.cmd then
    return client.config.cmd
  end
  local options = require('codeask.config').options
  if options.cmd then
    return options.cmd
  end
  if vim.lsp.config then
    local resolved = vim.lsp.config[codeask.NAME]
    if resolved and resolved.cmd then
      return resolved.cmd
    end
  end
  return codeask.base_config().cmd
end

---Where `exe` was looked for, in words: $PATH for a bare name, else the file itself.
---@param exe string
---@return string
local function what_was_tried(exe)
  if not exe:find('/', 1, true) then
    return ('`%s` was not found on $PATH'):format(exe)
  end
  local path = vim.fs.normalize(vim.fn.fnamemodify(exe, ':p'))
  local stat = vim.uv.fs_stat(path)
  local shown = path == exe and ('`%s`'):format(exe) or ('`%s` (%s)'):format(exe, path)
  if not stat then
    return shown .. ' does not exist'
  end
  if stat.type == 'directory' then
    return shown .. ' is a directory'
  end
  return shown .. ' is not executable'
end

---What is wrong with the server command, or nil when its executable exists (a function `cmd`,
---a custom transport, cannot be checked and is taken as fine).
---@param cmd? string[]|fun(...): any Default: `server_cmd()`.
---@return codeask.Problem?
function M.cmd_problem(cmd)
  cmd = cmd or M.server_cmd()
  if type(cmd) ~= 'table' then
    return nil
  end
  local exe = cmd[1]
  if type(exe) == 'string' and exe ~= '' and vim.fn.executable(exe) == 1 then
    return nil
  end
  exe = type(exe) == 'string' and exe or ''
  local install = 'install it from a clone of codeask (not on PyPI yet): `pipx install .`, or'
    .. ' `python3 -m venv .venv && .venv/bin/pip install -e .`'
  local full_path = "give the server's full path: vim.lsp.config('codeask', { cmd = {"
    .. " '/path/to/venv/bin/codeask', 'serve' } }) or require('codeask').setup({ cmd = {...} })"
  local advice = exe:find('/', 1, true)
      and { 'no server there: the install puts it in <venv>/bin/codeask', full_path, install }
    or { "not on $PATH (a venv's bin is not, unless activated)?", full_path, install }
  return {
    summary = ('server not found: %s (cmd: %s)'):format(
      what_was_tried(exe),
      table.concat(vim.tbl_map(tostring, cmd), ' ')
    ),
    advice = advice,
  }
end

---Whether codeask starts for file buffers (`vim.lsp.enable('codeask')` or `setup()`).
---@return boolean
local function enabled()
  local name = require('codeask').NAME
  if vim.lsp.is_enabled and vim.lsp.is_enabled(name) then
    return true
  end
  local ok, autocmds = pcall(vim.api.nvim_get_autocmds, { group = 'codeask.autostart' })
  return ok and #autocmds > 0
end

---The root markers in effect.
---@return string[]
local function root_markers()
  local options = require('codeask.config').options
  local resolved = vim.lsp.config and vim.lsp.config[require('codeask').NAME]
  return options.root_markers
    or (resolved and resolved.root_markers)
    or require('codeask').base_config().root_markers
end

---Record a server's exit (`on_exit` of lsp/codeask.lua) so a later command can say so.
---@param code integer
---@param signal integer
---@param client_id integer
function M.note_exit(code, signal, client_id)
  local client = vim.lsp.get_client_by_id and vim.lsp.get_client_by_id(client_id)
  local root = client and client.config and client.config.root_dir or ''
  M.exits[root] = { code = code, signal = signal }
end

---Why no server runs for `bufnr`, most fundamental cause first.
---@param bufnr? integer Default: the current buffer.
---@return codeask.Problem
function M.no_server(bufnr)
  if not bufnr or bufnr < 1 or not vim.api.nvim_buf_is_valid(bufnr) then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local problem = M.cmd_problem()
  if problem then
    return problem
  end
  if not enabled() then
    return {
      summary = 'codeask is not enabled',
      advice = { "call vim.lsp.enable('codeask') or require('codeask').setup() in your config" },
    }
  end
  local markers = root_markers()
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = name ~= '' and vim.bo[bufnr].buftype == '' and vim.fs.root(bufnr, markers)
  if not root then
    return {
      summary = 'no server for this buffer: it is not a file inside a project',
      advice = {
        ('open a file below a folder holding one of: %s'):format(table.concat(markers, ', ')),
      },
    }
  end
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local starting = get({ name = require('codeask').NAME, _uninitialized = true })
  if #starting > 0 then
    return {
      summary = ('the server for %s is still starting'):format(root),
      advice = { 'try again in a moment' },
    }
  end
  local exit = M.exits[root] or M.exits['']
  if exit then
    local how = exit.signal ~= 0 and ('signal %d'):format(exit.signal)
      or ('code %d'):format(exit.code)
    return {
      summary = ('the server for %s exited (%s)'):format(root, how),
      advice = { 'its messages are in :LspLog; reopen the file to start it again' },
    }
  end
  return {
    summary = ('no server is running for %s yet'):format(root),
    advice = { 'it starts when a file of the project is opened; see :LspLog' },
  }
end

---The problem as a notification: the cause, then what to do, then where the details are.
---@param problem codeask.Problem
---@return string
function M.message(problem)
  local lines = { ('codeask: %s'):format(problem.summary) }
  for _, advice in ipairs(problem.advice) do
    table.insert(lines, '  ' .. advice)
  end
  table.insert(lines, '  details: :checkhealth codeask')
  return table.concat(lines, '\n')
end

return M
