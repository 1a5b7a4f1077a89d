/*
 * llmcore.providers._speedups: the history's wire pieces for Anthropic Messages, OpenAI Chat
 * Completions, OpenAI Responses, Bedrock Converse and Gemini generateContent, written in C.
 *
 * Each function writes the pieces of a run of history messages (each message's JSON values,
 * each after a comma: SPEC P2, llmcore/providers/history.py) into one bytes object. The key
 * order and every rule are those of the Python encoders (llmcore/providers/anthropic/encode.py,
 * llmcore/providers/openai_chat/encode.py, llmcore/providers/openai_responses/encode.py,
 * llmcore/providers/bedrock_converse/encode.py, llmcore/providers/gemini/encode.py); strings are escaped as json.encoder's
 * encode_basestring does (ensure_ascii=False: quote, backslash and C0 controls, the controls
 * that have one as \b \f \n \r \t, the others as \u00xx). A message this module does not write
 * itself (one with an encoding option, a type or value the Python encoder handles otherwise) is
 * written by the `slow` callable it is given, the Python encoder, so the bytes are always the
 * Python encoder's: the property tests in tests/providers/test_speedups.py compare the two.
 * A message a field of which cannot be read (reading it raises) goes to `slow` as well, so the
 * error raised is the Python encoder's, and the hooks run after every field of a content value
 * is read, in the Python encoder's order, so a hook's error is raised where it raises it.
 *
 * Each function takes (messages: tuple, first: int, options: dict, slow, hooks: tuple[,
 * prefix: bytes, suffix: bytes]):
 *   messages  the run of messages; message k has history index first + k;
 *   options   the encoding options by history index (Anthropic writes a TTL option, a cache
 *             breakpoint, itself; any other non-None option, Responses' carried output items
 *             included, goes to slow);
 *   slow      slow(index, message, option) -> bytes, that message's piece;
 *   hooks     (Text, Image, ToolCall, ToolResult, wire_id, arguments_json, id_max, safe_ids,
 *              error_part): the content classes (exact types only), the provider's id rewrite
 *              and arguments rule (called for ids the fast check does not pass, and for
 *              arguments that are not certainly a JSON object), the id length limit, whether
 *              ids must match
 *              [a-zA-Z0-9_-]+, and (Chat) the JSON of the text part opening an error result;
 *   prefix, suffix  written before and after the pieces, into the same bytes (a whole request
 *             body, written once); when the prefix ends with '[', the first piece's comma is
 *             dropped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define FALLBACK 1 /* a writer's answer: leave this message to the Python encoder */

/* ---------------------------------------------------------------------------------------- */
/* The output: one bytes object, grown by doubling, cut to its length at the end.           */

typedef struct {
    PyObject *out;
    Py_ssize_t len;
    Py_ssize_t cap;
} Writer;

static int
w_init(Writer *w, Py_ssize_t cap)
{
    if (cap < 1024) {
        cap = 1024;
    }
    w->out = PyBytes_FromStringAndSize(NULL, cap);
    w->len = 0;
    w->cap = cap;
    return w->out == NULL ? -1 : 0;
}

static int
w_grow(Writer *w, Py_ssize_t need)
{
    Py_ssize_t cap = w->cap;
    while (cap - w->len < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (_PyBytes_Resize(&w->out, cap) < 0) {
        return -1; /* w->out is NULL now */
    }
    w->cap = cap;
    return 0;
}

static inline int
w_write(Writer *w, const char *data, Py_ssize_t n)
{
    if (w->cap - w->len < n && w_grow(w, n) < 0) {
        return -1;
    }
    memcpy(PyBytes_AS_STRING(w->out) + w->len, data, (size_t)n);
    w->len += n;
    return 0;
}

#define W_LIT(w, s) w_write((w), (s), (Py_ssize_t)(sizeof(s) - 1))

static int
w_cstr(Writer *w, const char *text)
{
    return w_write(w, text, (Py_ssize_t)strlen(text));
}

/* ---------------------------------------------------------------------------------------- */
/* JSON string escaping (json.encoder.encode_basestring, ensure_ascii=False).               */

static char ESCAPE[256]; /* 0: copied as is; 'u': \u00xx; else the letter after the backslash */
static const char HEX[] = "0123456789abcdef";

/* x86-64 with GCC or Clang scans 16 bytes a step with SSE2; anything else (or a build with
   -DLLMCORE_PORTABLE, which the tests make to check it) 8 bytes a step in plain C. */
#if defined(__SSE2__) && defined(__GNUC__) && !defined(LLMCORE_PORTABLE)
#include <emmintrin.h>

/* The index of the first byte from i on that is escaped (n when none is), 16 bytes a step. */
static inline Py_ssize_t
find_escape(const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1F);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
        /* v <= 0x1F (unsigned) exactly when max(v, 0x1F) == 0x1F */
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(v, control), control));
        int mask = _mm_movemask_epi8(hit);
        if (mask != 0) {
            return i + __builtin_ctz((unsigned)mask);
        }
    }
    while (i < n && !ESCAPE[s[i]]) {
        i++;
    }
    return i;
}
#else
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Whether any of the 8 bytes is below 0x20, a quote or a backslash (exact, never a guess). */
static inline int
word_needs_escape(uint64_t v)
{
    uint64_t low = (v - ONES * 0x20) & ~v & HIGHS;
    uint64_t quote = v ^ (ONES * 0x22);
    uint64_t backslash = v ^ (ONES * 0x5C);
    quote = (quote - ONES) & ~quote & HIGHS;
    backslash = (backslash - ONES) & ~backslash & HIGHS;
    return (low | quote | backslash) != 0;
}

/* The index of the first byte from i on that is escaped (n when none is), 8 bytes a step. */
static inline Py_ssize_t
find_escape(const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
    while (i + 8 <= n) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        if (word_needs_escape(v)) {
            break;
        }
        i += 8;
    }
    while (i < n && !ESCAPE[s[i]]) {
        i++;
    }
    return i;
}
#endif

/* Write the UTF-8 text s[0:n] escaped, without quotes. */
static int
w_escaped(Writer *w, const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t run = 0;
    for (Py_ssize_t i = find_escape(s, 0, n); i < n; i = find_escape(s, i, n)) {
        if (w_write(w, (const char *)s + run, i - run) < 0) {
            return -1;
        }
        unsigned char c = s[i];
        char e = ESCAPE[c];
        if (e == 'u') {
            char u[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]};
            if (w_write(w, u, 6) < 0) {
                return -1;
            }
        }
        else {
            char pair[2] = {'\\', e};
            if (w_write(w, pair, 2) < 0) {
                return -1;
            }
        }
        run = ++i;
    }
    return w_write(w, (const char *)s + run, n - run);
}

/* Write a JSON string literal of s[0:n]. */
static int
w_string(Writer *w, const char *s, Py_ssize_t n)
{
    if (W_LIT(w, "\"") < 0 || w_escaped(w, (const unsigned char *)s, n) < 0) {
        return -1;
    }
    return W_LIT(w, "\"");
}

/* Call fn(data, n) with the UTF-8 of an exact str: FALLBACK for another type or a lone
   surrogate (the Python encoder raises its own error for it). */
typedef int (*Utf8Fn)(Writer *, const char *, Py_ssize_t);

static int
w_with_utf8(Writer *w, PyObject *text, Utf8Fn fn)
{
    if (!PyUnicode_CheckExact(text)) {
        return FALLBACK;
    }
    if (PyUnicode_IS_ASCII(text)) {
        return fn(w, (const char *)PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text));
    }
    /* A new bytes object, not PyUnicode_AsUTF8AndSize: that keeps a copy in the str for life */
    PyObject *utf8 = PyUnicode_AsUTF8String(text);
    if (utf8 == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            return FALLBACK;
        }
        return -1;
    }
    int result = fn(w, PyBytes_AS_STRING(utf8), PyBytes_GET_SIZE(utf8));
    Py_DECREF(utf8);
    return result;
}

