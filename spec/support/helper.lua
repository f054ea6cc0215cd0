-- Run by busted before the specs (.busted's helper). Outside the engine, lua/gobblin takes what it needs from C
-- from the engine's library, libkingest_ffi.so (KINGEST_FFI_LIB): the kg_ffi_* functions that ffi.C finds once the
-- library is loaded globally, and gobblin.json's core, which the engine itself puts in package.preload.
local lib = os.getenv("KINGEST_FFI_LIB")
if lib and lib ~= "" then
  -- Kept referenced: a library namespace that is collected unloads the library.
  package.loaded["support.ffi_lib"] = require("ffi").load(lib, true)
  package.preload["gobblin.json.core"] = assert(package.loadlib(lib, "kg_lua_open_json"))
end
