-- End-to-end specs of the codeask Neovim plugin: a real headless Neovim, the real
-- `codeask serve`, a real git repository (and, when given, a real llama.cpp endpoint).
--
--   nvim --clean --headless -l tests/clients/nvim/spec.lua
--
-- Environment (set by tests/clients/test_neovim.py):
--   CODEASK_TEST_PLUGIN      editor-clients/neovim
--   CODEASK_TEST_REPO        the fixture repository (its files are described in test_neovim.py)
--   CODEASK_TEST_SERVER_CMD  JSON list, e.g. ["/venv/bin/python", "-m", "codeask", "serve"]
--   CODEASK_TEST_LLM_URL     OpenAI-compatible base URL; empty: the :AskCode specs are skipped
--   CODEASK_TEST_LLM_LOG     that server's log (to see the HTTP stream closed on cancel)
--   CODEASK_TEST_RESULTS     where to write a JSON report {name: "pass"|"fail"|"skip"}
--   CODEASK_TEST_FILTER      optional, comma-separated: run only specs whose name contains one
-- Prints one line per spec and then `N passed, N failed, N skipped`; exits 1 on a failure.

local plugin = assert(os.getenv('CODEASK_TEST_PLUGIN'), 'CODEASK_TEST_PLUGIN is not set')
local root = assert(os.getenv('CODEASK_TEST_REPO'), 'CODEASK_TEST_REPO is not set')
local server_cmd = vim.json.decode(assert(os.getenv('CODEASK_TEST_SERVER_CMD')))
local llm_url = os.getenv('CODEASK_TEST_LLM_URL') or ''
local llm_log = os.getenv('CODEASK_TEST_LLM_LOG') or ''
local results_file = os.getenv('CODEASK_TEST_RESULTS')
local filter = os.getenv('CODEASK_TEST_FILTER') or ''

vim.opt.rtp:prepend(plugin)
vim.cmd('runtime plugin/codeask.lua')
vim.cmd.cd(root)
if os.getenv('SPEC_DEBUG') then
  vim.lsp.set_log_level('debug')
end

---@param fmt string
local function say(fmt, ...)
  io.stdout:write(fmt:format(...) .. '\n')
  io.stdout:flush()
end

-- ---- a tiny runner ---------------------------------------------------------------------------
local specs = {}

---@param name string
---@param fn fun()
---@param skip_reason? string
local function it(name, fn, skip_reason)
  table.insert(specs, { name = name, fn = fn, skip = skip_reason })
end

---@param desc string
---@param timeout integer ms
---@param cond fun(): any
local function wait_for(desc, timeout, cond)
  local value
  local ok = vim.wait(timeout, function()
    value = cond()
    return value
  end, 50)
  if not ok then
    error(('timed out after %d ms waiting for %s'):format(timeout, desc), 2)
  end
  return value
end

local function eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(
      ('%s: expected %s, got %s'):format(
        what or 'value',
        vim.inspect(expected),
        vim.inspect(actual)
      ),
      2
    )
  end
end

local function truthy(value, what)
  if not value then
    error(what or 'expected a true value', 2)
  end
  return value
end

local function buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false), '\n')
end

local function feed(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), 'mx', false)
end

---The 1-based line of the first line of `buf` containing `needle` (plain).
local function line_of(buf, needle)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(needle, 1, true) then
      return i, line
    end
  end
  error(('no line with %q in:\n%s'):format(needle, buf_text(buf)), 2)
end

local function codeask_client()
  return vim.lsp.get_clients({ name = 'codeask' })[1]
end

---Back to a single ordinary window showing `file`.
local function reset(file)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
  vim.cmd('silent! only')
  if file then
    vim.cmd.edit(root .. '/' .. file)
  end
end

local function search_sync(query, k)
  local response = codeask_client():request_sync(
    'workspace/semanticSearch',
    { query = query, k = k or 10 },
    20000,
    0
  )
  truthy(response and response.result, 'semanticSearch failed: ' .. vim.inspect(response))
  return response.result
end

