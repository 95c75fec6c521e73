"""Two ranks of a torch.distributed job (gloo, so both can share one GPU), rank 1 with a seeded bug: its
Triton store has no mask and writes past the end of y.

    kprof sanitize -- torchrun --nproc_per_node 2 examples/two_ranks.py           # the bug, in rank 1
    kprof sanitize -- torchrun --nproc_per_node 2 examples/two_ranks.py --fixed   # both ranks clean
    kprof sanitize -- torchrun --nproc_per_node 2 examples/two_ranks.py --nccl    # the sum through NCCL
    kprof sanitize -- mpiexec -n 2 python examples/two_ranks.py                   # launched by MPI (pip's mpich)

With several GPUs, each rank takes the GPU of its LOCAL_RANK; the collective runs on the CPU (gloo), or with
--nccl on the GPUs through NCCL's kernels (NCCL wants a GPU per rank). Under mpiexec (MPICH's PMI_RANK, Open
MPI's OMPI_COMM_WORLD_RANK) the job finds its rank, size and rendezvous in the launcher's variables, as
torchrun's would give them (MASTER_PORT 29512 unless set).
"""

import os
import sys

import torch
import torch.distributed as dist
import triton
import triton.language as tl

FIXED = "--fixed" in sys.argv
NCCL = "--nccl" in sys.argv


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MASK_STORE:
        tl.store(y_ptr + offs, x * 2.0, mask=mask)
    else:
        tl.store(y_ptr + offs, x * 2.0)  # BUG (rank 1 only): no mask, the last block writes past the end of y


def from_mpi(env: dict) -> dict:
    """torch.distributed's variables from an MPI launcher's, where torchrun did not set them."""
    if "RANK" in env:
        return {}
    for rank, size, local in (("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
                              ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK")):
        if rank in env:
            return {"RANK": env[rank], "WORLD_SIZE": env.get(size, "1"), "LOCAL_RANK": env.get(local, env[rank]),
                    "MASTER_ADDR": env.get("MASTER_ADDR", "127.0.0.1"), "MASTER_PORT": env.get("MASTER_PORT", "29512")}
    return {}


def main() -> None:
    os.environ.update(from_mpi(dict(os.environ)))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("nccl" if NCCL else "gloo")
    rank = dist.get_rank()
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    scale[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, MASK_STORE=FIXED or rank != 1)
    total = y.sum() if NCCL else y.sum().cpu()
    dist.all_reduce(total)  # on the CPU (gloo), or NCCL's kernel on the GPU
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: done, total {float(total):.3f}")


if __name__ == "__main__":
    main()
