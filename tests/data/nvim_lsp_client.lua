-- Drive kernelscope's language server from a real Neovim (headless):
-- open a model file, hover a line and go to definition; write what came back as JSON.
-- Environment: KS_PYTHON, KS_ROOT, KS_FILE, KS_STORE, KS_LINE (0-based), KS_OUT.
local python, root, file = os.getenv("KS_PYTHON"), os.getenv("KS_ROOT"), os.getenv("KS_FILE")
local line, out = tonumber(os.getenv("KS_LINE")), os.getenv("KS_OUT")
local report = {}

local function finish()
  local handle = io.open(out, "w")
  handle:write(vim.json.encode(report))
  handle:close()
  vim.cmd("qa!")
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local client_id = vim.lsp.start({
  name = "kernelscope",
  cmd = { python, "-m", "kernelscope", "lsp" },
  root_dir = root,
  init_options = { store = os.getenv("KS_STORE") },
})
report.client_id = client_id
local attached = vim.wait(20000, function()
  local client = vim.lsp.get_client_by_id(client_id)
  return client ~= nil and client.initialized
end, 50)
report.attached = attached
if not attached then
  finish()
end

local params = {
  textDocument = { uri = vim.uri_from_bufnr(0) },
  position = { line = line, character = 4 },
}
local hover = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 20000)
for _, response in pairs(hover or {}) do
  if response.result and response.result.contents then
    report.hover = response.result.contents.value
  end
  report.hover_error = response.err and response.err.message
end

local definition = vim.lsp.buf_request_sync(0, "textDocument/definition", params, 20000)
report.definitions = {}
for _, response in pairs(definition or {}) do
  for _, location in ipairs(response.result or {}) do
    table.insert(report.definitions, { uri = location.uri, line = location.range.start.line })
  end
end

-- The editor's own jump from the cursor: vim.lsp.buf.definition() opens the first target.
vim.api.nvim_win_set_cursor(0, { line + 1, 4 })
vim.lsp.buf.definition({ on_list = function(list)
  report.jump_items = #list.items
  vim.cmd("edit " .. vim.fn.fnameescape(list.items[1].filename))
  vim.api.nvim_win_set_cursor(0, { list.items[1].lnum, 0 })
  report.jumped_to = { file = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }
  finish()
end })
vim.wait(20000, function() return false end, 100)
finish()
