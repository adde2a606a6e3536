/*
 * auditor.kernel._fastrecord: read the envelope fields of one CloudTrail record without decoding the rest.
 *
 * The CLI's reader cuts each record of a trail file into a byte slice and decodes it (orjson). For the commonest
 * records (successful GetItem, PutItem, UpdateItem, DeleteItem and Query calls), the aggregates read only about ten
 * of the record's fields (auditor.kernel.normalize.single_item). light() checks the whole slice as JSON and builds
 * only those fields as Python objects; everything else (userIdentity, tlsDetails, resources, ...) is validated and
 * skipped without allocating.
 *
 * light(buf, start, limit) reads the JSON object that starts at buf[start] (after any whitespace) and ends before
 * buf[limit], and returns (fields, end): the fields, and the index just after the object's closing brace. What
 * follows the object is the caller's to check (the reader checks the separator to the next record).
 * run(buf, start, limit, sep, advance, window, most) does the same for consecutive records of an array, as many as
 * it can in one call (see run() below).
 *
 * Exactness: light() returns fields only for an object buf[start:end] which orjson would decode without error,
 * and then the fields it builds are equal to orjson's. It accepts a strict subset of JSON, and returns None
 * (the caller decodes the slice with orjson, the reference) for everything outside it, whether valid or not:
 *   - any byte >= 0x80 (so no UTF-8 decoding is needed here), any control character in a string;
 *   - a lone or paired surrogate escape (\ud800-\udfff), any other unknown escape;
 *   - a backslash in a key of the record or in a string this module builds;
 *   - a number with a fraction or an exponent, or with more than 18 digits;
 *   - nesting deeper than MAX_DEPTH, a field it builds given twice, an object that does not close before limit;
 *   - a record rejected early: a field in `reject`, or a value of a field in `accept` outside its allowed values.
 * Every loop is bounded by the slice's length; nothing here depends on a value read from the slice.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64
#define MAX_FIELDS 32
#define KEY_CACHE_SLOTS 4096 /* power of two */
#define KEY_CACHE_LIMIT (KEY_CACHE_SLOTS / 2)
#define MAX_CACHED_KEY 64
#define VALUE_CACHE_SLOTS 4096 /* power of two */
#define MAX_CACHED_VALUE 32

enum mode { SKIP = 0, BUILD = 1, PRESENT = 2, REJECT = 3 };

typedef struct {
    PyObject *name;     /* the str put in the result (the caller's own object) */
    const char *bytes;  /* its ASCII bytes (owned by `name`) */
    Py_ssize_t len;
    uint64_t prefix;    /* its first 8 bytes (zero-padded) */
    int mode;
    PyObject *accept;   /* NULL, or a frozenset of the values allowed (anything else: None) */
} field;

static field fields[MAX_FIELDS];
static int n_fields = 0;

/* Where to look a key up: field_slot[slot_of(key)] is the index of the only field in that slot, NO_FIELD, or
 * SEVERAL (then the fields are scanned in order). Rebuilt by every configure(). */
#define FIELD_SLOTS 256
#define NO_FIELD (-1)
#define SEVERAL (-2)
static signed char field_slot[FIELD_SLOTS];

/* Short object keys as str objects, so that every record's "tableName" is one object (dict lookups by identity). */
static PyObject *key_cache[KEY_CACHE_SLOTS];
static Py_ssize_t key_cache_used = 0;

/* Recent short string values, one per slot (a newer value takes its slot): the same region, account, event time or
 * table name in consecutive records is one str object, whose hash is computed once. At most VALUE_CACHE_SLOTS
 * objects of at most MAX_CACHED_VALUE characters, whatever the input. */
static PyObject *value_cache[VALUE_CACHE_SLOTS];

/* 1 for the bytes a string may hold unescaped in this subset: printable ASCII but '"' and '\\'. */
static unsigned char plain[256];

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    int depth;
} scanner;

/* Result of a scan step: OK, or FALLBACK (outside the subset, no Python error set), or ERROR (Python error set). */
#define OK 0
#define FALLBACK 1
#define ERROR 2

