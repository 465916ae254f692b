-- Specs of what the plugin says when no server runs (issue 26, item 11): a real headless
-- Neovim, the plugin from this repository, a project folder, and server commands that cannot
-- start. No codeask server is needed.
--
--   nvim --clean --headless -l tests/clients/nvim/no_server_spec.lua
--
-- Environment (set by tests/clients/test_neovim.py):
--   CODEASK_TEST_PLUGIN    editor-clients/neovim
--   CODEASK_TEST_REPO      a project folder (a git repository) holding app.py
--   CODEASK_TEST_OUTSIDE   a folder holding notes.txt, inside no project
--   CODEASK_TEST_MISSING   an absolute path where no file exists
--   CODEASK_TEST_NOEXEC    an existing file without the execute bit
--   CODEASK_TEST_RESULTS   where to write a JSON report {name: "pass"|"fail"}
--   CODEASK_TEST_MARKER    a root marker name no folder above CODEASK_TEST_OUTSIDE holds
-- Prints one line per spec and then `N passed, N failed`; exits 1 on a failure.

local plugin = assert(os.getenv('CODEASK_TEST_PLUGIN'), 'CODEASK_TEST_PLUGIN is not set')
local root = assert(os.getenv('CODEASK_TEST_REPO'), 'CODEASK_TEST_REPO is not set')
local outside = assert(os.getenv('CODEASK_TEST_OUTSIDE'), 'CODEASK_TEST_OUTSIDE is not set')
local missing = assert(os.getenv('CODEASK_TEST_MISSING'), 'CODEASK_TEST_MISSING is not set')
local noexec = assert(os.getenv('CODEASK_TEST_NOEXEC'), 'CODEASK_TEST_NOEXEC is not set')
local results_file = os.getenv('CODEASK_TEST_RESULTS')
-- A root marker no folder holds (the outside spec's definition of a project).
local marker = assert(os.getenv('CODEASK_TEST_MARKER'), 'CODEASK_TEST_MARKER is not set')

vim.opt.rtp:prepend(plugin)
vim.cmd('runtime plugin/codeask.lua')
vim.cmd.cd(root)

local function say(fmt, ...)
  io.stdout:write(fmt:format(...) .. '\n')
  io.stdout:flush()
end

-- ---- a tiny runner ---------------------------------------------------------------------------
local specs = {}

---@param name string
---@param fn fun()
local function it(name, fn)
  table.insert(specs, { name = name, fn = fn })
end

local function truthy(value, what)
  if not value then
    error(what or 'expected a true value', 2)
  end
  return value
end

---Every vim.notify message while `fn` runs (and 300 ms after, for scheduled ones).
---@param fn fun()
---@return string
local function notified(fn)
  local seen = {}
  local saved = vim.notify
  vim.notify = function(msg, level)
    table.insert(seen, ('[%s] %s'):format(tostring(level), msg))
  end
  local ok, err = pcall(fn)
  vim.wait(300)
  vim.notify = saved
  assert(ok, err)
  return table.concat(seen, '\n')
end

---Open `file` and give vim.lsp.enable its chance to start (or skip) a client.
local function open(file)
  vim.cmd('silent! %bwipe!')
  vim.cmd.edit(file)
  vim.wait(500)
end

---Every command that needs a server, each must say `needles` and never the stale advice.
---@param needles string[]
local function every_command_says(needles)
  local runs = {
    [':AskCodeSearch cart'] = function()
      vim.cmd('AskCodeSearch cart')
    end,
    [':AskCodeSearch! cart'] = function()
      vim.cmd('AskCodeSearch! cart')
    end,
    [':AskCode what is this?'] = function()
      vim.cmd('AskCode what is this?')
    end,
    [':AskCode with a range'] = function()
      vim.cmd('1,1AskCode what is this?')
    end,
    ["require('codeask').index_status"] = function()
      require('codeask').index_status(function() end)
    end,
  }
  for label, run in pairs(runs) do
    local text = notified(run)
    truthy(text ~= '', label .. ' said nothing')
    for _, needle in ipairs(needles) do
      truthy(text:find(needle, 1, true), ('%s: %q not in:\n%s'):format(label, needle, text))
    end
    -- The old message blamed the buffer although a project file was open.
    truthy(
      not text:find('open a file inside a project', 1, true),
      label .. ' gave the stale advice:\n' .. text
    )
  end
end

local function health_text()
  vim.cmd('checkhealth codeask')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipe!')
  return text
end

-- ---- specs --------------------------------------------------------------------------------------
it('plain vim.lsp.enable with a cmd path that does not exist: every command names it', function()
  vim.lsp.config('codeask', { cmd = { missing, 'serve' } })
  vim.lsp.enable('codeask')
  open(root .. '/app.py')
  assert(#vim.lsp.get_clients({ name = 'codeask' }) == 0, 'no client can have started')
  every_command_says({ 'server not found', missing, 'does not exist' })
end)

it(':checkhealth codeask says the same about that cmd (one logic)', function()
  local text = health_text()
  truthy(text:find('server not found', 1, true), text)
  truthy(text:find(missing, 1, true), text)
  local msg = require('codeask.diagnose').message(require('codeask.diagnose').no_server())
  truthy(msg:find(require('codeask.diagnose').cmd_problem().summary, 1, true), msg)
  truthy(text:find(require('codeask.diagnose').cmd_problem().summary, 1, true), text)
  truthy(not text:find('open a file inside a project', 1, true), 'stale advice:\n' .. text)
end)

it("the default cmd ('codeask') not on $PATH: the message says $PATH", function()
  vim.lsp.config('codeask', { cmd = { 'codeask', 'serve' } })
  vim.env.PATH = '/nonexistent-codeask-bin'
  open(root .. '/app.py')
  every_command_says({ 'server not found', '`codeask` was not found on $PATH', 'full path' })
end)

it('a cmd that exists without the execute bit: the message says so, with its path', function()
  vim.lsp.config('codeask', { cmd = { noexec, 'serve' } })
  open(root .. '/app.py')
  every_command_says({ 'server not found', noexec, 'is not executable' })
end)

it('setup({ cmd = ... }) with a missing path: the same cause', function()
  require('codeask').setup({ cmd = { missing, 'serve' } })
  open(root .. '/app.py')
  every_command_says({ 'server not found', missing })
end)

it('a server that exits at once: the commands say it exited, with its code', function()
  require('codeask').setup({ cmd = { '/bin/sh', '-c', 'exit 3' } })
  open(root .. '/app.py')
  vim.wait(3000, function()
    return next(require('codeask.diagnose').exits) ~= nil
  end)
  every_command_says({ 'exited', 'code 3', root })
end)

it('a file outside any project, the cmd fine: the message blames the buffer', function()
  -- "Outside any project" by a marker no folder above can hold: with the default markers, a
  -- stray `.codeask` or `.git` above the temporary folder (left in /tmp by an earlier run or
  -- anything else) made notes.txt a project file and this spec failed on a second run.
  require('codeask').setup({ cmd = { '/bin/sh', '-c', 'exit 0' }, root_markers = { marker } })
  open(outside .. '/notes.txt')
  local text = notified(function()
    vim.cmd('AskCodeSearch cart')
  end)
  truthy(text:find('not a file inside a project', 1, true), text)
  truthy(text:find(marker, 1, true), 'the advice names the markers:\n' .. text)
  truthy(not text:find('server not found', 1, true), text)
end)

-- ---- run ----------------------------------------------------------------------------------------
local passed, failed, report = 0, 0, {}
for _, spec in ipairs(specs) do
  local ok, err = xpcall(spec.fn, debug.traceback)
  if ok then
    passed = passed + 1
    report[spec.name] = 'pass'
    say('ok   %s', spec.name)
  else
    failed = failed + 1
    report[spec.name] = 'fail'
    say('FAIL %s\n%s', spec.name, err)
  end
end
if results_file then
  local f = assert(io.open(results_file, 'w'))
  f:write(vim.json.encode(report))
  f:close()
end
say('%d passed, %d failed', passed, failed)
os.exit(failed == 0 and 0 or 1)
