-- The YARN of the tests (scripts/hadoop start-yarn, started by the "yarn" fixture on the HDFS of the "hadoop"
-- fixture): its commands, and a map-only Hadoop Streaming job run with scripts/hadoop streaming, one map per
-- input line, whose output is read back with curl (WebHDFS) and with FsShell. Checked with Hadoop's own tools and
-- curl, not with kingest.
local H = require("support.harness")
local W = require("support.webhdfs")

local hadoop, trim, lines = H.hadoop, H.trim, H.lines

describe("scripts/hadoop on YARN", function()
  local dir, mapper

  setup(function()
    local code, _, err = hadoop({ "yarn-status" })
    assert(code == 0, "no YARN: " .. err)
    dir = "/" .. H.unique("yarn_spec")
    W.mkdirs(dir)
    -- 26 bytes, four lines: the maps see the byte offsets 0, 6, 12 and 20.
    W.create(dir .. "/in.txt", "alpha\nbravo\ncharlie\ndelta\n")
    -- Streaming gives a map its lines on stdin as "offset<TAB>line" (NLineInputFormat's key and value) and takes
    -- "key<TAB>value" lines from its stdout; "reporter:status:" lines on stderr go to the framework.
    mapper = H.tmp .. "/" .. H.unique("yarn_map") .. ".sh"
    H.spit(mapper, table.concat({
      "#!/bin/sh",
      "echo reporter:status:working >&2",
      "while IFS= read -r line; do printf 'seen:%s\\n' \"$line\"; done",
      "",
    }, "\n"))
  end)

  teardown(function()
    if mapper then os.remove(mapper) end
  end)

  it("reports the running YARN, bound to loopback, and a second start-yarn reuses it", function()
    local code, out = hadoop({ "yarn-status" })
    assert.equals(0, code)
    local rm, web = out:match("^running (127%.0%.0%.1:%d+) (http://127%.0%.0%.1:%d+) yarn %d+\n$")
    assert.is_string(rm, out)
    local start_code, start_out, start_err = hadoop({ "start-yarn" })
    assert(start_code == 0, start_err)
    assert.equals(rm .. "\n", start_out)
    local _, again = hadoop({ "yarn-status" })
    assert.equals(out, again)
    -- The ResourceManager's JMX servlet (what start-yarn waits on) sees the NodeManager.
    local _, jmx = H.sh("curl -sf -m 5 " .. H.q(web .. "/jmx?qry=Hadoop:service=ResourceManager,name=ClusterMetrics"))
    assert.matches('"NumActiveNMs" : 1', jmx, 1, true)
    -- HDFS's status line is unchanged by YARN.
    local _, status = hadoop({ "status" })
    assert.matches("^running http://127%.0%.0%.1:%d+ namenode %d+ datanode %d+\n$", status)
  end)

  it("prints a client's class path and the streaming jar, and has --help on its commands", function()
    local code, out = hadoop({ "classpath" })
    assert.equals(0, code)
    local conf, lib = trim(out):match("^(/.+/conf):(/.+/lib)/%*$")
    assert.is_string(conf, out)
    assert.is_string(H.slurp(conf .. "/yarn-site.xml"))
    assert.matches("<name>mapreduce.framework.name</name><value>yarn</value>", H.slurp(conf .. "/mapred-site.xml"), 1,
      true)
    code, out = hadoop({ "streaming-jar" })
    assert.equals(0, code)
    assert.equals(lib .. "/hadoop-streaming-3.4.2.jar", trim(out))
    for _, cmd in ipairs({ "start-yarn", "stop-yarn", "yarn-status", "streaming", "job", "classpath",
      "streaming-jar" }) do
      local c, o = hadoop({ cmd, "--help" })
      assert.equals(0, c)
      assert.matches("^usage: scripts/hadoop " .. cmd:gsub("%-", "%%-"), o)
    end
    local bad, _, err = hadoop({ "streaming" })
    assert.equals(2, bad)
    assert.matches("usage: scripts/hadoop streaming ARGS...", err, 1, true)
  end)

  it("runs a map-only Streaming job with one map per input line, and refuses an existing output folder", function()
    local out_dir = dir .. "/out"
    local args = { "streaming",
      "-D", "mapreduce.job.reduces=0",
      "-D", "mapreduce.map.speculative=false",
      "-D", "mapreduce.input.lineinputformat.linespermap=1",
      "-files", mapper,
      "-inputformat", "org.apache.hadoop.mapred.lib.NLineInputFormat",
      "-input", dir .. "/in.txt",
      "-output", out_dir,
      "-mapper", mapper:match("[^/]+$") }
    local code, _, err = hadoop(args)
    assert(code == 0, err)
    assert.matches("Running job: job_%d+_%d+", err)
    assert.matches("The url to track the job: http://[%w.]+:%d+/proxy/application_%d+_%d+/", err)
    assert.matches("Job job_%d+_%d+ completed successfully", err)

    local names = {}
    for _, e in ipairs(W.ls(out_dir) or {}) do names[#names + 1] = e.name end
    table.sort(names)
    assert.same({ "_SUCCESS", "part-00000", "part-00001", "part-00002", "part-00003" }, names)
    -- One line per map: each part file holds one (read with curl). Maps are numbered by split size, not by line.
    local seen, parts = {}, {}
    for i = 0, 3 do
      parts[#parts + 1] = string.format("%s/part-%05d", out_dir, i)
      local part = W.read(parts[#parts])
      assert.equals(1, #lines(part), part)
      seen[#seen + 1] = trim(part)
    end
    table.sort(seen)
    assert.same({ "seen:0\talpha", "seen:12\tcharlie", "seen:20\tdelta", "seen:6\tbravo" }, seen)
    -- The same four lines as FsShell reads them, all four files in one fs -cat.
    local fs = lines(W.hadoop_ok({ "fs", "-cat", unpack(parts) }))
    table.sort(fs)
    assert.same(seen, fs)

    code, _, err = hadoop(args)
    assert.equals(5, code)
    assert.matches("Output directory hdfs://127.0.0.1:%d+" .. out_dir:gsub("%p", "%%%0") .. " already exists", err)
  end)
end)
