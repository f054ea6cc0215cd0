-- The manual (README.md and docs/*.md) documents every property the engine reads and every command it has, its
-- property table is the engine's own (`kingest properties --markdown`), its links lead somewhere, and its map of
-- the engine names every file there is.
local bin = os.getenv("KINGEST_BIN") or "build/kingest"

local function read(cmd)
  local p = assert(io.popen(cmd))
  local s = p:read("*a")
  p:close()
  return s
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The pages of the manual, README.md first, each { path, text }.
local pages = { { path = "README.md", text = slurp("README.md") } }
for path in read("ls docs/*.md"):gmatch("[^\n]+") do pages[#pages + 1] = { path = path, text = slurp(path) } end
local all = {}
for _, page in ipairs(pages) do all[#all + 1] = page.text end
all = table.concat(all, "\n")

-- TEXT with the lines of its fenced code blocks blanked (so that line numbers stay).
local function unfenced(text)
  local out, fenced = {}, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s*```") then fenced = not fenced end
    out[#out + 1] = (fenced or line:match("^%s*```")) and "" or line
  end
  return table.concat(out, "\n")
end

-- TEXT without its code: fenced blocks blanked, inline code spans emptied.
local function prose(text) return (unfenced(text):gsub("`[^`\n]*`", "``")) end

-- The anchors of TEXT's headings, as GitHub makes them: lower case, punctuation dropped but for - and _,
-- spaces as -, and -1, -2 ... after a repeated one.
local function anchors(text)
  local set, seen = {}, {}
  for line in (unfenced(text) .. "\n"):gmatch("([^\n]*)\n") do
    local heading = line:match("^#+%s+(.-)%s*$")
    if heading then
      local id = heading:lower():gsub("[^%w%s%-_]", ""):gsub("%s", "-")
      local n = seen[id]
      seen[id] = (n or 0) + 1
      set[n and (id .. "-" .. n) or id] = true
    end
  end
  return set
end

describe("docs/properties.md", function()
  local doc = slurp("docs/properties.md")

  -- The engine's docs link to a heading of the manual by its anchor alone (`(#avro)`) or to a file from the
  -- repository's top (`(docs/behaviour.md#csv)`); here each leads to the page that has it.
  it("has `kingest properties --markdown` as its table, between its markers, each link led to its page", function()
    local table_text = assert(doc:match("\n<!%-%- properties:begin %-%->\n(.-)<!%-%- properties:end %-%->\n"),
      "docs/properties.md has no <!-- properties:begin --> ... <!-- properties:end --> block")
    local generated = read(bin .. " properties --markdown")
    assert.truthy(select(2, generated:gsub("\n|", "")) > 30, "kingest properties --markdown printed no table")
    local stale = "docs/properties.md's table differs from `kingest properties --markdown`: run scripts/gen-properties"
    local function targets(text)
      local list = {}
      for target in text:gmatch("%]%(([^)%s]+)%)") do list[#list + 1] = target end
      return list, (text:gsub("%]%(([^)%s]+)%)", "]()"))
    end
    local from, generated_bare = targets(generated)
    local to, doc_bare = targets(table_text)
    assert.are.equal(generated_bare, doc_bare, stale)
    assert.are.equal(#from, #to, stale)
    for i, target in ipairs(from) do
      local anchor = target:match("^#(.+)$")
      if anchor then
        local page, page_anchor = to[i]:match("^([%w_%-]+%.md)#?(.*)$")
        local title = page and exists("docs/" .. page) and slurp("docs/" .. page):match("^#%s+(.-)%s*\n")
        local title_anchor = title and title:lower():gsub("[^%w%s%-_]", ""):gsub("%s", "-")
        assert.truthy(page and (page_anchor == anchor or (page_anchor == "" and title_anchor == anchor)),
          "the engine's link " .. target .. " became " .. to[i] .. ", not a page of docs/ with that heading")
      else
        assert.are.equal((target:gsub("^docs/", "")), to[i], stale)
      end
    end
  end)

  it("is where `kingest properties --help` says the table is", function()
    local help = read(bin .. " properties --help")
    assert.truthy(help:find("\n      --markdown ", 1, true), help)
    assert.truthy(help:find("Markdown table of docs/properties.md", 1, true), help)
  end)
end)

describe("the manual (README.md and docs/)", function()
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
        assert.truthy(all:find("`" .. doc .. "`", 1, true), "the manual does not document " .. name)
      end
    end
  end)

  it("documents every command of the CLI", function()
    for _, cmd in ipairs({ "kingest run", "kingest state show", "kingest properties", "kingest validate",
                           "kingest test", "kingest --version" }) do
      assert.truthy(all:find(cmd, 1, true), cmd)
    end
  end)

  it("links only to files and headings that exist", function()
    local anchors_of = {}
    for _, page in ipairs(pages) do anchors_of[page.path] = anchors(page.text) end
    local broken = {}
    for _, page in ipairs(pages) do
      local dir = page.path:match("^(.*)/") or "."
      local n = 0
      for line in (prose(page.text) .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        for target in line:gmatch("%]%(([^)%s]+)%)") do
          if not target:match("^%a[%w+.-]*:") then -- a relative link, not http:, https:, mailto:
            local file, anchor = target:match("^([^#]*)#?(.*)$")
            local path = file == "" and page.path or (dir == "." and file or dir .. "/" .. file)
            path = path:gsub("/%./", "/"):gsub("[^/]+/%.%./", "")
            local where = page.path .. ":" .. n .. ": " .. target
            if target:match("#$") then
              broken[#broken + 1] = where .. " (an empty anchor)"
            elseif not exists(path) then
              broken[#broken + 1] = where .. " (no file " .. path .. ")"
            elseif anchor ~= "" then
              anchors_of[path] = anchors_of[path] or anchors(slurp(path))
              if not anchors_of[path][anchor] then broken[#broken + 1] = where .. " (no heading #" .. anchor .. ")" end
            end
          end
        end
      end
    end
    assert.are.same({}, broken)
  end)
end)

describe("docs/architecture.md", function()
  it("names every file of the engine and of the Lua library in its map", function()
    local map = slurp("docs/architecture.md")
    local missing = {}
    for path in read("ls engine/*.c lua/gobblin/*.lua lua/gobblin/*/*.lua"):gmatch("[^\n]+") do
      local name = path:gsub("^engine/", ""):gsub("^lua/gobblin/", "")
      if not map:find("`" .. name .. "`", 1, true) then missing[#missing + 1] = path end
    end
    assert.are.same({}, missing, "docs/architecture.md's map of the files does not name them")
  end)
end)
