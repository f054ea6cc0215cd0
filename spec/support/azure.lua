-- The specs' view of the Azure Blob emulator of scripts/azurite (KINGEST_AZURITE_DIR): its endpoint and the
-- well-known account's key for a job, containers, and what is in them as spec/support/azure_blob.py (a client of the
-- tests' own) reads it, never kingest.
local H = require("support.harness")
local json = require("cjson")

local A = {}

local state = os.getenv("KINGEST_AZURITE_DIR") or (H.root .. "/.azurite")
local tool = H.root .. "/spec/support/azure_blob.py"
A.account = "devstoreaccount1"

local function read(name) return H.trim(assert(H.slurp(state .. "/" .. name), "no " .. name .. " in " .. state)) end

-- The account's blob endpoint (the emulator's URL and the account), and its key.
function A.endpoint() return read("url") .. "/" .. A.account end
function A.key()
  for line in read("accounts"):gmatch("[^\n]+") do
    local name, key = line:match("^([^:]+):(.+)$")
    if name == A.account then return key end
  end
  error("no key of " .. A.account .. " in " .. state .. "/accounts")
end

-- Runs azure_blob.py ARGS (STDIN: a file to read from); asserts that it succeeded; returns its stdout.
function A.tool(args, stdin)
  local parts = { "python3", H.q(tool), H.q(A.endpoint()), A.account, H.q(A.key()) }
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  local cmd = table.concat(parts, " ")
  if stdin then cmd = cmd .. " <" .. H.q(stdin) end
  local code, out, err = H.sh(cmd)
  require("luassert").are.equal(0, code, "azure_blob.py " .. table.concat(args, " ") .. ": " .. err)
  return out
end

-- A new container of a unique name (3 to 63 lower-case letters, digits and dashes).
function A.container(name)
  local c = H.unique(name or "c"):lower():gsub("[^a-z0-9]", "-"):sub(1, 63)
  A.tool({ "mkcontainer", c })
  return c
end

-- Every blob under PREFIX of CONTAINER, uncommitted ones too: a list of { name, size, etag, committed }, by name.
function A.blobs(container, prefix)
  local list = json.decode(A.tool({ "list", container, prefix or "" }))
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

-- The committed blobs under PREFIX (as A.blobs).
function A.committed(container, prefix)
  local list = {}
  for _, b in ipairs(A.blobs(container, prefix)) do if b.committed then list[#list + 1] = b end end
  return list
end

-- The bytes of blob NAME.
function A.get(container, name) return A.tool({ "get", container, name }) end

-- The lines of every committed blob under PREFIX, in name order, and the blobs.
function A.lines(container, prefix)
  local lines, blobs = {}, A.committed(container, prefix)
  for _, b in ipairs(blobs) do
    for l in A.get(container, b.name):gmatch("[^\n]+") do lines[#lines + 1] = l end
  end
  return lines, blobs
end

-- The properties of a job whose final folder is FOLDER in CONTAINER on the emulator (local task data); EXTRA's
-- values override them (H.UNSET removes one).
function A.props(container, folder, extra)
  local p = {
    ["data.publisher.fs.uri"] = "wasb://" .. container .. "@" .. A.account .. ".blob.core.windows.net",
    ["data.publisher.final.dir"] = folder,
    ["fs.azure.blob.endpoint"] = A.endpoint(),
    ["fs.azure.account.key." .. A.account .. ".blob.core.windows.net"] = A.key(),
    ["fs.azure.io.retry.min.backoff.interval"] = "50",
  }
  for k, v in pairs(extra or {}) do
    if v == H.UNSET then p[k] = nil else p[k] = v end
  end
  return p
end

return A
