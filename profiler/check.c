/* Foreign status codes translated at the boundary: each check macro of
 * prof_gpu.h lands here with the call's text, and the error records
 * host:file:line (the host matters under mpirun across nodes). */
#include <mpi.h>
#include <string.h>
#include <unistd.h>

#include "prof_gpu.h"

static const char *host(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0) snprintf(buf, len, "?");
    buf[len - 1] = '\0';
    return buf;
}

int lpp_fail_cuda(struct lp_err *err, cudaError_t e, const char *call, const char *file, int line)
{
    char h[64];
    return lp_err_set_at(err, LP_ECUDA, file, line, "%s:%s:%d: %s: CUDA error %d (%s)",
                         host(h, sizeof(h)), file, line, call, (int)e, cudaGetErrorString(e));
}

int lpp_fail_cublas(struct lp_err *err, cublasStatus_t s, const char *call, const char *file,
                    int line)
{
    char h[64];
    return lp_err_set_at(err, LP_ECUDA, file, line, "%s:%s:%d: %s: cuBLAS status %d (%s)",
                         host(h, sizeof(h)), file, line, call, (int)s, cublasGetStatusString(s));
}

int lpp_fail_cudnn(struct lp_err *err, cudnnStatus_t s, const char *call, const char *file,
                   int line)
{
    char h[64], detail[256];
    cudnnGetLastErrorString(detail, sizeof(detail));
    detail[sizeof(detail) - 1] = '\0';
    return lp_err_set_at(err, LP_ECUDA, file, line, "%s:%s:%d: %s: cuDNN status %d (%s)%s%s",
                         host(h, sizeof(h)), file, line, call, (int)s, cudnnGetErrorString(s),
                         detail[0] ? ": " : "", detail);
}

int lpp_fail_nccl(struct lp_err *err, ncclResult_t r, const char *call, const char *file, int line)
{
    char h[64];
    return lp_err_set_at(err, LP_ENCCL, file, line, "%s:%s:%d: %s: NCCL error %d (%s)",
                         host(h, sizeof(h)), file, line, call, (int)r, ncclGetErrorString(r));
}

int lpp_fail_mpi(struct lp_err *err, int rc, const char *call, const char *file, int line)
{
    char h[64], msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof(msg), "?");
    return lp_err_set_at(err, LP_EMPI, file, line, "%s:%s:%d: %s: MPI error %d (%s)",
                         host(h, sizeof(h)), file, line, call, rc, msg);
}
