-- README.md is the front door: it opens with the quick start and the test command, stays short, and leads to
-- every page of the manual in docs/.
local readme = assert(io.open("README.md")):read("*a")

describe("README.md", function()
  it("opens with the quick start and the test command", function()
    local first_block = readme:match("```sh\n(.-)```")
    assert.matches("^scripts/quickstart", first_block)
    assert.matches("\nscripts/test", first_block)
  end)

  it("is a front door of at most 300 lines", function()
    local lines = select(2, readme:gsub("\n", "\n"))
    assert.is_true(lines <= 300, "README.md has " .. lines .. " lines; the manual's pages are in docs/")
  end)

  it("links to every page of docs/", function()
    local p = assert(io.popen("ls docs/*.md"))
    local pages = 0
    for path in p:lines() do
      pages = pages + 1
      assert.truthy(readme:find("](" .. path .. ")", 1, true), "README.md does not link to " .. path)
    end
    p:close()
    assert.is_true(pages >= 10, "docs/ has " .. pages .. " pages")
  end)
end)
