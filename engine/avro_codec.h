/* avro_codec.h: Avro records from Kafka (docs/behaviour.md, section 12): a schema compiled for checking datums, the
 * schemas a task has met, and the framing of registry-encoded payloads.
 *
 * A payload framed for a schema registry is a magic byte 0, the schema's id (Confluent's: 4 bytes, a big-endian
 * number; LinkedIn's: 16 bytes, the MD5 of the schema), then one Avro binary datum of that schema. Which framing
 * a job reads is configured (kafka.deserializer.type, source.class), never guessed: both start with byte 0.
 *
 * A task keeps the schemas it meets in a kg_avro_schemas_t: each gets a small index, equal schemas (the same
 * Parsing Canonical Form) share one, and the script reaches their text through that index (kg_ffi.h). */
#ifndef KG_AVRO_CODEC_H
#define KG_AVRO_CODEC_H

#include <avro.h>

#include "config.h"
#include "kg_common.h"
#include "avro_registry.h"

/* A schema compiled for kg_avro_datum_end: a flat array of nodes, walked without avro-c's lookups. */
typedef struct kg_avro_shape kg_avro_shape_t;

/* Compiles SCHEMA (avro-c's; the caller keeps its reference). Returns NULL for a schema avro-c would not
 * have parsed (a type this walker does not know). */
kg_avro_shape_t *kg_avro_shape_new(avro_schema_t schema);
void kg_avro_shape_free(kg_avro_shape_t *shape);
/* Compiles the schema whose JSON text is the LEN bytes at TEXT; NULL with ERRBUF naming avro-c's reason (the
 * caller must not be racing other threads for that reason text: it is avro-c's one buffer). */
kg_avro_shape_t *kg_avro_shape_parse(const char *text, size_t len, char *errbuf);
/* Items of an array whose type may take no bytes (null, a fixed of size 0, a record of such fields) that a datum of
 * LEN bytes may hold: KG_AVRO_EMPTY_ITEMS + KG_AVRO_EMPTY_ITEMS_PER_BYTE x LEN in all. Any other item takes a byte
 * at least, so that the work of a check is bounded by the datum's size. */
#define KG_AVRO_EMPTY_ITEMS          4096
#define KG_AVRO_EMPTY_ITEMS_PER_BYTE 16

/* Checks that the LEN bytes at DATA are exactly one binary datum of SHAPE's schema. Returns KG_OK; KG_EINVAL when
 * they are not, or KG_ERANGE when they are one kingest does not read (nested deeper than 512 levels, or more items
 * that take no bytes than the bound above), ERRBUF saying what and at which field ("it ends early: a string of 9
 * bytes at byte 3, 2 left at field user.name"). *WORK (when not NULL) gets the nodes walked. The check allocates
 * nothing for a good datum; its work is bounded by LEN and the schema's size, whatever lengths and counts the bytes
 * claim. */
int kg_avro_check_datum(const kg_avro_shape_t *shape, const void *data, size_t len, int64_t *work, char *errbuf);
/* True when kg_avro_check_datum would return KG_OK. */
bool kg_avro_is_datum(const kg_avro_shape_t *shape, const void *data, size_t len);

/* The schemas a task has met. */
typedef struct kg_avro_schemas kg_avro_schemas_t;
kg_avro_schemas_t *kg_avro_schemas_new(void);
void kg_avro_schemas_destroy(kg_avro_schemas_t *schemas);
/* The index of the schema whose text is the LEN bytes at TEXT: an existing one when an equal schema was added
 * before, else a new one (the text is copied). KG_EINVAL with ERRBUF naming the problem when the text is not a
 * schema avro-c accepts. */
int kg_avro_schemas_add(kg_avro_schemas_t *schemas, const char *text, size_t len, int32_t *index, char *errbuf);
/* The text of schema INDEX (its LEN in *LEN), NULL when there is no such index. */
const char *kg_avro_schemas_text(const kg_avro_schemas_t *schemas, int32_t index, size_t *len);
/* Its compiled shape, NULL when there is no such index. */
const kg_avro_shape_t *kg_avro_schemas_shape(const kg_avro_schemas_t *schemas, int32_t index);

/* Whether a datum of schema WRITER resolves to one of schema READER with nothing lost: every field of the writer has
 * a field of the reader (by name or alias) whose type holds every value of its own (the same type, int to long or
 * double, float to double, string and bytes either way; every symbol of an enum, every branch of a union), and every
 * field of the reader the writer lacks has a default. When not, *WHY (the schemas' to keep) says the first loss
 * found ("the reader's record Event has no such field at field country"). The answer for a pair is kept. */
bool kg_avro_schemas_holds(kg_avro_schemas_t *schemas, int32_t writer, int32_t reader, const char **why);

/* The schemas of the task running on this thread (NULL when none), which the script reaches by index. */
void kg_avro_set_thread_schemas(const kg_avro_schemas_t *schemas);
const kg_avro_schemas_t *kg_avro_thread_schemas(void);

/* A task's reader of framed payloads: the framing, a registry client, the task's schemas, and which schema each
 * id and topic has (cached for the task's life; the registry client has its own cache, with expiry). */
typedef struct kg_avro_input kg_avro_input_t;

/* The reader for CONFIG's framing (kg_registry_settings' framing; KG_EINVAL when it is none), with a new registry
 * client. SCHEMAS is borrowed: it must outlive the reader. */
int kg_avro_input_new(const kg_config_t *config, kg_avro_schemas_t *schemas, kg_avro_input_t **out, char *errbuf);
void kg_avro_input_destroy(kg_avro_input_t *input);

/* The framed payload of LEN bytes at VALUE: *INDEX gets its schema's index, *DATUM and *DATUM_LEN the datum after
 * the header. Returns KG_OK; KG_EINVAL for a bad record, one whose own bytes are wrong (NULL, too short for its
 * header, a magic byte other than 0, bytes that are not one datum of the schema), with ERRBUF saying which; or
 * KG_EREGISTRY when the registry did not give the id's schema (it did not answer, did not know the id, or refused
 * the client, until kafka.schema.registry.retry.timeout.ms) or gave one kingest cannot read: the task fails, as no
 * record of that schema can be read. */
int kg_avro_input_frame(kg_avro_input_t *input, const char *value, size_t len, int32_t *index, const char **datum,
                        size_t *datum_len, char *errbuf);
/* The index of TOPIC's latest schema (registry: the subject TOPIC + suffix, or latest_with_type=TOPIC), known to
 * the task since it first asked, or with FRESH asked of the registry again (a newer one may have been registered
 * since). KG_OK, KG_ENOTFOUND when the registry has none, KG_EREGISTRY when it does not give it; ERRBUF says
 * which. */
int kg_avro_input_latest(kg_avro_input_t *input, const char *topic, bool fresh, int32_t *index, char *errbuf);
/* Requests sent to the registry so far. */
int64_t kg_avro_input_requests(const kg_avro_input_t *input);
/* Lookups the reader handed to its registry client so far (each may have waited for the registry); no lock taken. */
int64_t kg_avro_input_asked(const kg_avro_input_t *input);

#endif