static inline void skip_ws(scanner *s) {
    const unsigned char *p = s->p, *end = s->end;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    s->p = p;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* Nonzero when some byte of x is below n (n <= 128), or has its high bit set. */
#define HAS_LESS(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)
#define HAS_ZERO(x) (((x) - ONES) & ~(x) & HIGHS)

/* s->p is just after an opening quote. On OK, s->p is after the closing quote, *last is the closing quote's address
 * and *escaped tells whether the string held an escape. */
static inline int scan_string(scanner *s, const unsigned char **last, int *escaped) {
    const unsigned char *p = s->p, *end = s->end;
    for (;;) {
#if defined(__SSE2__)
        /* 16 bytes at a time: a signed compare below 0x20 flags control characters and bytes >= 0x80 at once. */
        const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
        while (end - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i hit = _mm_or_si128(_mm_cmplt_epi8(x, space),
                                       _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)));
            int mask = _mm_movemask_epi8(hit);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                goto stop; /* p is at the first byte that is not plain: the loops below would stop there too */
            }
            p += 16;
        }
#endif
        while (end - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            uint64_t special = HAS_LESS(x, 0x20) | (x & HIGHS) | HAS_ZERO(x ^ (ONES * '"')) | HAS_ZERO(x ^ (ONES * '\\'));
            if (special) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                /* Each test flags its first matching byte exactly (a borrow only runs above a match), so the
                 * lowest flag is the first byte that ends the plain run. */
                p += __builtin_ctzll(special) >> 3;
#endif
                break;
            }
            p += 8;
        }
        while (p < end && plain[*p])
            p++;
#if defined(__SSE2__)
    stop:
#endif
        if (p >= end)
            return FALLBACK;
        if (*p == '"') {
            *last = p;
            s->p = p + 1;
            return OK;
        }
        if (*p != '\\' || end - p < 2)
            return FALLBACK; /* a control character or a byte >= 0x80, or a truncated escape */
        *escaped = 1;
        switch (p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            p += 2;
            break;
        case 'u': {
            if (end - p < 6)
                return FALLBACK;
            int cp = 0;
            for (int i = 2; i < 6; i++) {
                int h = hexval(p[i]);
                if (h < 0)
                    return FALLBACK;
                cp = cp * 16 + h;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                return FALLBACK;
            p += 6;
            break;
        }
        default:
            return FALLBACK;
        }
    }
}

/* An integer of at most 18 digits (no fraction, no exponent). */
static int scan_number(scanner *s, long long *out) {
    const unsigned char *p = s->p, *end = s->end;
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return FALLBACK;
    const unsigned char *digits = p;
    long long value = 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (p - digits >= 18)
                return FALLBACK;
            value = value * 10 + (*p - '0');
            p++;
        }
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
        return FALLBACK;
    s->p = p;
    *out = negative ? -value : value;
    return OK;
}

static int scan_literal(scanner *s, const char *word, Py_ssize_t n) {
    if (s->end - s->p < n || memcmp(s->p, word, (size_t)n) != 0)
        return FALLBACK;
    s->p += n;
    return OK;
}

static int skip_value(scanner *s);

/* s->p is after '[' or '{' (object: members are key ':' value). */
static int skip_container(scanner *s, int object) {
    if (++s->depth > MAX_DEPTH)
        return FALLBACK;
    unsigned char close = object ? '}' : ']';
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return OK;
    }
    for (;;) {
        int r;
        if (object) {
            const unsigned char *last;
            int escaped = 0;
            if (s->p >= s->end || *s->p != '"')
                return FALLBACK;
            s->p++;
            if ((r = scan_string(s, &last, &escaped)) != OK)
                return r;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return FALLBACK;
            s->p++;
            skip_ws(s);
        }
        if ((r = skip_value(s)) != OK)
            return r;
        skip_ws(s);
        if (s->p >= s->end)
            return FALLBACK;
        if (*s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (*s->p == close) {
            s->p++;
            s->depth--;
            return OK;
        }
        return FALLBACK;
    }
}

