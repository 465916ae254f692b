-- Rendering: the streamed answer window, search results, links that jump.

local M = {}

---@class codeask.Location
---@field uri string
---@field range lsp.Range

---@class codeask.Source : codeask.Location
---@field symbol? string
---@field score? number

---@class codeask.AnswerView
---@field buf integer The answer buffer (markdown, scratch).
---@field win? integer The window showing it.
---@field float boolean Whether `win` is a floating window.
---@field origin_win integer The window `:AskCode` was run from (jumps land there).
---@field question string
---@field text string The answer so far.
---@field sources codeask.Source[]
---@field status 'waiting'|'streaming'|'done'|'cancelled'|'error'
---@field message? string An error (LLM or request) to show.
---@field footer? string Model and token counts once done.
---@field client vim.lsp.Client
---@field token string The streamToken of the request.
---@field request_id? integer
---@field deltas integer How many `codeask/answerDelta` notifications arrived.
---@field result? codeask.AskCodeResult The askCode result, once it arrived.
---@field response_error? table The error response (e.g. RequestCancelled), if any.
---@field locations table<integer, codeask.Location> Buffer line (1-based) → where <CR> jumps.

---Answer views by streamToken, while their request runs.
---@type table<string, codeask.AnswerView>
M.streams = {}

---The most recent answer view (tests and `:AskCode` reuse of the window).
---@type codeask.AnswerView?
M.current = nil

local ns = vim.api.nvim_create_namespace('codeask')

---@param view codeask.AnswerView
---@return boolean
local function pending(view)
  return view.status == 'waiting' or view.status == 'streaming'
end

