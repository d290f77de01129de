/* The cost model of one system, as `llmplan simulate` and `llmplan search`
 * both choose it (one rule, issue #17):
 *
 *   1. the command line's --profile, else
 *   2. the profile named for this system (the system's "profile" key, or the
 *      sweep's "profile" map entry for it; lp_system.profile), else
 *   3. the sweep's "profile" string (search only), else
 *   4. data/profiles/<gpu>.h5 of the system's GPU.
 *
 * A choice is a file path, "roofline" (closed-form test backend) or "synth"
 * (lp_profile_synth, built in memory from the GPU's datasheet). A profile
 * file measured on another GPU is refused (lp_profile_match_gpu) unless the
 * caller allows it; the caller then warns and flags its output. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "json_util.h"
#include "llmplan/io.h"

/* The profiles that are not files, in the order lp_profile_builtin_name
 * lists them: the one table the chooser compares with and every message
 * names. */
enum { BUILTIN_SYNTH, BUILTIN_ROOFLINE, BUILTIN_COUNT };
const char *lp_profile_builtin_name(int i)
{
    static const char *const n[BUILTIN_COUNT] = {"synth", "roofline"};
    return i >= 0 && i < BUILTIN_COUNT ? n[i] : NULL;
}

const char *lp_profile_choice(const char *cli_arg, const struct lp_system *sys,
                              const char *sweep_default)
{
    if (cli_arg && cli_arg[0]) return cli_arg;
    if (sys->profile[0]) return sys->profile;
    return sweep_default ? sweep_default : "";
}

int lp_cost_model_choose(const char *choice, const struct lp_system *sys, bool allow_mismatch,
                         struct lp_profile **prof, struct lp_cost_model *cm, char *used,
                         size_t used_len, bool *mismatch, struct lp_err *err)
{
    const struct lp_gpu *gpu = &sys->gpu;
    *prof = NULL;
    *mismatch = false;
    /* the speed of older attention kernels (data/calibration.json) */
    struct lp_calib cal;
    LP_TRY(err, lp_calib_load_default(&cal, err));
    if (choice && strcmp(choice, lp_profile_builtin_name(BUILTIN_ROOFLINE)) == 0) {
        lp_cost_model_roofline(cm, gpu);
        cm->attn_old_ratio = cal.attn_old_ratio;
        snprintf(used, used_len, "roofline");
        return LP_OK;
    }
    if (choice && strcmp(choice, lp_profile_builtin_name(BUILTIN_SYNTH)) == 0) {
        LP_TRY(err, lp_profile_synth(gpu, sys, prof, err));
        lp_cost_model_table(cm, *prof, gpu);
        cm->attn_old_ratio = cal.attn_old_ratio;
        snprintf(used, used_len, "synth:%s", gpu->name);
        return LP_OK;
    }
    char path[1024];
    if (choice && choice[0]) {
        snprintf(path, sizeof(path), "%s", choice);
    } else {
        lp_profile_default_path(gpu->name, path, sizeof(path));
        struct stat st;
        char ex[64];
        if (stat(path, &st) != 0)
            LP_FAIL(err, LP_ENOTFOUND,
                    "no kernel profile for GPU '%s' (%s); generate one with `llmplan profile synth "
                    "--gpu %s`, or use the profile %s",
                    gpu->name, path, gpu->name, NAMES_FN(ex, lp_profile_builtin_name));
    }
    int rc = lp_profile_read_h5(path, prof, err);
    if (rc == LP_OK) rc = lp_profile_match_gpu(*prof, gpu, allow_mismatch, mismatch, err);
    if (rc == LP_OK) rc = lp_profile_plausible(*prof, gpu, err);
    if (rc < 0) {
        lp_profile_destroy(prof);
        return rc;
    }
    lp_cost_model_table(cm, *prof, gpu);
    cm->attn_old_ratio = cal.attn_old_ratio;
    snprintf(used, used_len, "%s", path);
    return LP_OK;
}

void lp_profile_mismatch_msg(char *buf, size_t len, const char *cmd, const struct lp_profile *prof,
                             const struct lp_system *sys)
{
    snprintf(buf, len,
             "%s: WARNING: the profile %s was measured on GPU '%s', not on system %s's GPU "
             "'%s'; its kernel times are used as they are (--allow-profile-mismatch), so the "
             "results describe neither GPU faithfully",
             cmd, prof->path[0] ? prof->path : "(in memory)", prof->gpu, sys->name, sys->gpu.name);
}
