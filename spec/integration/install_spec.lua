-- Installing kingest: `cmake --install` into a fresh prefix, and the .deb that `cpack -G DEB` makes, unpacked
-- with dpkg -x into another. Each installed binary runs the installed quick start job against the test broker
-- from a folder of its own, with no KINGEST_* variable in its environment, and must take its Lua library from
-- its own prefix. The .deb's Depends are checked against the packages that hold the libraries the binary links
-- (readelf, ldd, dpkg -S), the man page is rendered by man, and the bash completion is run in bash; both are
-- checked against the commands and options the binary's own help lists.
local H = require("support.harness")

local build = assert(os.getenv("KINGEST_BUILD_DIR"), "KINGEST_BUILD_DIR is not set (run through ctest)")
local cmake = os.getenv("KINGEST_CMAKE") or "cmake"
local cpack = os.getenv("KINGEST_CPACK") or "cpack"

-- Runs CMD (a shell string) in DIR with an environment of PATH, HOME and ENV (a table) only: none of the
-- KINGEST_* variables ctest gives the specs (KINGEST_LUA_PATH, KINGEST_FFI_LIB, KINGEST_ROOT, ...).
local function clean_sh(dir, cmd, env)
  local parts = { "env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" .. H.q(dir) }
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. H.q(v) end
  return H.sh("cd " .. H.q(dir) .. " && " .. table.concat(parts, " ") .. " " .. cmd)
end

local function sh_ok(cmd)
  local code, out, err = H.sh(cmd)
  assert(code == 0, cmd .. " failed (" .. tostring(code) .. "): " .. err .. out)
  return out
end

local function realpath(path) return (sh_ok("realpath " .. H.q(path)):gsub("\n$", "")) end

local function is_executable(path) return H.sh("test -x " .. H.q(path)) == 0 end

local function same_file(a, b)
  local code = H.sh("cmp -s " .. H.q(a) .. " " .. H.q(b))
  return code == 0
end