static int
w_str(Writer *w, PyObject *text)
{
    return w_with_utf8(w, text, w_string);
}

static int
w_str_raw(Writer *w, PyObject *text)
{
    return w_with_utf8(w, text, w_write);
}

/* ---------------------------------------------------------------------------------------- */
/* What both providers share: the hooks, attribute names, ids, arguments, result text.       */

typedef struct {
    PyTypeObject *text, *image, *tool_call, *tool_result;
    PyObject *wire_id, *arguments_json;
    Py_ssize_t id_max;
    int safe_ids;
    PyObject *error_part; /* bytes, or None */
} Hooks;

static PyObject *s_role, *s_content, *s_text, *s_mime_type, *s_base64, *s_id, *s_name,
    *s_arguments, *s_call_id, *s_utf8_content, *s_is_error, *s_tool, *s_user, *s_assistant,
    *s_tool_name;

static int
parse_hooks(PyObject *tuple, Hooks *h)
{
    if (!PyTuple_CheckExact(tuple) || PyTuple_GET_SIZE(tuple) != 9) {
        PyErr_SetString(PyExc_TypeError, "hooks must be a tuple of 9 items");
        return -1;
    }
    for (int k = 0; k < 4; k++) {
        if (!PyType_Check(PyTuple_GET_ITEM(tuple, k))) {
            PyErr_SetString(PyExc_TypeError, "hooks[0:4] must be the content classes");
            return -1;
        }
    }
    h->text = (PyTypeObject *)PyTuple_GET_ITEM(tuple, 0);
    h->image = (PyTypeObject *)PyTuple_GET_ITEM(tuple, 1);
    h->tool_call = (PyTypeObject *)PyTuple_GET_ITEM(tuple, 2);
    h->tool_result = (PyTypeObject *)PyTuple_GET_ITEM(tuple, 3);
    h->wire_id = PyTuple_GET_ITEM(tuple, 4);
    h->arguments_json = PyTuple_GET_ITEM(tuple, 5);
    h->id_max = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, 6));
    if (h->id_max == -1 && PyErr_Occurred()) {
        return -1;
    }
    h->safe_ids = PyObject_IsTrue(PyTuple_GET_ITEM(tuple, 7));
    if (h->safe_ids < 0) {
        return -1;
    }
    h->error_part = PyTuple_GET_ITEM(tuple, 8);
    if (h->error_part != Py_None && !PyBytes_CheckExact(h->error_part)) {
        PyErr_SetString(PyExc_TypeError, "hooks[8] must be bytes or None");
        return -1;
    }
    return 0;
}

static int
safe_id_char(Py_UCS1 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* Write the id sent for a stored tool-call id: itself when the provider accepts it (the
   identity of rewrite_id), else what the provider's wire_id returns. */
static int
w_id(Writer *w, PyObject *id, const Hooks *h)
{
    if (!PyUnicode_CheckExact(id)) {
        return FALLBACK;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(id);
    int accepted = n >= 1 && n <= h->id_max;
    if (accepted && h->safe_ids) {
        accepted = PyUnicode_IS_ASCII(id);
        const Py_UCS1 *chars = PyUnicode_1BYTE_DATA(id);
        for (Py_ssize_t k = 0; accepted && k < n; k++) {
            accepted = safe_id_char(chars[k]);
        }
    }
    if (accepted) {
        return w_str(w, id);
    }
    PyObject *rewritten = PyObject_CallOneArg(h->wire_id, id);
    if (rewritten == NULL) {
        return -1;
    }
    int result = w_str(w, rewritten);
    Py_DECREF(rewritten);
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* Tool-call arguments that are certainly one JSON object (SPEC P2: sent verbatim).           */

/* A recognizer of RFC 8259 JSON text, ASCII only, that answers 1 only when the text is one JSON
   object that jsonbytes.is_json_object also accepts; 0 means "let the Python rule decide" (not
   an object, invalid, or outside what this recognizer knows: non-ASCII bytes, nesting deeper
   than MAX_DEPTH, a number longer than MAX_NUMBER characters). */
#define MAX_DEPTH 64
#define MAX_NUMBER 100

typedef struct {
    const unsigned char *p, *end;
    int depth;
} Scan;

static int scan_value(Scan *s);

static void
skip_space(Scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) {
        s->p++;
    }
}

static int
is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int
scan_string(Scan *s) /* at the opening quote */
{
    s->p++;
    while (s->p < s->end) {
        unsigned char c = *s->p++;
        if (c == '"') {
            return 1;
        }
        if (c < 0x20 || c >= 0x80) {
            return 0; /* a raw control character is invalid; non-ASCII is left to Python */
        }
        if (c != '\\') {
            continue;
        }
        if (s->p >= s->end) {
            return 0;
        }
        switch (*s->p++) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            break;
        case 'u':
            if (s->end - s->p < 4 || !is_hex(s->p[0]) || !is_hex(s->p[1]) ||
                !is_hex(s->p[2]) || !is_hex(s->p[3])) {
                return 0;
            }
            s->p += 4;
            break;
        default:
            return 0;
        }
    }
    return 0;
}

static int
scan_digits(Scan *s)
{
    const unsigned char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        s->p++;
    }
    return s->p > start;
}

static int
scan_number(Scan *s)
{
    const unsigned char *start = s->p;
    if (*s->p == '-') {
        s->p++;
    }
    if (s->p < s->end && *s->p == '0') {
        s->p++;
    }
    else if (!(s->p < s->end && *s->p >= '1' && *s->p <= '9') || !scan_digits(s)) {
        return 0;
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!scan_digits(s)) {
            return 0;
        }
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
            s->p++;
        }
        if (!scan_digits(s)) {
            return 0;
        }
    }
    return s->p - start <= MAX_NUMBER;
}

static int
scan_word(Scan *s, const char *word, Py_ssize_t length)
{
    if (s->end - s->p < length || memcmp(s->p, word, (size_t)length) != 0) {
        return 0;
    }
    s->p += length;
    return 1;
}

/* An object or array, at its opening bracket: members (key, colon, value) or values. */
static int
scan_container(Scan *s, unsigned char close)
{
    if (++s->depth > MAX_DEPTH) {
        return 0;
    }
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return 1;
    }
    for (;;) {
        skip_space(s);
        if (close == '}') {
            if (s->p >= s->end || *s->p != '"' || !scan_string(s)) {
                return 0;
            }
            skip_space(s);
            if (s->p >= s->end || *s->p != ':') {
                return 0;
            }
            s->p++;
            skip_space(s);
        }
        if (!scan_value(s)) {
            return 0;
        }
        skip_space(s);
        if (s->p >= s->end) {
            return 0;
        }
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != close) {
            return 0;
        }
        s->p++;
        s->depth--;
        return 1;
    }
}

static int
scan_value(Scan *s)
{
    if (s->p >= s->end) {
        return 0;
    }
    switch (*s->p) {
    case '{':
        return scan_container(s, '}');
    case '[':
        return scan_container(s, ']');
    case '"':
        return scan_string(s);
    case 't':
        return scan_word(s, "true", 4);
    case 'f':
        return scan_word(s, "false", 5);
    case 'n':
        return scan_word(s, "null", 4);
    default:
        return (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) && scan_number(s);
    }
}

