/* props.c: the ordered property map and a Java-properties reader with ${env:VAR} and ${file:PATH} substitution.
 *
 * The reader follows java.util.Properties.load: logical lines joined by a trailing odd backslash, '#'
 * and '!' comments, a key ended by the first unescaped '=', ':' or blank, and the escapes \t \n \r \f
 * \uXXXX. Values may then refer to environment variables (${env:HOME}), to files (${file:/etc/kingest/password},
 * a secret) and to other keys (${job.name}), as Gobblin's job files do. */
#include "props.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "log.h"
#include "secret.h"

typedef struct {
  char *key;
  char *value;
  char *origin;
  bool from_file; /* the value holds what a ${file:} reference read: a secret whatever the name */
} kg_prop_t;

struct kg_props {
  kg_prop_t *items;
  size_t count;
  size_t cap;
};

kg_props_t *kg_props_new(void) { return kg_xcalloc(1, sizeof(kg_props_t)); }

void kg_props_destroy(kg_props_t *props) {
  if (!props) return;
  for (size_t i = 0; i < props->count; i++) {
    free(props->items[i].key);
    free(props->items[i].value);
    free(props->items[i].origin);
  }
  free(props->items);
  free(props);
}

static kg_prop_t *find(const kg_props_t *props, const char *key) {
  for (size_t i = 0; i < props->count; i++)
    if (!strcmp(props->items[i].key, key)) return &props->items[i];
  return NULL;
}

void kg_props_set(kg_props_t *props, const char *key, const char *value, const char *origin) {
  kg_prop_t *p = find(props, key);
  if (!p) {
    if (props->count == props->cap) {
      props->cap = props->cap ? props->cap * 2 : 32;
      props->items = kg_xrealloc(props->items, props->cap * sizeof(kg_prop_t));
    }
    p = &props->items[props->count++];
    p->key = kg_xstrdup(key);
    p->value = NULL;
    p->origin = NULL;
  }
  char *v = kg_xstrdup(value);
  free(p->value);
  p->value = v;
  p->from_file = false;
  free(p->origin);
  p->origin = origin ? kg_xstrdup(origin) : NULL;
  /* A value still to be resolved is noted once resolved (kg_props_resolve). */
  if (!strstr(v, "${") && kg_props_is_secret(p->key, v)) kg_secret_note(v);
}

void kg_props_set_secret(kg_props_t *props, const char *key, const char *value, const char *origin) {
  kg_props_set(props, key, value, origin);
  find(props, key)->from_file = true;
  kg_secret_note(value);
}

const char *kg_props_get(const kg_props_t *props, const char *key) {
  kg_prop_t *p = find(props, key);
  return p ? p->value : NULL;
}

const char *kg_props_origin(const kg_props_t *props, const char *key) {
  kg_prop_t *p = find(props, key);
  return p ? p->origin : NULL;
}

bool kg_props_has(const kg_props_t *props, const char *key) { return find(props, key) != NULL; }

/* A URL with a password in its user information: scheme://user:password@host... */
static bool url_with_password(const char *value) {
  for (const char *s = value ? strstr(value, "://") : NULL; s; s = strstr(s + 3, "://")) {
    const char *authority = s + 3;
    size_t len = strcspn(authority, "/?#");
    const char *at = memchr(authority, '@', len);
    if (at && memchr(authority, ':', (size_t)(at - authority))) return true;
  }
  return false;
}