/* Validate one value at s->p (no leading whitespace) without building it. */
static int skip_value(scanner *s) {
    if (s->p >= s->end)
        return FALLBACK;
    switch (*s->p) {
    case '"': {
        const unsigned char *last;
        int escaped = 0;
        s->p++;
        return scan_string(s, &last, &escaped);
    }
    case '{':
        s->p++;
        return skip_container(s, 1);
    case '[':
        s->p++;
        return skip_container(s, 0);
    case 't':
        return scan_literal(s, "true", 4);
    case 'f':
        return scan_literal(s, "false", 5);
    case 'n':
        return scan_literal(s, "null", 4);
    default: {
        long long ignored;
        return scan_number(s, &ignored);
    }
    }
}

static uint64_t fnv1a(const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static PyObject *ascii_str(const unsigned char *p, Py_ssize_t n) {
    PyObject *str = PyUnicode_New(n, 127);
    if (str != NULL)
        memcpy(PyUnicode_1BYTE_DATA(str), p, (size_t)n);
    return str;
}

/* Remember `str` (an ASCII str) as the object for its bytes. The cache never holds more than KEY_CACHE_LIMIT. */
static void cache_put(PyObject *str) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(str);
    if (n > MAX_CACHED_KEY || !PyUnicode_IS_ASCII(str) || key_cache_used >= KEY_CACHE_LIMIT)
        return;
    const unsigned char *p = PyUnicode_1BYTE_DATA(str);
    size_t i = (size_t)fnv1a(p, n) & (KEY_CACHE_SLOTS - 1);
    for (;;) {
        PyObject *cur = key_cache[i];
        if (cur == NULL) {
            Py_INCREF(str);
            key_cache[i] = str;
            key_cache_used++;
            return;
        }
        if (PyUnicode_GET_LENGTH(cur) == n && memcmp(PyUnicode_1BYTE_DATA(cur), p, (size_t)n) == 0)
            return;
        i = (i + 1) & (KEY_CACHE_SLOTS - 1);
    }
}

/* A new reference to the str of the key p[0:n] (ASCII, escape-free). */
static PyObject *key_str(const unsigned char *p, Py_ssize_t n) {
    if (n > MAX_CACHED_KEY)
        return ascii_str(p, n);
    size_t i = (size_t)fnv1a(p, n) & (KEY_CACHE_SLOTS - 1);
    for (;;) {
        PyObject *cur = key_cache[i];
        if (cur == NULL)
            break;
        if (PyUnicode_GET_LENGTH(cur) == n && memcmp(PyUnicode_1BYTE_DATA(cur), p, (size_t)n) == 0) {
            Py_INCREF(cur);
            return cur;
        }
        i = (i + 1) & (KEY_CACHE_SLOTS - 1);
    }
    PyObject *str = ascii_str(p, n);
    if (str == NULL || key_cache_used >= KEY_CACHE_LIMIT)
        return str; /* a full cache: a plain str (interning every key of hostile input would keep them all) */
    PyUnicode_InternInPlace(&str);
    cache_put(str);
    return str;
}

/* A new reference to the str of the value p[0:n] (ASCII, escape-free), from the value cache when it is short. */
static PyObject *value_str(const unsigned char *p, Py_ssize_t n) {
    if (n > MAX_CACHED_VALUE)
        return ascii_str(p, n);
    /* A cheap hash of the length and the first and last 8 bytes (a collision only costs a miss). */
    uint64_t head = 0, tail = 0;
    memcpy(&head, p, (size_t)(n < 8 ? n : 8));
    if (n > 8)
        memcpy(&tail, p + n - 8, 8);
    uint64_t h = (head * 0x9E3779B97F4A7C15ULL) ^ (tail * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)n;
    size_t i = (size_t)(h >> 52) & (VALUE_CACHE_SLOTS - 1);
    PyObject *cur = value_cache[i];
    if (cur != NULL && PyUnicode_GET_LENGTH(cur) == n && memcmp(PyUnicode_1BYTE_DATA(cur), p, (size_t)n) == 0)
        return Py_NewRef(cur);
    PyObject *str = ascii_str(p, n);
    if (str != NULL)
        Py_XSETREF(value_cache[i], Py_NewRef(str));
    return str;
}