static int
certainly_object(const char *data, Py_ssize_t n)
{
    Scan s = {(const unsigned char *)data, (const unsigned char *)data + n, 0};
    skip_space(&s);
    if (s.p >= s.end || *s.p != '{' || !scan_value(&s)) {
        return 0;
    }
    skip_space(&s);
    return s.p == s.end;
}

/* After an error: whether it is one the Python code raises itself when it runs (an Exception
   other than MemoryError), cleared; else it stays set. */
static int
python_raises(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* The value of attribute `name` of obj (a new reference), or NULL with *result set: FALLBACK
   when reading it raised an Exception (other than MemoryError), for the Python encoder reads
   the fields in its own order and raises its own error; -1 for any other error. */
static PyObject *
read_attr(PyObject *obj, PyObject *name, int *result)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        *result = python_raises() ? FALLBACK : -1;
    }
    return value;
}

/* The hook's text for a tool call's arguments (a new reference); NULL with *result 0 for bytes
   that are certainly a JSON object (they are their own text), NULL with *result -1 on an
   error. */
static PyObject *
arguments_text(PyObject *arguments, const Hooks *h, int *result)
{
    *result = 0;
    if (PyBytes_CheckExact(arguments) &&
        certainly_object(PyBytes_AS_STRING(arguments), PyBytes_GET_SIZE(arguments))) {
        return NULL;
    }
    PyObject *text = PyObject_CallOneArg(h->arguments_json, arguments);
    if (text == NULL) {
        *result = -1;
    }
    return text;
}

/* Write a tool call's arguments text, raw or as a JSON string: the hook's `text`, or (NULL)
   the argument bytes themselves. */
static int
w_arguments(Writer *w, PyObject *arguments, PyObject *text, int as_string)
{
    if (text == NULL) {
        const char *data = PyBytes_AS_STRING(arguments);
        Py_ssize_t n = PyBytes_GET_SIZE(arguments);
        return as_string ? w_string(w, data, n) : w_write(w, data, n);
    }
    return as_string ? w_str(w, text) : w_str_raw(w, text);
}

/* Write a str attribute of obj as a JSON string. */
static int
w_attr_str(Writer *w, PyObject *obj, PyObject *name)
{
    int result = 0;
    PyObject *value = read_attr(obj, name, &result);
    if (value == NULL) {
        return result;
    }
    result = w_str(w, value);
    Py_DECREF(value);
    return result;
}

/* An attribute's value of exactly `type`, or NULL with *result set (read_attr; FALLBACK another
   type). */
static PyObject *
typed_attr(PyObject *obj, PyObject *name, PyTypeObject *type, int *result)
{
    PyObject *value = read_attr(obj, name, result);
    if (value == NULL) {
        return NULL;
    }
    if (Py_TYPE(value) != type) {
        Py_DECREF(value);
        *result = FALLBACK;
        return NULL;
    }
    return value;
}

#define bytes_attr(obj, name, result) typed_attr((obj), (name), &PyBytes_Type, (result))

/* A tool result's fields, read before its hook runs: whether it is an error (an exact bool),
   its id, and its text (utf8_content: valid UTF-8, U+FFFD for invalid bytes), NULL when its
   content is empty. */
typedef struct {
    int is_error;
    PyObject *call_id, *text;
} ResultFields;

static void
clear_result(ResultFields *r)
{
    Py_CLEAR(r->call_id);
    Py_CLEAR(r->text);
}

static int
read_result(PyObject *part, ResultFields *r)
{
    int result = 0;
    r->call_id = r->text = NULL;
    PyObject *content = bytes_attr(part, s_content, &result);
    if (content == NULL) {
        return result;
    }
    int has_content = PyBytes_GET_SIZE(content) > 0;
    Py_DECREF(content);
    PyObject *flag = read_attr(part, s_is_error, &result);
    if (flag == NULL) {
        return result;
    }
    Py_DECREF(flag); /* True and False live for ever */
    if (flag != Py_True && flag != Py_False) {
        return FALLBACK;
    }
    r->is_error = flag == Py_True;
    r->call_id = read_attr(part, s_call_id, &result);
    if (r->call_id != NULL && has_content) {
        r->text = bytes_attr(part, s_utf8_content, &result);
        if (r->text == NULL) {
            clear_result(r);
        }
    }
    return result;
}

/* Write a tool result's text as a JSON string. */
static int
w_result_text(Writer *w, const ResultFields *r)
{
    return w_string(w, PyBytes_AS_STRING(r->text), PyBytes_GET_SIZE(r->text));
}

/* Write an image's base64 (ASCII letters, digits, + / =: nothing to escape) as it is. */
static int
w_base64(Writer *w, PyObject *part)
{
    int result;
    PyObject *data = bytes_attr(part, s_base64, &result);
    if (data == NULL) {
        return result;
    }
    result = w_write(w, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data));
    Py_DECREF(data);
    return result;
}

/* A Text part's text when it is sent (non-empty), NULL with *result 0 when it is not. */
static PyObject *
sent_text(PyObject *part, int *result)
{
    PyObject *text = typed_attr(part, s_text, &PyUnicode_Type, result);
    if (text == NULL) {
        return NULL;
    }
    if (PyUnicode_GET_LENGTH(text) == 0) {
        Py_DECREF(text);
        *result = 0;
        return NULL;
    }
    return text;
}

/* Write what comes before an item of a list: `opening` before the first, a comma before the
   others. */
static inline int
w_item(Writer *w, int *first, const char *opening)
{
    if (*first) {
        *first = 0;
        return w_cstr(w, opening);
    }
    return W_LIT(w, ",");
}

#define CHECK(expr)            \
    do {                       \
        int check_ = (expr);   \
        if (check_ != 0) {     \
            return check_;     \
        }                      \
    } while (0)

/* A tool call as a provider writes it: the text before the list's first item, before the id,
   the name and the arguments, and after them; the arguments raw (a JSON value) or as a string;
   whether the provider's encoder makes the arguments text before the id (Chat's _tool_call)
   or after it (Anthropic's _block). */
typedef struct {
    const char *opening, *id, *name, *arguments, *closing;
    int as_string, arguments_first;
} CallShape;

static const CallShape ANTHROPIC_CALL = {
    "", "{\"type\":\"tool_use\",\"id\":", ",\"name\":", ",\"input\":", "}", 0, 0,
};

static const CallShape CHAT_CALL = {
    ",\"tool_calls\":[", "{\"id\":", ",\"type\":\"function\",\"function\":{\"name\":",
    ",\"arguments\":", "}}", 1, 1,
};

/* A tool call's fields, read before its hooks run. */
typedef struct {
    PyObject *id, *name, *arguments;
} CallFields;

static void
clear_call(CallFields *c)
{
    Py_CLEAR(c->id);
    Py_CLEAR(c->name);
    Py_CLEAR(c->arguments);
}

static int
read_call(PyObject *part, CallFields *c)
{
    int result = 0;
    c->name = c->arguments = NULL;
    c->id = read_attr(part, s_id, &result);
    if (c->id != NULL) {
        c->name = read_attr(part, s_name, &result);
    }
    if (c->name != NULL) {
        c->arguments = read_attr(part, s_arguments, &result);
    }
    if (c->arguments == NULL) {
        clear_call(c);
    }
    return result;
}

/* Write a tool call from its fields; *text is the arguments' hook text, asked here unless the
   shape asks it first. */