bool kg_props_is_secret(const char *key, const char *value) {
  char words[16][64];
  size_t n = 0;
  for (const char *s = key; *s && n < 16;) {
    size_t len = strcspn(s, "._-");
    if (len) {
      size_t i = 0;
      for (; i < len && i < sizeof words[0] - 1; i++)
        words[n][i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
      words[n++][i] = 0;
    }
    s += len;
    if (*s) s++;
  }
  /* A name that says where a secret is, or how it is given, holds none: ssl.key.location,
   * basic.auth.credentials.source, hadoop.security.credential.provider.path. */
  static const char *const pointers[] = {"location", "path",  "file", "dir", "source", "provider",
                                         "type",     "class", "url",  "uri", NULL};
  for (const char *const *w = pointers; n && *w; w++)
    if (!strcmp(words[n - 1], *w)) return url_with_password(value);
  for (size_t i = 0; i < n; i++) {
    const char *w = words[i];
    if (strstr(w, "password") || strstr(w, "passwd") || strstr(w, "secret") || strstr(w, "credential") ||
        !strcmp(w, "jaas") || !strcmp(w, "userinfo"))
      return true;
    if (i + 1 < n && !strcmp(w, "user") && !strcmp(words[i + 1], "info")) return true;
    if (i + 1 < n && !strcmp(w, "oauthbearer") && !strcmp(words[i + 1], "config")) return true;
    /* fs.azure.account.key.ACCOUNT.blob.core.windows.net: the name ends with the account's host. */
    if (i + 1 < n && !strcmp(w, "account") && !strcmp(words[i + 1], "key")) return true;
  }
  if (n) {
    const char *last = words[n - 1];
    size_t len = strlen(last);
    if ((len >= 5 && !strcmp(last + len - 5, "token")) || (len >= 3 && !strcmp(last + len - 3, "key"))) return true;
    if (n >= 2 && !strcmp(last, "pem") && !strcmp(words[n - 2], "key")) return true;
  }
  return url_with_password(value);
}

bool kg_props_secret(const kg_props_t *props, const char *key) {
  const kg_prop_t *p = find(props, key);
  return p && (p->from_file || kg_props_is_secret(p->key, p->value));
}

const char *kg_props_shown(const kg_props_t *props, const char *key) {
  const kg_prop_t *p = find(props, key);
  if (!p) return NULL;
  return kg_props_secret(props, key) ? KG_SECRET_MASK : p->value;
}

size_t kg_props_count(const kg_props_t *props) { return props->count; }
const char *kg_props_key_at(const kg_props_t *props, size_t i) { return props->items[i].key; }
const char *kg_props_value_at(const kg_props_t *props, size_t i) { return props->items[i].value; }

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Unescapes S[0..n) into OUT. Returns false on a malformed \u escape. */
static bool unescape(const char *s, size_t n, kg_buf_t *out) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c != '\\') {
      kg_buf_append(out, &c, 1);
      continue;
    }
    if (++i >= n) break; /* a lone trailing backslash is dropped, as Java does */
    c = s[i];
    switch (c) {
    case 't': kg_buf_append(out, "\t", 1); break;
    case 'n': kg_buf_append(out, "\n", 1); break;
    case 'r': kg_buf_append(out, "\r", 1); break;
    case 'f': kg_buf_append(out, "\f", 1); break;
    case 'u': {
      if (i + 4 >= n) return false;
      unsigned cp = 0;
      for (int k = 1; k <= 4; k++) {
        int h = hexval(s[i + (size_t)k]);
        if (h < 0) return false;
        cp = cp * 16 + (unsigned)h;
      }
      char utf8[4];
      kg_buf_append(out, utf8, kg_utf8_encode(utf8, cp));
      i += 4;
      break;
    }
    default: kg_buf_append(out, &c, 1); break;
    }
  }
  if (out->len == 0) kg_buf_append(out, "", 0);
  return true;
}

