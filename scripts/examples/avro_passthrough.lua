-- Avro records from a schema registry, written as Avro object container files. The records are framed the way
-- Confluent's serializers write them (magic byte 0, 4-byte schema id); the output takes the topic's latest
-- schema from the registry, text byte for byte. A record whose schema is the latest goes to the file as it
-- is, without a decode; an older one is resolved to the latest (a field added with a default gets it).
--   KAFKA_BROKERS=host:port TOPIC=events SCHEMA_REGISTRY_URL=http://host:port/apis/ccompat/v7 \
--     kingest run scripts/examples/avro_passthrough.lua
return {
  ["job.name"] = "example_avro_passthrough",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "events",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",

  ["kafka.deserializer.type"] = "CONFLUENT_AVRO",
  ["kafka.schema.registry.url"] = os.getenv("SCHEMA_REGISTRY_URL") or "http://localhost:8081",
  ["writer.builder.class"] = "gobblin.writer.AvroDataWriterBuilder", -- writer.output.format=avro
  ["writer.codec.type"] = "deflate",
  ["writer.deflate.level"] = 6, -- the size of level 9, in far less time
}