static int
w_call_fields(Writer *w, const CallFields *c, PyObject **text, const Hooks *h, int *first,
              const CallShape *shape)
{
    CHECK(w_item(w, first, shape->opening));
    CHECK(w_cstr(w, shape->id));
    CHECK(w_id(w, c->id, h));
    CHECK(w_cstr(w, shape->name));
    CHECK(w_str(w, c->name));
    CHECK(w_cstr(w, shape->arguments));
    if (!shape->arguments_first) {
        int result;
        *text = arguments_text(c->arguments, h, &result);
        CHECK(result);
    }
    CHECK(w_arguments(w, c->arguments, *text, shape->as_string));
    return w_cstr(w, shape->closing);
}

static int
w_tool_call(Writer *w, PyObject *part, const Hooks *h, int *first, const CallShape *shape)
{
    CallFields c;
    CHECK(read_call(part, &c));
    PyObject *text = NULL;
    int result = 0;
    if (shape->arguments_first) {
        text = arguments_text(c.arguments, h, &result);
    }
    if (result == 0) {
        result = w_call_fields(w, &c, &text, h, first, shape);
    }
    Py_XDECREF(text);
    clear_call(&c);
    return result;
}

/* A tool result block: its fields read, then written by the provider's `write`. */
typedef int (*ResultWriter)(Writer *, const ResultFields *, const Hooks *, int *);

static int
w_result_part(Writer *w, PyObject *part, const Hooks *h, int *first, ResultWriter write)
{
    ResultFields r;
    CHECK(read_result(part, &r));
    int result = write(w, &r, h, first);
    clear_result(&r);
    return result;
}

/* `,{"role":<role>,"content":[` with a tool message's role written as user. */
static int
w_message_head(Writer *w, PyObject *role)
{
    CHECK(W_LIT(w, ",{\"role\":"));
    if (PyUnicode_Compare(role, s_tool) == 0) {
        CHECK(W_LIT(w, "\"user\""));
    }
    else {
        CHECK(w_str(w, role));
    }
    return W_LIT(w, ",\"content\":[");
}

/* ---------------------------------------------------------------------------------------- */
/* Anthropic Messages: {"role", "content": [blocks]} (anthropic/encode.py, _message_values). */

/* A text block or part, {"type":"text","text":...}, when its text is sent (not empty). */
static int
w_text_part(Writer *w, PyObject *part, int *first, const char *opening)
{
    int result = 0;
    PyObject *text = sent_text(part, &result);
    if (text == NULL) {
        return result;
    }
    result = w_item(w, first, opening);
    if (result == 0) {
        result = W_LIT(w, "{\"type\":\"text\",\"text\":");
    }
    if (result == 0) {
        result = w_str(w, text);
    }
    Py_DECREF(text);
    return result != 0 ? result : W_LIT(w, "}");
}

static int
anthropic_tool_result(Writer *w, const ResultFields *r, const Hooks *h, int *first)
{
    CHECK(w_item(w, first, ""));
    CHECK(W_LIT(w, "{\"type\":\"tool_result\",\"tool_use_id\":"));
    CHECK(w_id(w, r->call_id, h));
    if (r->text != NULL) {
        CHECK(W_LIT(w, ",\"content\":"));
        CHECK(w_result_text(w, r));
    }
    if (r->is_error) {
        CHECK(W_LIT(w, ",\"is_error\":true"));
    }
    return W_LIT(w, "}");
}

static int
anthropic_block(Writer *w, PyObject *part, const Hooks *h, int *first)
{
    PyTypeObject *type = Py_TYPE(part);
    if (type == h->text) {
        return w_text_part(w, part, first, "");
    }
    if (type == h->image) {
        CHECK(w_item(w, first, ""));
        CHECK(W_LIT(w, "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":"));
        CHECK(w_attr_str(w, part, s_mime_type));
        CHECK(W_LIT(w, ",\"data\":\""));
        CHECK(w_base64(w, part));
        return W_LIT(w, "\"}}");
    }
    if (type == h->tool_call) {
        return w_tool_call(w, part, h, first, &ANTHROPIC_CALL);
    }
    if (type == h->tool_result) {
        return w_result_part(w, part, h, first, anthropic_tool_result);
    }
    return FALLBACK;
}

/* A message whose option is a TTL (a cache breakpoint, anthropic/encode.py breakpoint_dict)
   gets cache_control on its last block; any other option is left to Python. */
static int
anthropic_message(Writer *w, PyObject *role, PyObject *content, PyObject *option, const Hooks *h)
{
    int marked = option != Py_None, hour = 0;
    if (marked) {
        if (!PyUnicode_CheckExact(option)) {
            return FALLBACK; /* carried data */
        }
        hour = PyUnicode_CompareWithASCIIString(option, "1h") == 0;
    }
    CHECK(w_message_head(w, role));
    int first = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(content); k++) {
        CHECK(anthropic_block(w, PyTuple_GET_ITEM(content, k), h, &first));
    }
    if (marked) {
        if (first) {
            return FALLBACK; /* no block to mark: Python's error */
        }
        w->len--; /* reopen the last block: every block ends with its closing brace */
        CHECK(hour ? W_LIT(w, ",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}")
                   : W_LIT(w, ",\"cache_control\":{\"type\":\"ephemeral\"}}"));
    }
    return W_LIT(w, "]}");
}

/* ---------------------------------------------------------------------------------------- */
/* Bedrock Converse: {"role", "content": [blocks]} (bedrock_converse/encode.py,             */
/* _message_values). Blocks are one-member objects: text, image, toolUse, toolResult.        */

static const CallShape CONVERSE_CALL = {
    "", "{\"toolUse\":{\"toolUseId\":", ",\"name\":", ",\"input\":", "}}", 0, 0,
};

/* The image format of the four mime types (encode.py IMAGE_FORMATS); NULL: left to Python. */
static const char *
converse_format(PyObject *part, int *result)
{
    PyObject *mime = typed_attr(part, s_mime_type, &PyUnicode_Type, result);
    if (mime == NULL) {
        return NULL;
    }
    static const char *const pairs[][2] = {
        {"image/jpeg", "jpeg"}, {"image/png", "png"}, {"image/gif", "gif"}, {"image/webp", "webp"},
    };
    const char *found = NULL;
    for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]) && found == NULL; k++) {
        if (PyUnicode_CompareWithASCIIString(mime, pairs[k][0]) == 0) {
            found = pairs[k][1];
        }
    }
    Py_DECREF(mime);
    if (found == NULL && *result == 0) {
        *result = FALLBACK;
    }
    return found;
}

static int
converse_tool_result(Writer *w, const ResultFields *r, const Hooks *h, int *first)
{
    CHECK(w_item(w, first, ""));
    CHECK(W_LIT(w, "{\"toolResult\":{\"toolUseId\":"));
    CHECK(w_id(w, r->call_id, h));
    if (r->text != NULL) {
        CHECK(W_LIT(w, ",\"content\":[{\"text\":"));
        CHECK(w_result_text(w, r));
        CHECK(W_LIT(w, "}]"));
    }
    else {
        CHECK(W_LIT(w, ",\"content\":[]"));
    }
    if (r->is_error) {
        CHECK(W_LIT(w, ",\"status\":\"error\""));
    }
    return W_LIT(w, "}}");
}

/* A text block or part of one member, {"text":...}, when its text is sent (not empty):
   Converse's and Gemini's. */
static int
w_text_object(Writer *w, PyObject *part, int *first)
{
    int result = 0;
    PyObject *text = sent_text(part, &result);
    if (text == NULL) {
        return result;
    }
    result = w_item(w, first, "");
    if (result == 0) {
        result = W_LIT(w, "{\"text\":");
    }
    if (result == 0) {
        result = w_str(w, text);
    }
    Py_DECREF(text);
    return result != 0 ? result : W_LIT(w, "}");
}

