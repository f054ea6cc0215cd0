-- Avro in, Lua in the middle, Avro out: converters get each record decoded (a table, resolved to the topic's
-- latest schema) and return a table that is encoded with the output schema. Here records without an email are
-- dropped, and the others get a normalised address and a domain field the output schema adds.
--   KAFKA_BROKERS=host:port TOPIC=users SCHEMA_REGISTRY_URL=http://host:port/apis/ccompat/v7 \
--     kingest run scripts/examples/avro_transform.lua
return {
  ["job.name"] = "example_avro_transform",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "users",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["kafka.deserializer.type"] = "CONFLUENT_AVRO",
  ["kafka.schema.registry.url"] = os.getenv("SCHEMA_REGISTRY_URL") or "http://localhost:8081",
  ["writer.output.format"] = "avro",

  -- The output's schema (writer.avro.schema).
  schema = [[{"type": "record", "name": "Contact", "namespace": "example", "fields": [
    {"name": "id", "type": "long"},
    {"name": "email", "type": "string"},
    {"name": "domain", "type": "string"}]}]],

  converters = {
    function(user)
      if user.email == nil then return nil end
      local email = user.email:lower()
      return { id = user.id, email = email, domain = email:match("@(.+)$") or "" }
    end,
  },
}
