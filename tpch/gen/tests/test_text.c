/* Comment text. The pool follows the list weights (word ratios as weighted);
 * l_comment has "the" at about 8% and "slyly" at about 4% of its whole
 * words, as facts.md says of the reference; comments are pool substrings
 * that usually start and end mid-word (not fresh sentences); the pool holds
 * only grammar characters; suppliers carry exactly 5 Complaints and 5
 * Recommends rows per 10,000. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_sink.h"
#include "gen_text.h"
#include "test_util.h"

enum { W_THE, W_SLYLY, W_PACKAGES, W_FOXES, W_FURIOUSLY, W_BLITHELY, W_REGULAR, W_SILENT, NW };
static const char *const watched[NW] = {"the",       "slyly",    "packages", "foxes",
                                        "furiously", "blithely", "regular",  "silent"};

typedef struct {
    long words;
    long count[NW];
    long whole_first, whole_last, texts;
} tally;

/* Is the token a whole vocabulary word (any list word, or "the")? */
static int is_word(const tpch_lists *L, const char *tok, size_t n)
{
    if (n == 3 && memcmp(tok, "the", 3) == 0)
        return 1;
    static const tpch_list_id vocab[] = {TPCH_L_NOUNS, TPCH_L_VERBS, TPCH_L_ADJECTIVES,
                                         TPCH_L_ADVERBS, TPCH_L_PREPOSITIONS, TPCH_L_AUXILIARIES};
    for (size_t v = 0; v < sizeof vocab / sizeof vocab[0]; v++) {
        const tpch_list *l = &L->list[vocab[v]];
        for (int i = 0; i < l->n; i++)
            if (l->len[i] == n && memcmp(l->word[i], tok, n) == 0)
                return 1;
    }
    return 0;
}

/* Counts the space-separated words of text, minus a glued terminator or
 * comma. With skip_edges the first and last tokens (usually fragments) are
 * not counted, only checked for being whole words. */
static void count_words(const tpch_lists *L, const char *p, const char *end, int skip_edges,
                        tally *t)
{
    int first = 1;
    t->texts++;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        const char *q = p;
        while (q < end && *q != ' ')
            q++;
        if (q == p)
            break;
        size_t n = (size_t)(q - p);
        while (n > 0 && strchr(".,;:?!-", p[n - 1]))
            n--;
        int edge = first || q == end;
        if (skip_edges) {
            if (first && is_word(L, p, (size_t)(q - p)))
                t->whole_first++;
            if (q == end && is_word(L, p, (size_t)(q - p)))
                t->whole_last++;
        }
        if (!(skip_edges && edge)) {
            t->words++;
            for (int i = 0; i < NW; i++)
                if (n == strlen(watched[i]) && memcmp(p, watched[i], n) == 0)
                    t->count[i]++;
        }
        first = 0;
        p = q;
    }
}

static double share(const tally *t, int w)
{
    return (double)t->count[w] / (double)t->words;
}

static void check_pool(const tpch_ctx *c)
{
    const char *end = c->pool + TPCH_POOL_BYTES;
    for (const char *p = c->pool; p < end; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzT ,.;:?!-", *p) || *p == '\0' ||
            (p[0] == ' ' && p + 1 < end && p[1] == ' ')) {
            CHECK(0, "pool byte %td is '%c'", p - c->pool, *p);
            break;
        }
    tally t = {0};
    count_words(&c->lists, c->pool, end, 0, &t);
    /* weights: packages 40 vs foxes 20; furiously 50 vs blithely 40; regular 50 vs silent 10 */
    double r1 = (double)t.count[W_PACKAGES] / (double)t.count[W_FOXES];
    double r2 = (double)t.count[W_FURIOUSLY] / (double)t.count[W_BLITHELY];
    double r3 = (double)t.count[W_REGULAR] / (double)t.count[W_SILENT];
    printf("pool: %ld words, packages/foxes %.3f, furiously/blithely %.3f, regular/silent %.3f\n",
           t.words, r1, r2, r3);
    CHECK(r1 > 1.95 && r1 < 2.05, "packages/foxes = %.3f, weights say 2", r1);
    CHECK(r2 > 1.22 && r2 < 1.28, "furiously/blithely = %.3f, weights say 1.25", r2);
    CHECK(r3 > 4.8 && r3 < 5.2, "regular/silent = %.3f, weights say 5", r3);
}

static void check_lineitem_comments(const tpch_ctx *c)
{
    tpch_sink s;
    tpch_sink_init(&s, TPCH_FMT_BIN, TPCH_LINEITEM);
    tpch_chunk_gen(c, TPCH_ORDERS, 0, 30000, NULL, &s);
    const uint64_t *ends = (const uint64_t *)(const void *)s.col[COL_L_COMMENT].fixed.p;
    const char *data = s.col[COL_L_COMMENT].data.p;
    tally t = {0};
    uint64_t start = 0;
    for (uint64_t r = 0; r < s.nrows; r++) {
        const char *p = data + start, *end = data + ends[r];
        if (r < 100)
            CHECK(memmem(c->pool, TPCH_POOL_BYTES, p, (size_t)(end - p)) != NULL,
                  "comment %llu is not a pool substring", (unsigned long long)r);
        count_words(&c->lists, p, end, 1, &t);
        start = ends[r];
    }
    double the = share(&t, W_THE), slyly = share(&t, W_SLYLY);
    double ws = (double)t.whole_first / (double)t.texts, we = (double)t.whole_last / (double)t.texts;
    printf("l_comment: %ld whole words, the %.2f%%, slyly %.2f%%; %.1f%% start and %.1f%% end "
           "with a whole word\n",
           t.words, 100 * the, 100 * slyly, 100 * ws, 100 * we);
    CHECK(the > 0.075 && the < 0.095, "'the' is %.2f%% of l_comment words", 100 * the);
    CHECK(slyly > 0.035 && slyly < 0.05, "'slyly' is %.2f%% of l_comment words", 100 * slyly);
    CHECK(ws < 0.5 && we < 0.5, "comments look like fresh sentences (%.2f, %.2f)", ws, we);
    tpch_sink_free(&s);
}

static void check_bbb(void)
{
    tpch_ctx c;
    char err[256];
    if (tpch_ctx_init(&c, 10, err, sizeof err) != 0) {
        CHECK(0, "ctx: %s", err);
        return;
    }
    long complaints = 0, recommends = 0;
    tpch_row row;
    for (uint64_t r = 0; r < c.n.supplier; r++) {
        tpch_row_gen(&c, TPCH_SUPPLIER, r, &row);
        char text[256];
        size_t n = row.len[COL_S_COMMENT];
        CHECK(n >= 25 && n <= 100, "s_comment length %zu", n);
        memcpy(text, row.s[COL_S_COMMENT], n);
        text[n] = '\0';
        const char *cust = strstr(text, "Customer ");
        if (!cust)
            continue;
        complaints += strstr(cust, "Complaints") != NULL;
        recommends += strstr(cust, "Recommends") != NULL;
    }
    CHECK(complaints == 50 && recommends == 50, "SF 10: %ld Complaints, %ld Recommends rows",
          complaints, recommends);
    tpch_ctx_free(&c);
}

int main(void)
{
    tpch_ctx c;
    char err[256];
    if (tpch_ctx_init(&c, 0.1, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    check_pool(&c);
    check_lineitem_comments(&c);
    tpch_ctx_free(&c);
    check_bbb();
    if (test_failures)
        fprintf(stderr, "%d checks failed\n", test_failures);
    return test_failures ? 1 : 0;
}