static int
converse_block(Writer *w, PyObject *part, const Hooks *h, int *first)
{
    PyTypeObject *type = Py_TYPE(part);
    if (type == h->text) {
        return w_text_object(w, part, first);
    }
    if (type == h->image) {
        int result = 0;
        const char *format = converse_format(part, &result);
        CHECK(result);
        CHECK(w_item(w, first, ""));
        CHECK(W_LIT(w, "{\"image\":{\"format\":\""));
        CHECK(w_cstr(w, format));
        CHECK(W_LIT(w, "\",\"source\":{\"bytes\":\""));
        CHECK(w_base64(w, part));
        return W_LIT(w, "\"}}}");
    }
    if (type == h->tool_call) {
        return w_tool_call(w, part, h, first, &CONVERSE_CALL);
    }
    if (type == h->tool_result) {
        return w_result_part(w, part, h, first, converse_tool_result);
    }
    return FALLBACK;
}

/* A message whose option is a TTL (its cache point) gets {"cachePoint":...} after its blocks;
   one whose option is "absorbed" is written by the first message of its run (nothing here);
   a run's first message (a tuple option) is left to Python. */
static int
converse_message(Writer *w, PyObject *role, PyObject *content, PyObject *option, const Hooks *h)
{
    int marked = option != Py_None, hour = 0;
    if (marked) {
        if (!PyUnicode_CheckExact(option)) {
            return FALLBACK;
        }
        if (PyUnicode_CompareWithASCIIString(option, "absorbed") == 0) {
            return 0;
        }
        hour = PyUnicode_CompareWithASCIIString(option, "1h") == 0;
    }
    CHECK(w_message_head(w, role));
    int first = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(content); k++) {
        CHECK(converse_block(w, PyTuple_GET_ITEM(content, k), h, &first));
    }
    if (marked) {
        CHECK(w_item(w, &first, ""));
        CHECK(hour ? W_LIT(w, "{\"cachePoint\":{\"type\":\"default\",\"ttl\":\"1h\"}}")
                   : W_LIT(w, "{\"cachePoint\":{\"type\":\"default\"}}"));
    }
    return W_LIT(w, "]}");
}

/* ---------------------------------------------------------------------------------------- */
/* Gemini generateContent: {"role", "parts": [parts]} (gemini/encode.py, content_values).    */
/* What the Python encoder decides from the history or the bytes is left to it: a message     */
/* with carried parts (an option), an id the parser made up (GEMINI_SYNTHETIC, not sent), a   */
/* result without tool_name (its name is looked up) or whose bytes may be a JSON object.      */

#define GEMINI_SYNTHETIC "gemini-call-"

static const CallShape GEMINI_CALL = {
    "", "{\"functionCall\":{\"id\":", ",\"name\":", ",\"args\":", "}}", 0, 0,
};

/* Whether `id` is an exact str the writer sends as it is (not a made-up one). */
static int
gemini_sent_id(PyObject *id)
{
    if (!PyUnicode_CheckExact(id)) {
        return 0;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(id), k = (Py_ssize_t)strlen(GEMINI_SYNTHETIC);
    if (n < k || !PyUnicode_IS_ASCII(id)) {
        return 1;
    }
    return memcmp(PyUnicode_1BYTE_DATA(id), GEMINI_SYNTHETIC, (size_t)k) != 0;
}

/* Whether the result's bytes certainly go out wrapped: their first non-space byte is no '{'. */
static int
gemini_wrapped(PyObject *part, int *result)
{
    PyObject *content = bytes_attr(part, s_content, result);
    if (content == NULL) {
        return 0;
    }
    const char *s = PyBytes_AS_STRING(content);
    Py_ssize_t n = PyBytes_GET_SIZE(content), k = 0;
    while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r' || s[k] == '\n')) {
        k++;
    }
    int wrapped = k == n || s[k] != '{';
    Py_DECREF(content);
    return wrapped;
}

/* {"functionResponse":{"id","name","response":{"output"|"error": text}}} */
static int
gemini_result_fields(Writer *w, const ResultFields *r, PyObject *name, int *first)
{
    if (!gemini_sent_id(r->call_id)) {
        return FALLBACK;
    }
    CHECK(w_item(w, first, ""));
    CHECK(W_LIT(w, "{\"functionResponse\":{\"id\":"));
    CHECK(w_str(w, r->call_id));
    CHECK(W_LIT(w, ",\"name\":"));
    CHECK(w_str(w, name));
    CHECK(r->is_error ? W_LIT(w, ",\"response\":{\"error\":")
                      : W_LIT(w, ",\"response\":{\"output\":"));
    CHECK(r->text == NULL ? W_LIT(w, "\"\"") : w_result_text(w, r));
    return W_LIT(w, "}}}");
}

static int
gemini_result(Writer *w, PyObject *part, int *first)
{
    int result = 0;
    PyObject *name = typed_attr(part, s_tool_name, &PyUnicode_Type, &result);
    if (name == NULL) {
        return result;
    }
    if (PyUnicode_GET_LENGTH(name) == 0 || !gemini_wrapped(part, &result)) {
        Py_DECREF(name);
        return result != 0 ? result : FALLBACK;
    }
    ResultFields r;
    result = read_result(part, &r);
    if (result == 0) {
        result = gemini_result_fields(w, &r, name, first);
        clear_result(&r);
    }
    Py_DECREF(name);
    return result;
}

static int
gemini_part(Writer *w, PyObject *part, const Hooks *h, int *first)
{
    PyTypeObject *type = Py_TYPE(part);
    if (type == h->text) {
        return w_text_object(w, part, first);
    }
    if (type == h->image) {
        CHECK(w_item(w, first, ""));
        CHECK(W_LIT(w, "{\"inlineData\":{\"mimeType\":"));
        CHECK(w_attr_str(w, part, s_mime_type));
        CHECK(W_LIT(w, ",\"data\":\""));
        CHECK(w_base64(w, part));
        return W_LIT(w, "\"}}");
    }
    if (type == h->tool_call) {
        int result = 0;
        PyObject *id = read_attr(part, s_id, &result);
        if (id == NULL) {
            return result;
        }
        int sent = gemini_sent_id(id);
        Py_DECREF(id);
        return sent ? w_tool_call(w, part, h, first, &GEMINI_CALL) : FALLBACK;
    }
    if (type == h->tool_result) {
        return gemini_result(w, part, first);
    }
    return FALLBACK;
}

/* A message with an option (carried parts) is left to Python; one with no part sent gets
   the one empty text part. */
static int
gemini_message(Writer *w, PyObject *role, PyObject *content, PyObject *option, const Hooks *h)
{
    if (option != Py_None) {
        return FALLBACK;
    }
    CHECK(PyUnicode_Compare(role, s_assistant) == 0 ? W_LIT(w, ",{\"role\":\"model\",\"parts\":[")
                                                    : W_LIT(w, ",{\"role\":\"user\",\"parts\":["));
    int first = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(content); k++) {
        CHECK(gemini_part(w, PyTuple_GET_ITEM(content, k), h, &first));
    }
    if (first) {
        CHECK(W_LIT(w, "{\"text\":\"\"}"));
    }
    return W_LIT(w, "]}");
}

/* ---------------------------------------------------------------------------------------- */
/* OpenAI Chat Completions (openai_chat/encode.py, wire_messages).                            */

static int w_data_url(Writer *w, PyObject *part);

static int
chat_image_part(Writer *w, PyObject *part, int *first)
{
    CHECK(w_item(w, first, ",\"content\":["));
    CHECK(W_LIT(w, "{\"type\":\"image_url\",\"image_url\":{\"url\":\""));
    CHECK(w_data_url(w, part));
    return W_LIT(w, "\"}}");
}