-- The files under DIR with a name matching PATTERN (a find -name pattern), relative to DIR.
local function files_named(dir, pattern)
  local out = sh_ok("cd " .. H.q(dir) .. " && find . -type f -name " .. H.q(pattern) .. " | sort")
  local files = {}
  for line in out:gmatch("[^\n]+") do files[#files + 1] = line:gsub("^%./", "") end
  return files
end

-- Checks that PREFIX holds the installed files where docs/operations.md ("Installing") says they go, each the same
-- as its source.
local function check_layout(prefix)
  assert.is_true(is_executable(prefix .. "/bin/kingest"), prefix .. "/bin/kingest")
  local lua = files_named(H.root .. "/lua/gobblin", "*.lua")
  assert.is_true(#lua >= 8, "lua/gobblin has " .. #lua .. " files")
  for _, f in ipairs(lua) do
    local installed = prefix .. "/share/kingest/lua/gobblin/" .. f
    assert.is_true(same_file(H.root .. "/lua/gobblin/" .. f, installed), installed)
  end
  assert.same(lua, files_named(prefix .. "/share/kingest/lua/gobblin", "*"))
  local examples = files_named(H.root .. "/scripts/examples", "*")
  assert.truthy(#examples >= 10)
  for _, f in ipairs(examples) do
    local installed = prefix .. "/share/doc/kingest/examples/" .. f
    assert.is_true(same_file(H.root .. "/scripts/examples/" .. f, installed), installed)
  end
  assert.is_true(same_file(H.root .. "/docs/kingest.1", prefix .. "/share/man/man1/kingest.1"))
  assert.is_true(same_file(H.root .. "/scripts/completion/kingest.bash",
    prefix .. "/share/bash-completion/completions/kingest"))
  assert.is_true(same_file(H.root .. "/README.md", prefix .. "/share/doc/kingest/README.md"))
  assert.is_true(same_file(H.root .. "/docs/behaviour.md", prefix .. "/share/doc/kingest/behaviour.md"))
  -- The manual's pages, where the installed README's links (docs/<page>.md) lead.
  local pages = files_named(H.root .. "/docs", "*.md")
  assert.is_true(#pages >= 10, "docs/ has " .. #pages .. " pages")
  pages[#pages + 1] = "bench-peers.png"
  table.sort(pages)
  for _, f in ipairs(pages) do
    local installed = prefix .. "/share/doc/kingest/docs/" .. f
    assert.is_true(same_file(H.root .. "/docs/" .. f, installed), installed)
  end
  assert.same(pages, files_named(prefix .. "/share/doc/kingest/docs", "*"))
end

-- The option names at the start of each line of TEXT that starts with one ("  -w, --work-dir DIR   Work dir"
-- gives -w and --work-dir), after INDENT (a pattern), as a set.
local function option_names(text, indent)
  local names = {}
  for line in text:gmatch("[^\n]+") do
    local column = line:match("^" .. indent .. "(%-.-)%s%s") or line:match("^" .. indent .. "(%-.*)$")
    if column then
      for opt in column:gmatch("%-%-?[%a][%w%-]*") do names[opt] = true end
    end
  end
  return names
end

-- The commands of `BIN --help` ("state", not "state show"), and the options of each command's help (a set).
local function cli_of(bin)
  local code, help = H.sh(H.q(bin) .. " --help")
  assert.are.equal(0, code)
  local commands, seen = {}, {}
  local section = help:match("\nCommands:\n(.-)\n\n")
  assert(section, "no Commands: in kingest --help:\n" .. help)
  for cmd in ("\n" .. section):gmatch("\n  ([%w][%w%-]*)") do
    if not seen[cmd] then
      seen[cmd] = true
      commands[#commands + 1] = cmd
    end
  end
  local options = {}
  for _, cmd in ipairs(commands) do
    local c, text = H.sh(H.q(bin) .. " help " .. cmd)
    assert.are.equal(0, c, "kingest help " .. cmd)
    options[cmd] = option_names(text, "%s+")
  end
  return commands, options
end

describe("installing kingest", function()
  local topic, version, arch, deb, unpacked
  local produced = { "This is a message", "This is a another message" }

  setup(function()
    topic = H.unique("install")
    H.create_topic(topic, 1)
    H.produce(topic, produced)
    version = sh_ok(H.q(H.bin) .. " --version"):match("^kingest (%S+)\nlibrdkafka ")
    assert(version, "kingest --version")
    arch = sh_ok("dpkg --print-architecture"):gsub("%s+$", "")
  end)

  -- Runs the quick start job of the installed examples at EXAMPLE with the installed BIN, copied into a fresh
  -- folder and run from there in a clean environment; checks the records published (against kcat), the stored
  -- offsets (sqlite3, and BIN's `state show`) and that the Lua library came from LIBDIR.
  local function run_quickstart(bin, example, libdir)
    local dir = H.workdir("quickstart")
    sh_ok("cp " .. H.q(example) .. " " .. H.q(dir .. "/quickstart.lua"))
    local env = { KAFKA_BROKERS = H.bootstrap(), QUICKSTART_TOPICS = topic, GOBBLIN_WORK_DIR = "work" }
    local code, _, err = clean_sh(dir, H.q(bin) .. " run quickstart.lua --log-level debug", env)
    assert.are.equal(0, code, err)
    assert.are.equal(libdir .. " (beside the executable)", err:match("DEBUG Lua library: ([^\n]*)"), err)
    assert.truthy(err:find("INFO Extracted 2 data records", 1, true), err)
    assert.same(produced, H.output_lines(dir .. "/work/job-output/" .. topic))
    assert.same(H.kcat_payloads(topic), H.output_lines(dir .. "/work/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 2 }, H.stored_offsets(dir .. "/work", "GobblinKafkaQuickStart"))
    local out
    code, out, err = clean_sh(dir, H.q(bin) .. " state show quickstart.lua", env)
    assert.are.equal(0, code, err)
    assert.matches(topic .. "%s+0%s+2%s", out)
  end

  it("cmake --install puts every file in its place, and the binary takes its Lua library from there", function()
    local prefix = H.workdir("prefix")
    local code, out, err = H.sh(H.q(cmake) .. " --install " .. H.q(build) .. " --prefix " .. H.q(prefix))
    assert.are.equal(0, code, err .. out)
    check_layout(prefix)
    -- Nothing else: the FFI library of the specs is not installed.
    assert.same({}, files_named(prefix, "*.so*"))
    run_quickstart(prefix .. "/bin/kingest", prefix .. "/share/doc/kingest/examples/quickstart.lua",
      realpath(prefix) .. "/share/kingest/lua")
  end)

  it("cpack -G DEB makes kingest_<version>_<arch>.deb, its Depends the packages of what the binary links",
    function()
      local dir = H.workdir("package")
      local code, out, err = H.sh("cd " .. H.q(build) .. " && " .. H.q(cpack) .. " -G DEB -B " .. H.q(dir))
      assert.are.equal(0, code, err .. out)
      deb = dir .. "/kingest_" .. version .. "_" .. arch .. ".deb"
      assert.is_true(H.exists(deb), "no " .. deb .. " in " .. out)
      local function field(name) return (sh_ok("dpkg-deb -f " .. H.q(deb) .. " " .. name):gsub("\n$", "")) end
      assert.are.equal("kingest", field("Package"))
      assert.are.equal(version, field("Version"))
      assert.are.equal(arch, field("Architecture"))
      assert.truthy(#field("Maintainer") > 0)
      assert.truthy(#field("Description") > 0)
      -- Depends: groups of alternatives ("a (>= 1) | b"), as package names.
      local depends, groups = {}, {}
      for item in (field("Depends") .. ","):gmatch("%s*([^,]+),") do
        local group = {}
        for alt in (item .. "|"):gmatch("%s*([^|]-)%s*|") do
          local name = alt:match("^(%S+)")
          depends[name] = true
          group[#group + 1] = name
        end
        groups[#groups + 1] = group
      end
      unpacked = H.workdir("unpacked")
      sh_ok("dpkg -x " .. H.q(deb) .. " " .. H.q(unpacked))
      -- Every package holding a library the binary links directly (readelf's NEEDED, found by ldd, owned per
      -- dpkg -S) is a dependency, and so is the package of the cjson module the Lua library requires.
      local bin = unpacked .. "/usr/bin/kingest"
      local ldd = sh_ok("ldd " .. H.q(bin))
      local needed = {}
      for lib in sh_ok("readelf -d " .. H.q(bin)):gmatch("%(NEEDED%)%s+Shared library: %[([^%]]+)%]") do
        needed[#needed + 1] = lib
      end
      assert.truthy(#needed >= 9, "NEEDED: " .. table.concat(needed, " "))
      local function owner(path)
        path = realpath(path)
        for _, p in ipairs({ path, (path:gsub("^/usr/", "/")) }) do
          local c, o = H.sh("dpkg -S " .. H.q(p))
          if c == 0 then return o:match("^([^:]+)") end
        end
        error("no package holds " .. path)
      end
      for _, lib in ipairs(needed) do
        local name = lib:gsub("[%.%-%+]", "%%%0")
        local path = ldd:match("\n%s*" .. name .. " => (%S+)") or ldd:match("\n%s*(/%S*/" .. name .. ") ")
        assert(path, lib .. " not found by ldd:\n" .. ldd)
        local pkg = owner(path)
        assert.is_true(depends[pkg] == true, lib .. " is in " .. pkg .. ", not in Depends: " .. field("Depends"))
      end
      local cjson = sh_ok("luajit -e " .. H.q("io.write(package.searchpath('cjson', package.cpath))"))
      assert.is_true(depends[owner(cjson)] == true, "cjson (" .. owner(cjson) .. ") not in Depends")
      -- Debian 12's names of them. librdkafka is linked in (statically: Debian 12's 2.0.2 cannot log in with
      -- SCRAM to Kafka 4), so the binary needs no librdkafka.so and the package not librdkafka1, but the
      -- libraries librdkafka itself links: OpenSSL, Cyrus SASL, lz4 (zstd and zlib are the engine's too).
      for _, pkg in ipairs({ "libluajit-5.1-2", "libavro23", "libsqlite3-0", "libcurl4", "zlib1g", "libsnappy1v5",
                             "libzstd1", "lua-cjson", "libc6", "libssl3", "libsasl2-2", "liblz4-1" }) do
        assert.is_true(depends[pkg] == true, pkg .. " not in Depends: " .. field("Depends"))
      end
      assert.is_nil(depends["librdkafka1"], field("Depends"))
      for _, lib in ipairs(needed) do assert.falsy(lib:find("rdkafka", 1, true), lib) end
      -- Each is met on this machine, where kingest was built and runs.
      for _, group in ipairs(groups) do
        local met = false
        for _, pkg in ipairs(group) do
          local c, status = H.sh("dpkg-query -W -f '${Status}' " .. H.q(pkg))
          met = met or (c == 0 and status == "install ok installed")
        end
        assert.is_true(met, "no package of " .. table.concat(group, " | ") .. " is installed")
      end
    end)

  it("unpacked with dpkg -x, has its files under usr/ and runs the quick start from its own library", function()
    assert(unpacked, "needs the .deb of the test before")
    check_layout(unpacked .. "/usr")
    assert.same({}, files_named(unpacked, "*.so*"))
    -- Stripped, with the kg_ffi_* functions the Lua library calls through ffi.C still exported.
    assert.falsy(sh_ok("readelf -S -W " .. H.q(unpacked .. "/usr/bin/kingest")):find(" .symtab ", 1, true))
    local symbols = sh_ok("readelf --dyn-syms -W " .. H.q(unpacked .. "/usr/bin/kingest"))
    for _, fn in ipairs({ "kg_ffi_batch_emit", "kg_ffi_record_header", "kg_ffi_log_write" }) do
      assert.truthy(symbols:find(" " .. fn .. "\n", 1, true), fn)
    end
    run_quickstart(unpacked .. "/usr/bin/kingest", unpacked .. "/usr/share/doc/kingest/examples/quickstart.lua",
      realpath(unpacked) .. "/usr/share/kingest/lua")
    -- Moved elsewhere, it follows: the library is found from the executable's folder, not from a built-in path.
    local moved = H.workdir("moved") .. "/root"
    sh_ok("mv " .. H.q(unpacked) .. " " .. H.q(moved))
    unpacked = moved
    H.spit(moved .. "/job.lua", 'local converter = require("gobblin.converter")\n' ..
      'return { ["job.name"] = "moved", converters = { converter.bytes_to_json() } }\n')
    local code, _, err = clean_sh(moved, "usr/bin/kingest plan job.lua --log-level debug", { GOBBLIN_WORK_DIR = "." })
    assert.are.equal(realpath(moved) .. "/usr/share/kingest/lua (beside the executable)",
      err:match("DEBUG Lua library: ([^\n]*)"), err)
    -- The job loaded, library and all; it stops at the brokers it does not name (78: the job is not valid).
    assert.are.equal(78, code, err)
    assert.truthy(err:find("kafka.brokers", 1, true), err)
    assert.falsy(err:find("module", 1, true), err)
  end)

  it("has a man page that man renders without a warning, with every command and option of the help", function()
    assert(unpacked, "needs the .deb of the test before")
    local page = unpacked .. "/usr/share/man/man1/kingest.1"
    local code, text, err = clean_sh(unpacked, "man --warnings -l " .. H.q(page), { MANWIDTH = "80", LC_ALL = "C" })
    assert.are.equal(0, code, err)
    assert.are.equal("", err)
    for _, heading in ipairs({ "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "ENVIRONMENT", "FILES",
                               "EXIT STATUS", "EXAMPLES", "SEE ALSO" }) do
      assert.truthy(text:find("\n" .. heading .. "\n", 1, true), heading)
    end
    for line in text:gmatch("[^\n]+") do
      assert.is_true(#line <= 80, "wider than 80 columns: " .. line)
    end
    assert.truthy(text:find("kingest - pull Kafka topics into files", 1, true))
    local commands, options = cli_of(unpacked .. "/usr/bin/kingest")
    assert.truthy(#commands >= 5, table.concat(commands, " "))
    local synopsis = text:match("\nSYNOPSIS\n(.-)\nDESCRIPTION\n")
    local described = text:match("\nCOMMANDS\n(.-)\nOPTIONS\n")
    local opts = text:match("\nOPTIONS\n(.-)\nENVIRONMENT\n")
    local documented = option_names(opts, "       ")
    for _, cmd in ipairs(commands) do
      assert.truthy(synopsis:find("kingest " .. cmd, 1, true), "SYNOPSIS lacks " .. cmd)
      assert.truthy(described:find("\n       " .. cmd, 1, true), "COMMANDS lacks " .. cmd)
      for opt in pairs(options[cmd]) do
        assert.is_true(documented[opt] == true, "OPTIONS lacks " .. opt .. " of " .. cmd)
      end
    end
    -- The commands and options of the command line as it stands, which the page documents in full.
    for _, cmd in ipairs({ "run", "plan", "validate", "test", "state show", "state history", "state set-offset",
                           "state reset", "properties", "run-task", "help" }) do
      assert.truthy(synopsis:find("kingest " .. cmd, 1, true), "SYNOPSIS lacks " .. cmd)
    end
    for _, opt in ipairs({ "-w", "--work-dir", "-l", "--log-level", "--log-file", "--log-format", "--strict", "-j",
                           "--json", "--topic", "--format", "-s", "--state-store-dir", "-n", "--limit", "--dry-run",
                           "--yes", "--markdown", "-h", "--help", "-V", "--version" }) do
      assert.is_true(documented[opt] == true, opt)
    end
    -- The exit statuses of `kingest --help`, and validate's.
    local status = text:match("\nEXIT STATUS\n(.-)\nEXAMPLES\n")
    local _, help = H.sh(H.q(H.bin) .. " --help")
    for n in ("\n" .. help:match("\nExit status:\n(.*)$")):gmatch("\n  (%d+)  ") do
      assert.truthy(status:find("\n       " .. n .. "%s"), "exit status " .. n)
    end
    for _, n in ipairs({ "64", "66", "78" }) do assert.truthy(status:find("\n       " .. n .. "%s"), n) end
    local environment = "\n" .. text:match("\nENVIRONMENT\n(.-)\nFILES\n")
    for _, var in ipairs({ "GOBBLIN_WORK_DIR", "KAFKA_BROKERS", "KINGEST_LUA_PATH" }) do
      assert.truthy(environment:find("\n       " .. var .. "\n", 1, true), var)
    end
  end)

  it("has a bash completion of commands, state commands, each command's options, job files and levels", function()
    assert(unpacked, "needs the .deb of the test before")
    local dir = H.workdir("completion")
    for _, f in ipairs({ "a.lua", "b.pull", "c.properties", "d.job", "e.conf", "notes.txt", "f.lua.bak" }) do
      H.spit(dir .. "/" .. f, "")
    end
    sh_ok("mkdir " .. H.q(dir .. "/jobs"))
    local commands, options = cli_of(unpacked .. "/usr/bin/kingest")
    -- One line per completion asked for: the words as COMP_WORDS, then what the completion offers.
    local cases = {
      { "kingest", "st" }, { "kingest", "state", "" }, { "kingest", "run", "--" }, { "kingest", "run", "" },
      { "kingest", "run", "a.lua", "--log-level", "" }, { "kingest", "plan", "a.lua", "-l", "w" },
      { "kingest", "run", "a.lua", "--log-level", "=", "" }, { "kingest", "run", "a.lua", "--log-level=e" },
      { "kingest", "run", "-w", "jobs", "" }, { "kingest", "state", "show", "" }, { "kingest", "state", "reset", "--" },
      { "kingest", "state", "set-offset", "a.lua", "t:0", "" }, { "kingest", "run", "a.lua", "--log-format", "" },
      { "kingest", "help", "" }, { "kingest", "" },
    }
    for _, cmd in ipairs(commands) do
      if cmd == "state" then
        for _, sub in ipairs({ "show", "history", "set-offset", "reset" }) do
          cases[#cases + 1] = { "kingest", "state", sub, "-" }
        end
      else
        cases[#cases + 1] = { "kingest", cmd, "-" }
      end
    end
    local script = { "source " .. H.q(unpacked .. "/usr/share/bash-completion/completions/kingest"),
      "complete -p kingest >&2",
      't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _kingest; ' ..
      'printf "%s|" "$*"; printf "%s\\n" "${COMPREPLY[*]}" | tr " " "\\n" | sort | tr "\\n" " "; echo; }' }
    for _, c in ipairs(cases) do
      local words = {}
      for i, w in ipairs(c) do words[i] = H.q(w) end
      script[#script + 1] = "t " .. table.concat(words, " ")
    end
    local path = dir .. "/complete.sh"
    H.spit(path, table.concat(script, "\n") .. "\n")
    local code, out, err = clean_sh(dir, "bash --norc --noprofile " .. H.q(path))
    assert.are.equal(0, code, err)
    assert.are.equal("complete -F _kingest kingest\n", err)
    local got = {}
    for line in out:gmatch("[^\n]+") do
      local words, offered = line:match("^(.-)|(.*)$")
      local set = {}
      for w in offered:gmatch("%S+") do set[#set + 1] = w end
      got[words] = set
    end
    local function offers(words)
      assert(got[words], "no completion for " .. words .. ":\n" .. out)
      return got[words]
    end
    assert.same({ "state" }, offers("kingest st"))
    assert.same({ "--help", "-h", "history", "reset", "set-offset", "show" }, offers("kingest state "))
    assert.same({ "a.lua", "b.pull", "c.properties", "d.job", "e.conf", "jobs" }, offers("kingest run "))
    assert.same({ "a.lua", "b.pull", "c.properties", "d.job", "e.conf", "jobs" }, offers("kingest run -w jobs "))
    assert.same({ "a.lua", "b.pull", "c.properties", "d.job", "e.conf", "jobs" }, offers("kingest state show "))
    assert.same({ "debug", "error", "info", "warn" }, offers("kingest run a.lua --log-level "))
    assert.same({ "debug", "error", "info", "warn" }, offers("kingest run a.lua --log-level = "))
    assert.same({ "warn" }, offers("kingest plan a.lua -l w"))
    assert.same({ "--log-level=error" }, offers("kingest run a.lua --log-level=e"))
    assert.same({ "json", "text" }, offers("kingest run a.lua --log-format "))
    assert.same({ "earliest", "latest" }, offers("kingest state set-offset a.lua t:0 "))
    assert.same({ "--help", "--log-file", "--log-format", "--log-level", "--strict", "--work-dir" },
      offers("kingest run --"))
    assert.same({ "--dry-run", "--help", "--log-file", "--log-format", "--log-level", "--state-store-dir", "--work-dir",
                  "--yes" }, offers("kingest state reset --"))
    assert.same(H.sorted({ "run", "plan", "validate", "test", "state", "properties", "run-task", "help", "version" }),
      offers("kingest help "))
    local top = {}
    for _, w in ipairs(offers("kingest ")) do top[w] = true end
    for _, w in ipairs({ "-h", "--help", "-V", "--version" }) do assert.is_true(top[w] == true, w) end
    for _, cmd in ipairs(commands) do assert.is_true(top[cmd] == true, cmd .. " is not completed") end
    -- Every option the binary's help lists for a command is completed for it (for state, by some state command).
    for _, cmd in ipairs(commands) do
      local offered = {}
      local keys = cmd == "state" and { "kingest state show -", "kingest state history -", "kingest state set-offset -",
        "kingest state reset -" } or { "kingest " .. cmd .. " -" }
      for _, k in ipairs(keys) do
        for _, o in ipairs(offers(k)) do offered[o] = true end
      end
      for opt in pairs(options[cmd]) do
        if cmd ~= "help" then -- kingest help takes a command, not options
          assert.is_true(offered[opt] == true, "kingest " .. cmd .. " " .. opt .. " is not completed")
        end
      end
    end
  end)
end)
