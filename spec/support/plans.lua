-- spec.support.plans: what the packing and estimator specs share to check plans (`kingest plan --json`) and the
-- statistics a run stores.
local H = require("support.harness")
local assert = require("luassert") -- busted's assert lives in the spec's environment, not here

local P = {}

function P.assert_near(want, got, tolerance, what)
  assert.is_number(got, what)
  assert.is_true(math.abs(want - got) <= tolerance, string.format("%s: want %.6f, got %.6f", what, want, got))
end

-- GOT equals WANT to the 6 significant digits of the plan's JSON.
function P.assert_close(want, got, what)
  P.assert_near(want, got, 1e-5 * math.max(1, math.abs(want)), what)
end

-- "topic:partition" of a work unit.
function P.name(u)
  return u.topic .. ":" .. u.partition
end

function P.names(units)
  local t = {}
  for i, u in ipairs(units) do t[i] = P.name(u) end
  return t
end

-- Every work unit of PLAN, task after task.
function P.plan_units(plan)
  local units = {}
  for _, task in ipairs(plan.tasks) do
    for _, u in ipairs(task.workUnits) do units[#units + 1] = u end
  end
  return units
end

-- "t<T> p<P> r<I>" and a padding that grows with the partition, so that partitions differ in record size.
function P.payload(t, p, i)
  return string.format("t%d p%d r%d %s", t, p, i, string.rep("x", 3 * p))
end

function P.mean_length(lines)
  local sum = 0
  for _, l in ipairs(lines) do sum = sum + #l end
  return sum / #lines
end

-- The stored statistics of JOB under WORK, read with sqlite3: { ["topic:partition"] = { millis, size, records } },
-- each nil when NULL.
function P.stored_stats(work, job)
  local stats = {}
  local db = work .. "/state-store/" .. job .. ".db"
  for _, row in ipairs(H.sqlite(db, "SELECT topic, partition, avg_record_millis, avg_record_size, records_pulled FROM partition_state")) do
    stats[row[1] .. ":" .. row[2]] = { millis = tonumber(row[3]), size = tonumber(row[4]), records = tonumber(row[5]) }
  end
  return stats
end

return P
