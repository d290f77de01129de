/* The driver's side of sweep.h5: what the parallel dataset writer
 * (llmplan/sweep_h5.h, src/io_par/) is told of the sweep, and which of this
 * rank's buffered rows go where. */
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* Fill s->h5_desc from the sweep (after the cost models and the space:
 * the profile description and the space size are part of it). Local. */
static int describe(struct lp_search *s, struct lp_err *err)
{
    if (s->h5_names) return LP_OK;
    const struct lp_sweep *sw = s->sweep;
    const int nm = sw->nvalues[LP_DIM_MODEL], ns = sw->nvalues[LP_DIM_SYSTEM],
              nf = sw->nvalues[LP_DIM_FRAMEWORK], nt = sw->nvalues[LP_DIM_FINETUNE];
    const size_t n = (size_t)nm + (size_t)ns + (size_t)nf + (size_t)nt;
    s->h5_names = malloc((n ? n : 1) * sizeof(*s->h5_names));
    s->h5_params = malloc((nm ? (size_t)nm : 1) * sizeof(*s->h5_params));
    if (!s->h5_names || !s->h5_params) LP_FAIL(err, LP_ENOMEM, "out of memory");
    const char **m = s->h5_names, **y = m + nm, **f = y + ns, **t = f + nf;
    for (int i = 0; i < nm; i++) {
        m[i] = sw->models[i].name;
        s->h5_params[i] = lp_model_params(&sw->models[i]);
    }
    for (int i = 0; i < ns; i++)
        y[i] = sw->systems[i].name;
    for (int i = 0; i < nf; i++)
        f[i] = lp_framework_name(sw->fws[i].kind);
    for (int i = 0; i < nt; i++)
        t[i] = sw->fts[i].name;
    struct lp_h5_desc *d = &s->h5_desc;
    d->comm = s->comm;
    d->path = s->h5_path;
    d->models = (struct lp_h5_names){nm, m};
    d->systems = (struct lp_h5_names){ns, y};
    d->frameworks = (struct lp_h5_names){nf, f};
    d->finetunes = (struct lp_h5_names){nt, t};
    d->model_params = s->h5_params;
    d->command_line = s->opt.cmdline;
    d->sweep_file = s->opt.sweep_path;
    d->sweep_json = s->sweep_text;
    d->profile = s->profile_desc;
    d->sweep_hash = lp_sweep_hash(s);
    d->space_size = lp_space_size(&s->space);
    return LP_OK;
}

int lp_dataset_open(struct lp_search *s, bool resume, struct lp_err *err)
{
    LP_TRY(err, describe(s, err));
    return lp_h5_open(&s->h5_desc, resume, &s->h5, err);
}

int lp_dataset_recover(struct lp_search *s, bool *ok, char *why, size_t why_len, struct lp_err *err)
{
    LP_TRY(err, describe(s, err));
    return lp_h5_recover(&s->h5_desc, s->h5_rows, s->h5_sum, ok, why, why_len, err);
}

/* This rank's ranges of the table as blocks of its row buffer, in file
 * order (the table is sorted by lo, as s->mine is after sorting). */
static int my_blocks(struct lp_search *s, const struct lp_range *table, size_t n,
                     struct lp_h5_block **out, size_t *nb, struct lp_err *err)
{
    lp_ranges_sort(&s->mine);
    size_t count = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        if (table[i].owner == s->rank && table[i].rows) count++;
    *nb = 0;
    *out = malloc((count ? count : 1) * sizeof(**out));
    if (!*out) LP_FAIL(err, LP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (table[i].owner != s->rank || table[i].rows == 0) continue;
        while (k < s->mine.n && s->mine.r[k].lo < table[i].lo)
            k++;
        if (k >= s->mine.n || s->mine.r[k].lo != table[i].lo || s->mine.r[k].rows != table[i].rows)
            LP_FAIL(err, LP_EINVAL, "internal: range [%llu, %llu) of rank %d not found locally",
                    (unsigned long long)table[i].lo, (unsigned long long)table[i].hi, s->rank);
        (*out)[(*nb)++] =
            (struct lp_h5_block){table[i].row_start, s->mine.r[k].row_start, table[i].rows};
    }
    return LP_OK;
}

int lp_dataset_write_segment(struct lp_search *s, const struct lp_range *table, size_t n,
                             struct lp_err *err)
{
    uint64_t end = s->rows_base;
    for (size_t i = 0; i < n; i++)
        if (table[i].row_start + table[i].rows > end) end = table[i].row_start + table[i].rows;
    struct lp_h5_block *b = NULL;
    size_t nb = 0;
    /* a failure here still takes part in the collective write, with nothing */
    int rc = my_blocks(s, table, n, &b, &nb, err);
    uint64_t sum[LP_H5_NCOLS];
    memset(sum, 0, sizeof(sum));
    int wrc = lp_h5_write(s->h5, s->rows.r, b, rc == LP_OK ? nb : 0, end, sum,
                          rc == LP_OK ? err : &(struct lp_err){0});
    free(b);
    if (rc == LP_OK) rc = wrc;
    if (rc != LP_OK) return rc;
    /* the checksums of rows [0, end): the final rows' and this write's */
    for (size_t c = 0; c < LP_H5_NCOLS; c++)
        s->h5_sum[c] = s->h5_sum_base[c] + sum[c];
    s->h5_rows = end;
    return LP_OK;
}

int lp_dataset_read_rows(struct lp_search *s, uint64_t first, uint64_t n, struct lp_err *err)
{
    const bool mine = s->rank == 0;
    size_t base = s->rows.n;
    if (mine && n) LP_TRY(err, lp_rows_reserve(&s->rows, base + (size_t)n, err));
    LP_TRY(err, lp_h5_read(s->h5, first, n, mine, mine && n ? s->rows.r + base : NULL, err));
    if (mine) s->rows.n = base + (size_t)n;
    return LP_OK;
}

int lp_dataset_close(struct lp_search *s, bool complete, const struct lp_counts *total,
                     struct lp_err *err)
{
    struct lp_h5_totals t = {0, 0, complete};
    if (total) {
        t.rows = total->v[LP_COUNT_EVALUATED];
        t.skipped = total->v[LP_COUNT_SKIPPED];
    }
    bool unclosable = false;
    int rc = lp_h5_close(s->h5, total ? &t : NULL, &unclosable, err);
    s->h5 = NULL;
    if (unclosable) s->h5_unclosable = true;
    return rc;
}
