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

  it("has `kingest properties --markdown` as its table of job properties", function()
    local section = assert(readme:match("\n## Job properties\n(.-)\n## "), "README.md has no Job properties section")
    local rows = {}
    for line in (section .. "\n"):gmatch("([^\n]*)\n") do
      if line:match("^|") then
        rows[#rows + 1] = line
      elseif #rows > 0 then
        break -- the first table of the section
      end
    end
    assert.truthy(read(bin .. " properties --help"):find("\n      --markdown ", 1, true), "properties --help")
    local generated = read(bin .. " properties --markdown")
    assert.truthy(#rows > 30, "README.md's Job properties section has no table")
    assert.are.equal(generated, table.concat(rows, "\n") .. "\n",
      "README.md's properties table differs from `kingest properties --markdown`; paste that output into it")
  end)

  it("opens with the quick start and the test command", function()
    local first_block = readme:match("```sh\n(.-)```")
    assert.matches("^scripts/quickstart", first_block)
    assert.matches("\nscripts/test", first_block)
  end)

  it("documents every command of the CLI", function()
    for _, cmd in ipairs({ "kingest run", "kingest state show", "kingest properties", "kingest validate",
                           "kingest test", "kingest --version" }) do
      assert.truthy(readme:find(cmd, 1, true), cmd)
    end
  end)
end)
