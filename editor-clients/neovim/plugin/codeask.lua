-- codeask: user commands and the hover-link keys. The server starts with
-- `vim.lsp.enable('codeask')` (lsp/codeask.lua) or `require('codeask').setup({...})`.

if vim.g.loaded_codeask == 1 then
  return
end
vim.g.loaded_codeask = 1

if vim.fn.has('nvim-0.10') ~= 1 then
  vim.notify_once('codeask needs Neovim >= 0.10', vim.log.levels.ERROR)
  return
end

require('codeask.commands').create()

vim.api.nvim_create_autocmd('WinEnter', {
  group = vim.api.nvim_create_augroup('codeask.hover', { clear = true }),
  desc = 'codeask: gd/<CR> follow links in a focused LSP hover window',
  callback = function()
    if require('codeask.config').options.hover_links then
      require('codeask.ui').attach_hover_links(vim.api.nvim_get_current_win())
    end
  end,
})
