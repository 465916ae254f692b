-- What a one-shot spec (first_search_spec.lua, restart_spec.lua) starts with, loaded by dofile:
-- the plugin on the runtimepath, the repository as the working directory, vim.notify's messages
-- kept in `notes`, and `finish(report)` writing the JSON report and quitting.
-- Environment: CODEASK_TEST_PLUGIN, CODEASK_TEST_REPO, CODEASK_TEST_SERVER_CMD,
-- CODEASK_TEST_RESULTS.

local S = {
  plugin = assert(os.getenv('CODEASK_TEST_PLUGIN')),
  root = assert(os.getenv('CODEASK_TEST_REPO')),
  server_cmd = vim.json.decode(assert(os.getenv('CODEASK_TEST_SERVER_CMD'))),
  results_file = assert(os.getenv('CODEASK_TEST_RESULTS')),
  notes = {},
}

vim.opt.rtp:prepend(S.plugin)
vim.cmd('runtime plugin/codeask.lua')
vim.cmd.cd(S.root)

vim.notify = function(msg)
  table.insert(S.notes, msg)
end

---Write `report` as JSON to CODEASK_TEST_RESULTS and quit Neovim.
---@param report table
function S.finish(report)
  local out = assert(io.open(S.results_file, 'w'))
  out:write(vim.json.encode(report))
  out:close()
  vim.cmd('qall!')
end

return S
