-- README.md is the front door: it opens with the quick start and the test command.
local readme = assert(io.open("README.md")):read("*a")

describe("README.md", function()
  it("opens with the quick start and the test command", function()
    local first_block = readme:match("```sh\n(.-)```")
    assert.matches("^scripts/quickstart", first_block)
    assert.matches("\nscripts/test", first_block)
  end)
end)
