-- Options of the plugin: defaults, validation and the merged result of `setup()`.

local M = {}

---@class codeask.UiOptions
---@field answer? 'float'|'split' Where `:AskCode` answers appear.
---@field width? number Float width: a fraction of the editor (<= 1) or columns.
---@field height? number Float height: a fraction of the editor (<= 1) or lines.
---@field border? string|string[] Float border (see `nvim_open_win`).
---@field split? string Split command for `answer = 'split'`, e.g. `botright vsplit`.
---@field open_quickfix? boolean Open the quickfix window after an answer lists its sources.

---@class codeask.Keymaps
---@field ask? string|false Normal and visual mode: `:AskCode` (prompts for the question).
---@field search? string|false Normal mode: `:AskCodeSearch` (prompts for the query).

---@class codeask.Options
---@field cmd? string[] How to start the server (default `{ 'codeask', 'serve' }`).
---@field settings? table The settings tree of `codeask.config.Settings`, e.g. `{ llm = { provider = 'openai' } }`.
---@field root_markers? string[] Files or folders that mark a project root.
---@field enable? boolean Start the server for file buffers (`vim.lsp.enable`); default true.
---@field search_k? integer How many results `:AskCodeSearch` asks for.
---@field ui? codeask.UiOptions
---@field keymaps? codeask.Keymaps|false Global keymaps; off by default.
---@field hover_links? boolean `gd`/`<CR>` follow a link in a focused LSP hover window.
---@field restart? boolean Start the server again when the daemon under it went away (exit 75).

---@type codeask.Options
M.defaults = {
  cmd = nil,
  settings = nil,
  root_markers = nil,
  enable = true,
  search_k = 20,
  ui = {
    answer = 'float',
    width = 0.8,
    height = 0.7,
    border = 'rounded',
    split = 'botright vsplit',
    open_quickfix = false,
  },
  keymaps = false,
  hover_links = true,
  restart = true,
}

---@type codeask.Options
M.options = vim.deepcopy(M.defaults)

---`vim.validate` for one value, in the form this Neovim understands (0.10 has only the table form).
---@param name string
---@param value any
---@param types string|string[]
local function check(name, value, types)
  if vim.fn.has('nvim-0.11') == 1 then
    vim.validate(name, value, types, true)
  else
    vim.validate({ [name] = { value, types, true } })
  end
end

---Validate user options; raises a readable error on a wrong type.
---@param opts codeask.Options
local function validate(opts)
  check('cmd', opts.cmd, 'table')
  check('settings', opts.settings, 'table')
  check('root_markers', opts.root_markers, 'table')
  check('enable', opts.enable, 'boolean')
  check('search_k', opts.search_k, 'number')
  check('ui', opts.ui, 'table')
  check('keymaps', opts.keymaps, { 'table', 'boolean' })
  check('hover_links', opts.hover_links, 'boolean')
  check('restart', opts.restart, 'boolean')
  if opts.ui and opts.ui.answer and not vim.tbl_contains({ 'float', 'split' }, opts.ui.answer) then
    error("codeask: ui.answer must be 'float' or 'split'", 0)
  end
end

---Merge `opts` over the defaults and store the result in `options`.
---@param opts? codeask.Options
---@return codeask.Options
function M.apply(opts)
  opts = opts or {}
  validate(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- Lists replace rather than merge.
  M.options.cmd = opts.cmd
  M.options.root_markers = opts.root_markers
  return M.options
end

return M
