#!/usr/bin/env python3
"""DeepSpeed's pipeline TrainSchedule with blocking p2p, as a discrete-event model.

usage: scripts/ds_trainschedule.py STAGES MICRO_BATCHES T_FWD T_BWD T_P2P

Every stage runs the instruction stream of deepspeed/runtime/pipe/schedule.py
TrainSchedule.steps (DeepSpeed 2021, 9f17087): 2 (m + p - 1) half-steps, a
forward on even half-steps of even stages (odd of odd ones), a backward
otherwise, each preceded by its receive and followed, one half-step later, by
the send of the previous one (SendActivation after RecvGrad, SendGrad after
RecvActivation). p2p.send / p2p.recv are blocking (dist.send / dist.recv, or a
two-rank broadcast before torch 1.8), so a transfer is a rendezvous: it starts
when both peers reach it and holds both for T_P2P. Equal stage times. Prints
the makespan beside the ideal 1F1B (m + p - 1)(T_FWD + T_BWD) and the p2p
hops the rendezvous puts on the critical path per forward + backward pair
((makespan - ideal) / ((m + p - 1) T_P2P)); llmplan's 1F1B with blocking
sends (sim_schedule.c, framework megatron-deepspeed) charges about 2.
Used in docs/case-studies.md section 1 (issue #15); not part of llmplan.
"""
import sys


def stage_cmds(stage, stages, micro):
    """The (instruction, micro-batch) stream of one stage."""
    def fwd_id(k):
        return (k // 2 if k % 2 == 0 else (k - 1) // 2) - stage // 2

    def bwd_id(k):
        if k % 2 == 0:
            return k // 2 - stages + (stage + 1) // 2
        return (k - 1) // 2 - stages + 1 + stage // 2

    valid = lambda mb: 0 <= mb < micro
    prev, out = -1, []
    for k in range(2 * (micro + stages - 1)):
        forward = (k % 2) == (stage % 2)
        mb = fwd_id(k) if forward else bwd_id(k)
        if forward:
            if valid(prev) and stage > 0:
                out.append(("send_grad", prev))
            if valid(mb) and stage > 0:
                out.append(("recv_act", mb))
        else:
            if valid(mb) and stage < stages - 1:
                out.append(("recv_grad", mb))
            if valid(prev) and stage < stages - 1:
                out.append(("send_act", prev))
        if valid(mb):
            out.append(("fwd" if forward else "bwd", mb))
        prev = mb
    return out


PEER = {"send_act": ("recv_act", 1), "recv_act": ("send_act", -1),
        "send_grad": ("recv_grad", -1), "recv_grad": ("send_grad", 1)}


def makespan(stages, micro, tf, tb, c):
    cmds = [stage_cmds(s, stages, micro) for s in range(stages)]
    for s, cs in enumerate(cmds):
        assert sum(op == "fwd" for op, _ in cs) == micro == sum(op == "bwd" for op, _ in cs), s
    pc, t = [0] * stages, [0.0] * stages
    while not all(pc[s] == len(cmds[s]) for s in range(stages)):
        progress = False
        for s in range(stages):
            while pc[s] < len(cmds[s]):
                op, mb = cmds[s][pc[s]]
                if op in ("fwd", "bwd"):
                    t[s] += tf if op == "fwd" else tb
                    pc[s] += 1
                    progress = True
                    continue
                want, d = PEER[op]
                q = s + d
                if pc[q] < len(cmds[q]) and cmds[q][pc[q]] == (want, mb):
                    t[s] = t[q] = max(t[s], t[q]) + c
                    pc[s] += 1
                    pc[q] += 1
                    progress = True
                    continue
                break
        if not progress:
            sys.exit(f"ds_trainschedule: deadlock at {pc}")
    return max(t)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("\n\n")[1])
    stages, micro = int(sys.argv[1]), int(sys.argv[2])
    tf, tb, c = (float(x) for x in sys.argv[3:6])
    span = makespan(stages, micro, tf, tb, c)
    steps = micro + stages - 1
    ideal = steps * (tf + tb)
    hops = (span - ideal) / (steps * c) if c > 0 else 0.0
    print(f"TrainSchedule {span:.6g}  ideal 1F1B {ideal:.6g}  ratio {span / ideal:.4f}  "
          f"p2p hops per pair on the critical path {hops:.2f}")


if __name__ == "__main__":
    main()
