/* Parses the embedded lists.tsv into tpch_lists and builds the weighted pick
 * tables. Entries keep the file's order (nation key = row order). */
#include "gen_lists.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int count; /* exact entry count, or 0 for "at least one" */
} list_spec[TPCH_NLISTS] = {
    [TPCH_L_CONTAINERS] = {"containers", 40},   [TPCH_L_INSTRUCTIONS] = {"instructions", 4},
    [TPCH_L_SEGMENTS] = {"segments", 5},        [TPCH_L_NATIONS] = {"nations", 25},
    [TPCH_L_REGIONS] = {"regions", 5},          [TPCH_L_PRIORITIES] = {"priorities", 5},
    [TPCH_L_RETURNFLAGS] = {"returnflags", 2},  [TPCH_L_SHIPMODES] = {"shipmodes", 7},
    [TPCH_L_TYPES] = {"types", 150},            [TPCH_L_COLORS] = {"colors", 92},
    [TPCH_L_NOUNS] = {"nouns", 0},              [TPCH_L_VERBS] = {"verbs", 0},
    [TPCH_L_ADVERBS] = {"adverbs", 0},          [TPCH_L_PREPOSITIONS] = {"prepositions", 0},
    [TPCH_L_AUXILIARIES] = {"auxiliaries", 0},  [TPCH_L_TERMINATORS] = {"terminators", 0},
    [TPCH_L_ADJECTIVES] = {"adjectives", 0},    [TPCH_L_GRAMMAR] = {"grammar", 0},
    [TPCH_L_NP] = {"np", 0},                    [TPCH_L_VP] = {"vp", 0},
};

static int list_index(const char *name)
{
    for (int i = 0; i < TPCH_NLISTS; i++)
        if (strcmp(list_spec[i].name, name) == 0)
            return i;
    return -1;
}

/* Splits one "list<TAB>entry<TAB>number" line in place and files it. */
static int add_line(tpch_lists *L, char *line, int lineno, char *err, size_t errlen)
{
    char *entry = strchr(line, '\t');
    char *num = entry ? strchr(entry + 1, '\t') : NULL;
    if (!num) {
        snprintf(err, errlen, "lists.tsv line %d: expected 3 tab-separated fields", lineno);
        return -1;
    }
    *entry++ = '\0';
    *num++ = '\0';
    if (strcmp(line, "list") == 0)
        return 0; /* the column header */
    int id = list_index(line);
    if (id < 0) {
        snprintf(err, errlen, "lists.tsv line %d: unknown list '%s'", lineno, line);
        return -1;
    }
    tpch_list *l = &L->list[id];
    char *end;
    long w = strtol(num, &end, 10);
    size_t len = strlen(entry);
    int weight_ok = id == TPCH_L_NATIONS ? (w >= 0 && w <= 4) : (w >= 1 && w <= 1000);
    if (*end != '\0' || !weight_ok || len == 0 || len > 255 || l->n == TPCH_LIST_MAX) {
        snprintf(err, errlen, "lists.tsv line %d: bad entry", lineno);
        return -1;
    }
    l->word[l->n] = entry;
    l->len[l->n] = (uint8_t)len;
    l->weight[l->n] = (int)w;
    l->n++;
    return 0;
}

static int build_pick(tpch_list *l, int uniform)
{
    l->total = 0;
    for (int i = 0; i < l->n; i++)
        l->total += uniform ? 1u : (uint32_t)l->weight[i];
    l->pick = malloc(l->total);
    if (!l->pick)
        return -1;
    uint32_t k = 0;
    for (int i = 0; i < l->n; i++)
        for (int w = uniform ? 1 : l->weight[i]; w > 0; w--)
            l->pick[k++] = (uint8_t)i;
    return 0;
}

int tpch_lists_load(tpch_lists *L, char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    L->text = malloc(tpch_lists_tsv_len + 1);
    if (!L->text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(L->text, tpch_lists_tsv, tpch_lists_tsv_len);
    L->text[tpch_lists_tsv_len] = '\0';
    int lineno = 0;
    for (char *line = L->text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        if (*line && *line != '#' && add_line(L, line, lineno, err, errlen) != 0)
            goto fail;
        line = nl ? nl + 1 : line + strlen(line);
    }
    for (int i = 0; i < TPCH_NLISTS; i++) {
        tpch_list *l = &L->list[i];
        if (l->n == 0 || (list_spec[i].count && l->n != list_spec[i].count)) {
            snprintf(err, errlen, "lists.tsv: list '%s' has %d entries", list_spec[i].name, l->n);
            goto fail;
        }
        /* nations carry region keys, not weights: they are picked uniformly */
        if (build_pick(l, i == TPCH_L_NATIONS) != 0) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    return 0;
fail:
    tpch_lists_free(L);
    return -1;
}

void tpch_lists_free(tpch_lists *L)
{
    for (int i = 0; i < TPCH_NLISTS; i++)
        free(L->list[i].pick);
    free(L->text);
    memset(L, 0, sizeof *L);
}
