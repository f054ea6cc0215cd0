-- README.md documents every property the engine reads and every command it has.
local bin = os.getenv("KINGEST_BIN") or "build/kingest"

local function read(cmd)
  local p = assert(io.popen(cmd))
  local s = p:read("*a")
  p:close()
  return s
end

local readme = assert(io.open("README.md")):read("*a")

describe("README.md", function()
  it("documents every property that `kingest properties` lists", function()
    local names = {}
    for line in read(bin .. " properties"):gmatch("[^\n]+") do
      if not line:match("^%s") then names[#names + 1] = line:match("^(%S+)") end
    end
    assert.is_true(#names > 30)
    for _, name in ipairs(names) do
      local doc = name:gsub("%.%*$", ".<name>")
      local mr = name:match("^mr%.") or name:match("^mapred") -- named as a group: mr.*, mapreduce.*
      if not mr then
        assert.truthy(readme:find("`" .. doc .. "`", 1, true), "README.md does not document " .. name)
      end
    end
  end)

  it("opens with the quick start and the test command", function()
    local first_block = readme:match("```sh\n(.-)```")
    assert.matches("^scripts/quickstart", first_block)
    assert.matches("\nscripts/test", first_block)
  end)

  it("documents every command of the CLI", function()
    for _, cmd in ipairs({ "kingest run", "kingest state show", "kingest properties", "kingest --version" }) do
      assert.truthy(readme:find(cmd, 1, true), cmd)
    end
  end)
end)
