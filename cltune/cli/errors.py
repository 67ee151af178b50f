"""The errors a `cltune` command turns into one line on stderr (`app._errors`): the library's
own, and the builtin ones it raises for a bad option value, file or import."""

from __future__ import annotations

import pyopencl as cl

from cltune.core.ops import OpError
from cltune.device.select import DeviceError
from cltune.families.reduce.config import ConfigError
from cltune.isolation.vetting import NoConfigRuns
from cltune.isolation.worker import WorkerFailure
from cltune.opencl.build import BuildError
from cltune.tuning_db import DatabaseError
from cltune.tuning_db.exchange import ImportError_

#: everything else that escapes a command is a bug of ours (`internal error`)
LIBRARY_ERRORS: tuple[type[BaseException], ...] = (
    DeviceError, DatabaseError, ConfigError, OpError, BuildError, ImportError_, ValueError,
    OSError, ImportError, cl.Error, WorkerFailure, NoConfigRuns)
