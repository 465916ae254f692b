-- The codeask language server as a `vim.lsp.Config`: `vim.lsp.enable('codeask')` is all it takes
-- (Neovim >= 0.11). Options can be layered on with `vim.lsp.config('codeask', {...})` or
-- `require('codeask').setup({...})`.

---@type vim.lsp.Config
return {
  cmd = { 'codeask', 'serve' },
  -- No `filetypes`: codeask indexes every language, so it attaches to every file buffer.
  -- A VCS root wins over an index folder found further up (an old `.codeask` in a parent,
  -- e.g. the home folder, must not capture every project below it).
  root_markers = { '.codeask.toml', 'codeask.toml', '.git', '.hg', '.jj', '.codeask' },
  -- Like root_markers, but never for a buffer without a file (an empty buffer would otherwise
  -- index the current directory) nor outside a project (no marker: no server).
  ---@param bufnr integer
  ---@param on_dir fun(root_dir?: string)
  root_dir = function(bufnr, on_dir)
    if vim.api.nvim_buf_get_name(bufnr) == '' then
      return
    end
    local resolved = vim.lsp.config and vim.lsp.config.codeask
    local markers = resolved and resolved.root_markers or { '.git' }
    local root = vim.fs.root(bufnr, markers)
    if root then
      on_dir(root)
    end
  end,
  -- The settings tree of `codeask.config.Settings` (docs/protocol.md). The server pulls section
  -- `codeask` with workspace/configuration; `before_init` also sends it as initializationOptions.
  settings = { codeask = {} },
  ---@param params lsp.InitializeParams
  ---@param config vim.lsp.ClientConfig
  before_init = function(params, config)
    local init = params.initializationOptions
    if init == nil or (type(init) == 'table' and vim.tbl_isempty(init)) then
      local settings = config.settings and config.settings.codeask
      if type(settings) == 'table' and not vim.tbl_isempty(settings) then
        params.initializationOptions = settings
      end
    end
  end,
  -- Remembered so a later :AskCode says the server exited instead of guessing why none runs;
  -- a server that ended because the daemon went away (exit 75) is started again.
  ---@param code integer
  ---@param signal integer
  ---@param client_id integer
  on_exit = function(code, signal, client_id)
    require('codeask.diagnose').note_exit(code, signal, client_id)
    require('codeask.restart').on_exit(code, signal, client_id)
  end,
  handlers = {
    ---Streamed answer text of workspace/askCode (only for requests that carry a streamToken).
    [require('codeask.protocol').ANSWER_DELTA] = function(err, result, ctx)
      require('codeask.ui').on_answer_delta(err, result, ctx)
    end,
  },
}