static int build_value(scanner *s, PyObject **out);

/* s->p is after '['. */
static int build_array(scanner *s, PyObject **out) {
    if (++s->depth > MAX_DEPTH)
        return FALLBACK;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return ERROR;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        s->depth--;
        *out = list;
        return OK;
    }
    for (;;) {
        PyObject *item;
        int r = build_value(s, &item);
        if (r != OK) {
            Py_DECREF(list);
            return r;
        }
        int failed = PyList_Append(list, item);
        Py_DECREF(item);
        if (failed) {
            Py_DECREF(list);
            return ERROR;
        }
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            s->depth--;
            *out = list;
            return OK;
        }
        Py_DECREF(list);
        return FALLBACK;
    }
}

/* s->p is after '{'. A key given twice falls back (orjson's own choice between the two is not second-guessed). */
static int build_object(scanner *s, PyObject **out) {
    if (++s->depth > MAX_DEPTH)
        return FALLBACK;
    PyObject *dict = PyDict_New();
    if (dict == NULL)
        return ERROR;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        s->depth--;
        *out = dict;
        return OK;
    }
    for (;;) {
        const unsigned char *start, *last;
        int escaped = 0, r;
        if (s->p >= s->end || *s->p != '"')
            goto fallback;
        start = ++s->p;
        if ((r = scan_string(s, &last, &escaped)) != OK)
            goto fail;
        if (escaped)
            goto fallback;
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            goto fallback;
        s->p++;
        skip_ws(s);
        PyObject *key = key_str(start, last - start);
        if (key == NULL) {
            Py_DECREF(dict);
            return ERROR;
        }
        PyObject *value;
        if ((r = build_value(s, &value)) != OK) {
            Py_DECREF(key);
            goto fail;
        }
        Py_ssize_t before = PyDict_GET_SIZE(dict);
        int failed = PyDict_SetItem(dict, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (failed) {
            Py_DECREF(dict);
            return ERROR;
        }
        if (PyDict_GET_SIZE(dict) == before)
            goto fallback;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            s->depth--;
            *out = dict;
            return OK;
        }
        goto fallback;
    fail:
        Py_DECREF(dict);
        return r;
    }
fallback:
    Py_DECREF(dict);
    return FALLBACK;
}

/* Build one value at s->p (no leading whitespace) as orjson would. */
static int build_value(scanner *s, PyObject **out) {
    if (s->p >= s->end)
        return FALLBACK;
    switch (*s->p) {
    case '"': {
        const unsigned char *start = ++s->p, *last;
        int escaped = 0, r;
        if ((r = scan_string(s, &last, &escaped)) != OK)
            return r;
        if (escaped)
            return FALLBACK;
        *out = value_str(start, last - start);
        return *out == NULL ? ERROR : OK;
    }
    case '{':
        s->p++;
        return build_object(s, out);
    case '[':
        s->p++;
        return build_array(s, out);
    case 't':
        if (scan_literal(s, "true", 4) != OK)
            return FALLBACK;
        *out = Py_NewRef(Py_True);
        return OK;
    case 'f':
        if (scan_literal(s, "false", 5) != OK)
            return FALLBACK;
        *out = Py_NewRef(Py_False);
        return OK;
    case 'n':
        if (scan_literal(s, "null", 4) != OK)
            return FALLBACK;
        *out = Py_NewRef(Py_None);
        return OK;
    default: {
        long long value;
        if (scan_number(s, &value) != OK)
            return FALLBACK;
        *out = PyLong_FromLongLong(value);
        return *out == NULL ? ERROR : OK;
    }
    }
}