int kg_props_parse(kg_props_t *props, const char *text, size_t len, const char *name, char *errbuf) {
  size_t pos = 0;
  int lineno = 0;
  kg_buf_t logical = {0};
  while (pos < len) {
    /* Gather one logical line, remembering the number of its first natural line. */
    logical.len = 0;
    int first_line = lineno + 1;
    bool cont = true;
    bool first = true;
    while (cont && pos < len) {
      size_t start = pos;
      while (pos < len && text[pos] != '\n' && text[pos] != '\r')
        pos++;
      size_t end = pos;
      if (pos < len && text[pos] == '\r') pos++;
      if (pos < len && text[pos] == '\n') pos++; /* \n, \r\n, or a lone \r end a line */
      lineno++;
      /* Continuation lines lose their leading blanks. */
      if (!first)
        while (start < end && (text[start] == ' ' || text[start] == '\t' || text[start] == '\f'))
          start++;
      if (first) {
        size_t s = start;
        while (s < end && (text[s] == ' ' || text[s] == '\t' || text[s] == '\f'))
          s++;
        if (s == end || text[s] == '#' || text[s] == '!') break; /* blank or comment line */
      }
      size_t bs = 0;
      while (bs < end - start && text[end - 1 - bs] == '\\')
        bs++;
      cont = (bs % 2) == 1;
      kg_buf_append(&logical, text + start, end - start - (cont ? 1 : 0));
      first = false;
    }
    if (logical.len == 0) continue;

    const char *l = logical.data;
    size_t n = logical.len, i = 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f'))
      i++;
    size_t kstart = i;
    while (i < n && l[i] != '=' && l[i] != ':' && l[i] != ' ' && l[i] != '\t' && l[i] != '\f') {
      if (l[i] == '\\') i++;
      i++;
    }
    if (i > n) i = n;
    size_t kend = i;
    while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f'))
      i++;
    if (i < n && (l[i] == '=' || l[i] == ':')) i++;
    while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f'))
      i++;

    kg_buf_t key = {0}, value = {0};
    char origin[512];
    snprintf(origin, sizeof origin, "%s:%d", name, first_line);
    if (!unescape(l + kstart, kend - kstart, &key) || !unescape(l + i, n - i, &value)) {
      kg_buf_free(&key);
      kg_buf_free(&value);
      kg_buf_free(&logical);
      return kg_fail(errbuf, KG_EINVAL, "%s: malformed \\uXXXX escape", origin);
    }
    if (key.len == 0) {
      kg_buf_free(&key);
      kg_buf_free(&value);
      kg_buf_free(&logical);
      return kg_fail(errbuf, KG_EINVAL, "%s: a line with a value but no property name", origin);
    }
    kg_props_set(props, key.data, value.data ? value.data : "", origin);
    kg_buf_free(&key);
    kg_buf_free(&value);
  }
  kg_buf_free(&logical);
  return kg_props_resolve(props, errbuf);
}

int kg_props_load_file(kg_props_t *props, const char *path, char *errbuf) {
  size_t len = 0;
  int error = 0;
  char *text = kg_read_file(path, &len, &error);
  if (!text && error > 0) return kg_fail(errbuf, KG_EIO, "%s: cannot read job file: %s", path, strerror(error));
  if (!text) return kg_fail(errbuf, KG_EIO, "%s: cannot read job file", path);
  int rc = kg_props_parse(props, text, len, path, errbuf);
  free(text);
  return rc;
}

/* The biggest secret file read: a password, a token, a key in PEM; not a keystore. */
#define KG_SECRET_FILE_MAX (1024 * 1024)

/* Appends the text of the secret file PATH (the reference of property P, shown as WHERE) to OUT, less one trailing
 * newline (\n or \r\n); a WARN when others than its owner may read it. Messages name the property and the path,
 * never what the file holds. */
static int read_secret_file(const kg_prop_t *p, const char *where, const char *path, kg_buf_t *out, char *errbuf) {
  if (!*path) return kg_fail(errbuf, KG_EINVAL, "%s: property %s: ${file:} names no file", where, p->key);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) {
    int e = errno;
    if (fd >= 0) close(fd);
    return kg_fail(errbuf, KG_EINVAL, "%s: property %s refers to file %s, which cannot be read: %s", where, p->key,
                   path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return kg_fail(errbuf, KG_EINVAL, "%s: property %s refers to %s, which is not a file", where, p->key, path);
  }
  if (st.st_size > KG_SECRET_FILE_MAX) {
    close(fd);
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: property %s refers to file %s, of %lld bytes: more than the %d a secret "
                   "may have",
                   where, p->key, path, (long long)st.st_size, KG_SECRET_FILE_MAX);
  }
  if (st.st_mode & (S_IRGRP | S_IROTH))
    KG_WARN("%s: property %s reads a secret from %s, which its group or others may read (mode %04o): chmod 600 it",
            where, p->key, path, (unsigned)(st.st_mode & 07777));
  char *text = kg_xmalloc((size_t)st.st_size + 1);
  size_t len = 0;
  for (ssize_t got; len < (size_t)st.st_size; len += (size_t)got) {
    got = read(fd, text + len, (size_t)st.st_size - len);
    if (got < 0 && errno == EINTR)
      got = 0;
    else if (got <= 0)
      break;
  }
  int e = errno;
  close(fd);
  int rc = KG_OK;
  if (len < (size_t)st.st_size)
    rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s refers to file %s, which cannot be read: %s", where, p->key, path,
                 e ? strerror(e) : "it became shorter");
  else if (memchr(text, 0, len))
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: property %s refers to file %s, which holds a NUL byte: a property value "
                 "is text",
                 where, p->key, path);
  if (rc == KG_OK) {
    if (len && text[len - 1] == '\n') len--;
    if (len && text[len - 1] == '\r') len--;
    kg_buf_append(out, text, len);
  }
  memset(text, 0, (size_t)st.st_size);
  free(text);
  return rc;
}

