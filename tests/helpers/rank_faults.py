"""``train.py`` with rank 1 misbehaving on purpose, as a loaded machine or a broken node makes it:

- ``SLOW_RANK_DELAY_S=3``: rank 1 reaches the ``on_train_start`` hooks 3 s after rank 0;
- ``STOP_RANK_AT_STEP=3``: rank 1 stops itself (SIGSTOP) at the start of training step 3, hanging its peers;
- ``KILL_RANK_AT_STEP=3``: rank 1 kills itself (SIGKILL, as the out-of-memory killer or a lost node ends it) there.

Lightning's DDP launcher starts the other ranks by re-running this script, so every rank runs with the patch (under
torchrun, every node runs it).

    python tests/helpers/rank_faults.py trainer=ddp_cpu ...
"""
from __future__ import annotations

import os
import signal
import time

from lightning.pytorch.trainer import call

from sentence_lab.cli.train import main

DELAY_S = float(os.environ.get("SLOW_RANK_DELAY_S", "0"))
STOP_AT_STEP = int(os.environ.get("STOP_RANK_AT_STEP", "-1"))
KILL_AT_STEP = int(os.environ.get("KILL_RANK_AT_STEP", "-1"))
_call_callback_hooks = call._call_callback_hooks


def _misbehaving_rank_one(trainer, hook_name: str, *args, **kwargs):
    if trainer.global_rank == 1:
        if hook_name == "on_train_start" and DELAY_S:
            time.sleep(DELAY_S)
        if hook_name == "on_train_batch_start" and trainer.global_step == STOP_AT_STEP:
            os.kill(os.getpid(), signal.SIGSTOP)
        if hook_name == "on_train_batch_start" and trainer.global_step == KILL_AT_STEP:
            os.kill(os.getpid(), signal.SIGKILL)
    return _call_callback_hooks(trainer, hook_name, *args, **kwargs)


call._call_callback_hooks = _misbehaving_rank_one

if __name__ == "__main__":
    main()