static inline uint64_t prefix_of(const unsigned char *p, Py_ssize_t n) {
    uint64_t x = 0;
    memcpy(&x, p, (size_t)(n < 8 ? n : 8));
    return x;
}

static inline unsigned slot_of(uint64_t prefix, Py_ssize_t n) {
    return (unsigned)(((prefix ^ (uint64_t)n) * 0x9E3779B97F4A7C15ULL) >> 56); /* FIELD_SLOTS == 256 */
}

static inline int same_field(const field *f, const unsigned char *p, Py_ssize_t n, uint64_t prefix) {
    return f->len == n && f->prefix == prefix && (n <= 8 || memcmp(f->bytes + 8, p + 8, (size_t)(n - 8)) == 0);
}

static void index_fields(void) {
    memset(field_slot, NO_FIELD, sizeof field_slot);
    for (int i = 0; i < n_fields; i++) {
        unsigned k = slot_of(fields[i].prefix, fields[i].len);
        field_slot[k] = field_slot[k] == NO_FIELD ? (signed char)i : SEVERAL;
    }
}

/* The index of the field named p[0:n], or -1. */
static int find_field(const unsigned char *p, Py_ssize_t n) {
    uint64_t prefix = prefix_of(p, n);
    int k = field_slot[slot_of(prefix, n)];
    if (k == NO_FIELD)
        return -1;
    if (k != SEVERAL)
        return same_field(&fields[k], p, n, prefix) ? k : -1;
    for (int i = 0; i < n_fields; i++) {
        if (same_field(&fields[i], p, n, prefix))
            return i;
    }
    return -1;
}

/* The configured fields of the JSON object at base[start] (after any whitespace) that ends before base[limit]:
 * OK with *out the dict and *end_at the index after its closing brace; FALLBACK (outside the subset); ERROR (a
 * Python error is set). */
static int read_one(const unsigned char *base, Py_ssize_t start, Py_ssize_t limit, PyObject **out,
                    Py_ssize_t *end_at) {
    scanner s = {base + start, base + limit, 1};
    int r = FALLBACK;
    uint32_t seen = 0; /* the fields met so far, by index (MAX_FIELDS <= 32) */
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return FALLBACK;
    s.p++;
    PyObject *record = _PyDict_NewPresized(n_fields);
    if (record == NULL)
        return ERROR;
    skip_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        goto done;
    }
    for (;;) {
        const unsigned char *key, *last;
        int escaped = 0;
        if (s.p >= s.end || *s.p != '"')
            goto fallback;
        key = ++s.p;
        if ((r = scan_string(&s, &last, &escaped)) != OK)
            goto out;
        if (escaped) /* "event\u0049D" is "eventID": keys are compared unescaped only */
            goto fallback;
        skip_ws(&s);
        if (s.p >= s.end || *s.p != ':')
            goto fallback;
        s.p++;
        skip_ws(&s);
        int which = find_field(key, last - key);
        field *f = which < 0 ? NULL : &fields[which];
        if (f == NULL || f->mode == SKIP) {
            if ((r = skip_value(&s)) != OK)
                goto out;
        } else if (f->mode == REJECT) {
            goto fallback;
        } else {
            if (seen & (1u << which))
                goto fallback; /* given twice */
            seen |= 1u << which;
            PyObject *value;
            if (f->mode == PRESENT) {
                if ((r = skip_value(&s)) != OK)
                    goto out;
                value = Py_NewRef(Py_None);
            } else if ((r = build_value(&s, &value)) != OK) {
                goto out;
            }
            if (f->accept != NULL) {
                int allowed = PyUnicode_CheckExact(value) ? PySet_Contains(f->accept, value) : 0;
                if (allowed != 1) {
                    Py_DECREF(value);
                    if (allowed < 0)
                        goto error;
                    goto fallback;
                }
            }
            int failed = PyDict_SetItem(record, f->name, value);
            Py_DECREF(value);
            if (failed)
                goto error;
        }
        skip_ws(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            skip_ws(&s);
            continue;
        }
        if (s.p < s.end && *s.p == '}') {
            s.p++;
            break;
        }
        goto fallback;
    }