local settings = {
  llm = {
    provider = 'openai',
    baseUrl = llm_url ~= '' and llm_url or 'http://127.0.0.1:9',
    model = 'smollm2',
    maxTokens = 40,
    contextTokens = 1024,
    temperature = 0,
    readTimeout = 120,
  },
  -- Fewer, smaller prompts: SmolLM2 evaluates ~80 prompt tokens/s on one busy core.
  retrieve = { k = 4 },
}
local no_llm = llm_url == '' and 'no LLM endpoint (CODEASK_TEST_LLM_URL is empty)' or nil

-- ---- specs --------------------------------------------------------------------------------------
it('lsp/codeask.lua is a vim.lsp.Config: codeask serve, every filetype, root markers', function()
  local cfg = dofile(plugin .. '/lsp/codeask.lua')
  eq(cfg.cmd, { 'codeask', 'serve' }, 'cmd')
  eq(cfg.filetypes, nil, 'filetypes (nil = all)')
  truthy(vim.tbl_contains(cfg.root_markers, '.git'), '.git is a root marker')
  truthy(vim.tbl_contains(cfg.root_markers, '.codeask'), '.codeask is a root marker')
end)

it('a stray .codeask in a parent folder does not capture a git project below it', function()
  -- Issue 12: with `.codeask` first among the markers, an old index folder in /tmp (or $HOME)
  -- made that whole folder the root of every project below it.
  local outer = vim.fn.tempname()
  vim.fn.mkdir(outer .. '/.codeask', 'p')
  vim.fn.mkdir(outer .. '/proj/.git', 'p')
  vim.fn.mkdir(outer .. '/loose', 'p')
  local cfg = dofile(plugin .. '/lsp/codeask.lua')
  local function root_of(file)
    local found
    cfg.root_dir(vim.fn.bufadd(file), function(dir)
      found = dir
    end)
    return found
  end
  eq(root_of(outer .. '/proj/app.py'), outer .. '/proj', 'the git project is the root')
  -- Without a VCS marker the index folder is still a marker (a folder indexed by hand).
  eq(root_of(outer .. '/loose/notes.md'), outer, 'only an index folder: its folder')
  vim.fn.delete(outer, 'rf')
end)