static int
chat_tool_message_fields(Writer *w, const ResultFields *r, const Hooks *h)
{
    CHECK(W_LIT(w, ",{\"role\":\"tool\",\"tool_call_id\":"));
    CHECK(w_id(w, r->call_id, h));
    CHECK(W_LIT(w, ",\"content\":"));
    if (!r->is_error && r->text == NULL) {
        CHECK(W_LIT(w, "\"\""));
        return W_LIT(w, "}");
    }
    CHECK(W_LIT(w, "["));
    if (r->is_error) {
        CHECK(w_write(w, PyBytes_AS_STRING(h->error_part), PyBytes_GET_SIZE(h->error_part)));
        if (r->text != NULL) {
            CHECK(W_LIT(w, ","));
        }
    }
    if (r->text != NULL) {
        CHECK(W_LIT(w, "{\"type\":\"text\",\"text\":"));
        CHECK(w_result_text(w, r));
        CHECK(W_LIT(w, "}"));
    }
    return W_LIT(w, "]}");
}

/* A tool result's message: its text is read before wire_id runs (_tool_message's order). */
static int
chat_tool_message(Writer *w, PyObject *part, const Hooks *h)
{
    if (Py_TYPE(part) != h->tool_result || h->error_part == Py_None) {
        return FALLBACK;
    }
    ResultFields r;
    CHECK(read_result(part, &r));
    int result = chat_tool_message_fields(w, &r, h);
    clear_result(&r);
    return result;
}

static int
chat_message(Writer *w, PyObject *role, PyObject *content, PyObject *option, const Hooks *h)
{
    if (option != Py_None) {
        return FALLBACK; /* Chat's own encoder has no options */
    }
    Py_ssize_t n = PyTuple_GET_SIZE(content);
    if (PyUnicode_Compare(role, s_tool) == 0) {
        for (Py_ssize_t k = 0; k < n; k++) {
            CHECK(chat_tool_message(w, PyTuple_GET_ITEM(content, k), h));
        }
        return 0;
    }
    CHECK(W_LIT(w, ",{\"role\":"));
    CHECK(w_str(w, role));
    int first = 1, calls = 0;
    for (Py_ssize_t k = 0; k < n; k++) { /* the content parts, in order */
        PyObject *part = PyTuple_GET_ITEM(content, k);
        PyTypeObject *type = Py_TYPE(part);
        if (type == h->text) {
            CHECK(w_text_part(w, part, &first, ",\"content\":["));
        }
        else if (type == h->image) {
            CHECK(chat_image_part(w, part, &first));
        }
        else if (type == h->tool_call) {
            calls++;
        }
        else {
            return FALLBACK; /* a tool result outside a tool message: the Python error */
        }
    }
    if (!first) {
        CHECK(W_LIT(w, "]"));
    }
    first = 1;
    for (Py_ssize_t k = 0; calls && k < n; k++) { /* then the tool calls, in order */
        PyObject *part = PyTuple_GET_ITEM(content, k);
        if (Py_TYPE(part) == h->tool_call) {
            CHECK(w_tool_call(w, part, h, &first, &CHAT_CALL));
        }
    }
    if (!first) {
        CHECK(W_LIT(w, "]"));
    }
    return W_LIT(w, "}");
}

/* ---------------------------------------------------------------------------------------- */
/* OpenAI Responses: one item per user message, assistant part, tool result                   */
/* (openai_responses/encode.py, _items).                                                      */

/* Write an image's data: URL, data:<mime>;base64,<data>, inside a JSON string. The Python
   encoder copies it as is only when its head needs no escape (data_url); else it escapes the
   whole URL, base64 included, so such a mime type is left to it. */
static int
w_data_url(Writer *w, PyObject *part)
{
    CHECK(W_LIT(w, "data:"));
    int result = 0;
    PyObject *mime = read_attr(part, s_mime_type, &result);
    if (mime == NULL) {
        return result;
    }
    result = FALLBACK;
    if (PyUnicode_CheckExact(mime) && PyUnicode_IS_ASCII(mime)) {
        const unsigned char *chars = PyUnicode_1BYTE_DATA(mime);
        Py_ssize_t n = PyUnicode_GET_LENGTH(mime);
        if (find_escape(chars, 0, n) == n) {
            result = w_write(w, (const char *)chars, n);
        }
    }
    Py_DECREF(mime);
    CHECK(result);
    CHECK(W_LIT(w, ";base64,"));
    return w_base64(w, part);
}

/* A Text part's item or part, `head` + its text + `}`, when its text is sent (not empty); a
   list's comma first when `first` is not NULL (w_item). */
static int
w_sent_text(Writer *w, PyObject *part, int *first, const char *head)
{
    int result = 0;
    PyObject *text = sent_text(part, &result);
    if (text == NULL) {
        return result;
    }
    result = first != NULL ? w_item(w, first, "") : 0;
    if (result == 0) {
        result = w_cstr(w, head);
    }
    if (result == 0) {
        result = w_str(w, text);
    }
    Py_DECREF(text);
    return result != 0 ? result : W_LIT(w, "}");
}

/* {"type":"message","role":"user","content":[parts]}: input_text and input_image parts. */
static int
responses_user(Writer *w, PyObject *content, const Hooks *h)
{
    CHECK(W_LIT(w, ",{\"type\":\"message\",\"role\":\"user\",\"content\":["));
    int first = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(content); k++) {
        PyObject *part = PyTuple_GET_ITEM(content, k);
        PyTypeObject *type = Py_TYPE(part);
        if (type == h->text) {
            CHECK(w_sent_text(w, part, &first, "{\"type\":\"input_text\",\"text\":"));
        }
        else if (type == h->image) {
            CHECK(w_item(w, &first, ""));
            CHECK(W_LIT(w, "{\"type\":\"input_image\",\"image_url\":\""));
            CHECK(w_data_url(w, part));
            CHECK(W_LIT(w, "\",\"detail\":\"auto\"}"));
        }
        else {
            return FALLBACK; /* a tool call or result in a user message: the Python error */
        }
    }
    return W_LIT(w, "]}");
}

static const CallShape RESPONSES_CALL = {
    ",", "{\"type\":\"function_call\",\"call_id\":", ",\"name\":", ",\"arguments\":", "}", 1, 0,
};

/* An assistant message: a message item per sent text, a function_call item per tool call. */
static int
responses_assistant(Writer *w, PyObject *content, const Hooks *h)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(content); k++) {
        PyObject *part = PyTuple_GET_ITEM(content, k);
        PyTypeObject *type = Py_TYPE(part);
        if (type == h->text) {
            CHECK(w_sent_text(w, part, NULL,
                              ",{\"type\":\"message\",\"role\":\"assistant\",\"content\":"));
        }
        else if (type == h->tool_call) {
            int first = 1; /* the shape's opening is the item's comma */
            CHECK(w_tool_call(w, part, h, &first, &RESPONSES_CALL));
        }
        else {
            return FALLBACK; /* an image or a tool result: the Python error */
        }
    }
    return 0;
}

/* A tool message: a function_call_output item per result (an empty output allowed). */
static int
responses_results(Writer *w, PyObject *content, const Hooks *h)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(content); k++) {
        PyObject *part = PyTuple_GET_ITEM(content, k);
        if (Py_TYPE(part) != h->tool_result) {
            return FALLBACK;
        }
        ResultFields r;
        CHECK(read_result(part, &r));
        int result = W_LIT(w, ",{\"type\":\"function_call_output\",\"call_id\":");
        if (result == 0) {
            result = w_id(w, r.call_id, h);
        }
        if (result == 0) {
            result = W_LIT(w, ",\"output\":");
        }
        if (result == 0) {
            result = r.text != NULL ? w_result_text(w, &r) : W_LIT(w, "\"\"");
        }
        clear_result(&r);
        CHECK(result);
        CHECK(W_LIT(w, "}"));
    }
    return 0;
}

