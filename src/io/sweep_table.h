/* Serial block reader of sweep.h5 (sweep_table.c); private to src/io. */
#ifndef LLMPLAN_SWEEP_TABLE_H
#define LLMPLAN_SWEEP_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <hdf5.h>

#include "llmplan/status.h"

#define LP_STAB_BLOCK 65536
#define LP_STAB_MAX_COLS 256
#define LP_STAB_MAX_ENUM 1024

struct lp_xcol {
    char name[128];
    hid_t ds, mtype; /* mtype: the memory type read into (owned) */
    H5T_class_t cls;
    bool is_signed;
    int nnames;
    char **names; /* enumerations: member name by value 0..nnames-1 */
    void *buf;    /* LP_STAB_BLOCK values of 8 bytes (4 for an enumeration) */
};

struct lp_stab {
    char path[4096];
    hid_t file;
    uint64_t rows;
    int ncols;
    struct lp_xcol cols[LP_STAB_MAX_COLS];
};

int lp_stab_open(const char *path, struct lp_stab **out, struct lp_err *err);
/* Read rows [at, at + *count) of every column into its buffer; *count gets
 * min(LP_STAB_BLOCK, rows - at). */
int lp_stab_read(struct lp_stab *t, uint64_t at, uint64_t *count, struct lp_err *err);
/* The position of a column by name, or -1. */
int lp_stab_find(const struct lp_stab *t, const char *name);
/* Value i of the block of column c as a double (an enumeration: its code). */
double lp_stab_num(const struct lp_stab *t, int c, size_t i);
/* The name of code v of enumeration column c, or NULL. */
const char *lp_stab_name(const struct lp_stab *t, int c, int32_t v);
/* A root attribute as text (a fixed-length string, or an integer printed);
 * *out NULL when there is none; caller frees. */
int lp_stab_attr_text(const struct lp_stab *t, const char *name, char **out, struct lp_err *err);
void lp_stab_close(struct lp_stab **t);

#endif