done:
    *out = record;
    *end_at = s.p - base;
    return OK;
out:
    if (r == ERROR)
        goto error;
fallback:
    Py_DECREF(record);
    return FALLBACK;
error:
    Py_DECREF(record);
    return ERROR;
}

/* start and limit of buf as a slice (limit clamped to the end), or -1 with a Python error set. */
static int slice_args(PyObject *const *args, Py_ssize_t size, Py_ssize_t *start, Py_ssize_t *limit) {
    *start = PyLong_AsSsize_t(args[0]);
    if (*start == -1 && PyErr_Occurred())
        return -1;
    *limit = PyLong_AsSsize_t(args[1]);
    if (*limit == -1 && PyErr_Occurred())
        return -1;
    if (*limit > size)
        *limit = size;
    if (*start < 0 || *limit < *start) {
        PyErr_SetString(PyExc_ValueError, "slice out of range");
        return -1;
    }
    return 0;
}

/* light(buf, start, limit) -> (fields, end) | None: see the module docstring. */
static PyObject *light(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "light(buf: bytes, start: int, limit: int)");
        return NULL;
    }
    Py_ssize_t start, limit, end;
    if (slice_args(args + 1, PyBytes_GET_SIZE(args[0]), &start, &limit) < 0)
        return NULL;
    PyObject *record;
    int r = read_one((const unsigned char *)PyBytes_AS_STRING(args[0]), start, limit, &record, &end);
    if (r == ERROR)
        return NULL;
    if (r == FALLBACK)
        Py_RETURN_NONE;
    PyObject *end_index = PyLong_FromSsize_t(end);
    PyObject *result = end_index == NULL ? NULL : PyTuple_New(2);
    if (result == NULL) {
        Py_XDECREF(end_index);
        Py_DECREF(record);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, record);
    PyTuple_SET_ITEM(result, 1, end_index);
    return result;
}

/* run(buf, start, limit, sep, advance, window, most) -> (runs, next): light() over consecutive records of an array.
 *
 * From `start`, reads records while each is one light() reads (ending before min(its start + window, limit)) and
 * `sep` follows its closing brace (sep[0] is that brace); the next record starts at its end - 1 + advance. Stops at
 * the first record that is not, at `limit`, or after `most` records. Returns the records read, as a list of
 * (fields, start, end) tuples, and where the first one not read starts. Each step is one light() call's: the same
 * records, fields and ends as the caller's loop over light() and bytes.startswith(sep, end - 1) would give. */