---A path for humans: relative to the client's root (or the cwd) when inside it.
---@param fname string
---@param client? vim.lsp.Client
---@return string
function M.display_path(fname, client)
  local root = client and client.config and client.config.root_dir
  if root and fname:sub(1, #root + 1) == root .. '/' then
    return fname:sub(#root + 2)
  end
  return vim.fn.fnamemodify(fname, ':~:.')
end

---`path:line` (1-based line) for a location.
---@param loc codeask.Location
---@param client? vim.lsp.Client
---@return string
function M.location_label(loc, client)
  return ('%s:%d'):format(
    M.display_path(vim.uri_to_fname(loc.uri), client),
    loc.range.start.line + 1
  )
end

---The lines of the answer buffer, and which of them are jumpable sources.
---@param view codeask.AnswerView
---@return string[] lines, table<integer, codeask.Location> locations
local function answer_lines(view)
  local lines = { '# ' .. view.question:gsub('\n', ' '), '' }
  if view.text ~= '' then
    vim.list_extend(lines, vim.split(view.text, '\n', { plain = true }))
  elseif view.status == 'waiting' then
    table.insert(lines, '_Thinking…_')
  end
  if view.message then
    vim.list_extend(lines, { '', '> **Error:** ' .. view.message:gsub('\n', ' ') })
  end
  if view.status == 'cancelled' then
    vim.list_extend(lines, { '', '_Cancelled._' })
  end
  local locations = {}
  if #view.sources > 0 then
    vim.list_extend(lines, { '', '## Sources', '' })
    for _, src in ipairs(view.sources) do
      local symbol = src.symbol and src.symbol ~= '' and ('  `' .. src.symbol .. '`') or ''
      table.insert(lines, '- ' .. M.location_label(src, view.client) .. symbol)
      locations[#lines] = src
    end
  end
  if view.footer then
    vim.list_extend(lines, { '', '_' .. view.footer .. '_' })
  end
  return lines, locations
end

---Redraw the answer buffer from the view's state; keeps the end in sight while streaming.
---@param view codeask.AnswerView
function M.render(view)
  if not vim.api.nvim_buf_is_valid(view.buf) then
    return
  end
  local lines, locations = answer_lines(view)
  view.locations = locations
  local win_ok = view.win and vim.api.nvim_win_is_valid(view.win)
  -- Follow the stream only while the cursor is at the end (the reader may have moved up).
  local follow = win_ok
    and vim.api.nvim_win_get_cursor(view.win)[1] >= vim.api.nvim_buf_line_count(view.buf) - 1
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.b[view.buf].codeask_status = view.status
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  if pending(view) then
    vim.api.nvim_buf_set_extmark(view.buf, ns, 0, 0, {
      virt_text = { { '  streaming… q closes, <C-c> cancels', 'Comment' } },
      virt_text_pos = 'eol',
    })
  end
  if follow and pending(view) then
    vim.api.nvim_win_set_cursor(view.win, { #lines, 0 })
  end
end

---Cancel the view's request if it still runs (`$/cancelRequest`).
---@param view codeask.AnswerView
function M.cancel(view)
  if not pending(view) then
    return
  end
  view.status = 'cancelled'
  M.streams[view.token] = nil
  if view.request_id then
    require('codeask').cancel(view.client, view.request_id)
  end
  M.render(view)
end

---Cancel and close the answer window.
---@param view codeask.AnswerView
function M.close(view)
  M.cancel(view)
  if view.win and vim.api.nvim_win_is_valid(view.win) then
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(view.win, true)
    elseif vim.api.nvim_buf_is_valid(view.buf) then
      vim.cmd.enew()
    end
  end
  view.win = nil
end

---A window size from a fraction of the editor (<= 1) or an absolute count.
---@param value number
---@param total integer
---@return integer
local function size(value, total)
  local n = value <= 1 and math.floor(total * value) or math.floor(value)
  return math.max(10, math.min(n, total - 4))
end

---Show `buf` in a centered float or a split, per the `ui` options.
---@param buf integer
---@param reuse_win? integer A window of an earlier answer to reuse.
---@return integer win, boolean float
local function show_buffer(buf, reuse_win)
  local ui = require('codeask.config').options.ui
  if reuse_win and vim.api.nvim_win_is_valid(reuse_win) then
    vim.api.nvim_win_set_buf(reuse_win, buf)
    vim.api.nvim_set_current_win(reuse_win)
    return reuse_win, vim.api.nvim_win_get_config(reuse_win).relative ~= ''
  end
  if ui.answer == 'split' then
    vim.cmd(ui.split)
    local win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    return win, false
  end
  local width, height = size(ui.width, vim.o.columns), size(ui.height, vim.o.lines)
  local win_config = {
    relative = 'editor',
    width = width,
    height = height,
    row = math.max(math.floor((vim.o.lines - height) / 2) - 1, 0),
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = ui.border,
  }
  if ui.border and ui.border ~= 'none' and ui.border ~= '' then
    win_config.title, win_config.title_pos = ' codeask ', 'center'
  end
  local win = vim.api.nvim_open_win(buf, true, win_config)
  return win, true
end

---Buffer-local keys of the answer window.
---@param view codeask.AnswerView
local function answer_keymaps(view)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = view.buf, nowait = true, desc = desc })
  end
  map('q', function()
    M.close(view)
  end, 'codeask: cancel and close')
  map('<C-c>', function()
    M.cancel(view)
  end, 'codeask: cancel the answer')
  map('<CR>', function()
    if not M.follow_link() then
      vim.notify('codeask: no source or link under the cursor', vim.log.levels.INFO)
    end
  end, 'codeask: jump to the source under the cursor')
  map('gd', function()
    if not M.follow_link() then
      vim.notify('codeask: no source or link under the cursor', vim.log.levels.INFO)
    end
  end, 'codeask: jump to the link under the cursor')
end

---Open an (empty, "thinking") answer window for a question about to be sent.
---@param args { question: string, client: vim.lsp.Client, token: string }
---@return codeask.AnswerView
function M.open_answer(args)
  local previous = M.current
  local reuse
  if previous then
    M.cancel(previous)
    reuse = previous.win
  end
  local origin = vim.api.nvim_get_current_win()
  if previous and origin == previous.win then
    origin = previous.origin_win
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'markdown'
  ---@type codeask.AnswerView
  local view = {
    buf = buf,
    float = false,
    origin_win = origin,
    question = args.question,
    text = '',
    sources = {},
    status = 'waiting',
    client = args.client,
    token = args.token,
    deltas = 0,
    locations = {},
  }
  view.win, view.float = show_buffer(buf, reuse)
  vim.wo[view.win].wrap = true
  vim.wo[view.win].linebreak = true
  vim.wo[view.win].conceallevel = 2
  vim.b[buf].codeask_answer = true
  answer_keymaps(view)
  -- Closing the window any other way (:q, :bwipe) also stops the generation.
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      M.cancel(view)
    end,
  })
  M.streams[view.token] = view
  M.current = view
  M.render(view)
  vim.api.nvim_win_set_cursor(view.win, { vim.api.nvim_buf_line_count(buf), 0 })
  return view
end

---Handler of the `codeask/answerDelta` notification: append text to its answer window.
---@param err? lsp.ResponseError
---@param params { streamToken: string|integer, delta: string }
---@param _ctx? lsp.HandlerContext
function M.on_answer_delta(err, params, _ctx)
  if err or type(params) ~= 'table' then
    return
  end
  local view = M.streams[tostring(params.streamToken)]
  if not view or not pending(view) then
    return
  end
  view.text = view.text .. (params.delta or '')
  view.deltas = view.deltas + 1
  view.status = 'streaming'
  M.render(view)
end

---Quickfix items for sources or search results.
---@param items codeask.Source[]
---@param text fun(item: table): string
---@return table[]
local function qf_items(items, text)
  local out = {}
  for _, item in ipairs(items) do
    table.insert(out, {
      filename = vim.uri_to_fname(item.uri),
      lnum = item.range.start.line + 1,
      col = item.range.start.character + 1,
      end_lnum = item.range['end'].line + 1,
      text = text(item),
      user_data = item,
    })
  end
  return out
end

---Send the answer's sources to the quickfix list.
---@param view codeask.AnswerView
local function sources_to_qf(view)
  if #view.sources == 0 then
    return
  end
  local items = qf_items(view.sources, function(src)
    return src.symbol or ''
  end)
  vim.fn.setqflist({}, ' ', { title = 'codeask: ' .. view.question, items = items })
  if require('codeask.config').options.ui.open_quickfix then
    local win = vim.api.nvim_get_current_win()
    vim.cmd('botright copen')
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_set_current_win(win)
    end
  end
end

---Handler of the askCode response: final text, sources (also to quickfix), errors.
---@param view codeask.AnswerView
---@param err? lsp.ResponseError
---@param result? codeask.AskCodeResult
function M.finish_answer(view, err, result)
  M.streams[view.token] = nil
  view.response_error = err
  view.result = result
  if view.status == 'cancelled' then
    return
  end
  if err then
    view.status = 'error'
    view.message = err.message or vim.inspect(err)
    M.render(view)
    return
  end
  result = result or {}
  if type(result.answer) == 'string' and result.answer ~= '' then
    view.text = result.answer
  end
  if type(result.error) == 'string' and result.error ~= '' then
    -- A partial answer (a cap or the deadline stopped it) stays, marked incomplete.
    view.message = (result.incomplete and 'incomplete: ' or '') .. result.error
  end
  view.sources = result.sources or {}
  view.status = 'done'
  local bits = {}
  if result.model and result.model ~= '' then
    table.insert(bits, result.model)
  end
  if result.promptTokens then
    table.insert(bits, ('%d prompt tokens'):format(result.promptTokens))
  end
  if result.truncated then
    table.insert(bits, 'context truncated')
  end
  view.footer = #bits > 0 and table.concat(bits, ' · ') or nil
  sources_to_qf(view)
  M.render(view)
end

---Open a location in a normal window; leaves a float (answer or hover) first.
---@param loc codeask.Location
---@param encoding? string
---@param target_win? integer Where to open it (default: the previous window).
function M.jump(loc, encoding, target_win)
  local cur = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_config(cur).relative ~= '' then
    vim.api.nvim_win_close(cur, false)
  end
  if target_win and vim.api.nvim_win_is_valid(target_win) then
    vim.api.nvim_set_current_win(target_win)
  elseif vim.b.codeask_answer then
    vim.cmd('wincmd p')
  end
  vim.lsp.util.show_document(loc, encoding or 'utf-16', { focus = true })
  vim.cmd('normal! zz')
end

---A location from a markdown link target or a `path:line` string; nil if it is neither.
---@param target string `file:///abs#L12`, `path:12`, `path:12:3` …
---@param root? string Folder a relative path is taken from.
---@return codeask.Location?
function M.parse_target(target, root)
  local line, col
  local path = target
  if target:match('^file://') then
    local base, fragment = target:match('^([^#]*)#?(.*)$')
    path = vim.uri_to_fname(base)
    line, col = fragment:match('^L(%d+)C?(%d*)')
  else
    local p, l, c = target:match('^(.-):(%d+):?(%d*)')
    if not p or p == '' then
      return nil
    end
    path, line, col = p, l, c
    if not vim.startswith(path, '/') then
      path = vim.fs.joinpath(root or vim.fn.getcwd(), path)
    end
  end
  if vim.fn.filereadable(path) ~= 1 then
    return nil
  end
  local lnum = math.max((tonumber(line) or 1) - 1, 0)
  local char = math.max((tonumber(col) or 1) - 1, 0)
  local pos = { line = lnum, character = char }
  return { uri = vim.uri_from_fname(path), range = { start = pos, ['end'] = pos } }
end

---The markdown link (`[text](target)`) under the cursor, or the only one on the line.
---@param line string
---@param col integer 0-based byte column of the cursor.
---@return string? target
function M.link_at(line, col)
  local links = {}
  for s, target, e in line:gmatch('()%[[^%]]*%]%(([^%)%s]+)%)()') do
    if col + 1 >= s and col + 1 < e then
      return target
    end
    table.insert(links, target)
  end
  if #links == 1 then
    return links[1]
  end
  return nil
end

---Follow what is under the cursor: an answer source, a markdown link or a `path:line` word.
---@return boolean jumped
function M.follow_link()
  local buf = vim.api.nvim_get_current_buf()
  local lnum, col = unpack(vim.api.nvim_win_get_cursor(0))
  local view = M.current
  local loc, target_win, client
  if view and view.buf == buf then
    loc = view.locations[lnum]
    target_win, client = view.origin_win, view.client
  end
  client = client or require('codeask').client()
  local root = client and client.config.root_dir or nil
  if not loc then
    local line = vim.api.nvim_get_current_line()
    local target = M.link_at(line, col)
    loc = target and M.parse_target(target, root)
  end
  if not loc then
    local word = vim.fn.expand('<cWORD>'):gsub('^[%(%[`]+', '')
    loc = M.parse_target(word, root)
  end
  if not loc then
    return false
  end
  M.jump(loc, client and client.offset_encoding or 'utf-16', target_win)
  return true
end

---In a focused LSP hover window that shows codeask links, `gd`/<CR> follow them.
---@param win integer
function M.attach_hover_links(win)
  local buf = vim.api.nvim_win_get_buf(win)
  if vim.b[buf].codeask_hover_keys or vim.api.nvim_win_get_config(win).relative == '' then
    return
  end
  local ok = pcall(vim.api.nvim_win_get_var, win, 'lsp_floating_bufnr')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  if not ok or not text:find('](file://', 1, true) then
    return
  end
  vim.b[buf].codeask_hover_keys = true
  for _, lhs in ipairs({ 'gd', '<CR>' }) do
    vim.keymap.set('n', lhs, function()
      if not M.follow_link() then
        vim.notify('codeask: no link under the cursor', vim.log.levels.INFO)
      end
    end, { buffer = buf, desc = 'codeask: open the link under the cursor' })
  end
end

---The tiers this client knows, fastest first: label and chunks done in one folder.
---@type { name: string, label: string, done: fun(folder: codeask.FolderState): integer }[]
local TIERS = {
  {
    name = 'static',
    label = 'static',
    done = function(folder)
      return folder.staticEmbedded or 0
    end,
  },
  {
    name = 'minilm',
    label = 'MiniLM',
    done = function(folder)
      return folder.embedded
    end,
  },
}

---Whether `folder` builds `tier` (an older server reports no tiers: none).
---@param folder codeask.FolderState
---@param tier string
---@return boolean
local function builds(folder, tier)
  return vim.tbl_contains(folder.tiers or {}, tier)
end

---Each configured tier's vectors, fastest first: `static 1500/1500 ✓ · MiniLM 300/1500 (20%)`
---(✓: complete; else that tier's own share of the chunks). A tier counts the chunks of the folders that build it. Empty when no folder
---reports its tiers (a server older than the tiers).
---@param folders codeask.FolderState[]
---@return string
function M.tier_summary(folders)
  local parts = {}
  for _, tier in ipairs(TIERS) do
    local on, done, total = false, 0, 0
    for _, folder in ipairs(folders) do
      if builds(folder, tier.name) then
        on, done, total = true, done + tier.done(folder), total + folder.chunks
      end
    end
    if on then
      local mark = ' ✓'
      if total == 0 or done < total then
        mark = total > 0 and (' (%d%%)'):format(math.floor(100 * done / total)) or ''
      end
      table.insert(parts, ('%s %d/%d%s'):format(tier.label, done, total, mark))
    end
  end
  return table.concat(parts, ' · ')
end

---Whether dense search already works from the static tier: every folder builds it and has a
---static vector for each of its chunks (and there are chunks).
---@param folders codeask.FolderState[]
---@return boolean
function M.static_complete(folders)
  local chunks = 0
  for _, folder in ipairs(folders) do
    if not builds(folder, 'static') or (folder.staticEmbedded or 0) < folder.chunks then
      return false
    end
    chunks = chunks + folder.chunks
  end
  return chunks > 0
end

---Why a folder reads no team base, by `TeamState.kind`.
local NO_BASE = {
  unreachable = 'database unreachable',
  unpublished = 'nothing published near HEAD',
  unusable = 'team index unusable',
}

---A folder's team base (`index.backend = "postgres"`): `team base acme/shop@0123456789ab, 2
---behind HEAD, 3 files local`, or why there is none; '' with the local backend or none reported.
---@param team? codeask.TeamState
---@return string
function M.team_summary(team)
  if not team or team.backend ~= 'postgres' then
    return ''
  end
  local line
  if team.base and team.base ~= '' then
    line = ('team base %s, %d behind HEAD, %d files local'):format(
      team.base,
      team.behind or 0,
      team.overlayFiles or 0
    )
  else
    local why = NO_BASE[team.kind or ''] or team.kind or 'none'
    local retry = team.retryIn and (', retrying in %d s'):format(team.retryIn) or ''
    line = ('no team base (%s%s): indexed locally'):format(why, retry)
  end
  if team.queryError and team.queryError ~= '' then
    line = line .. ' · last team query failed: ' .. team.queryError
  end
  if team.cache and vim.startswith(team.cache, 'unavailable') then
    line = line .. ' · team embedding cache unavailable'
  end
  return line
end

---What an unfinished index means for results, for a search notification: the server's own line
---saying which tiers answered (` (index ready: answered by lexical + static (static: all 20
---chunks; MiniLM: 5 of 20 chunks (25%), filling in))`), else the tier counts
---(` (index indexing: static 20/20 ✓ · MiniLM 5/20 (25%))`), or the one-count form from older
---servers.
---@param state codeask.IndexState
---@return string
function M.index_note(state)
  if (state.tiersNote or '') ~= '' then
    return (' (index %s: %s)'):format(state.state, state.tiersNote)
  end
  local tiers = M.tier_summary(state.folders or {})
  if tiers ~= '' then
    return (' (index %s: %s)'):format(state.state, tiers)
  end
  return (' (index %s: %d/%d chunks embedded)'):format(state.state, state.embedded, state.chunks)
end

---Search results: a `vim.ui.select` picker, or the quickfix list (with a preview line each).
---@param client vim.lsp.Client
---@param query string
---@param err? lsp.ResponseError
---@param result? codeask.SemanticSearchResult
---@param to_qf? boolean
function M.show_search(client, query, err, result, to_qf)
  if err then
    vim.notify(
      'codeask: search failed: ' .. (err.message or vim.inspect(err)),
      vim.log.levels.ERROR
    )
    return
  end
  local results = result and result.results or {}
  local state = result and result.indexState
  local note = ''
  if state and (state.warming or state.state ~= 'ready' or (state.tiersNote or '') ~= '') then
    note = M.index_note(state)
  end
  if #results == 0 then
    vim.notify(('codeask: no results for %q%s'):format(query, note), vim.log.levels.WARN)
    return
  end
  if note ~= '' then
    vim.notify('codeask: results may improve' .. note, vim.log.levels.INFO)
  end
  local encoding = client.offset_encoding or 'utf-16'
  if to_qf then
    local items = qf_items(results, function(item)
      local preview = vim.trim((item.preview or ''):match('[^\n]*%S[^\n]*') or '')
      return ('%s %s: %s'):format(item.kind or '', item.symbol or '', preview)
    end)
    vim.fn.setqflist({}, ' ', { title = 'codeask search: ' .. query, items = items })
    vim.cmd('botright copen')
    return
  end
  vim.ui.select(results, {
    prompt = 'codeask: ' .. query,
    kind = 'codeask.search',
    format_item = function(item)
      return ('%s  %s (%s)'):format(
        M.location_label(item, client),
        item.symbol or '',
        item.kind or ''
      )
    end,
  }, function(choice)
    if choice then
      M.jump(choice, encoding)
    end
  end)
end

return M
