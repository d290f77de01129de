/* libFuzzer harness: model, GPU and system objects (the format of the preset
 * files in data/models, data/gpus and data/systems), issue #21. The first byte
 * chooses the kind; the rest is the JSON object. */
#include "fuzz_common.h"
#include "json_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    char *text = fuzz_text(data + 1, size - 1);
    if (!text) return 0;
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_jctx c = {"fuzz.json", &err, NULL};
    cJSON *root = NULL;
    int rc = lp_json_parse(&c, text, &root);
    free(text);
    if (rc != LP_OK) {
        fuzz_check_error(rc, &err);
        return 0;
    }
    static struct lp_model m;
    static struct lp_gpu g;
    static struct lp_system s;
    switch (data[0] % 3) {
    case 0:
        rc = lp_json_model(&c, root, "model", &m);
        break;
    case 1:
        rc = lp_json_gpu(&c, root, "gpu", &g);
        break;
    default:
        rc = lp_json_system(&c, root, "system", &s);
        break;
    }
    if (rc != LP_OK) fuzz_check_error(rc, &err);
    cJSON_Delete(root);
    return 0;
}