static PyObject *run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyBytes_CheckExact(args[0]) || !PyBytes_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "run(buf: bytes, start: int, limit: int, sep: bytes, advance: int, window: int, most: int)");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t pos, limit;
    if (slice_args(args + 1, size, &pos, &limit) < 0)
        return NULL;
    Py_ssize_t advance = PyLong_AsSsize_t(args[4]);
    Py_ssize_t window = advance == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[5]);
    Py_ssize_t most = window == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[6]);
    if (most == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t sep_len = PyBytes_GET_SIZE(args[3]);
    const char *sep = PyBytes_AS_STRING(args[3]);
    if (advance < 1 || window < 1 || most < 0 || sep_len < 1 || sep[0] != '}') {
        PyErr_SetString(PyExc_ValueError, "run(): advance and window must be positive, sep must start with '}'");
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    PyObject *runs = PyList_New(0);
    if (runs == NULL)
        return NULL;
    /* Each record read moves pos forward by at least 1 (end - 1 >= pos + 1, advance >= 1): at most limit - start
     * iterations, whatever `most` says. */
    for (Py_ssize_t n = 0; n < most && pos < limit; n++) {
        Py_ssize_t stop = window < limit - pos ? pos + window : limit;
        Py_ssize_t end;
        PyObject *record;
        int r = read_one(base, pos, stop, &record, &end);
        if (r == ERROR)
            goto error;
        if (r == FALLBACK)
            break;
        if (end - 1 + sep_len > size || memcmp(base + end - 1, sep, (size_t)sep_len) != 0) {
            Py_DECREF(record);
            break;
        }
        PyObject *item = Py_BuildValue("(Nnn)", record, pos, end);
        if (item == NULL)
            goto error;
        int failed = PyList_Append(runs, item);
        Py_DECREF(item);
        if (failed)
            goto error;
        pos = end - 1 + advance;
    }
    return Py_BuildValue("(Nn)", runs, pos);
error:
    Py_DECREF(runs);
    return NULL;
}

static void clear_fields(void) {
    for (int i = 0; i < n_fields; i++) {
        Py_CLEAR(fields[i].name);
        Py_CLEAR(fields[i].accept);
    }
    n_fields = 0;
    index_fields();
}

static int add_fields(PyObject *names, int mode, PyObject *accept) {
    PyObject *seq = PySequence_Fast(names, "field names must be a sequence of str");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *name = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_CheckExact(name) || !PyUnicode_IS_ASCII(name)) {
            PyErr_SetString(PyExc_TypeError, "field names must be ASCII str");
            Py_DECREF(seq);
            return -1;
        }
        if (n_fields >= MAX_FIELDS) {
            PyErr_SetString(PyExc_ValueError, "too many fields");
            Py_DECREF(seq);
            return -1;
        }
        PyObject *allowed = NULL;
        if (accept != NULL) {
            allowed = PyDict_GetItemWithError(accept, name);
            if (allowed == NULL && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
            if (allowed != NULL) {
                allowed = PyFrozenSet_New(allowed);
                if (allowed == NULL) {
                    Py_DECREF(seq);
                    return -1;
                }
            }
        }
        field *f = &fields[n_fields++];
        f->name = Py_NewRef(name);
        f->bytes = (const char *)PyUnicode_1BYTE_DATA(name);
        f->len = PyUnicode_GET_LENGTH(name);
        f->prefix = prefix_of(PyUnicode_1BYTE_DATA(name), f->len);
        f->mode = mode;
        f->accept = allowed;
    }
    Py_DECREF(seq);
    return 0;
}

/* configure(build, present, reject, accept, keys): the record fields built, the ones only marked present (None),
 * the ones that make light() return None, the allowed values of some built fields ({name: iterable}), and the str
 * objects to use for object keys (e.g. the ones the reader's dict lookups use). Replaces any earlier set-up. */
static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *build, *present, *reject, *accept, *keys;
    if (!PyArg_ParseTuple(args, "OOOO!O", &build, &present, &reject, &PyDict_Type, &accept, &keys))
        return NULL;
    clear_fields();
    if (add_fields(build, BUILD, accept) < 0 || add_fields(present, PRESENT, NULL) < 0 ||
        add_fields(reject, REJECT, NULL) < 0) {
        clear_fields();
        return NULL;
    }
    index_fields();
    PyObject *seq = PySequence_Fast(keys, "keys must be a sequence of str");
    if (seq == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *key = PySequence_Fast_GET_ITEM(seq, i);
        if (PyUnicode_CheckExact(key))
            cache_put(key);
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"light", (PyCFunction)(void (*)(void))light, METH_FASTCALL,
     "light(buf, start, limit) -> (dict, end) | None: the configured fields of the JSON object at buf[start] and the "
     "index after it, or None when the object is outside the subset this module reads (decode it in full instead)."},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(buf, start, limit, sep, advance, window, most) -> ([(dict, start, end), ...], next): light() over "
     "consecutive records of an array separated by sep."},
    {"configure", configure, METH_VARARGS, "configure(build, present, reject, accept, keys) -> None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "auditor.kernel._fastrecord",
    "Reads the envelope fields of one CloudTrail record without decoding the rest (see light()).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastrecord(void) {
    index_fields();
    for (int c = 0x20; c < 0x80; c++)
        plain[c] = (c != '"' && c != '\\');
    return PyModule_Create(&module_def);
}