/* Expands references in the value of item IDX into OUT; *SECRET becomes true when a ${file:} was read into it,
 * directly or through another key. DEPTH guards against cycles. */
static int expand(kg_props_t *props, size_t idx, const char *value, kg_buf_t *out, bool *secret, int depth,
                  char *errbuf) {
  const kg_prop_t *p = &props->items[idx];
  const char *where = p->origin ? p->origin : p->key;
  if (depth > 32) return kg_fail(errbuf, KG_EINVAL, "%s: property %s: references form a cycle", where, p->key);
  const char *s = value;
  while (*s) {
    const char *open = strstr(s, "${");
    if (!open) {
      kg_buf_append(out, s, strlen(s));
      break;
    }
    kg_buf_append(out, s, (size_t)(open - s));
    const char *close = strchr(open + 2, '}');
    if (!close) return kg_fail(errbuf, KG_EINVAL, "%s: property %s: unterminated ${ in value", where, p->key);
    char *ref = kg_xstrndup(open + 2, (size_t)(close - open - 2));
    int rc = KG_OK;
    if (!strncmp(ref, "env:", 4)) {
      const char *v = getenv(ref + 4);
      if (!v)
        rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s refers to environment variable %s, which is not set", where,
                     p->key, ref + 4);
      else
        kg_buf_append(out, v, strlen(v));
    } else if (!strncmp(ref, "file:", 5)) {
      rc = read_secret_file(p, where, ref + 5, out, errbuf);
      *secret = true;
    } else {
      kg_prop_t *target = find(props, ref);
      if (!target) {
        rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s refers to ${%s}, which is not defined", where, p->key, ref);
      } else {
        if (target->from_file) *secret = true;
        rc = expand(props, (size_t)(target - props->items), target->value, out, secret, depth + 1, errbuf);
      }
    }
    free(ref);
    if (rc) return rc;
    s = close + 1;
  }
  return KG_OK;
}

int kg_props_resolve(kg_props_t *props, char *errbuf) {
  size_t n = props->count;
  char **resolved = kg_xcalloc(n, sizeof(char *));
  bool *secret = kg_xcalloc(n ? n : 1, sizeof(bool));
  int rc = KG_OK;
  for (size_t i = 0; i < n && rc == KG_OK; i++) {
    if (!strstr(props->items[i].value, "${")) continue;
    kg_buf_t out = {0};
    kg_buf_append(&out, "", 0);
    rc = expand(props, i, props->items[i].value, &out, &secret[i], 0, errbuf);
    resolved[i] = out.data;
  }
  for (size_t i = 0; i < n; i++) {
    kg_prop_t *p = &props->items[i];
    if (rc == KG_OK && resolved[i]) {
      free(p->value);
      p->value = resolved[i];
      p->from_file = p->from_file || secret[i];
      if (kg_props_secret(props, p->key)) kg_secret_note(p->value);
    } else if (resolved[i]) {
      memset(resolved[i], 0, strlen(resolved[i]));
      free(resolved[i]);
    }
  }
  free(resolved);
  free(secret);
  return rc;
}