static int
responses_message(Writer *w, PyObject *role, PyObject *content, PyObject *option, const Hooks *h)
{
    if (option != Py_None) {
        return FALLBACK; /* carried output items: Python splices their raw text */
    }
    if (PyUnicode_Compare(role, s_user) == 0) {
        return responses_user(w, content, h);
    }
    if (PyUnicode_Compare(role, s_assistant) == 0) {
        return responses_assistant(w, content, h);
    }
    if (PyUnicode_Compare(role, s_tool) == 0) {
        return responses_results(w, content, h);
    }
    return FALLBACK;
}

/* ---------------------------------------------------------------------------------------- */
/* The run of messages.                                                                       */

typedef int (*MessageFn)(Writer *, PyObject *, PyObject *, PyObject *, const Hooks *);

/* Write `message` under `option` itself, FALLBACK when it cannot. */
static int
write_message(Writer *w, PyObject *message, PyObject *option, const Hooks *h, MessageFn fn)
{
    int result = 0;
    PyObject *role = read_attr(message, s_role, &result);
    if (role == NULL) {
        return result;
    }
    PyObject *content = read_attr(message, s_content, &result);
    if (content == NULL) {
        Py_DECREF(role);
        return result;
    }
    result = FALLBACK;
    if (PyUnicode_CheckExact(role) && PyTuple_CheckExact(content)) {
        result = fn(w, role, content, option, h);
    }
    Py_DECREF(role);
    Py_DECREF(content);
    return result;
}

/* Append slow(index, message, option), which must return bytes. */
static int
write_slow(Writer *w, PyObject *slow, Py_ssize_t index, PyObject *message, PyObject *option)
{
    PyObject *piece = PyObject_CallFunction(slow, "nOO", index, message, option);
    if (piece == NULL) {
        return -1;
    }
    int result = -1;
    if (!PyBytes_Check(piece)) {
        PyErr_Format(PyExc_TypeError, "slow encoder returned %.100s, not bytes",
                     Py_TYPE(piece)->tp_name);
    }
    else {
        result = w_write(w, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece));
    }
    Py_DECREF(piece);
    return result;
}

static PyObject *
encode_run(PyObject *const *args, Py_ssize_t nargs, MessageFn fn, const char *name)
{
    if (nargs != 5 && nargs != 7) {
        PyErr_Format(PyExc_TypeError, "%s() takes 5 or 7 arguments (%zd given)", name, nargs);
        return NULL;
    }
    PyObject *prefix = nargs == 7 ? args[5] : NULL, *suffix = nargs == 7 ? args[6] : NULL;
    if (prefix != NULL && (!PyBytes_CheckExact(prefix) || !PyBytes_CheckExact(suffix))) {
        PyErr_Format(PyExc_TypeError, "%s(): prefix and suffix must be bytes", name);
        return NULL;
    }
    PyObject *messages = args[0], *options = args[2], *slow = args[3];
    if (!PyTuple_CheckExact(messages)) {
        PyErr_Format(PyExc_TypeError, "%s(): messages must be a tuple", name);
        return NULL;
    }
    if (!PyDict_CheckExact(options)) {
        PyErr_Format(PyExc_TypeError, "%s(): options must be a dict", name);
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(args[1]);
    if (first == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (first > PY_SSIZE_T_MAX - PyTuple_GET_SIZE(messages)) {
        PyErr_Format(PyExc_OverflowError, "%s(): first + len(messages) overflows", name);
        return NULL;
    }
    Hooks hooks;
    if (parse_hooks(args[4], &hooks) < 0) {
        return NULL;
    }
    Writer w;
    if (w_init(&w, prefix == NULL ? 4096 : 65536 + PyBytes_GET_SIZE(prefix)) < 0) {
        return NULL;
    }
    /* With a prefix that opens the array, the first piece's comma is dropped. */
    int drop_comma = 0;
    if (prefix != NULL) {
        Py_ssize_t n = PyBytes_GET_SIZE(prefix);
        drop_comma = n > 0 && PyBytes_AS_STRING(prefix)[n - 1] == '[';
        if (w_write(&w, PyBytes_AS_STRING(prefix), n) < 0) {
            goto error;
        }
    }
    Py_ssize_t count = PyTuple_GET_SIZE(messages);
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *message = PyTuple_GET_ITEM(messages, k);
        PyObject *option = Py_None;
        int result = FALLBACK;
        Py_ssize_t start = w.len;
        if (PyDict_GET_SIZE(options)) {
            PyObject *key = PyLong_FromSsize_t(first + k);
            if (key == NULL) {
                goto error;
            }
            option = PyDict_GetItemWithError(options, key); /* borrowed */
            Py_DECREF(key);
            if (option == NULL) {
                if (PyErr_Occurred()) {
                    goto error;
                }
                option = Py_None;
            }
        }
        Py_INCREF(option); /* a hook may change the dict */
        result = write_message(&w, message, option, &hooks, fn);
        if (result == FALLBACK) {
            w.len = start; /* drop what was written of it */
            result = write_slow(&w, slow, first + k, message, option);
        }
        Py_DECREF(option);
        if (result < 0) {
            goto error;
        }
        if (drop_comma && w.len > start) { /* the first piece: its comma goes */
            char *piece = PyBytes_AS_STRING(w.out) + start;
            if (*piece == ',') {
                memmove(piece, piece + 1, (size_t)(w.len - start - 1));
                w.len--;
            }
            drop_comma = 0;
        }
    }
    if (suffix != NULL && w_write(&w, PyBytes_AS_STRING(suffix), PyBytes_GET_SIZE(suffix)) < 0) {
        goto error;
    }
    if (_PyBytes_Resize(&w.out, w.len) < 0) {
        return NULL;
    }
    return w.out;
error:
    Py_XDECREF(w.out);
    return NULL;
}

static PyObject *
anthropic_pieces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return encode_run(args, nargs, anthropic_message, "anthropic_pieces");
}

static PyObject *
converse_pieces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return encode_run(args, nargs, converse_message, "converse_pieces");
}

static PyObject *
gemini_pieces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return encode_run(args, nargs, gemini_message, "gemini_pieces");
}

static PyObject *
chat_pieces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return encode_run(args, nargs, chat_message, "chat_pieces");
}

static PyObject *
responses_pieces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return encode_run(args, nargs, responses_message, "responses_pieces");
}

static PyObject *
escape(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Writer w;
    int result = w_init(&w, view.len + 2);
    if (result == 0) {
        result = w_string(&w, view.buf, view.len);
    }
    PyBuffer_Release(&view);
    if (result < 0) {
        Py_XDECREF(w.out);
        return NULL;
    }
    if (_PyBytes_Resize(&w.out, w.len) < 0) {
        return NULL;
    }
    return w.out;
}

/* ---------------------------------------------------------------------------------------- */
/* The history's checks (history.py: validate_pairing, check_images), answered fast.          */

/* 1 when the history certainly passes both checks, 0 when it may not (the Python checks then
   run and raise the precise error, as they do for an error raised reading a field or comparing
   ids, so the error is theirs), -1 on any other error (MemoryError). */
