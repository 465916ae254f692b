-- :AskCode and :AskCodeSearch: build the request, hand the result to codeask.ui.

local protocol = require('codeask.protocol')

local M = {}

---@class codeask.LineRange
---@field line1 integer First line, 1-based.
---@field line2 integer Last line, 1-based, inclusive.
---@field col1? integer Byte column (0-based) where a charwise selection starts.
---@field col2? integer Byte column (0-based, exclusive) where a charwise selection ends.

---@class codeask.AskOptions
---@field question? string The question; prompted for when empty.
---@field bufnr? integer Buffer the range belongs to (default: current).
---@field range? codeask.LineRange Selected code sent along as `uri` + `range`.
---@field k? integer How many chunks of context the server retrieves.

---@type integer
local token_counter = 0

---A streamToken unique to this Neovim process.
---@return string
local function next_token()
  token_counter = token_counter + 1
  return ('nvim-%d-%d'):format(vim.fn.getpid(), token_counter)
end

---An LSP range for 1-based inclusive lines (or a charwise selection) of `bufnr`.
---@param bufnr integer
---@param r codeask.LineRange
---@param encoding string The client's offset encoding.
---@return lsp.Range
function M.lsp_range(bufnr, r, encoding)
  local last = vim.api.nvim_buf_get_lines(bufnr, r.line2 - 1, r.line2, false)[1] or ''
  local col1 = r.col1 or 0
  local col2 = math.min(r.col2 or #last, #last)
  local util = vim.lsp.util
  return {
    start = {
      line = r.line1 - 1,
      character = util.character_offset(bufnr, r.line1 - 1, col1, encoding),
    },
    ['end'] = {
      line = r.line2 - 1,
      character = util.character_offset(bufnr, r.line2 - 1, col2, encoding),
    },
  }
end

---The line range of a user command, with columns when it came from a charwise selection.
---@param cmd table The argument of a user command callback.
---@return codeask.LineRange?
function M.command_range(cmd)
  if cmd.range == 0 then
    return nil
  end
  local r = { line1 = cmd.line1, line2 = cmd.line2 }
  local s, e = vim.api.nvim_buf_get_mark(0, '<'), vim.api.nvim_buf_get_mark(0, '>')
  if vim.fn.visualmode() == 'v' and s[1] == cmd.line1 and e[1] == cmd.line2 then
    local last = vim.api.nvim_buf_get_lines(0, e[1] - 1, e[1], false)[1] or ''
    -- '> marks the first byte of the last selected character; the range end is exclusive.
    local char_len = #vim.fn.strcharpart(last:sub(e[2] + 1), 0, 1)
    r.col1, r.col2 = s[2], e[2] + math.max(char_len, 1)
  end
  return r
end

---Ask a question: stream the answer into a window, send its sources to the quickfix list.
---@param opts? codeask.AskOptions
function M.ask(opts)
  opts = opts or {}
  local codeask = require('codeask')
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = codeask.require_client(bufnr)
  if not client then
    return
  end
  local question = vim.trim(opts.question or '')
  if question == '' then
    vim.ui.input({ prompt = 'Ask codeask: ' }, function(input)
      if input and vim.trim(input) ~= '' then
        M.ask(vim.tbl_extend('force', opts, { question = input, bufnr = bufnr }))
      end
    end)
    return
  end
  ---@type codeask.AskCodeParams
  local params = { question = question, streamToken = next_token() }
  if opts.range then
    params.uri = vim.uri_from_bufnr(bufnr)
    params.range = M.lsp_range(bufnr, opts.range, client.offset_encoding or 'utf-16')
  end
  params.k = opts.k
  local ui = require('codeask.ui')
  local view = ui.open_answer({ question = question, client = client, token = params.streamToken })
  local ok, request_id = codeask.request(client, protocol.ASK_CODE, params, function(err, result)
    ui.finish_answer(view, err, result)
  end, bufnr)
  if not ok then
    ui.finish_answer(view, { code = -32603, message = 'the server is not running' }, nil)
    return
  end
  view.request_id = request_id
  M.last_ask = { params = params, view = view }
end

---Search the index: results into `vim.ui.select`, or the quickfix list with `opts.qf`.
---@param query string
---@param opts? { qf?: boolean, k?: integer, bufnr?: integer }
function M.search(query, opts)
  opts = opts or {}
  local codeask = require('codeask')
  local client = codeask.require_client(opts.bufnr)
  if not client then
    return
  end
  query = vim.trim(query or '')
  if query == '' then
    vim.ui.input({ prompt = 'Search code: ' }, function(input)
      if input and vim.trim(input) ~= '' then
        M.search(input, opts)
      end
    end)
    return
  end
  local k = opts.k or require('codeask.config').options.search_k
  ---@type codeask.SemanticSearchParams
  local params = { query = query, k = k }
  M.last_search = { params = params }
  codeask.request(client, protocol.SEMANTIC_SEARCH, params, function(err, result)
    M.last_search.result = result
    M.last_search.err = err
    require('codeask.ui').show_search(client, query, err, result, opts.qf)
  end, opts.bufnr)
end

---Create the user commands (idempotent).
function M.create()
  vim.api.nvim_create_user_command('AskCode', function(cmd)
    M.ask({ question = cmd.args, range = M.command_range(cmd) })
  end, {
    nargs = '*',
    range = true,
    desc = 'codeask: ask a question about the code (with a range: about the selection)',
  })
  vim.api.nvim_create_user_command('AskCodeSearch', function(cmd)
    M.search(cmd.args, { qf = cmd.bang })
  end, {
    nargs = '*',
    bang = true,
    desc = 'codeask: semantic code search (with !: into the quickfix list)',
  })
end

---Global keymaps from `setup({ keymaps = {...} })`; nothing when `keymaps` is false.
---@param keymaps codeask.Keymaps|false|nil
function M.set_keymaps(keymaps)
  if type(keymaps) ~= 'table' then
    return
  end
  if keymaps.ask then
    vim.keymap.set('n', keymaps.ask, '<Cmd>AskCode<CR>', { desc = 'codeask: ask' })
    vim.keymap.set('x', keymaps.ask, ':AskCode<CR>', { desc = 'codeask: ask about selection' })
  end
  if keymaps.search then
    vim.keymap.set('n', keymaps.search, '<Cmd>AskCodeSearch<CR>', { desc = 'codeask: search' })
  end
end

return M
