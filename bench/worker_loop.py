"""bench/worker_loop.py - the line-JSON protocol of the bench's workers
(torch_worker.py, ort_worker.py, iree_worker.py), their side.

A worker prints one "ready" object (reply), then serve() answers each line
read from stdin:
    {"cmd": "run", "form": F, "n": N}  ->  {"ms": [t1, ..., tN]}
    {"cmd": "quit"}                     ->  returns
and any command of `extra` (name -> function of the command, returning the
reply), or an error object for anything else.
"""
import json
import sys
import time


# The protocol's stream: stdout as it was when this was imported (a worker
# may then point sys.stdout at stderr, so that a library's prints do not
# corrupt the protocol).
_stream = sys.stdout


def reply(obj):
    _stream.write(json.dumps(obj) + "\n")
    _stream.flush()


def serve(calls, extra=None):
    """`calls`: form -> the function one timed call runs."""
    extra = extra or {}
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        name = cmd.get("cmd")
        if name == "quit":
            return
        if name == "run" and cmd.get("form") in calls:
            call, ms = calls[cmd["form"]], []
            for _ in range(cmd["n"]):
                t0 = time.perf_counter()
                call()
                ms.append((time.perf_counter() - t0) * 1e3)
            reply({"ms": ms})
        elif name in extra:
            reply(extra[name](cmd))
        else:
            reply({"error": f"cannot run {json.dumps(cmd)}"})
