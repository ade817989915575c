/* KIR lexer: one text line -> tokens. Commas are separators, `;` starts a comment; sigils
 * (% $ ^ @ #) are stripped from names so the parser compares plain strings. */
#include "kir/kir.h"

#include <ctype.h>
#include <string.h>

static int is_name_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* Bare words also cover numbers: -1, 0x1.8p+0, -inf. */
static int is_word_char(char c) {
  return is_name_char(c) || c == '+' || c == '-';
}

static int lex_string(kir_arena_t *a, const char *s, size_t len, size_t *pos, kir_tok_t *t,
                      const char **bad) {
  char *buf = kir_alloc(a, len + 1), *o = buf;
  if (!buf) return *bad = "out of memory", -1;
  size_t i = *pos + 1;
  for (; i < len && s[i] != '"'; i++) {
    if (s[i] == '\\' && i + 1 < len && (s[i + 1] == 'n' || s[i + 1] == 't')) {
      *o++ = s[++i] == 'n' ? '\n' : '\t'; /* print text may hold newlines and tabs */
      continue;
    }
    if (s[i] == '\\' && i + 1 < len && (s[i + 1] == '"' || s[i + 1] == '\\')) i++;
    *o++ = s[i];
  }
  if (i >= len) return *bad = "unterminated string", -1;
  t->kind = KIR_TOK_STRING;
  t->text = buf;
  *pos = i + 1;
  return 0;
}

static int lex_one(kir_arena_t *a, const char *s, size_t len, size_t *pos, kir_tok_t *t,
                   const char **bad) {
  size_t i = *pos;
  char c = s[i];
  if (c == '"') return lex_string(a, s, len, pos, t, bad);
  if (c == '-' && i + 1 < len && s[i + 1] == '>') {
    t->kind = KIR_TOK_PUNCT;
    t->text = "->";
    *pos = i + 2;
    return 0;
  }
  if (strchr("(){}:=", c)) {
    t->kind = KIR_TOK_PUNCT;
    t->text = kir_strndup(a, s + i, 1);
    *pos = i + 1;
    return t->text ? 0 : (*bad = "out of memory", -1);
  }
  const char *sigils = "%$^@#";
  const char *sg = strchr(sigils, c);
  size_t start = sg ? i + 1 : i, j = start;
  while (j < len && (sg ? is_name_char(s[j]) : is_word_char(s[j])))
    j++;
  if (j == start) return *bad = sg ? "a name must follow the sigil" : "unexpected character", -1;
  static const kir_tok_kind_t kinds[] = {KIR_TOK_VALUE, KIR_TOK_VAR, KIR_TOK_BLOCK, KIR_TOK_FUNC,
                                         KIR_TOK_LINE};
  t->kind = sg ? kinds[sg - sigils] : KIR_TOK_WORD;
  t->text = kir_strndup(a, s + start, j - start);
  *pos = j;
  return t->text ? 0 : (*bad = "out of memory", -1);
}

int kir_lex_line(kir_arena_t *a, const char *s, size_t len, kir_tok_t **toks, const char **bad) {
  kir_tok_t *out = NULL;
  int n = 0, cap = 0;
  size_t pos = 0;
  for (;;) {
    while (pos < len && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == ',' || s[pos] == '\r'))
      pos++;
    if (pos >= len || s[pos] == ';') break;
    kir_tok_t *t = kir_push(a, &out, &n, &cap, sizeof *out);
    if (!t) return *bad = "out of memory", -1;
    if (lex_one(a, s, len, &pos, t, bad)) return -1;
  }
  *toks = out;
  return n;
}
