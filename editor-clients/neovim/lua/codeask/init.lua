-- codeask for Neovim: attach `codeask serve`, ask questions about the code, search it.
-- Thin on purpose: ranking, prompts and the LLM live in the server.

local config = require('codeask.config')
local protocol = require('codeask.protocol')

local M = {}

M.NAME = 'codeask'

local has_011 = vim.fn.has('nvim-0.11') == 1

---The `vim.lsp.Config` shipped in `lsp/codeask.lua` (read from 'runtimepath').
---@return vim.lsp.Config
function M.base_config()
  local file = vim.api.nvim_get_runtime_file('lsp/codeask.lua', false)[1]
  assert(file, 'codeask: lsp/codeask.lua is not on the runtimepath')
  return dofile(file)
end

---The client config that `setup()` options add on top of the base config.
---@param opts codeask.Options
---@return table
local function overrides(opts)
  local out = {}
  if opts.cmd then
    out.cmd = opts.cmd
  end
  if opts.root_markers then
    out.root_markers = opts.root_markers
  end
  if opts.settings then
    out.settings = { codeask = opts.settings }
    out.init_options = opts.settings
  end
  return out
end

---Neovim 0.10 has no `vim.lsp.enable`: start the client for file buffers ourselves.
---@param cfg vim.lsp.Config
local function autostart_010(cfg)
  local group = vim.api.nvim_create_augroup('codeask.autostart', { clear = true })
  local function start(buf)
    if vim.bo[buf].buftype ~= '' or vim.api.nvim_buf_get_name(buf) == '' then
      return
    end
    local root = vim.fs.root(buf, cfg.root_markers or { '.git' })
    if not root then
      return -- outside a project: nothing to index
    end
    local start_cfg = vim.deepcopy(cfg)
    start_cfg.name = M.NAME
    start_cfg.root_dir = root
    start_cfg.root_markers = nil
    vim.lsp.start(start_cfg, { bufnr = buf })
  end
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    callback = function(args)
      start(args.buf)
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype ~= '' then
      start(buf)
    end
  end
end

---Tell running clients about new settings (they pull `workspace/configuration` again).
---@param settings table
local function push_settings(settings)
  for _, client in ipairs(M.clients()) do
    client.settings = vim.tbl_deep_extend('force', client.settings or {}, { codeask = settings })
    M.notify(client, 'workspace/didChangeConfiguration', { settings = client.settings })
  end
end

---Configure the plugin and (unless `enable = false`) start the server for file buffers.
---Calling it again with new `settings` updates running servers.
---@param opts? codeask.Options
function M.setup(opts)
  local options = config.apply(opts)
  local extra = overrides(options)
  if has_011 then
    vim.lsp.config(M.NAME, extra)
    if options.enable then
      vim.lsp.enable(M.NAME)
    end
  elseif options.enable then
    autostart_010(vim.tbl_deep_extend('force', M.base_config(), extra))
  end
  if options.settings then
    push_settings(options.settings)
  end
  require('codeask.commands').set_keymaps(options.keymaps)
end

---Running codeask clients, those attached to `bufnr` first.
---@param bufnr? integer
---@return vim.lsp.Client[]
function M.clients(bufnr)
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local attached = bufnr and get({ name = M.NAME, bufnr = bufnr }) or {}
  local all = get({ name = M.NAME })
  local seen, out = {}, {}
  for _, list in ipairs({ attached, all }) do
    for _, client in ipairs(list) do
      if not seen[client.id] then
        seen[client.id] = true
        table.insert(out, client)
      end
    end
  end
  return out
end

---The codeask client for `bufnr` (or any running one); nil with a message when there is none.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.client(bufnr)
  return M.clients(bufnr or vim.api.nvim_get_current_buf())[1]
end

---Like `client()`, but tells the user why no server runs (codeask.diagnose: the server
---command not found, with the path tried; not enabled; not a project file; the server exited).
---@param bufnr? integer
---@return vim.lsp.Client?
function M.require_client(bufnr)
  local client = M.client(bufnr)
  if not client then
    local diagnose = require('codeask.diagnose')
    vim.notify(diagnose.message(diagnose.no_server(bufnr)), vim.log.levels.ERROR)
  end
  return client
end

---Send a request (0.10 and 0.11 client APIs).
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param handler fun(err: lsp.ResponseError?, result: any, ctx: lsp.HandlerContext)
---@param bufnr? integer
---@return boolean ok, integer? request_id
function M.request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

---Cancel a request sent with `request()` (sends `$/cancelRequest`).
---@param client vim.lsp.Client
---@param request_id integer
function M.cancel(client, request_id)
  if has_011 then
    client:cancel_request(request_id)
  else
    client.cancel_request(request_id)
  end
end

---Send a notification (0.10 and 0.11 client APIs).
---@param client vim.lsp.Client
---@param method string
---@param params table
function M.notify(client, method, params)
  if has_011 then
    client:notify(method, params)
  else
    client.notify(method, params)
  end
end

---Ask the server for its `IndexState` (`codeask/indexStatus`).
---@param callback fun(err: lsp.ResponseError?, state: codeask.IndexState?)
---@param bufnr? integer
function M.index_status(callback, bufnr)
  local client = M.require_client(bufnr)
  if not client then
    return
  end
  M.request(client, protocol.INDEX_STATUS, vim.empty_dict(), function(err, result)
    callback(err, result)
  end, bufnr)
end

---Ask a question about the code; the answer streams into a window (see `:AskCode`).
---@param opts codeask.AskOptions
function M.ask(opts)
  require('codeask.commands').ask(opts)
end

---Search the index; results go to `vim.ui.select` or, with `qf = true`, the quickfix list.
---@param query string
---@param opts? { qf?: boolean, k?: integer }
function M.search(query, opts)
  require('codeask.commands').search(query, opts)
end

---Follow the markdown link or `path:line` under the cursor (answer and hover windows).
---@return boolean jumped
function M.follow_link()
  return require('codeask.ui').follow_link()
end

return M