static int
history_passes(PyObject *messages, Py_ssize_t resume, Py_ssize_t known, PyObject *const *types,
               PyObject *supported)
{
    PyTypeObject *text = (PyTypeObject *)types[0], *image = (PyTypeObject *)types[1];
    PyTypeObject *tool_call = (PyTypeObject *)types[2], *tool_result = (PyTypeObject *)types[3];
    Py_ssize_t count = PyTuple_GET_SIZE(messages);
    PyObject *pending = PySet_New(NULL); /* the ids the tool messages must still answer */
    if (pending == NULL) {
        return -1;
    }
    int answer = 1, calling = 0; /* calling: the last non-tool message made tool calls */
    for (Py_ssize_t index = resume < 0 ? 0 : resume; answer == 1 && index < count; index++) {
        PyObject *message = PyTuple_GET_ITEM(messages, index);
        PyObject *role = PyObject_GetAttr(message, s_role);
        PyObject *content = role == NULL ? NULL : PyObject_GetAttr(message, s_content);
        if (content == NULL) {
            Py_XDECREF(role);
            answer = python_raises() ? 0 : -1;
            break;
        }
        if (!PyUnicode_CheckExact(role) || !PyTuple_CheckExact(content)) {
            answer = 0;
        }
        else if (PyUnicode_Compare(role, s_tool) == 0) {
            for (Py_ssize_t k = 0; answer == 1 && k < PyTuple_GET_SIZE(content); k++) {
                PyObject *part = PyTuple_GET_ITEM(content, k);
                PyObject *call_id = Py_TYPE(part) == tool_result && calling
                                        ? PyObject_GetAttr(part, s_call_id)
                                        : NULL;
                if (call_id == NULL) {
                    answer = PyErr_Occurred() && !python_raises() ? -1 : 0;
                    break;
                }
                int removed = PySet_Discard(pending, call_id); /* 1 when it was pending */
                Py_DECREF(call_id);
                answer = removed >= 0 ? removed : python_raises() ? 0 : -1;
            }
        }
        else if (PySet_GET_SIZE(pending) != 0) {
            answer = 0; /* a call is still unanswered */
        }
        else {
            int user = PyUnicode_Compare(role, s_user) == 0;
            Py_ssize_t calls = 0;
            calling = 0;
            for (Py_ssize_t k = 0; answer == 1 && k < PyTuple_GET_SIZE(content); k++) {
                PyObject *part = PyTuple_GET_ITEM(content, k);
                PyTypeObject *type = Py_TYPE(part);
                if (type == tool_call) {
                    PyObject *call_id = PyObject_GetAttr(part, s_id);
                    if (call_id == NULL || PySet_Add(pending, call_id) < 0) {
                        Py_XDECREF(call_id);
                        answer = python_raises() ? 0 : -1;
                        break;
                    }
                    Py_DECREF(call_id);
                    calls++;
                }
                else if (type == image && user && index >= known) {
                    PyObject *mime = PyObject_GetAttr(part, s_mime_type);
                    if (mime == NULL) {
                        answer = python_raises() ? 0 : -1;
                        break;
                    }
                    int found = PySequence_Contains(supported, mime);
                    Py_DECREF(mime);
                    answer = found >= 0 ? found : python_raises() ? 0 : -1;
                }
                else if (type != text && type != image) {
                    answer = 0;
                }
            }
            if (answer == 1 && calls) {
                /* a repeated id: the set is smaller than the calls; only assistants call */
                calling = 1;
                if (PySet_GET_SIZE(pending) != calls ||
                    PyUnicode_Compare(role, s_assistant) != 0) {
                    answer = 0;
                }
            }
        }
        Py_DECREF(role);
        Py_DECREF(content);
    }
    if (answer == 1 && PySet_GET_SIZE(pending) != 0) {
        answer = 0;
    }
    Py_DECREF(pending);
    return answer;
}

static PyObject *
history_ok(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyTuple_CheckExact(args[0]) || !PyTuple_CheckExact(args[3]) ||
        PyTuple_GET_SIZE(args[3]) != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "history_ok(messages: tuple, resume, known, types: tuple of 4, "
                        "supported) takes 5 arguments");
        return NULL;
    }
    Py_ssize_t resume = PyLong_AsSsize_t(args[1]);
    if (resume == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t known = PyLong_AsSsize_t(args[2]);
    if (known == -1 && PyErr_Occurred()) {
        return NULL;
    }
    int answer = history_passes(args[0], resume, known, &PyTuple_GET_ITEM(args[3], 0), args[4]);
    if (answer < 0) {
        return NULL;
    }
    return PyBool_FromLong(answer);
}

static PyObject *
is_object(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "is_object() takes bytes");
        return NULL;
    }
    return PyBool_FromLong(certainly_object(PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

static PyMethodDef methods[] = {
    {"anthropic_pieces", (PyCFunction)(void (*)(void))anthropic_pieces, METH_FASTCALL,
     "anthropic_pieces(messages, first, options, slow, hooks[, prefix, suffix]) -> bytes: "
     "Anthropic pieces (between prefix and suffix)."},
    {"converse_pieces", (PyCFunction)(void (*)(void))converse_pieces, METH_FASTCALL,
     "converse_pieces(messages, first, options, slow, hooks[, prefix, suffix]) -> bytes: "
     "Bedrock Converse pieces (between prefix and suffix)."},
    {"gemini_pieces", (PyCFunction)(void (*)(void))gemini_pieces, METH_FASTCALL,
     "gemini_pieces(messages, first, options, slow, hooks[, prefix, suffix]) -> bytes: "
     "Gemini pieces (between prefix and suffix)."},
    {"chat_pieces", (PyCFunction)(void (*)(void))chat_pieces, METH_FASTCALL,
     "chat_pieces(messages, first, options, slow, hooks[, prefix, suffix]) -> bytes: "
     "Chat pieces (between prefix and suffix)."},
    {"responses_pieces", (PyCFunction)(void (*)(void))responses_pieces, METH_FASTCALL,
     "responses_pieces(messages, first, options, slow, hooks[, prefix, suffix]) -> bytes: "
     "Responses pieces (between prefix and suffix)."},
    {"escape", escape, METH_O,
     "escape(utf8: bytes) -> bytes: the JSON string literal of UTF-8 text (for tests)."},
    {"history_ok", (PyCFunction)(void (*)(void))history_ok, METH_FASTCALL,
     "history_ok(messages, resume, known, types, supported) -> bool: whether the history "
     "certainly passes validate_pairing(messages, resume) and check_images(messages, known)."},
    {"is_object", is_object, METH_O,
     "is_object(data: bytes) -> bool: whether the C writer sends tool-call arguments verbatim "
     "without asking Python (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "llmcore.providers._speedups",
    "The history's wire pieces for Anthropic, Chat, Responses, Converse and Gemini, in C.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    for (int c = 0; c < 0x20; c++) {
        ESCAPE[c] = 'u';
    }
    ESCAPE['\b'] = 'b';
    ESCAPE['\f'] = 'f';
    ESCAPE['\n'] = 'n';
    ESCAPE['\r'] = 'r';
    ESCAPE['\t'] = 't';
    ESCAPE['"'] = '"';
    ESCAPE['\\'] = '\\';
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_role, "role"},         {&s_content, "content"},
        {&s_text, "text"},         {&s_mime_type, "mime_type"},
        {&s_base64, "base64"},     {&s_id, "id"},
        {&s_name, "name"},         {&s_arguments, "arguments"},
        {&s_call_id, "call_id"},   {&s_utf8_content, "utf8_content"},
        {&s_is_error, "is_error"}, {&s_tool, "tool"},
        {&s_user, "user"},         {&s_assistant, "assistant"},
        {&s_tool_name, "tool_name"},
    };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (*names[k].slot == NULL) {
            *names[k].slot = PyUnicode_InternFromString(names[k].text);
            if (*names[k].slot == NULL) {
                return NULL;
            }
        }
    }
    return PyModule_Create(&module_def);
}
