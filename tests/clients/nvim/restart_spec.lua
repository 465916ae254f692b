-- Issue 43: the daemon dies under Neovim (`kill -9`). `codeask serve` is a pipe that then exits
-- 75; the plugin starts the client again on the same buffers (vim.lsp never restarts a server
-- by itself), which sends initialize, the settings and every open buffer, an unsaved one
-- included. Search and hover answer as before the kill.
--
-- Environment (set by tests/daemon/test_daemon_serve_crash.py): CODEASK_TEST_PLUGIN,
-- CODEASK_TEST_REPO, CODEASK_TEST_SERVER_CMD, CODEASK_TEST_RESULTS, CODEASK_TEST_DAEMON_LOCK
-- (the daemon's lock file: its pid inside). Writes a JSON report.

local S =
  dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'oneshot.lua'))
local lock_file = assert(os.getenv('CODEASK_TEST_DAEMON_LOCK'))
local root = S.root
local report = { notes = S.notes }

local function finish(err)
  report.error = err
  S.finish(report)
end

local function client_of(buf)
  local c = vim.lsp.get_clients({ name = 'codeask', bufnr = buf })[1]
  return c and c.initialized and c or nil
end

---Ask until the server answers with something (it may answer null or nothing while the index
---opens); the result, or nil after `timeout` ms.
local function ask(buf, method, params, timeout, usable)
  local result
  vim.wait(timeout, function()
    local c = client_of(buf)
    if not c then
      return false
    end
    local response = c:request_sync(method, params, 10000, buf)
    result = response and response.result
    return result ~= nil and usable(result)
  end, 200)
  return result
end

---Until the index is ready with every chunk in both tiers (as spec.lua's wait_embedded).
local function ready(buf)
  return ask(buf, 'codeask/indexStatus', vim.empty_dict(), 180000, function(s)
    local done = s.state == 'ready' and not s.warming and s.chunks > 0 and s.embedded == s.chunks
    if not done then
      vim.wait(300)
    end
    return done
  end) ~= nil
end

local function search(buf)
  local found = ask(
    buf,
    'workspace/semanticSearch',
    { query = 'reserve stock in the warehouse', k = 5 },
    120000,
    function(r)
      return r.results and #r.results > 0
    end
  )
  return found
    and vim.tbl_map(function(hit)
      return vim.fs.basename(vim.uri_to_fname(hit.uri)) .. ':' .. hit.range.start.line
    end, found.results)
end

local function hover(buf)
  local params =
    { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = 2, character = 12 } }
  local found = ask(buf, 'textDocument/hover', params, 120000, function(r)
    return r.contents ~= nil
  end)
  return found and found.contents.value
end

vim.lsp.config('codeask', { cmd = S.server_cmd })
vim.lsp.enable('codeask')
vim.cmd.edit(root .. '/src/shop/cart.py')
local cart = vim.api.nvim_get_current_buf()
-- A buffer never saved: the server knows its text from didOpen only.
vim.cmd.edit(root .. '/src/shop/scratch.py')
local scratch = vim.api.nvim_get_current_buf()
vim.api.nvim_buf_set_lines(scratch, 0, -1, false, {
  'def hold_units(sku, count):',
  '    """Keep units of a product aside for an order."""',
  '    return reserve_stock(sku, count)',
})
if
  not vim.wait(60000, function()
    return client_of(cart) ~= nil and client_of(scratch) ~= nil
  end, 20)
then
  return finish('codeask did not attach')
end
local first = client_of(cart).id
report.ready_before = ready(cart)
report.search_before = search(cart)
report.hover_before = hover(scratch)

local pid = tonumber(assert(io.open(lock_file)):read('*a'):match('%d+'))
vim.uv.kill(pid, 'sigkill')
local gone = vim.wait(60000, function()
  return vim.lsp.get_client_by_id(first) == nil
end, 20)
report.old_client_gone = gone
report.restarted = vim.wait(90000, function()
  local c, s = client_of(cart), client_of(scratch)
  return c ~= nil and s ~= nil and c.id ~= first and c.id == s.id
end, 50)
if report.restarted then
  report.ready_after = ready(cart)
  report.search_after = search(cart)
  report.hover_after = hover(scratch)
end
finish(nil)
