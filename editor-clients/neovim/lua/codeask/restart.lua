-- Start a codeask client again when its server ended because the daemon went away.
--
-- With the per-user daemon on, `codeask serve` is a pipe to a session in the daemon; when the
-- daemon dies (a crash, `kill -9`, `codeask daemon --stop`) the session ends and `codeask serve`
-- exits 75 (docs/daemon.md). vim.lsp never restarts a server by itself, so the buffers would
-- stay without one; VS Code's language client restarts a closed server up to 4 times in 3
-- minutes, and so does this. The new client sends initialize, the settings and every buffer it
-- attaches (an unsaved one with its text), so nothing else needs replaying.

local M = {}

--- `codeask serve`'s exit code when the daemon ended the session (lsp_forwarder.RESTART).
M.EXIT_CODE = 75
--- At most this many restarts within WINDOW seconds (VS Code's client: 4 in 3 minutes).
M.MAX = 4
M.WINDOW = 180

---@type number[] When the recent restarts happened (seconds, `vim.uv.now()`).
M.recent = {}

---@return boolean allowed Whether one more restart fits in the window (and counts it).
local function allowed()
  local now = vim.uv.now() / 1000
  M.recent = vim.tbl_filter(function(at)
    return now - at < M.WINDOW
  end, M.recent)
  if #M.recent >= M.MAX then
    return false
  end
  table.insert(M.recent, now)
  return true
end

---Start `config` again on `buffers` (once vim.lsp has let go of the old client).
---@param config vim.lsp.ClientConfig
---@param buffers integer[]
local function start_again(config, buffers)
  vim.schedule(function() -- vim.lsp detaches and forgets the old client in its own scheduled calls
    vim.schedule(function()
      for _, buf in ipairs(buffers) do
        if vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_is_loaded(buf) then
          vim.lsp.start(config, { bufnr = buf })
        end
      end
    end)
  end)
end

---`on_exit` of lsp/codeask.lua: restart the client when its server exited EXIT_CODE.
---@param code integer
---@param signal integer
---@param client_id integer
function M.on_exit(code, signal, client_id)
  if code ~= M.EXIT_CODE or signal ~= 0 or not require('codeask.config').options.restart then
    return
  end
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  local buffers = vim.tbl_keys(client.attached_buffers)
  if not allowed() then
    vim.schedule(function()
      vim.notify(
        ('codeask: the server ended %d times in %d s; not restarted (:edit a file to start it)'):format(
          M.MAX + 1,
          M.WINDOW
        ),
        vim.log.levels.ERROR
      )
    end)
    return
  end
  local config = vim.deepcopy(client.config)
  vim.schedule(function()
    vim.notify('codeask: the daemon went away; starting the server again', vim.log.levels.INFO)
  end)
  start_again(config, buffers)
end

return M
