-- The example systemd units of scripts/examples/systemd, checked offline by systemd's own tools:
-- `systemd-analyze verify` (every setting known and valid, the man page of Documentation= found, ExecStart
-- executable: a copy of the service runs this build's kingest, since /usr/bin/kingest may not be installed),
-- the timer's calendar (every 15 minutes), `systemd-analyze security` (the hardening), and `systemd-sysusers`
-- creating the service's user from the sysusers file. Needs systemd-analyze (package systemd, which
-- scripts/setup installs); without it the spec fails, unless KINGEST_SKIP_SYSTEMD=1 says to leave it out.
local H = require("support.harness")

local units = H.root .. "/scripts/examples/systemd"

local function which(tool)
  local code, out = H.sh("command -v " .. tool)
  return code == 0 and out:gsub("%s+$", "") or nil
end

if not which("systemd-analyze") then
  if os.getenv("KINGEST_SKIP_SYSTEMD") == "1" then
    io.stderr:write("systemd_spec: systemd-analyze is missing; left out, as KINGEST_SKIP_SYSTEMD=1 says\n")
    return
  end
  error("systemd-analyze is missing: install the package systemd (scripts/setup does), or set " ..
    "KINGEST_SKIP_SYSTEMD=1 to leave this spec out")
end

-- The settings of a unit file: section -> key -> list of values.
local function settings(path)
  local out, section = {}, nil
  for line in assert(H.slurp(path), path):gmatch("[^\n]+") do
    local s = line:match("^%[(.+)%]$")
    if s then
      section = s
      out[s] = out[s] or {}
    elseif section and not line:match("^%s*[#;]") then
      local k, v = line:match("^([%w]+)=(.*)$")
      if k then
        out[section][k] = out[section][k] or {}
        table.insert(out[section][k], v)
      end
    end
  end
  return out
end

-- A folder with copies of the units, the service's ExecStart running this build's kingest, and a man page
-- folder holding kingest(1); returns the folder and the environment that finds the man page.
local function copies()
  local dir = H.workdir("systemd")
  local code, bin = H.sh("realpath " .. H.q(H.bin))
  assert.are.equal(0, code)
  bin = bin:gsub("%s+$", "")
  local service = H.slurp(units .. "/kingest@.service")
  local n
  service, n = service:gsub("ExecStart=/usr/bin/kingest ", "ExecStart=" .. bin .. " ")
  assert.are.equal(1, n)
  H.spit(dir .. "/kingest@.service", service)
  H.spit(dir .. "/kingest@.timer", H.slurp(units .. "/kingest@.timer"))
  os.execute("mkdir -p " .. H.q(dir .. "/man/man1"))
  H.spit(dir .. "/man/man1/kingest.1", H.slurp(H.root .. "/docs/kingest.1"))
  return dir, "MANPATH=" .. H.q(dir .. "/man")
end

local function verify(dir, env)
  return H.sh("cd " .. H.q(dir) .. " && env " .. env .. " systemd-analyze verify " ..
    H.q(dir .. "/kingest@events.service") .. " " .. H.q(dir .. "/kingest@events.timer"))
end

describe("the example systemd units", function()
  it("pass systemd-analyze verify without a word, and a misspelt setting would not", function()
    local dir, env = copies()
    local code, out, err = verify(dir, env)
    assert.are.equal(0, code, out .. err)
    assert.are.equal("", out .. err)
    -- The same check sees a setting systemd does not know, and a man page it cannot find.
    H.spit(dir .. "/kingest@.timer", H.slurp(dir .. "/kingest@.timer"):gsub("Persistent=", "Persistant="))
    code, out, err = verify(dir, "MANPATH=/nonexistent")
    assert.truthy((out .. err):find("Unknown key 'Persistant'", 1, true), out .. err)
    assert.truthy((out .. err):find("man kingest(1)", 1, true), out .. err)
  end)

  it("run kingest run /etc/kingest/<instance>.lua in /var/lib/kingest as the user kingest", function()
    local s = settings(units .. "/kingest@.service")
    assert.same({ "/usr/bin/kingest run /etc/kingest/%i.lua" }, s.Service.ExecStart)
    assert.same({ "GOBBLIN_WORK_DIR=/var/lib/kingest" }, s.Service.Environment)
    assert.same({ "kingest" }, s.Service.User)
    assert.same({ "kingest" }, s.Service.StateDirectory)
    assert.same({ "oneshot" }, s.Service.Type)
    -- A run stopped by SIGTERM exits 6 after committing what it wrote: a clean stop.
    assert.same({ "6" }, s.Service.SuccessExitStatus)
  end)

  it("are hardened: systemd-analyze security rates the service's exposure below 2 of 10", function()
    local dir = copies()
    local code, out, err = H.sh("systemd-analyze security --offline=true --no-pager " ..
      H.q(dir .. "/kingest@events.service"))
    assert.are.equal(0, code, out .. err)
    local level = (out .. err):match("Overall exposure level for kingest@events%.service: ([%d%.]+)")
    assert(level, out .. err)
    assert.is_true(tonumber(level) < 2.0, "exposure " .. level .. ":\n" .. out)
  end)

  it("start the job every 15 minutes, and catch up on a run missed while the machine was off", function()
    local s = settings(units .. "/kingest@.timer")
    assert.same({ "true" }, s.Timer.Persistent)
    assert.are.equal(1, #s.Timer.OnCalendar)
    local code, out, err = H.sh("systemd-analyze calendar --iterations=5 " .. H.q(s.Timer.OnCalendar[1]))
    assert.are.equal(0, code, err)
    local times = {}
    for when in out:gmatch("[Ee]lapse: ([^\n]+)") do times[#times + 1] = when end
    for when in out:gmatch("Iter%. #%d+: ([^\n]+)") do times[#times + 1] = when end
    assert.are.equal(5, #times, out)
    local secs = {}
    for i, when in ipairs(times) do
      local c, o = H.sh("date -d " .. H.q(when) .. " +%s")
      assert.are.equal(0, c, when)
      secs[i] = tonumber(o)
    end
    for i = 2, #secs do assert.are.equal(900, secs[i] - secs[i - 1], out) end
    assert.are.equal(0, secs[1] % 900, "runs at :00, :15, :30 and :45")
    assert.same({ "timers.target" }, s.Install.WantedBy)
  end)

  it("come with a sysusers file that makes the system user kingest, at home in /var/lib/kingest", function()
    if not which("systemd-sysusers") then error("systemd-sysusers is missing (package systemd)") end
    local root = H.workdir("sysusers")
    os.execute("mkdir -p " .. H.q(root .. "/etc"))
    local code, out, err = H.sh("systemd-sysusers --root=" .. H.q(root) .. " " .. H.q(units .. "/kingest.sysusers"))
    assert.are.equal(0, code, out .. err)
    local line = assert(H.slurp(root .. "/etc/passwd"), "no passwd"):match("kingest:[^\n]*")
    local uid, home, shell = line:match("^kingest:x:(%d+):%d+:[^:]*:([^:]*):([^:]*)$")
    assert.is_true(tonumber(uid) < 1000, line)
    assert.are.equal("/var/lib/kingest", home)
    assert.truthy(shell:match("nologin$"), line)
  end)
end)