it(':checkhealth codeask without a server checks only the client and says so', function()
  eq(#vim.lsp.get_clients({ name = 'codeask' }), 0, 'no server yet')
  vim.cmd('checkhealth codeask')
  local text = buf_text(0)
  truthy(text:find('Neovim 0%.%d+%.%d+'), 'Neovim version line:\n' .. text)
  truthy(text:find('no codeask client is running', 1, true), 'no-server line:\n' .. text)
  -- The endpoint is the server's to resolve and probe: nothing about it without one.
  truthy(not text:find('reachable', 1, true), 'no client-side probe:\n' .. text)
  eq(require('codeask.health').probe, nil, 'health.lua has no probe of its own')
  vim.cmd('bwipe!')
end)

it("vim.lsp.enable('codeask') attaches to a file and the server initializes", function()
  -- The plain path of the README: only vim.lsp.config + vim.lsp.enable, no setup().
  vim.lsp.config('codeask', { cmd = server_cmd, settings = { codeask = settings } })
  vim.lsp.enable('codeask')
  vim.wait(300)
  eq(#vim.lsp.get_clients({ name = 'codeask' }), 0, 'no client for the empty startup buffer')
  reset('src/shop/cart.py')
  local client = wait_for('codeask to attach', 30000, function()
    local c = vim.lsp.get_clients({ name = 'codeask', bufnr = 0 })[1]
    return c and c.initialized and c
  end)
  eq(client.config.root_dir, root, 'root_dir')
  eq(
    client.config.init_options and client.config.init_options.llm.provider,
    nil,
    'config init_options untouched'
  )
  truthy(client.server_capabilities.hoverProvider, 'hoverProvider')
end)

it('it attaches to any filetype (markdown, toml) with the same client', function()
  local id = codeask_client().id
  for _, file in ipairs({ 'README.md', 'pyproject.toml' }) do
    vim.cmd.edit(root .. '/' .. file)
    wait_for(file .. ' attached', 10000, function()
      return vim.lsp.get_clients({ name = 'codeask', bufnr = 0 })[1]
    end)
    eq(vim.lsp.get_clients({ name = 'codeask', bufnr = 0 })[1].id, id, 'one client for ' .. file)
  end
end)

-- Waits until the index is ready with every chunk in both tiers (a save re-chunks a file: its
-- new chunks get their MiniLM vectors a moment after they become searchable).
local function wait_embedded(timeout)
  return wait_for('index ready and embedded', timeout, function()
    local done, result
    require('codeask').index_status(function(err, s)
      done, result = true, not err and s or nil
    end)
    vim.wait(5000, function()
      return done
    end, 20)
    if
      result
      and result.state == 'ready'
      and not result.warming
      and result.chunks > 0
      and result.embedded == result.chunks
    then
      return result
    end
    vim.wait(400)
  end)
end

it('the index becomes ready and fully embedded (codeask/indexStatus)', function()
  local state = wait_embedded(150000)
  truthy(state.files >= 4, 'files indexed: ' .. vim.inspect(state))
  eq(state.folders[1].root, root, 'folder root')
  eq(state.folders[1].tiers, { 'static', 'minilm' }, 'the default tiers')
  eq(state.folders[1].staticEmbedded, state.folders[1].chunks, 'static tier complete')
end)

it('health renders the team database the server probed (index.backend = postgres)', function()
  local health = require('codeask.health')
  local team = {
    dsnEnv = 'CODEASK_PG_DSN',
    where = 'editor@db:5432/codeask',
    reachable = true,
    schemaVersion = 1,
    schemaKnown = 1,
    modelDim = 384,
    writable = false,
    millis = 12,
  }
  local level, line = health.team_line(team)
  eq(level, 'ok', line)
  eq(
    line,
    'team database editor@db:5432/codeask: schema 1 (this codeask knows up to 1), '
      .. '384-dim vectors of embed.model, read-only (enough for an editor), 12 ms'
  )
  team.reachable, team.error = false, 'cannot connect to the team database editor@db:5432/codeask'
  level, line = health.team_line(team)
  eq(level, 'error', line)
  truthy(line:find('(DSN from $CODEASK_PG_DSN): cannot connect', 1, true), line)
end)

it('the team base of a folder renders briefly, or why it has none', function()
  local ui = require('codeask.ui')
  local base = {
    backend = 'postgres',
    kind = 'base',
    base = 'github.com/acme/shop@0123456789ab',
    behind = 2,
    overlayFiles = 3,
  }
  eq(
    ui.team_summary(base),
    'team base github.com/acme/shop@0123456789ab, 2 behind HEAD, 3 files local',
    'base'
  )
  base.queryError, base.cache = 'lost the connection', 'unavailable: timeout'
  eq(
    ui.team_summary(base),
    'team base github.com/acme/shop@0123456789ab, 2 behind HEAD, 3 files local'
      .. ' · last team query failed: lost the connection · team embedding cache unavailable',
    'failing'
  )
  eq(
    ui.team_summary({ backend = 'postgres', kind = 'unreachable', retryIn = 30 }),
    'no team base (database unreachable, retrying in 30 s): indexed locally',
    'unreachable'
  )
  eq(
    ui.team_summary({ backend = 'postgres', kind = 'unpublished' }),
    'no team base (nothing published near HEAD): indexed locally',
    'unpublished'
  )
  eq(ui.team_summary({ backend = 'local', kind = 'off' }), '', 'local backend: nothing')
  eq(ui.team_summary(nil), '', 'an older server: nothing')
end)

it(
  'the index note and health line show each configured tier, or one count from an older server',
  function()
    local ui, health = require('codeask.ui'), require('codeask.health')
    local function folder(over)
      local base = { root = root, state = 'ready', files = 120, chunks = 1500, embedded = 300 }
      return vim.tbl_extend(
        'force',
        base,
        { model = 'm', indexDir = root .. '/.codeask' },
        over or {}
      )
    end
    local function state(folders)
      local s = { state = 'indexing', warming = true, percent = 20, files = 120 }
      return vim.tbl_extend('force', s, { chunks = 1500, embedded = 300, folders = folders })
    end
    local both = folder({ staticEmbedded = 1500, tiers = { 'minilm', 'static' } })
    eq(
      ui.tier_summary({ both }),
      'static 1500/1500 ✓ · MiniLM 300/1500 (20%)',
      'both tiers, fastest first, each with its own share'
    )
    eq(
      ui.index_note(state({ both })),
      ' (index indexing: static 1500/1500 ✓ · MiniLM 300/1500 (20%))',
      'note'
    )
    -- Item 19: the job's progress (39%) is labelled as the job's, never shown as MiniLM's share.
    local job = vim.tbl_extend('force', state({ both }), { percent = 39 })
    eq(
      health.index_line(job),
      'indexing: 120 files, 1500 chunks · static 1500/1500 ✓ · MiniLM 300/1500 (20%)'
        .. ' · indexing job 39%',
      'health line'
    )
    local said = 'answered by lexical + static (static: all 1500 chunks; MiniLM: 300 of 1500'
      .. ' chunks (20%), filling in)'
    local told = vim.tbl_extend('force', state({ both }), { state = 'ready', tiersNote = said })
    eq(ui.index_note(told), ' (index ready: ' .. said .. ')', "the server's tiers line")
    eq(
      health.index_line(told),
      'ready: 120 files, 1500 chunks · static 1500/1500 ✓ · MiniLM 300/1500 (20%)',
      'no job percent once ready'
    )
    truthy(ui.static_complete({ both }), 'static tier complete')
    local static_only = folder({ embedded = 0, staticEmbedded = 700, tiers = { 'static' } })
    eq(
      ui.tier_summary({ static_only }),
      'static 700/1500 (46%)',
      'a tier not configured is left out'
    )
    truthy(not ui.static_complete({ static_only }), 'static tier not complete')
    local other =
      folder({ chunks = 500, embedded = 500, staticEmbedded = 500, tiers = { 'static' } })
    eq(
      ui.tier_summary({ both, other }),
      'static 2000/2000 ✓ · MiniLM 300/1500 (20%)',
      'a tier counts the chunks of the folders that build it'
    )
    local old = folder()
    eq(ui.tier_summary({ old }), '', 'an older server reports no tiers')
    eq(ui.index_note(state({ old })), ' (index indexing: 300/1500 chunks embedded)', 'old note')
    eq(
      health.index_line(state({ old })),
      'indexing: 120 files, 1500 chunks, 300 embedded (20%) · indexing job 20%',
      'old health line'
    )
  end
)

it(':AskCodeSearch puts results into vim.ui.select and jumps to the chosen one', function()
  reset('README.md')
  local picked
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    picked = { items = items, opts = opts, on_choice = on_choice }
  end
  local ok, err = pcall(function()
    vim.cmd('AskCodeSearch charge a credit card for a payment')
    wait_for('the picker', 20000, function()
      return picked
    end)
  end)
  vim.ui.select = orig
  assert(ok, err)
  local idx
  for i, item in ipairs(picked.items) do
    if item.symbol == 'charge_credit_card' then
      idx = i
      break
    end
  end
  local labels = vim.tbl_map(picked.opts.format_item, picked.items)
  truthy(idx and idx <= 3, 'charge_credit_card in the top 3: ' .. vim.inspect(labels))
  truthy(labels[idx]:match('^src/shop/payments%.py:%d+ '), 'label is path:line: ' .. labels[idx])
  picked.on_choice(picked.items[idx], idx)
  truthy(vim.api.nvim_buf_get_name(0):match('src/shop/payments%.py$'), 'jumped to payments.py')
  eq(vim.api.nvim_win_get_cursor(0)[1], picked.items[idx].range.start.line + 1, 'cursor line')
  truthy(vim.api.nvim_get_current_line():find('def charge_credit_card', 1, true), 'on the def line')
end)

it(':AskCodeSearch! fills the quickfix list with path, line and a preview', function()
  reset('README.md')
  vim.fn.setqflist({}, 'r', { title = 'before', items = {} })
  vim.cmd('AskCodeSearch! reserve stock in the warehouse')
  local qf = wait_for('quickfix results', 20000, function()
    local list = vim.fn.getqflist({ title = 1, items = 1 })
    return list.title:find('codeask search', 1, true) and list
  end)
  eq(qf.title, 'codeask search: reserve stock in the warehouse', 'title')
  local hit
  for _, item in ipairs(qf.items) do
    if item.text:find('reserve_stock', 1, true) then
      hit = item
    end
  end
  truthy(hit, 'reserve_stock in quickfix: ' .. vim.inspect(vim.tbl_map(function(i)
    return i.text
  end, qf.items)))
  truthy(vim.api.nvim_buf_get_name(hit.bufnr):match('src/shop/inventory%.py$'), 'file')
  truthy(hit.text:match('^function reserve_stock: .+'), 'kind, symbol and preview: ' .. hit.text)
  eq(vim.bo.buftype, 'quickfix', 'the quickfix window is open')
  vim.cmd('cclose')
end)

it('hover (K) shows related-code links and gd in the hover window follows one', function()
  reset('src/shop/payments.py')
  local lnum, src = line_of(0, 'total = compute_cart_total(')
  vim.api.nvim_win_set_cursor(0, { lnum, (src:find('compute_cart_total', 1, true)) })
  local source_win = vim.api.nvim_get_current_win()
  local float = wait_for('a hover window with related code', 20000, function()
    if vim.api.nvim_get_current_win() ~= source_win then
      vim.api.nvim_set_current_win(source_win)
    end
    feed('K')
    local found
    vim.wait(2000, function()
      for _, win in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_config(win).relative ~= '' then
          local text = buf_text(vim.api.nvim_win_get_buf(win))
          if text:find('Related code', 1, true) then
            found = win
          end
        end
      end
      return found
    end, 50)
    return found
  end)
  local fbuf = vim.api.nvim_win_get_buf(float)
  if os.getenv('SPEC_DEBUG') then
    say('%s', buf_text(fbuf))
  end
  local text = buf_text(fbuf)
  truthy(
    text:find('%[[^%]]+:%d+%]%(file://[^%)]+#L%d+%)'),
    'a [path:line](file://…#L) link:\n' .. text
  )
  -- Focus the hover window (what a second K does) and follow the link with gd.
  vim.api.nvim_set_current_win(float)
  local link_line, line = line_of(fbuf, '](file://')
  local target, want = line:match('%]%((file://[^#%)]+)#L(%d+)')
  vim.api.nvim_win_set_cursor(float, { link_line, (line:find('[', 1, true)) })
  eq(vim.fn.maparg('gd', 'n', false, true).buffer, 1, 'gd is mapped in the hover window')
  feed('gd')
  eq(vim.api.nvim_win_get_config(0).relative, '', 'left the hover window')
  eq(vim.api.nvim_buf_get_name(0), vim.uri_to_fname(target), 'jumped to the linked file')
  eq(vim.api.nvim_win_get_cursor(0)[1], tonumber(want), 'jumped to the linked line')
end)

it(
  ':AskCode streams the answer into a markdown float; sources go to quickfix and jump on <CR>',
  function()
    reset('src/shop/payments.py')
    vim.fn.setqflist({}, 'r', { title = 'before', items = {} })
    local origin = vim.api.nvim_get_current_win()
    vim.cmd('AskCode How is the cart total computed with tax?')
    local view = truthy(require('codeask.ui').current, 'an answer view')
    truthy(view.float and vim.api.nvim_win_is_valid(view.win), 'a floating window')
    eq(vim.api.nvim_get_current_win(), view.win, 'the answer window has the focus')
    eq(vim.bo[view.buf].filetype, 'markdown', 'filetype')
    local params = require('codeask.commands').last_ask.params
    truthy(type(params.streamToken) == 'string' and params.streamToken ~= '', 'a streamToken')
    eq(params.range, nil, 'no range without a selection')
    wait_for('the first delta', 120000, function()
      return view.deltas > 0 or view.status ~= 'waiting'
    end)
    truthy(view.deltas > 0, 'answerDelta notifications arrived (status ' .. view.status .. ')')
    local streamed = buf_text(view.buf)
    wait_for('the answer to finish', 120000, function()
      return view.status ~= 'waiting' and view.status ~= 'streaming'
    end)
    eq(view.status, 'done', 'status (' .. tostring(view.message) .. ')')
    -- SmolLM2 may reach the test's token cap: that answer is marked incomplete, not an error.
    truthy(
      view.message == nil or view.message:find('^incomplete: the model stopped at its token limit'),
      'no LLM error but the token cap: ' .. tostring(view.message)
    )
    truthy(#vim.trim(view.text) > 0, 'non-empty answer')
    truthy(#streamed > #('# ' .. params.question), 'streamed text was shown before the end')
    local text = buf_text(view.buf)
    truthy(
      text:find(vim.split(vim.trim(view.text), '\n')[1], 1, true),
      'answer text in the window:\n' .. text
    )
    -- Sources: the quickfix list and `path:line` lines of the window.
    local qf = vim.fn.getqflist({ title = 1, items = 1 })
    eq(qf.title, 'codeask: ' .. params.question, 'quickfix title')
    eq(#qf.items, #view.sources, 'one quickfix item per source')
    truthy(#qf.items > 0, 'sources in quickfix')
    local files = vim.tbl_map(function(item)
      return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t')
    end, qf.items)
    truthy(vim.tbl_contains(files, 'cart.py'), 'cart.py among the sources: ' .. vim.inspect(files))
    local src_line, line = line_of(view.buf, '- src/shop/cart.py:')
    local want = tonumber(line:match(':(%d+)'))
    vim.api.nvim_win_set_cursor(view.win, { src_line, 3 })
    feed('<CR>')
    truthy(not vim.api.nvim_win_is_valid(view.win), 'the answer float closed')
    eq(vim.api.nvim_get_current_win(), origin, 'back in the window :AskCode ran from')
    truthy(vim.api.nvim_buf_get_name(0):match('src/shop/cart%.py$'), 'jumped to cart.py')
    eq(vim.api.nvim_win_get_cursor(0)[1], want, 'jumped to the source line')
  end,
  no_llm
)

it(':AskCode with a visual range sends uri + range and answers in a split', function()
  require('codeask.config').options.ui.answer = 'split'
  reset('src/shop/cart.py')
  local first = line_of(0, 'def compute_cart_total')
  vim.cmd(('%d,%dAskCode What does this function return?'):format(first, first + 4))
  local params = require('codeask.commands').last_ask.params
  eq(params.uri, vim.uri_from_fname(root .. '/src/shop/cart.py'), 'uri')
  eq(params.range.start, { line = first - 1, character = 0 }, 'range start')
  eq(params.range['end'].line, first + 3, 'range end line')
  local view = require('codeask.ui').current
  truthy(not view.float, 'a split, not a float')
  eq(#vim.api.nvim_tabpage_list_wins(0), 2, 'two windows')
  wait_for('the answer', 120000, function()
    return view.status ~= 'waiting' and view.status ~= 'streaming'
  end)
  eq(view.status, 'done', 'status (' .. tostring(view.message) .. ')')
  truthy(#vim.trim(view.text) > 0, 'non-empty answer')
  feed('q')
  eq(#vim.api.nvim_tabpage_list_wins(0), 1, 'q closed the split')
  require('codeask.config').options.ui.answer = 'float'
end, no_llm)

---Resolves once the server has answered request `id` (Neovim's LspRequest 'complete' event).
local function watch_reply(id)
  local state = { done = false }
  vim.api.nvim_create_autocmd('LspRequest', {
    callback = function(args)
      if args.data.request_id == id and args.data.request.type == 'complete' then
        state.done = true
        return true
      end
    end,
  })
  return state
end

---Cancel a streaming answer with `keys`; the server must ack with RequestCancelled, which
---Neovim swallows: the request completes, yet the response handler never runs.
local function cancel_with(keys, question)
  vim.cmd('AskCode ' .. question)
  local view = require('codeask.ui').current
  wait_for('streaming', 120000, function()
    return view.deltas > 0 or view.status ~= 'waiting'
  end)
  eq(view.status, 'streaming', 'status while streaming')
  local reply = watch_reply(view.request_id)
  local log_offset = llm_log ~= '' and vim.fn.getfsize(llm_log) or 0
  local win = view.win
  feed(keys)
  eq(view.status, 'cancelled', 'status after ' .. keys)
  wait_for('the reply to the cancelled request', 30000, function()
    return reply.done
  end)
  eq(view.result, nil, 'no result: the generation was cut short')
  eq(view.response_error, nil, 'no other error')
  if llm_log ~= '' then
    -- The server closed its HTTP stream, so llama.cpp stopped generating.
    wait_for('the LLM stream to close', 15000, function()
      local f = assert(io.open(llm_log, 'rb'))
      f:seek('set', log_offset)
      local since = f:read('*a')
      f:close()
      return since:find('cancel task', 1, true) -- llama.cpp's server log when a client hangs up
    end)
  end
  local deltas = view.deltas
  vim.wait(1000)
  eq(view.deltas, deltas, 'no delta is shown after the cancel')
  return view, win
end

it('<C-c> and q cancel a running answer ($/cancelRequest → RequestCancelled)', function()
  -- A long answer, so that the cancel lands mid-stream; setup() pushes the new settings.
  local long = vim.tbl_deep_extend('force', settings, { llm = { maxTokens = 400 } })
  require('codeask').setup({ cmd = server_cmd, settings = long })
  vim.wait(1500)
  reset('src/shop/cart.py')
  local view, win = cancel_with('<C-c>', 'Write a long, detailed essay about every function here.')
  truthy(vim.api.nvim_win_is_valid(win), '<C-c> keeps the window')
  truthy(buf_text(view.buf):find('_Cancelled._', 1, true), 'the window says cancelled')
  feed('q')
  truthy(not vim.api.nvim_win_is_valid(win), 'q closes the window')
  -- q alone, while streaming, cancels and closes.
  local _, second_win = cancel_with('q', 'Write another long essay about the cart.')
  truthy(not vim.api.nvim_win_is_valid(second_win), 'q closed the window')
  require('codeask').setup({ cmd = server_cmd, settings = settings })
end, no_llm)

it('a function added and saved with :w becomes findable', function()
  reset('src/shop/inventory.py')
  local before = search_sync('frobnicate the widget gizmos', 10)
  for _, item in ipairs(before.results) do
    truthy(item.symbol ~= 'frobnicate_widget_gizmos', 'not findable before the edit')
  end
  vim.api.nvim_buf_set_lines(0, -1, -1, false, {
    '',
    '',
    'def frobnicate_widget_gizmos(gizmos):',
    '    """Frobnicate every widget gizmo on the warehouse shelf."""',
    '    return [g.frobnicate() for g in gizmos]',
  })
  vim.cmd('write')
  local hit = wait_for('the new function in the results', 60000, function()
    for _, item in ipairs(search_sync('frobnicate the widget gizmos', 10).results) do
      if item.symbol == 'frobnicate_widget_gizmos' then
        return item
      end
    end
    vim.wait(300)
  end)
  eq(vim.uri_to_fname(hit.uri), root .. '/src/shop/inventory.py', 'uri')
  -- And through the command the user runs.
  vim.cmd('AskCodeSearch! frobnicate the widget gizmos')
  local qf = wait_for('quickfix', 20000, function()
    local list = vim.fn.getqflist({ title = 1, items = 1 })
    return list.title == 'codeask search: frobnicate the widget gizmos' and list
  end)
  truthy(
    qf.items[1].text:find('frobnicate_widget_gizmos', 1, true),
    'first quickfix hit: ' .. qf.items[1].text
  )
  vim.cmd('cclose')
end)

it(':checkhealth codeask renders the server answer: version, index, LLM endpoint, tiers', function()
  reset('src/shop/cart.py')
  wait_embedded(60000) -- the file saved by the previous spec: its new chunks' MiniLM vectors
  local response = codeask_client():request_sync('codeask/health', vim.empty_dict(), 20000, 0)
  local h = truthy(response and response.result, 'codeask/health: ' .. vim.inspect(response))
  eq(h.llm.provider, 'openai', 'the settings the client sent')
  eq(h.llm.modelsUrl, (llm_url ~= '' and llm_url or 'http://127.0.0.1:9') .. '/v1/models', 'url')
  vim.cmd('checkhealth codeask')
  local text = buf_text(0)
  truthy(text:find('server found: ', 1, true), text)
  truthy(text:find('version: codeask ' .. h.version .. ' (Python ', 1, true), 'version:\n' .. text)
  truthy(text:find('index ready: %d+ files'), 'index line:\n' .. text)
  truthy(
    text:find('(%d+) chunks · static %1/%1 ✓ · MiniLM %1/%1 ✓\n'),
    'tier counts in the index line:\n' .. text
  )
  if h.llm.reachable then
    truthy(llm_url ~= '', 'reachable only with a real endpoint')
    truthy(
      text:find('LLM endpoint reachable: ' .. llm_url .. '/v1/models', 1, true),
      'LLM line:\n' .. text
    )
  else
    eq(llm_url, '', 'the real endpoint is reachable: ' .. vim.inspect(h.llm))
    truthy(
      text:find('LLM endpoint not reachable: http://127.0.0.1:9/v1/models', 1, true),
      'LLM line:\n' .. text
    )
    truthy(text:find(h.llm.error, 1, true), 'the server reason:\n' .. text)
  end
  truthy(text:find('static tier (', 1, true), 'tiers:\n' .. text)
  truthy(not text:find('ERROR', 1, true), 'no error:\n' .. text)
  vim.cmd('bwipe!')
end)

-- ---- run ----------------------------------------------------------------------------------------
local passed, failed, skipped = 0, 0, 0
local report = {}
for _, spec in ipairs(specs) do
  local wanted = filter == ''
  for _, part in ipairs(vim.split(filter, ',', { trimempty = true })) do
    wanted = wanted or spec.name:find(part, 1, true) ~= nil
  end
  if not wanted then
    spec.skip = spec.skip or 'filtered out'
  end
  if spec.skip then
    skipped = skipped + 1
    report[spec.name] = 'skip'
    say('skip - %s (%s)', spec.name, spec.skip)
  else
    local started = vim.uv.hrtime()
    local ok, err = xpcall(spec.fn, debug.traceback)
    local secs = (vim.uv.hrtime() - started) / 1e9
    if ok then
      passed = passed + 1
      report[spec.name] = 'pass'
      say('ok   - %s (%.1f s)', spec.name, secs)
    else
      failed = failed + 1
      report[spec.name] = 'fail'
      say('FAIL - %s (%.1f s)\n%s', spec.name, secs, tostring(err):gsub('\n', '\n       '))
    end
  end
end

if results_file then
  local f = assert(io.open(results_file, 'w'))
  f:write(vim.json.encode(report))
  f:close()
end

-- Stop the server politely (shutdown + exit) so it saves its index, then leave. Stop again
-- any client a late (scheduled) start brought up meanwhile.
vim.lsp.enable('codeask', false)
vim.wait(10000, function()
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop()
  end
  return #vim.lsp.get_clients() == 0
end, 100)

local line = ('%d passed, %d failed'):format(passed, failed)
if skipped > 0 then
  line = line .. (', %d skipped'):format(skipped)
end
say('%s', line)
os.exit(failed > 0 and 1 or 0)
