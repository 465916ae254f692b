-- Item 20: `:AskCodeSearch!` sent the moment codeask attaches, on a folder indexed before (by
-- `codeask index`), answers from that index: the server waits for the index to open instead of
-- answering "no results … (index indexing: 0/0 chunks embedded)". No sleep before the search.
--
-- Environment (set by tests/clients/test_neovim.py): CODEASK_TEST_PLUGIN, CODEASK_TEST_REPO,
-- CODEASK_TEST_SERVER_CMD, CODEASK_TEST_RESULTS. Writes {notes = [...], items = [...]}.

local S =
  dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'oneshot.lua'))
local root, notes, finish = S.root, S.notes, S.finish

vim.lsp.config('codeask', { cmd = S.server_cmd })
vim.lsp.enable('codeask')
vim.cmd.edit(root .. '/src/shop/cart.py')
local attached = vim.wait(30000, function()
  local c = vim.lsp.get_clients({ name = 'codeask', bufnr = 0 })[1]
  return c ~= nil and c.initialized
end, 10)
if not attached then
  finish({ error = 'codeask did not attach', notes = notes })
end
vim.fn.setqflist({}, 'r', { title = 'before', items = {} })
vim.cmd('AskCodeSearch! reserve stock in the warehouse')
local answered = vim.wait(60000, function()
  return vim.fn.getqflist({ title = 1 }).title:find('codeask search', 1, true) ~= nil
    or #notes > 0
      and vim.iter(notes):any(function(n)
        return n:find('no results', 1, true) ~= nil
      end)
end, 20)
local items = vim.tbl_map(function(item)
  return item.text
end, vim.fn.getqflist())
finish({ answered = answered, items = items, notes = notes })
