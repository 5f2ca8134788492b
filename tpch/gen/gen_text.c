/* Sentence grammar for the text pool (TPC-H clause 4.2.2.10 rules, weights
 * from lists.tsv): a sentence shape from "grammar" whose N/V/P/T are a noun
 * phrase ("np" shapes), verb phrase ("vp" shapes), preposition + "the" + noun
 * phrase, and a terminator glued to the previous word. Words and sentences
 * are separated by single spaces. One sequential random stream: the pool is
 * built once, never in pieces. */
#include "gen_text.h"

#include <stdlib.h>
#include <string.h>

#define POOL_SEED 0x54455854504f4f4cull /* "TEXTPOOL" */
#define POOL_SLACK 1024                 /* > longest sentence */

typedef struct {
    const tpch_lists *L;
    char *p;
    size_t len;
    uint64_t draws;
} pool_state;

static const tpch_list *list_of(const pool_state *s, tpch_list_id id)
{
    return &s->L->list[id];
}

static int pick(pool_state *s, tpch_list_id id)
{
    return tpch_list_pick(list_of(s, id), tpch_draw(POOL_SEED, s->draws++));
}

static void put_word(pool_state *s, tpch_list_id id)
{
    const tpch_list *l = list_of(s, id);
    int i = pick(s, id);
    if (s->len > 0 && id != TPCH_L_TERMINATORS)
        s->p[s->len++] = ' ';
    memcpy(s->p + s->len, l->word[i], l->len[i]);
    s->len += l->len[i];
}

/* A phrase shape ("D J N", "X V D", ...): each letter is one word. */
static void put_phrase(pool_state *s, tpch_list_id shapes)
{
    const char *shape = list_of(s, shapes)->word[pick(s, shapes)];
    for (const char *c = shape; *c; c++) {
        switch (*c) {
        case 'N': put_word(s, TPCH_L_NOUNS); break;
        case 'V': put_word(s, TPCH_L_VERBS); break;
        case 'J': put_word(s, TPCH_L_ADJECTIVES); break;
        case 'D': put_word(s, TPCH_L_ADVERBS); break;
        case 'X': put_word(s, TPCH_L_AUXILIARIES); break;
        case ',': s->p[s->len++] = ','; break;
        default: break;
        }
    }
}

static void put_sentence(pool_state *s)
{
    const char *shape = list_of(s, TPCH_L_GRAMMAR)->word[pick(s, TPCH_L_GRAMMAR)];
    for (const char *c = shape; *c; c++) {
        switch (*c) {
        case 'N': put_phrase(s, TPCH_L_NP); break;
        case 'V': put_phrase(s, TPCH_L_VP); break;
        case 'P':
            put_word(s, TPCH_L_PREPOSITIONS);
            memcpy(s->p + s->len, " the", 4);
            s->len += 4;
            put_phrase(s, TPCH_L_NP);
            break;
        case 'T': put_word(s, TPCH_L_TERMINATORS); break;
        default: break;
        }
    }
}

char *tpch_text_pool_build(const tpch_lists *L)
{
    pool_state s = {L, malloc(TPCH_POOL_BYTES + POOL_SLACK), 0, 0};
    if (!s.p)
        return NULL;
    while (s.len < TPCH_POOL_BYTES)
        put_sentence(&s);
    return s.p;
}
