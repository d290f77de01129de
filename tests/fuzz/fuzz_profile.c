/* libFuzzer harness: an HDF5 kernel profile (lp_profile_read_h5, then the
 * plausibility check against the A100's datasheet), issue #21. The input is
 * written to a temporary file and read back: refused with a message, or a
 * profile whose tables a simulation can use. Crashes inside HDF5 itself
 * (libhdf5's own parser) show as such in the stack. */
#include "fuzz_common.h"
#include "llmplan/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".h5");
    if (!path) return 0;
    struct lp_profile *p = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_profile_read_h5(path, &p, &err);
    if (rc != LP_OK) {
        fuzz_check_error(rc, &err);
        return 0;
    }
    static struct lp_gpu g;
    static int have_gpu = -1;
    if (have_gpu < 0) have_gpu = lp_load_gpu("a100-80gb", &g, NULL) == LP_OK;
    lp_err_clear(&err);
    if (have_gpu) {
        rc = lp_profile_plausible(p, &g, &err);
        if (rc != LP_OK) fuzz_check_error(rc, &err);
    }
    lp_profile_destroy(&p);
    return 0;
}
